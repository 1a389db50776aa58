#pragma once
// An incremental parser of server-sent events (the WHATWG EventSource format as OpenAI-compatible
// servers send it): bytes arrive in any split; lines end in LF, CRLF or CR; "data:" lines of one
// event are joined with '\n'; ':' lines are comments (keep-alives); a blank line ends an event.
// Every buffer is bounded: a line longer than max_line_bytes is an error naming the line, so a
// server that never sends a newline cannot grow memory without end.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "cflow/base/result.h"

namespace cflow::remote {

struct SseEvent {
    std::string event;  // the "event:" field; empty: "message"
    std::string data;   // the "data:" lines joined with '\n'
    std::string id;
    size_t first_line = 0;  // the line number (from 1) of its first field, for messages
};

struct SseLimits {
    size_t max_line_bytes = 1 << 20;   // one line (OpenAI's chunks are a few hundred bytes)
    size_t max_event_bytes = 4 << 20;  // one event's joined data
};

class SseParser {
public:
    // on_event returns false to stop: feed() then returns at once with success.
    using EventCallback = std::function<bool(const SseEvent&)>;

    explicit SseParser(SseLimits limits = {}) : limits_(limits) {}

    // Parses `bytes`, calling on_event per complete event. Errors name the line number.
    Status feed(std::string_view bytes, const EventCallback& on_event);
    // The stream ended: an event not yet ended by a blank line is dispatched (as browsers do not,
    // but a server cut off after its last data line still meant it).
    Status finish(const EventCallback& on_event);

    size_t lines_read() const { return line_number_; }

private:
    Status take_line(const EventCallback& on_event, bool& keep_going);
    bool dispatch(const EventCallback& on_event);

    SseLimits limits_;
    std::string line_;
    bool last_was_cr_ = false;  // a CR ended the last line: an LF right after belongs to it
    bool stopped_ = false;
    size_t line_number_ = 0;
    SseEvent pending_;
    bool has_data_ = false;
};

} // namespace cflow::remote
