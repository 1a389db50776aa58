#pragma once
// Prometheus's text exposition format (what vLLM and llama.cpp's server answer on GET /metrics),
// read into samples. One sample per line `name{label="value",...} value [timestamp]`; `# HELP` and
// `# TYPE` lines and blank lines are skipped. Values may be NaN, +Inf or -Inf; label values may
// hold the escapes \\, \" and \n. A line that is none of these is an error naming its line number.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cflow/base/result.h"

namespace cflow::remote {

struct PrometheusSample {
    std::string name;                                         // e.g. vllm:num_requests_running
    std::vector<std::pair<std::string, std::string>> labels;  // in the line's order, unescaped
    double value = 0;

    // The value of label `key`; empty when the sample has none.
    std::string label(std::string_view key) const;
};

Result<std::vector<PrometheusSample>> parse_prometheus_text(std::string_view text);

} // namespace cflow::remote
