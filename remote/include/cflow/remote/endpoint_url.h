#pragma once
// An endpoint's base URL (http(s)://host[:port][/path], e.g. http://10.0.0.2:8080/v1) taken apart,
// and the URLs of its routes.
#include <cstdint>
#include <string>
#include <string_view>

#include "cflow/base/result.h"

namespace cflow::remote {

struct EndpointUrl {
    std::string scheme;  // http or https
    std::string host;    // without the brackets of an IPv6 literal
    uint16_t port = 0;   // the scheme's default when the URL has none
    std::string path;    // without a trailing '/'; may be empty

    std::string origin() const;                        // scheme://host:port (IPv6 bracketed)
    std::string route(std::string_view suffix) const;  // origin + path + suffix ("/chat/completions")
};

// Errors say what is wrong with the text: "endpoint URL 'x': expected http:// or https://".
Result<EndpointUrl> parse_endpoint_url(std::string_view text);

} // namespace cflow::remote
