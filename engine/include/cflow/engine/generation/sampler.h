#pragma once
// Token sampling from one logits row.
//
// Stage order (each stage sees the survivors of the previous one):
//   1. sanitize: NaN -> -inf, +inf -> largest finite float (so softmax stays finite)
//   2. repetition penalty over the distinct ids among the last repeat_last_n of `recent`
//      (llama.cpp convention: logit > 0 ? logit / p : logit * p)
//   3. temperature <= 0: greedy argmax (ties -> lowest id), stop here
//   4. top-k: keep the k largest logits (ties -> lower id first); -inf logits (a grammar's mask, NaN)
//      are no candidates unless every logit is -inf, so top-k/p/min-p see only allowed tokens
//   5. temperature softmax over the survivors
//   6. top-p: keep the smallest prefix (by descending probability) whose mass reaches top_p
//   7. min-p: keep tokens with probability >= min_p * the largest probability
//   8. draw from the renormalized survivors with std::mt19937_64(seed); the uniform variate is built
//      from the generator's 53 high bits by hand, so the same seed gives the same ids on every platform.
// At least one candidate always survives every stage.
//
// Thread safety: a Sampler holds its random generator's state: one thread at a time (each
// generation builds its own). SamplingParams is a plain value.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace cflow {

struct SamplingParams {
    float temperature = 0.8f;     // <= 0: greedy (argmax, ties -> lowest id)
    int32_t top_k = 40;           // <= 0: disabled
    float top_p = 0.95f;          // >= 1: disabled
    float min_p = 0.05f;          // <= 0: disabled
    float repeat_penalty = 1.0f;  // 1: disabled; llama.cpp convention: logit>0 ? logit/p : logit*p over the last repeat_last_n tokens
    int32_t repeat_last_n = 64;
    uint64_t seed = 0xC0FFEE;     // fixed seed => reproducible
};

// The first largest logit's id (ties -> lowest id; a NaN is never chosen over a number after it):
// the greedy pick of the timed decode loops, which skip sanitizing and penalties. 0 for an empty row.
int32_t greedy_token(std::span<const float> logits);

class Sampler {
public:
    explicit Sampler(SamplingParams params);

    // logits: [vocab] f32 (not modified). recent: previously seen tokens (prompt + generated) for the repetition penalty.
    // Returns -1 only for an empty logits row.
    int32_t sample(std::span<const float> logits, std::span<const int32_t> recent);
    const SamplingParams& params() const { return params_; }
    // Restarts the random sequence from params().seed.
    void reset() { rng_.seed(params_.seed); }

private:
    struct Candidate {
        int32_t id;
        float logit;
        double prob;
    };

    double next_uniform();  // [0, 1) from the 53 high bits of one mt19937_64 draw

    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<float> work_;            // [vocab] f32: sanitized, penalized logits
    std::vector<Candidate> candidates_;  // [survivors]
};

} // namespace cflow
