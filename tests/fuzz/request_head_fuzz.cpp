// libFuzzer target: the request head check in front of cpp-httplib (server/src/request_head.cpp).
// The first two bytes choose small limits so every limit is reached; the rest is what a client
// sent. Beyond surviving any bytes: a complete head ends with its blank line inside the limit and
// is complete on its own, and a prefix that is refused stays refused when more bytes arrive.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cflow/server/request_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace cflow::server;
    if (size < 2) return 0;
    HttpLimits limits;
    limits.max_request_line_bytes = 16 + data[0] % 64;
    limits.max_header_line_bytes = 8 + data[1] % 64;
    limits.max_head_bytes = 32 + (data[0] ^ data[1]) % 256;
    limits.max_header_count = 1 + data[1] % 8;
    const uint64_t max_body = data[0] % 128;
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);

    const RequestHead head = inspect_request_head(bytes, limits, max_body);
    if (head.verdict == HeadVerdict::Complete) {
        if (head.head_bytes > limits.max_head_bytes || head.head_bytes > bytes.size() || head.head_bytes < 4) std::abort();
        if (bytes.substr(head.head_bytes - 4, 4) != "\r\n\r\n") std::abort();
        if (head.content_length && *head.content_length > max_body) std::abort();
        if (inspect_request_head(bytes.substr(0, head.head_bytes), limits, max_body).verdict != HeadVerdict::Complete)
            std::abort();
    } else if (head.verdict == HeadVerdict::Refused) {
        if (head.status < 400 || head.status > 505 || head.message.empty()) std::abort();
    }
    const RequestHead prefix = inspect_request_head(bytes.substr(0, bytes.size() / 2), limits, max_body);
    if (prefix.verdict == HeadVerdict::Refused && head.verdict != HeadVerdict::Refused) std::abort();
    return 0;
}
