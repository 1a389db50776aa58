#include "sampling_args.h"

#include <random>

namespace cflow::cli {

std::set<std::string> sampling_option_names() {
    return {"-n", "--n-predict", "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--repeat-last-n", "--seed"};
}

Result<SamplingArgs> parse_sampling_args(const Args& args, int32_t default_max_tokens) {
    std::string error;
    auto integer = [&](const char* name, long long fallback, long long lo, long long hi) {
        auto r = args.integer(name, fallback, lo, hi);
        if (!r && error.empty()) error = r.error();
        return r ? *r : fallback;
    };
    auto number = [&](const char* name, double fallback, double lo, double hi) {
        auto r = args.number(name, fallback, lo, hi);
        if (!r && error.empty()) error = r.error();
        return r ? *r : fallback;
    };
    SamplingArgs out;
    out.max_tokens = int32_t(integer(args.value("-n") ? "-n" : "--n-predict", default_max_tokens, 0, 1 << 24));
    out.sampling.temperature = float(number("--temp", 0.8, 0.0, 100.0));
    out.sampling.top_k = int32_t(integer("--top-k", 40, 0, 1 << 30));
    out.sampling.top_p = float(number("--top-p", 0.95, 0.0, 1.0));
    out.sampling.min_p = float(number("--min-p", 0.05, 0.0, 1.0));
    out.sampling.repeat_penalty = float(number("--repeat-penalty", 1.0, 0.0, 100.0));
    out.sampling.repeat_last_n = int32_t(integer("--repeat-last-n", 64, 0, 1 << 24));
    const long long seed = integer("--seed", -1, -1, 1ll << 62);
    if (!error.empty()) return make_error(error);
    out.sampling.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
    return out;
}

} // namespace cflow::cli
