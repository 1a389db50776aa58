#pragma once
// Minimal command-line parsing for the cflow subcommands: positionals, --key value, --flag.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cflow/base/result.h"

namespace cflow::cli {

struct ArgSpec {
    std::set<std::string> valued;  // options taking a value, e.g. "-o", "--quant"
    std::set<std::string> flags;   // boolean options, e.g. "--json"
};

class Args {
public:
    static Result<Args> parse(const std::vector<std::string>& argv, const ArgSpec& spec);

    const std::vector<std::string>& positionals() const { return positionals_; }
    bool flag(const std::string& name) const { return flags_.count(name) != 0; }
    std::optional<std::string> value(const std::string& name) const;
    // Typed accessors: an error names the option and the bad value.
    Result<long long> integer(const std::string& name, long long fallback, long long min, long long max) const;
    Result<double> number(const std::string& name, double fallback, double min, double max) const;

private:
    std::vector<std::string> positionals_;
    std::set<std::string> flags_;
    std::map<std::string, std::string> values_;
};

} // namespace cflow::cli
