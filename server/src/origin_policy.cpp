#include "cflow/server/origin_policy.h"

#include <algorithm>
#include <cctype>

namespace cflow::server {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// "host", "host:port", "[v6]" or "[v6]:port" -> the host part, lower case, brackets kept.
std::string host_part(std::string_view authority) {
    if (!authority.empty() && authority.front() == '[') {
        const size_t close = authority.find(']');
        return lower(close == std::string_view::npos ? authority : authority.substr(0, close + 1));
    }
    return lower(authority.substr(0, authority.find(':')));
}

bool is_ipv4_literal(std::string_view host) {
    int parts = 0;
    size_t i = 0;
    while (i <= host.size()) {
        size_t digits = 0;
        int value = 0;
        while (i < host.size() && std::isdigit(static_cast<unsigned char>(host[i])) && digits < 4) {
            value = value * 10 + (host[i] - '0');
            ++i;
            ++digits;
        }
        if (digits == 0 || digits > 3 || value > 255) return false;
        ++parts;
        if (i == host.size()) break;
        if (host[i] != '.') return false;
        ++i;
    }
    return parts == 4;
}

bool is_literal_or_local(std::string_view host) {
    return host == "localhost" || is_ipv4_literal(host) || (host.size() > 2 && host.front() == '[' && host.back() == ']');
}

// "http://host:port" -> "host:port" (lower case), "" for anything else ("null", no scheme).
std::string origin_authority(std::string_view origin) {
    const size_t scheme_end = origin.find("://");
    if (scheme_end == std::string_view::npos) return {};
    std::string_view rest = origin.substr(scheme_end + 3);
    return lower(rest.substr(0, rest.find('/')));
}

bool cors_allows(const OriginPolicy& policy, std::string_view origin) {
    const std::string wanted = lower(origin);
    return std::any_of(policy.cors_origins.begin(), policy.cors_origins.end(),
                       [&](const std::string& allowed) { return allowed == "*" || lower(allowed) == wanted; });
}

bool same_origin(std::string_view host_header, std::string_view origin) {
    const std::string authority = origin_authority(origin);
    return !authority.empty() && authority == lower(host_header);
}

} // namespace

std::optional<std::string> refuse_request(const OriginPolicy& policy, std::string_view host_header,
                                          std::string_view origin_header) {
    if (!host_header.empty()) {
        const std::string host = host_part(host_header);
        const bool allowed = is_literal_or_local(host) ||
                             std::any_of(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                                         [&](const std::string& name) { return lower(name) == host; });
        if (!allowed)
            return "the request was sent to the host name '" + host +
                   "', which this server does not answer (a web page may be using DNS rebinding); start cflow serve "
                   "with --allowed-host " + host + " to allow it";
    }
    if (!origin_header.empty() && !same_origin(host_header, origin_header) && !cors_allows(policy, origin_header))
        return "cross-origin request from " + std::string(origin_header) +
               " refused (a web page cannot use the local model); start cflow serve with --cors " +
               std::string(origin_header) + " to allow it";
    return std::nullopt;
}

std::string allowed_cors_origin(const OriginPolicy& policy, std::string_view host_header, std::string_view origin_header) {
    if (origin_header.empty() || same_origin(host_header, origin_header) || !cors_allows(policy, origin_header)) return {};
    return std::string(origin_header);
}

} // namespace cflow::server
