#pragma once
// One HTTP exchange, streamed, behind an interface: the protocol (remote_client.h) is written
// against it so the desktop app can plug in Qt Network with the same logic. The CLI's
// implementation is httplib_transport.h.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cflow::remote {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method = "GET";  // GET or POST
    std::string url;             // absolute: http(s)://host[:port]/path
    HttpHeaders headers;
    std::string body;            // POST only
    std::string content_type = "application/json";
    uint32_t connect_timeout_ms = 10'000;
    uint32_t read_timeout_ms = 60'000;  // the longest silence between two reads: a stalled server ends here
    std::string ca_file;                // https: a PEM file of trusted CAs; empty: the system's
};

struct HttpResponseHead {
    int status = 0;
    HttpHeaders headers;

    // The first header of that name (case-insensitive); empty when absent.
    std::string header(std::string_view name) const;
};

// Why no complete response came. The protocol turns each into a message (diagnosis.h).
enum class TransportFailure : uint8_t {
    None,
    HostNotFound,      // the name did not resolve
    Refused,           // nothing listens there (or a firewall said no)
    ConnectTimeout,    // the connection was not accepted in connect_timeout_ms
    TlsUntrusted,      // the certificate does not chain to a trusted CA
    TlsHostname,       // the certificate is for another name
    TlsOther,          // the TLS handshake failed otherwise (not TLS on that port, old protocol)
    ReadTimeout,       // no byte for read_timeout_ms
    ConnectionLost,    // the server closed or reset the connection before the response ended
    Cancelled,         // a callback returned false
    Other,
};

struct TransportResult {
    TransportFailure failure = TransportFailure::None;
    std::string detail;  // the library's or the OS's words, for the message
};

// on_head: the status and headers, before any body byte; false cancels.
// on_chunk: each piece of the body as it arrives (any split); false cancels.
using HeadCallback = std::function<bool(const HttpResponseHead&)>;
using ChunkCallback = std::function<bool(std::string_view)>;

class HttpTransport {
public:
    virtual ~HttpTransport() = default;
    // Blocks until the response ends, fails or a callback cancels. Never throws.
    virtual TransportResult send(const HttpRequest& request, const HeadCallback& on_head, const ChunkCallback& on_chunk) = 0;
};

} // namespace cflow::remote
