#include "cflow/server/sse.h"

namespace cflow::server {

std::string sse_event(std::string_view payload) {
    std::string event;
    event.reserve(payload.size() + 8);
    size_t from = 0;
    for (;;) {
        const size_t end = payload.find('\n', from);
        event += "data: ";
        event += payload.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from);
        event += '\n';
        if (end == std::string_view::npos) break;
        from = end + 1;
    }
    event += '\n';
    return event;
}

std::vector<std::string> parse_sse_events(std::string_view stream) {
    std::vector<std::string> events;
    std::string data;
    bool has_data = false;
    size_t from = 0;
    while (from < stream.size()) {
        const size_t end = stream.find('\n', from);
        if (end == std::string_view::npos) break;  // an unterminated line: the event is not complete
        std::string_view line = stream.substr(from, end - from);
        from = end + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) {
            if (has_data) events.push_back(data);
            data.clear();
            has_data = false;
            continue;
        }
        if (line.front() == ':') continue;
        const size_t colon = line.find(':');
        const std::string_view field = line.substr(0, colon);
        std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (field != "data") continue;
        if (has_data) data += '\n';
        data += value;
        has_data = true;
    }
    return events;
}

} // namespace cflow::server
