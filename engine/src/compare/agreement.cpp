#include "cflow/engine/compare/agreement.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cflow/engine/forward/session.h"
#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {
namespace {

// log-softmax in double: KL over thousands of tokens would drift in float. logits: [V], out: [V]
void log_softmax(std::span<const float> logits, std::vector<double>& out) {
    out.resize(logits.size());
    double max_logit = -INFINITY;
    for (float v : logits) max_logit = std::max(max_logit, double(v));
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max_logit);
    const double lse = max_logit + std::log(sum);
    for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - lse;
}

// Ties go to the smaller id, as greedy sampling picks.
size_t top1(std::span<const float> logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return best;
}

} // namespace

Result<AgreementStats> compare_next_token_distributions(Session& reference, Session& candidate,
                                                        std::span<const int32_t> ids, uint64_t maxPositions,
                                                        const AgreementProgress& progress, const CancelToken* cancel) {
    if (ids.empty()) return make_error("agreement: the text has no tokens to compare on");
    const uint32_t vocab = reference.model().header().vocab_size;
    if (candidate.model().header().vocab_size != vocab)
        return make_error("agreement: the vocabularies differ (" + std::to_string(vocab) + " vs " +
                          std::to_string(candidate.model().header().vocab_size) + " tokens)");
    const uint64_t n = maxPositions ? std::min<uint64_t>(maxPositions, ids.size()) : ids.size();
    const uint32_t context = std::min(reference.context_length(), candidate.context_length());
    reference.reset();
    candidate.reset();
    AgreementStats stats;
    std::vector<double> log_p, log_q;
    for (uint64_t i = 0; i < n; ++i) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("agreement");
        if (ids[i] < 0 || uint32_t(ids[i]) >= vocab)
            return make_error("agreement: token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                              ", outside the vocabulary of " + std::to_string(vocab));
        if (reference.position() >= context) {
            reference.reset();
            candidate.reset();
        }
        auto p = reference.step(ids[i]);
        if (!p) return p.take_error();
        auto q = candidate.step(ids[i]);
        if (!q) return q.take_error();
        if (top1(*p) == top1(*q)) ++stats.top1Matches;
        log_softmax(*p, log_p);
        log_softmax(*q, log_q);
        double kl = 0;
        for (size_t v = 0; v < log_p.size(); ++v) kl += std::exp(log_p[v]) * (log_p[v] - log_q[v]);
        stats.totalKlNats += std::max(0.0, kl);  // rounding can make an exact match a hair negative
        ++stats.positions;
        if (progress && !progress(stats.positions, n)) return cancelled_error("agreement");
    }
    return stats;
}

std::string tokenizer_difference(const Tokenizer& a, const Tokenizer& b) {
    if (a.kind() != b.kind()) return "the tokenizers are of different kinds";
    if (a.vocab_size() != b.vocab_size())
        return "vocabulary of " + std::to_string(a.vocab_size()) + " vs " + std::to_string(b.vocab_size()) + " tokens";
    if (a.bos_id() != b.bos_id()) return "BOS id " + std::to_string(a.bos_id()) + " vs " + std::to_string(b.bos_id());
    if (a.eos_id() != b.eos_id()) return "EOS id " + std::to_string(a.eos_id()) + " vs " + std::to_string(b.eos_id());
    for (size_t id = 0; id < a.vocab_size(); ++id)
        if (a.piece(int32_t(id)) != b.piece(int32_t(id)))
            return "token " + std::to_string(id) + " is '" + a.piece(int32_t(id)) + "' vs '" + b.piece(int32_t(id)) + "'";
    return {};
}

} // namespace cflow
