#include "cflow/remote/httplib_transport.h"

#include <netdb.h>
#include <sys/socket.h>

#include <chrono>

#include <httplib.h>

#include "cflow/remote/endpoint_url.h"

namespace cflow::remote {
namespace {

using Clock = std::chrono::steady_clock;

// The resolver's own answer first: httplib reports a name that does not resolve and a refused
// connection alike (Error::Connection), and a person needs to know which.
TransportResult resolve(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
    if (found) ::freeaddrinfo(found);
    if (rc == 0) return {};
    return {TransportFailure::HostNotFound, ::gai_strerror(rc)};
}

// OpenSSL's X509_V_ERR_* codes a person meets (x509_vfy.h), worded without linking libcrypto here.
std::string verify_error_text(long code) {
    switch (code) {
    case 2: return "unable to get the issuer's certificate";
    case 9: return "certificate not yet valid";
    case 10: return "certificate has expired";
    case 18: return "self-signed certificate";
    case 19: return "self-signed certificate in the chain";
    case 20: return "unable to get the local issuer's certificate";
    case 21: return "unable to verify the first certificate";
    default: return "verify error " + std::to_string(code);
    }
}

class HttplibTransport final : public HttpTransport {
public:
    TransportResult send(const HttpRequest& request, const HeadCallback& on_head, const ChunkCallback& on_chunk) override {
        auto url = parse_endpoint_url(request.url);
        if (!url) return {TransportFailure::Other, url.error()};
        if (TransportResult r = resolve(url->host); r.failure != TransportFailure::None) return r;

        httplib::Client client(url->origin());
        if (!client.is_valid()) return {TransportFailure::Other, "cannot make an HTTP client for " + url->origin()};
        client.set_connection_timeout(std::chrono::milliseconds(request.connect_timeout_ms));
        client.set_read_timeout(std::chrono::milliseconds(request.read_timeout_ms));
        client.set_write_timeout(std::chrono::milliseconds(request.read_timeout_ms));
        if (url->scheme == "https") {
            client.enable_server_certificate_verification(true);
            if (!request.ca_file.empty()) client.set_ca_cert_path(request.ca_file);
        }

        httplib::Request req;
        req.method = request.method;
        req.path = url->path.empty() ? "/" : url->path;
        for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
        if (request.method == "POST") {
            req.body = request.body;
            req.headers.emplace("Content-Type", request.content_type);
        }
        bool head_seen = false;
        auto last_activity = Clock::now();
        req.response_handler = [&](const httplib::Response& response) {
            head_seen = true;
            last_activity = Clock::now();
            HttpResponseHead head;
            head.status = response.status;
            for (const auto& [name, value] : response.headers) head.headers.emplace_back(name, value);
            return on_head(head);
        };
        req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
            last_activity = Clock::now();
            return on_chunk(std::string_view(data, length));
        };
        httplib::Response response;
        httplib::Error error = httplib::Error::Success;
        const bool sent = client.send(req, response, error);
        if (sent && error == httplib::Error::Success) return {};
        const std::string detail = httplib::to_string(error);
        switch (error) {
        case httplib::Error::Success:
            return {};
        case httplib::Error::Connection:
            return {TransportFailure::Refused, detail};
        case httplib::Error::ConnectionTimeout:
            return {TransportFailure::ConnectTimeout, detail};
        case httplib::Error::Canceled:
            return {TransportFailure::Cancelled, detail};
        case httplib::Error::SSLServerVerification: {
            const long code = client.get_openssl_verify_result();
            // 0 is X509_V_OK: the chain was trusted, so the name check (httplib's own) failed.
            if (code == 0) return {TransportFailure::TlsHostname, detail};
            return {TransportFailure::TlsUntrusted, verify_error_text(code)};
        }
        case httplib::Error::SSLConnection:
        case httplib::Error::SSLLoadingCerts:
            return {TransportFailure::TlsOther, detail};
        case httplib::Error::Read: {
            // httplib says "Read" for a time-out and for a closed connection alike: the silence tells.
            const auto silent_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_activity).count();
            if (silent_ms + 50 >= int64_t(request.read_timeout_ms)) return {TransportFailure::ReadTimeout, detail};
            return {TransportFailure::ConnectionLost, head_seen ? detail : detail + " before the response head"};
        }
        case httplib::Error::Write:
            return {TransportFailure::ConnectionLost, detail};
        default:
            return {TransportFailure::Other, detail};
        }
    }
};

} // namespace

std::unique_ptr<HttpTransport> make_httplib_transport() { return std::make_unique<HttplibTransport>(); }

} // namespace cflow::remote
