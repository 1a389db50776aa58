#include "cflow/server/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "cflow/base/utf8.h"

namespace cflow::server {
namespace {

LogprobCandidate candidate(const Tokenizer& tokenizer, int32_t id, double logprob) {
    LogprobCandidate c;
    c.id = id;
    c.bytes = tokenizer.token_bytes(id);
    c.token = sanitize_utf8(c.bytes);
    c.logprob = std::isfinite(logprob) ? logprob : kUnsampleableLogprob;
    return c;
}

} // namespace

TokenLogprob token_logprob(const Tokenizer& tokenizer, int32_t token, std::span<const float> logits, uint32_t top_n) {
    const auto usable = [](float logit) { return !std::isnan(logit) && logit != -std::numeric_limits<float>::infinity(); };
    // In double, from the largest logit: a 150k-token row's sum stays exact to ~1e-12.
    double max_logit = -std::numeric_limits<double>::infinity();
    for (const float logit : logits)
        if (usable(logit)) max_logit = std::max(max_logit, double(logit));
    double sum = 0;
    for (const float logit : logits)
        if (usable(logit)) sum += std::exp(double(logit) - max_logit);
    const double log_norm = max_logit + std::log(sum);
    const auto logprob_of = [&](int32_t id) {
        if (id < 0 || size_t(id) >= logits.size() || !usable(logits[size_t(id)]))
            return -std::numeric_limits<double>::infinity();
        return double(logits[size_t(id)]) - log_norm;
    };

    TokenLogprob entry;
    entry.chosen = candidate(tokenizer, token, logprob_of(token));
    std::vector<int32_t> ids;
    ids.reserve(logits.size());
    for (size_t i = 0; i < logits.size(); ++i)
        if (usable(logits[i])) ids.push_back(int32_t(i));
    const size_t n = std::min<size_t>(top_n, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] != logits[size_t(b)] ? logits[size_t(a)] > logits[size_t(b)] : a < b;
    });
    for (size_t i = 0; i < n; ++i) entry.top.push_back(candidate(tokenizer, ids[i], logprob_of(ids[i])));
    return entry;
}

} // namespace cflow::server
