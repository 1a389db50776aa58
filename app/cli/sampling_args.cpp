#include "sampling_args.h"

#include <random>

#include "cli_options.h"

namespace cflow::cli {

SamplingArgs SamplingArgs::resolved() const {
    SamplingArgs out = *this;
    out.sampling.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
    return out;
}

void add_sampling_options(CLI::App& app, SamplingArgs& args) {
    app.add_option("-n,--n-predict", args.max_tokens, "tokens to generate at most")
        ->check(integer_in(0, 1 << 24))->type_name("N")->capture_default_str();
    app.add_option("--temp", args.sampling.temperature, "sampling temperature (0: greedy)")
        ->check(number_in(0.0, 100.0))->type_name("T")->capture_default_str();
    app.add_option("--top-k", args.sampling.top_k, "sample among the K most likely tokens (0: off)")
        ->check(integer_in(0, 1 << 30))->type_name("K")->capture_default_str();
    app.add_option("--top-p", args.sampling.top_p, "nucleus sampling: the most likely tokens up to probability P (1: off)")
        ->check(number_in(0.0, 1.0))->type_name("P")->capture_default_str();
    app.add_option("--min-p", args.sampling.min_p, "drop tokens below P times the top token's probability (0: off)")
        ->check(number_in(0.0, 1.0))->type_name("P")->capture_default_str();
    app.add_option("--repeat-penalty", args.sampling.repeat_penalty, "penalty on recently generated tokens (1: off)")
        ->check(number_in(0.0, 100.0))->type_name("R")->capture_default_str();
    app.add_option("--repeat-last-n", args.sampling.repeat_last_n, "how many recent tokens --repeat-penalty looks at")
        ->check(integer_in(0, 1 << 24))->type_name("N")->capture_default_str();
    app.add_option("--seed", args.seed, "sampling seed (-1: random)")
        ->check(integer_in(-1, 1ll << 62))->type_name("S")->capture_default_str();
}

} // namespace cflow::cli
