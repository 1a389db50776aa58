#pragma once
// The limits the server puts on every connection before cpp-httplib reads it. Debian's
// cpp-httplib 0.11.4 reads a header line until its newline however long it is (1 GiB without a
// newline took 8.3 GB), has no deadline for a whole request head (one header line every 2 s kept
// a thread forever), reads chunked bodies without a size limit, and listens with a backlog of 5:
// the server checks the head itself, in the socket's receive buffer (MSG_PEEK), before httplib
// reads a byte of it (guarded_http_server.h), and counts bodies as they arrive.
#include <chrono>
#include <cstddef>

namespace cflow::server {

struct HttpLimits {
    size_t max_request_line_bytes = size_t(8) << 10;   // "POST /v1/... HTTP/1.1\r\n"; longer: 414
    size_t max_header_line_bytes = size_t(8) << 10;    // one "Name: value\r\n"; longer: 431
    size_t max_head_bytes = size_t(64) << 10;          // request line + headers + blank line; more: 431
    size_t max_header_count = 100;                     // more: 431
    std::chrono::milliseconds head_deadline{10000};    // from the connection's turn to its blank line: else 408
    std::chrono::milliseconds body_deadline{60000};    // from the head to the body's last byte: else 408
    unsigned max_connections_per_client = 64;          // open at once from one address: beyond, 429
    unsigned max_connections = 512;                    // open at once in all: beyond, 503
    int listen_backlog = 511;                          // connections the kernel holds before accept()
};

} // namespace cflow::server
