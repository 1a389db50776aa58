#include "cli_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace cflow::cli {
namespace {

std::string number_text(double v) {
    std::string text = std::to_string(v);
    if (text.find('.') != std::string::npos) {
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text.pop_back();
    }
    return text;
}

} // namespace

CLI::Validator integer_in(long long lo, long long hi) {
    return CLI::Validator(
        [lo, hi](std::string& value) -> std::string {
            errno = 0;
            char* end = nullptr;
            const long long n = std::strtoll(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || errno == ERANGE) return "'" + value + "' is not an integer";
            if (n < lo || n > hi)
                return value + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
            return {};
        },
        "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator number_in(double lo, double hi) {
    return CLI::Validator(
        [lo, hi](std::string& value) -> std::string {
            char* end = nullptr;
            const double n = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0' || !std::isfinite(n)) return "'" + value + "' is not a number";
            if (n < lo || n > hi) return value + " is out of range [" + number_text(lo) + ", " + number_text(hi) + "]";
            return {};
        },
        "[" + number_text(lo) + ", " + number_text(hi) + "]");
}

CLI::Validator text_check(std::function<bool(const std::string&)> accept,
                          std::function<std::string(const std::string&)> error, std::string description) {
    return CLI::Validator(
        [accept = std::move(accept), error = std::move(error)](std::string& value) -> std::string {
            return accept(value) ? std::string() : error(value);
        },
        std::move(description));
}

} // namespace cflow::cli
