#include "cflow/remote/http_transport.h"

namespace cflow::remote {
namespace {

bool same_name(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

} // namespace

std::string HttpResponseHead::header(std::string_view name) const {
    for (const auto& [key, value] : headers)
        if (same_name(key, name)) return value;
    return {};
}

} // namespace cflow::remote
