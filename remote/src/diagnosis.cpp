#include "cflow/remote/diagnosis.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cflow/remote/endpoint_url.h"

namespace cflow::remote {
namespace {

std::string with_detail(std::string message, const std::string& detail) {
    if (!detail.empty()) message += " (" + detail + ")";
    return message;
}

std::string host_of(std::string_view url) {
    auto parsed = parse_endpoint_url(url);
    return parsed ? parsed->host : std::string(url);
}

// error.message of OpenAI's error JSON, else the body's first line (bounded).
std::string server_words(std::string_view body) {
    nlohmann::json root = nlohmann::json::parse(body, nullptr, false);
    if (!root.is_discarded() && root.is_object()) {
        auto e = root.find("error");
        if (e != root.end() && e->is_object() && e->contains("message") && (*e)["message"].is_string())
            return (*e)["message"].get<std::string>();
        if (e != root.end() && e->is_string()) return e->get<std::string>();
    }
    std::string_view first = body.substr(0, body.find_first_of("\r\n"));
    return std::string(first.substr(0, 200));
}

// "1.5 s", "120 s": a time-out as people read it.
std::string seconds_text(uint32_t ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", ms / 1000.0);
    return text;
}

} // namespace

Error diagnose_transport(const TransportResult& result, std::string_view url, const HttpRequest& request,
                         const DiagnosisHints& hints) {
    const std::string u(url);
    const std::string host = host_of(url);
    switch (result.failure) {
    case TransportFailure::None:
        break;
    case TransportFailure::HostNotFound:
        return make_error(ErrorKind::Io, with_detail("cannot resolve host '" + host + "' (DNS): check the endpoint's name",
                                                     result.detail));
    case TransportFailure::Refused:
        return make_error(ErrorKind::Io, with_detail(u + ": connection refused: is the server running and listening on that "
                                                         "address and port (cflow serve --host ADDRESS)?",
                                                     result.detail));
    case TransportFailure::ConnectTimeout:
        return make_error(ErrorKind::Io, u + ": no connection within " + seconds_text(request.connect_timeout_ms) +
                                             " (time-out): the host does not answer (down, a firewall, a wrong address?)");
    case TransportFailure::TlsUntrusted:
        return make_error(ErrorKind::Io,
                          with_detail(u + ": TLS: the server's certificate is not trusted" +
                                          (request.ca_file.empty() ? " (" + hints.ca_file + ")"
                                                                   : " by the CA in " + request.ca_file),
                                      result.detail));
    case TransportFailure::TlsHostname:
        return make_error(ErrorKind::Io, with_detail(u + ": TLS: the server's certificate is not for host '" + host + "'",
                                                     result.detail));
    case TransportFailure::TlsOther:
        return make_error(ErrorKind::Io, with_detail(u + ": TLS handshake failed (is it https on that port?)", result.detail));
    case TransportFailure::ReadTimeout:
        return make_error(ErrorKind::Io, u + ": the server sent nothing for " +
                                             seconds_text(request.read_timeout_ms) + " (time-out)");
    case TransportFailure::ConnectionLost:
        return make_error(ErrorKind::Io, with_detail(u + ": the server closed the connection before the response ended",
                                                     result.detail));
    case TransportFailure::Cancelled:
        return cancelled_error(u);
    case TransportFailure::Other:
        break;
    }
    return make_error(ErrorKind::Io, with_detail(u + ": the request failed", result.detail));
}

Error diagnose_status(int status, std::string_view body, std::string_view url, const DiagnosisHints& hints) {
    const std::string u(url);
    const std::string words = server_words(body);
    const std::string said = words.empty() ? std::string() : ": the server says: " + words;
    switch (status) {
    case 401:
        return make_error(ErrorKind::InvalidInput, u + ": HTTP 401: the API key was refused or is missing (" +
                                                       hints.api_key + ")" + said);
    case 403:
        return make_error(ErrorKind::InvalidInput, u + ": HTTP 403: the API key may not use this endpoint" + said);
    case 404: {
        std::string hint = ": wrong path";
        auto parsed = parse_endpoint_url(url);
        if (parsed && parsed->path.find("/v1") == std::string::npos)
            hint += " (OpenAI-compatible servers answer under /v1: try " + parsed->origin() + "/v1 as the endpoint)";
        else
            hint += " (is the endpoint's base URL the one ending in /v1?)";
        return make_error(ErrorKind::InvalidInput, u + ": HTTP 404" + hint + said);
    }
    case 429:
        return make_error(ErrorKind::Io, u + ": HTTP 429: rate limited" + said);
    case 503:
        return make_error(ErrorKind::Io, u + ": HTTP 503: the server is busy or loading" + said);
    default:
        break;
    }
    return make_error(status >= 500 ? ErrorKind::Io : ErrorKind::InvalidInput,
                      u + ": HTTP " + std::to_string(status) + said);
}

} // namespace cflow::remote
