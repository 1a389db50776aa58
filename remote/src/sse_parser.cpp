#include "cflow/remote/sse_parser.h"

namespace cflow::remote {

Status SseParser::feed(std::string_view bytes, const EventCallback& on_event) {
    if (stopped_) return {};
    for (size_t i = 0; i < bytes.size(); ++i) {
        const char c = bytes[i];
        if (c == '\n' && last_was_cr_) {  // the LF of a CRLF whose CR already ended the line
            last_was_cr_ = false;
            continue;
        }
        last_was_cr_ = c == '\r';
        if (c == '\r' || c == '\n') {
            bool keep_going = true;
            if (Status s = take_line(on_event, keep_going); !s) return s;
            if (!keep_going) {
                stopped_ = true;
                return {};
            }
            continue;
        }
        if (line_.size() >= limits_.max_line_bytes)
            return make_error(ErrorKind::InvalidInput, "server-sent events: line " + std::to_string(line_number_ + 1) +
                                                           " is longer than " + std::to_string(limits_.max_line_bytes) +
                                                           " bytes");
        line_.push_back(c);
    }
    return {};
}

Status SseParser::finish(const EventCallback& on_event) {
    if (stopped_) return {};
    if (!line_.empty()) {
        bool keep_going = true;
        if (Status s = take_line(on_event, keep_going); !s) return s;
        if (!keep_going) return {};
    }
    if (has_data_) dispatch(on_event);
    return {};
}

Status SseParser::take_line(const EventCallback& on_event, bool& keep_going) {
    ++line_number_;
    std::string line = std::move(line_);
    line_.clear();
    if (line.empty()) {  // the blank line that ends an event
        if (has_data_) keep_going = dispatch(on_event);
        pending_ = SseEvent{};
        return {};
    }
    if (line[0] == ':') return {};  // a comment: servers send them to keep the connection alive
    if (pending_.first_line == 0) pending_.first_line = line_number_;
    const size_t colon = line.find(':');
    std::string_view field = std::string_view(line).substr(0, colon);
    std::string_view value;
    if (colon != std::string::npos) {
        value = std::string_view(line).substr(colon + 1);
        if (value.starts_with(" ")) value.remove_prefix(1);
    }
    if (field == "data") {
        if (has_data_) pending_.data.push_back('\n');
        if (pending_.data.size() + value.size() > limits_.max_event_bytes)
            return make_error(ErrorKind::InvalidInput, "server-sent events: the event ending at line " +
                                                           std::to_string(line_number_) + " holds more than " +
                                                           std::to_string(limits_.max_event_bytes) + " bytes of data");
        pending_.data.append(value);
        has_data_ = true;
    } else if (field == "event") {
        pending_.event = std::string(value);
    } else if (field == "id") {
        pending_.id = std::string(value);
    } else if (field == "retry") {
        // The reconnection delay of EventSource: a POST stream is not reconnected.
    } else {
        std::string shown = line.substr(0, 80);
        return make_error(ErrorKind::InvalidInput, "server-sent events: line " + std::to_string(line_number_) +
                                                       " is not a field (data:, event:, id:, retry: or a ':' comment): '" +
                                                       shown + "'");
    }
    return {};
}

bool SseParser::dispatch(const EventCallback& on_event) {
    SseEvent event = std::move(pending_);
    pending_ = SseEvent{};
    has_data_ = false;
    return on_event(event);
}

} // namespace cflow::remote
