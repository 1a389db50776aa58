#pragma once
// The sampling options shared by the text-generating commands, with generate's names and
// defaults: -n/--n-predict, --temp, --top-k, --top-p, --min-p, --repeat-penalty,
// --repeat-last-n, --seed (-1 = random).
#include <cstdint>
#include <set>
#include <string>

#include "cflow/engine/generation/sampler.h"
#include "cli_args.h"

namespace cflow::cli {

// The option names, to merge into an ArgSpec's valued set.
std::set<std::string> sampling_option_names();

struct SamplingArgs {
    SamplingParams sampling;
    int32_t max_tokens = 0;
};

// The first bad option wins; its message names the option and the value.
Result<SamplingArgs> parse_sampling_args(const Args& args, int32_t default_max_tokens);

} // namespace cflow::cli
