#pragma once
// The sampling options shared by the text-generating commands (generate, chat), declared once:
// -n/--n-predict, --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n,
// --seed (-1 = random).
#include <cstdint>

#include "cflow/engine/generation/sampler.h"

namespace CLI {
class App;
} // namespace CLI

namespace cflow::cli {

struct SamplingArgs {
    SamplingParams sampling;  // its defaults are the options' defaults
    int32_t max_tokens = 128;
    long long seed = -1;      // -1: a random seed, drawn by resolved()

    // The sampling parameters with the seed drawn when --seed was -1.
    SamplingArgs resolved() const;
};

// Adds the options bound to `args`; its current max_tokens is -n's default.
void add_sampling_options(CLI::App& app, SamplingArgs& args);

} // namespace cflow::cli
