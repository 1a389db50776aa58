// Sampling: repetition penalty, greedy / top-k / temperature / top-p / min-p, portable seeded draw.
// The stage order is documented in sampler.h.
#include "cflow/engine/generation/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace cflow {

int32_t greedy_token(std::span<const float> logits) {
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[size_t(best)]) best = int32_t(i);
    return best;
}

Sampler::Sampler(SamplingParams params) : params_(params), rng_(params.seed) {}

double Sampler::next_uniform() {
    // 53 high bits -> [0, 1); std::uniform_real_distribution differs between standard libraries.
    return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent) {
    const size_t vocab = logits.size();
    if (vocab == 0) return -1;

    // 1. Sanitize: NaN can never win; +inf becomes the largest finite value so exp() stays finite.
    work_.resize(vocab);  // [vocab] f32
    for (size_t i = 0; i < vocab; ++i) {
        const float logit = logits[i];
        if (std::isnan(logit))
            work_[i] = -std::numeric_limits<float>::infinity();
        else if (logit == std::numeric_limits<float>::infinity())
            work_[i] = std::numeric_limits<float>::max();
        else
            work_[i] = logit;
    }

    // 2. Repetition penalty, once per distinct recent id.
    if (params_.repeat_penalty != 1.0f && params_.repeat_penalty > 0.0f && params_.repeat_last_n != 0 && !recent.empty()) {
        const size_t window = params_.repeat_last_n < 0
                                  ? recent.size()
                                  : std::min(recent.size(), static_cast<size_t>(params_.repeat_last_n));
        std::unordered_set<int32_t> seen;
        for (int32_t id : recent.subspan(recent.size() - window)) {
            if (id < 0 || static_cast<size_t>(id) >= vocab || !seen.insert(id).second) continue;
            float& logit = work_[static_cast<size_t>(id)];
            logit = logit > 0.0f ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
        }
    }

    // 3. Greedy: the first (lowest) id among the maxima.
    if (!(params_.temperature > 0.0f)) {
        return static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin());
    }

    // 4. Top-k, ordered by logit descending, ties by lower id.
    candidates_.clear();
    candidates_.reserve(vocab);
    constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < vocab; ++i)
        if (work_[i] != kMinusInfinity) candidates_.push_back(Candidate{static_cast<int32_t>(i), work_[i], 0.0});
    if (candidates_.empty()) return greedy_token(work_);  // every logit -inf: the lowest id
    const size_t finite = candidates_.size();
    const auto by_logit = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    size_t keep = finite;
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < finite) keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep), candidates_.end(),
                      by_logit);
    candidates_.resize(keep);

    const float max_logit = candidates_.front().logit;

    // 5. Temperature softmax (double accumulation; the maximum maps to exp(0) = 1).
    double total = 0.0;
    const double inv_temperature = 1.0 / static_cast<double>(params_.temperature);
    for (Candidate& c : candidates_) {
        c.prob = std::exp((static_cast<double>(c.logit) - static_cast<double>(max_logit)) * inv_temperature);
        total += c.prob;
    }
    for (Candidate& c : candidates_) c.prob /= total;

    // 6. Top-p: the smallest prefix reaching the mass (candidates are sorted by probability already).
    if (params_.top_p < 1.0f) {
        double mass = 0.0;
        size_t cut = candidates_.size();
        for (size_t i = 0; i < candidates_.size(); ++i) {
            mass += candidates_[i].prob;
            if (mass >= static_cast<double>(params_.top_p)) {
                cut = i + 1;
                break;
            }
        }
        candidates_.resize(std::max<size_t>(cut, 1));
    }

    // 7. Min-p relative to the most likely token.
    if (params_.min_p > 0.0f) {
        const double threshold = static_cast<double>(params_.min_p) * candidates_.front().prob;
        size_t cut = 1;
        while (cut < candidates_.size() && candidates_[cut].prob >= threshold) ++cut;
        candidates_.resize(cut);
    }

    // 8. Draw from the renormalized survivors.
    double mass = 0.0;
    for (const Candidate& c : candidates_) mass += c.prob;
    const double target = next_uniform() * mass;
    double cumulative = 0.0;
    for (const Candidate& c : candidates_) {
        cumulative += c.prob;
        if (target < cumulative) return c.id;
    }
    return candidates_.back().id;
}

} // namespace cflow
