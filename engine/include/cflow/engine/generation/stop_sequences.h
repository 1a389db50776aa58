#pragma once
// Stop strings over streamed text (the OpenAI `stop` parameter, usable by every front end):
// text is fed piece by piece and only what can no longer become part of a stop string is
// released, so no byte of a matched stop string is ever shown. The reply ends at the earliest
// match; the stop string itself and everything after it are dropped.
//
// Pieces and stop strings are valid UTF-8, so what is held back always starts at a character
// boundary (a stop string starts with a lead byte) and the released text stays valid UTF-8.
// Thread safety: one thread at a time (a plain value).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cflow {

class StopSequenceMatcher {
public:
    explicit StopSequenceMatcher(std::vector<std::string> stops);  // empty strings are ignored

    // Appends `text`; returns the text that is safe to show now. After a match nothing more is
    // released (further feeds return "").
    std::string feed(std::string_view text);
    // The held-back tail, for a reply that ended without a match ("" after a match).
    std::string flush();

    bool empty() const { return stops_.empty(); }
    bool matched() const { return matched_.has_value(); }
    // The stop string that matched (the one starting earliest; the longest at a tie).
    const std::string& matched_sequence() const { return stops_[matched_.value_or(0)]; }

private:
    std::vector<std::string> stops_;
    std::string held_;              // released text never includes these bytes yet
    std::optional<size_t> matched_;
};

} // namespace cflow
