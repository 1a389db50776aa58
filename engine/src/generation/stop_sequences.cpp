#include "cflow/engine/generation/stop_sequences.h"

#include <algorithm>
#include <utility>

namespace cflow {

StopSequenceMatcher::StopSequenceMatcher(std::vector<std::string> stops) {
    for (std::string& stop : stops)
        if (!stop.empty()) stops_.push_back(std::move(stop));
}

std::string StopSequenceMatcher::feed(std::string_view text) {
    if (matched_) return {};
    held_.append(text);
    if (stops_.empty()) return std::exchange(held_, {});

    size_t earliest = std::string::npos;
    for (size_t i = 0; i < stops_.size(); ++i) {
        const size_t at = held_.find(stops_[i]);
        if (at == std::string::npos) continue;
        if (at < earliest || (at == earliest && stops_[i].size() > stops_[*matched_].size())) {
            earliest = at;
            matched_ = i;
        }
    }
    if (matched_) {
        std::string released = held_.substr(0, earliest);
        held_.clear();
        return released;
    }
    // Hold the longest tail that is a proper prefix of some stop string: the next piece may
    // complete it. Everything before it can never be part of a match any more.
    size_t keep = 0;
    for (const std::string& stop : stops_) {
        const size_t longest = std::min(stop.size() - 1, held_.size());
        for (size_t n = longest; n > keep; --n) {
            if (std::string_view(held_).substr(held_.size() - n) == std::string_view(stop).substr(0, n)) {
                keep = n;
                break;
            }
        }
    }
    std::string released = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return released;
}

std::string StopSequenceMatcher::flush() {
    if (matched_) return {};
    return std::exchange(held_, {});
}

} // namespace cflow
