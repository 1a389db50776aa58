#pragma once
// The request head as far as it has arrived, judged against HttpLimits before cpp-httplib reads
// it: complete, still arriving, or refused with the HTTP status and a message naming the limit.
// Stricter than httplib where httplib is lax in ways an attacker uses: a line ending in a bare
// LF, a folded header line, both Content-Length and Transfer-Encoding, or two different
// Content-Lengths are refused instead of skipped or guessed at (request smuggling).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cflow/server/http_limits.h"

namespace cflow::server {

enum class HeadVerdict : uint8_t {
    NeedMore,  // no blank line yet and no limit passed
    Complete,  // the whole head is here and acceptable
    Refused,   // status and message say why
};

struct RequestHead {
    HeadVerdict verdict = HeadVerdict::NeedMore;
    int status = 0;                // the refusal's HTTP status (400, 405, 411, 413, 414, 431, 501, 505)
    std::string message;           // the refusal's reason, for the client
    size_t head_bytes = 0;         // Complete (and 413): through the blank line
    std::string method;            // Complete: "GET", "POST", ...
    bool chunked = false;          // Complete: Transfer-Encoding: chunked
    std::optional<uint64_t> content_length;  // Complete (and 413): the declared body size
};

// `received`: the first bytes of the connection (at most limits.max_head_bytes + 1 are looked
// at). A body declared larger than `max_body_bytes` is refused here (413), before it is read.
RequestHead inspect_request_head(std::string_view received, const HttpLimits& limits, uint64_t max_body_bytes);

} // namespace cflow::server
