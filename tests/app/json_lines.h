#pragma once
// The CLI's --json output of commands that print one JSON object per line (bench experts, ...).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cflow::test {

inline std::vector<nlohmann::json> json_lines(const std::string& text) {
    std::vector<nlohmann::json> lines;
    size_t from = 0;
    for (size_t end; (end = text.find('\n', from)) != std::string::npos; from = end + 1)
        lines.push_back(nlohmann::json::parse(text.substr(from, end - from)));
    return lines;
}

} // namespace cflow::test
