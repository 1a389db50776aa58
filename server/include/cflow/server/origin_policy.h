#pragma once
// Which browsers' requests the local server answers. A web page the user visits can send
// requests to 127.0.0.1 (a `text/plain` POST needs no preflight) or, through DNS rebinding, make
// its own host name resolve to 127.0.0.1: either way it would drive the local model. So:
// - Host: the name the request was sent to must be an IP literal, "localhost", or a name the user
//   allowed (--allowed-host): a rebinding page can only send its own DNS name.
// - Origin (set by browsers on cross-origin and on POST requests): a request from another origin
//   is refused unless that origin was allowed (--cors ORIGIN, or "*"); the same origin passes.
// Clients that are not browsers send no Origin and pass when their Host does.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cflow::server {

struct OriginPolicy {
    std::vector<std::string> allowed_hosts;  // host names (no port) accepted besides IP literals and localhost
    std::vector<std::string> cors_origins;   // "scheme://host[:port]" exactly, or "*" for any
};

// Why a request with these headers is refused (for a 403 body), or nullopt when it is answered.
// host_header / origin_header: "" when absent.
std::optional<std::string> refuse_request(const OriginPolicy& policy, std::string_view host_header,
                                          std::string_view origin_header);

// The Access-Control-Allow-Origin value for an answered request from `origin_header` ("" when
// the response needs none: no Origin, or the same origin).
std::string allowed_cors_origin(const OriginPolicy& policy, std::string_view host_header, std::string_view origin_header);

} // namespace cflow::server
