#pragma once
// Validators for the CLI11 declarations (cli_parser.cpp, session_args.cpp): each checks one
// option's text before it is converted, so a bad value fails while parsing with a message that
// names the option and the value, and the accepted range shows in --help.
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace cflow::cli {

// A base-10 integer in [lo, hi]: "'abc' is not an integer", "5000 is out of range [0, 1024]".
CLI::Validator integer_in(long long lo, long long hi);
// A finite decimal number in [lo, hi].
CLI::Validator number_in(double lo, double hi);

// A name `parse` accepts, replaced by the enum's number for CLI11 to convert; anything else fails
// with `error` + " (got 'VALUE')". `names` is what --help shows (e.g. "f16|f32").
template <class Enum>
CLI::Validator enum_choice(std::function<std::optional<Enum>(std::string_view)> parse, std::string names,
                           std::string error) {
    return CLI::Validator(
        [parse = std::move(parse), error = std::move(error)](std::string& value) -> std::string {
            const auto parsed = parse(value);
            if (!parsed) return error + " (got '" + value + "')";
            value = std::to_string(static_cast<long long>(*parsed));
            return {};
        },
        std::move(names));
}

// A string `accept` takes as is; otherwise `error(value)` is the message.
CLI::Validator text_check(std::function<bool(const std::string&)> accept,
                          std::function<std::string(const std::string&)> error, std::string description = "");

} // namespace cflow::cli
