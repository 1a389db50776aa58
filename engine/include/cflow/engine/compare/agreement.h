#pragma once
// How closely a candidate's next-token distributions follow a reference model's on the same
// token stream (teacher forcing): the share of positions where both pick the same top-1 token and
// the mean KL(reference || candidate) in nats. Both sessions must share one vocabulary (the
// caller checks the tokenizers with same_tokenizer()). Runs on the caller's thread; never throws.
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"

namespace cflow {

class Session;
class Tokenizer;

struct AgreementStats {
    uint64_t positions = 0;      // positions compared
    uint64_t top1Matches = 0;
    double totalKlNats = 0;
    double top1Agreement() const { return positions ? double(top1Matches) / double(positions) : 0; }
    double meanKlNats() const { return positions ? totalKlNats / double(positions) : 0; }
};

// Called after every position with (done, total); return false to cancel.
using AgreementProgress = std::function<bool(uint64_t done, uint64_t total)>;

// Feeds ids[0 .. n-1] to both sessions in lockstep and compares the logits after each, with
// n = min(ids.size(), maxPositions) (0 = all). When a context fills, both start again from an
// empty cache, so long streams need no window bookkeeping. ids: [N], N >= 1.
Result<AgreementStats> compare_next_token_distributions(Session& reference, Session& candidate,
                                                        std::span<const int32_t> ids, uint64_t maxPositions,
                                                        const AgreementProgress& progress = {},
                                                        const CancelToken* cancel = nullptr);

// "" when both tokenizers map every id to the same piece (same kind, size, BOS and EOS); else
// what differs, for a person ("vocabulary of 4096 vs 32000 tokens", "token 17 is 'ab' vs 'ba'").
std::string tokenizer_difference(const Tokenizer& a, const Tokenizer& b);

} // namespace cflow
