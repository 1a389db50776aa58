#include "cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace cflow::cli {

Result<Args> Args::parse(const std::vector<std::string>& argv, const ArgSpec& spec) {
    Args args;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.'))) {
            std::string name = a, inline_value;
            bool has_inline = false;
            if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
                name = a.substr(0, eq);
                inline_value = a.substr(eq + 1);
                has_inline = true;
            }
            if (spec.flags.count(name)) {
                if (has_inline) return make_error("option " + name + " takes no value");
                args.flags_.insert(name);
            } else if (spec.valued.count(name)) {
                if (has_inline) {
                    args.values_[name] = inline_value;
                } else {
                    if (i + 1 >= argv.size()) return make_error("option " + name + " needs a value");
                    args.values_[name] = argv[++i];
                }
            } else {
                return make_error("unknown option " + name);
            }
        } else {
            args.positionals_.push_back(a);
        }
    }
    return args;
}

std::optional<std::string> Args::value(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

Result<long long> Args::integer(const std::string& name, long long fallback, long long min, long long max) const {
    auto v = value(name);
    if (!v) return fallback;
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno == ERANGE)
        return make_error("option " + name + ": '" + *v + "' is not an integer");
    if (n < min || n > max)
        return make_error("option " + name + ": " + *v + " is out of range [" + std::to_string(min) + ", " +
                          std::to_string(max) + "]");
    return n;
}

Result<double> Args::number(const std::string& name, double fallback, double min, double max) const {
    auto v = value(name);
    if (!v) return fallback;
    char* end = nullptr;
    double n = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(n)) return make_error("option " + name + ": '" + *v + "' is not a number");
    if (n < min || n > max)
        return make_error("option " + name + ": " + *v + " is out of range [" + std::to_string(min) + ", " +
                          std::to_string(max) + "]");
    return n;
}

} // namespace cflow::cli
