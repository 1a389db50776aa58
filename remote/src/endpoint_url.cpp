#include "cflow/remote/endpoint_url.h"

#include <charconv>

namespace cflow::remote {

std::string EndpointUrl::origin() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    return scheme + "://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string EndpointUrl::route(std::string_view suffix) const { return origin() + path + std::string(suffix); }

Result<EndpointUrl> parse_endpoint_url(std::string_view text) {
    auto bad = [&](std::string_view why) {
        return make_error(ErrorKind::InvalidInput, "endpoint URL '" + std::string(text) + "': " + std::string(why));
    };
    EndpointUrl url;
    std::string_view rest;
    if (text.starts_with("http://")) {
        url.scheme = "http";
        url.port = 80;
        rest = text.substr(7);
    } else if (text.starts_with("https://")) {
        url.scheme = "https";
        url.port = 443;
        rest = text.substr(8);
    } else {
        return bad("expected http://HOST[:PORT]/v1 or https://...");
    }
    const size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (authority.find('@') != std::string_view::npos) return bad("user:password@ is not supported (use --api-key-env)");
    if (path.find_first_of("?#") != std::string_view::npos) return bad("a query or fragment is not part of a base URL");
    std::string_view port_text;
    if (authority.starts_with("[")) {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) return bad("unclosed '[' of an IPv6 address");
        url.host = std::string(authority.substr(1, close - 1));
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') return bad("expected ':PORT' after the IPv6 address");
            port_text = after.substr(1);
        }
    } else {
        const size_t colon = authority.rfind(':');
        url.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    }
    if (url.host.empty()) return bad("no host");
    if (!port_text.empty() || authority.ends_with(":")) {
        unsigned port = 0;
        auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535)
            return bad("the port is not a number from 1 to 65535");
        url.port = uint16_t(port);
    }
    while (path.ends_with("/")) path.remove_suffix(1);
    url.path = std::string(path);
    return url;
}

} // namespace cflow::remote
