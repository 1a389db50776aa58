#include "cflow/server/request_head.h"

#include <algorithm>
#include <cctype>

namespace cflow::server {
namespace {

RequestHead refused(int status, std::string message) {
    RequestHead head;
    head.verdict = HeadVerdict::Refused;
    head.status = status;
    head.message = std::move(message);
    return head;
}

bool is_token_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::optional<uint64_t> parse_length(std::string_view digits) {
    if (digits.empty() || digits.size() > 18) return std::nullopt;  // 18 digits cannot overflow
    uint64_t value = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + uint64_t(c - '0');
    }
    return value;
}

std::string bytes_text(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

// The request line without its CRLF: METHOD SP TARGET SP HTTP/1.x. Fills method on success.
std::optional<RequestHead> check_request_line(std::string_view line, RequestHead& head) {
    const size_t first_space = line.find(' ');
    const size_t second_space = first_space == std::string_view::npos ? first_space : line.find(' ', first_space + 1);
    if (second_space == std::string_view::npos) return refused(400, "the request line is not 'METHOD TARGET HTTP/1.1'");
    const std::string_view method = line.substr(0, first_space);
    const std::string_view target = line.substr(first_space + 1, second_space - first_space - 1);
    const std::string_view version = line.substr(second_space + 1);
    if (method.empty() || !std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
        return refused(400, "the request method is not an upper-case word");
    if (target.empty() || std::any_of(target.begin(), target.end(), [](char c) {
            return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
        }))
        return refused(400, "the request target is empty or holds control characters");
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        if (version.substr(0, 5) == "HTTP/") return refused(505, "only HTTP/1.0 and HTTP/1.1 are served");
        return refused(400, "the request line does not end with the HTTP version");
    }
    if (method != "GET" && method != "HEAD" && method != "POST" && method != "OPTIONS")
        return refused(405, "the method " + std::string(method) + " is not served (GET, HEAD, POST, OPTIONS)");
    head.method = std::string(method);
    return std::nullopt;
}

// Methods are upper-case letters: a first byte that cannot start one is refused at once
// instead of waiting for a line that never ends.
bool starts_like_a_method(std::string_view received) {
    const size_t end = std::min(received.find(' '), received.size());
    return std::all_of(received.begin(), received.begin() + std::ptrdiff_t(end), [](char c) { return c >= 'A' && c <= 'Z'; }) &&
           end <= 16;
}

} // namespace

RequestHead inspect_request_head(std::string_view received, const HttpLimits& limits, uint64_t max_body_bytes) {
    received = received.substr(0, std::min(received.size(), limits.max_head_bytes + 1));
    RequestHead head;
    const auto over_head = [&] {
        return refused(431, "the request head is larger than " + bytes_text(limits.max_head_bytes));
    };

    size_t end = received.find('\n');
    if (end == std::string_view::npos) {
        if (!starts_like_a_method(received)) return refused(400, "the request does not start with an HTTP method");
        if (received.size() > limits.max_request_line_bytes)
            return refused(414, "the request line is longer than " + bytes_text(limits.max_request_line_bytes));
        return head;
    }
    if (end + 1 > limits.max_request_line_bytes)
        return refused(414, "the request line is longer than " + bytes_text(limits.max_request_line_bytes));
    if (end == 0 || received[end - 1] != '\r') return refused(400, "the request line does not end with CRLF");
    if (auto refusal = check_request_line(received.substr(0, end - 1), head)) return *refusal;

    size_t header_count = 0;
    bool has_transfer_encoding = false;
    for (size_t pos = end + 1;;) {
        end = received.find('\n', pos);
        if (end == std::string_view::npos) {
            if (received.size() - pos > limits.max_header_line_bytes)
                return refused(431, "a header line is longer than " + bytes_text(limits.max_header_line_bytes));
            if (received.size() > limits.max_head_bytes) return over_head();
            return RequestHead{};  // still arriving
        }
        const size_t line_bytes = end + 1 - pos;
        if (line_bytes > limits.max_header_line_bytes)
            return refused(431, "a header line is longer than " + bytes_text(limits.max_header_line_bytes));
        if (end == pos || received[end - 1] != '\r') return refused(400, "a header line does not end with CRLF");
        if (line_bytes == 2) {  // the blank line
            head.head_bytes = end + 1;
            if (head.head_bytes > limits.max_head_bytes) return over_head();
            break;
        }
        if (++header_count > limits.max_header_count)
            return refused(431, "the request has more than " + std::to_string(limits.max_header_count) + " header lines");
        const std::string_view line = received.substr(pos, end - 1 - pos);
        pos = end + 1;
        if (line.front() == ' ' || line.front() == '\t') return refused(400, "folded header lines are not accepted");
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) return refused(400, "a header line has no 'Name:'");
        const std::string_view name = line.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_token_char)) return refused(400, "a header name holds invalid characters");
        const std::string_view value = trimmed(line.substr(colon + 1));
        if (same_name(name, "Content-Length")) {
            const auto length = parse_length(value);
            if (!length) return refused(400, "the Content-Length is not a number of bytes");
            if (head.content_length && *head.content_length != *length) return refused(400, "two different Content-Lengths");
            head.content_length = length;
        } else if (same_name(name, "Transfer-Encoding")) {
            // httplib decodes exactly "chunked"; anything else would be read as a plain body.
            if (has_transfer_encoding || value != "chunked")
                return refused(501, "only 'Transfer-Encoding: chunked' is supported, once");
            has_transfer_encoding = true;
            head.chunked = true;
        }
    }
    if (head.chunked && head.content_length)
        return refused(400, "a request cannot have both Content-Length and Transfer-Encoding");
    if (head.method == "POST" && !head.chunked && !head.content_length)
        return refused(411, "a POST needs a Content-Length (or Transfer-Encoding: chunked)");
    if (head.content_length && *head.content_length > max_body_bytes) {
        RequestHead too_large = refused(413, "the request body (" + bytes_text(*head.content_length) + ") is larger than the " +
                                                 bytes_text(max_body_bytes) + " this server accepts (cflow serve --max-body-mib)");
        too_large.head_bytes = head.head_bytes;  // the caller reads and drops the declared body
        too_large.content_length = head.content_length;
        return too_large;
    }
    head.verdict = HeadVerdict::Complete;
    return head;
}

} // namespace cflow::server
