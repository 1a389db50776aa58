#pragma once
// The paper's eight-claim scorecard (Table 1.1 / 5.3) measured on this machine: each claim is
// run as a small experiment on real files and real kernels, and its verdict follows from the
// measured figures by the threshold its `method` states. Nothing here is a constant copied
// from the paper; a claim that cannot be measured here says why (verdict NotMeasurable).
// Library-level (no Qt): `cflow scorecard` prints it, the desktop's scorecard dialog shows it.
// Runs on the caller's thread (plus the sessions' pools); never throws.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"

namespace cflow {

enum class Verdict : uint8_t { Proven = 0, Refuted = 1, Inconclusive = 2, NotMeasurable = 3 };
std::string_view verdict_name(Verdict v);  // "proven", "refuted", "inconclusive", "not measurable here"

struct Figure {
    std::string name;   // what was measured, e.g. "expert_bytes_read_per_token"
    double value = 0;
    std::string unit;   // "bytes", "MiB/token", "tok/s", "ratio", "count", "GB/s", ...
};

struct ClaimResult {
    int claim = 0;                 // 1..8, the paper's numbering
    std::string title;
    std::vector<Figure> measured;
    std::string method;            // what ran, on which file / geometry, and the verdict thresholds
    Verdict verdict = Verdict::Inconclusive;
    std::string reason;            // why this verdict, from the figures above
};

// The files the claims run on (run_paper_scorecard in paper_scorecard.h prepares them, synthetic
// models included); an empty path makes that claim report NotMeasurable with the reason.
struct ScorecardInputs {
    std::string trained_model;               // the bundled default model (arch2_4_combined): claims 4, 5, 7
    std::vector<std::string> layout_models;  // .cflow files whose read order claim 5 checks (trained zoo, synth)
    std::string moe_model;                   // synthetic MoE .cflow, DelayedSum dd 1 de 2: claims 1, 7
    std::string dense_cflow;                 // synthetic dense model as .cflow: claims 6, 8
    std::string dense_vflow;                 // the same model as .vflow: claim 8
};

struct ScorecardOptions {
    unsigned threads = 0;       // decode threads (0 = hardware concurrency)
    bool quick = false;         // smaller matrices and fewer rounds (tests)
    std::vector<int> claims;    // which claims to run; empty = all eight
};

// Called before each claim with (claim number, claims done, claims in all); return false to cancel.
using ScorecardProgress = std::function<bool(int claim, int done, int total)>;

// One ClaimResult per requested claim, in claim order. A claim whose experiment fails (a file
// that cannot be opened, a failed read) is reported as NotMeasurable with the error; only
// cancellation ends the run with an error (ErrorKind::Cancelled).
Result<std::vector<ClaimResult>> run_scorecard(const ScorecardInputs& inputs, const ScorecardOptions& options,
                                               const ScorecardProgress& progress = {}, const CancelToken* cancel = nullptr);

// The individual claims (also used by tests).
ClaimResult scorecard_claim1_expert_loading(const std::string& moe_model, const ScorecardOptions& options);
ClaimResult scorecard_claim2_tile_locality(const ScorecardOptions& options);
ClaimResult scorecard_claim3_simd_kernels(const ScorecardOptions& options);
ClaimResult scorecard_claim4_fused_projections(const std::string& model, const ScorecardOptions& options);
ClaimResult scorecard_claim5_compute_order(const std::vector<std::string>& models);
ClaimResult scorecard_claim6_prefetch(const std::string& dense_model, const ScorecardOptions& options);
ClaimResult scorecard_claim7_critical_path(const std::string& trained_model, const std::string& moe_model,
                                           const ScorecardOptions& options);
ClaimResult scorecard_claim8_readahead(const std::string& cflow_path, const std::string& vflow_path,
                                       const ScorecardOptions& options);

// Claim 5's check, exposed so a test can feed it a permuted order: byte ranges in the order the
// forward pass consumes them.
struct ReadSpan {
    uint64_t offset = 0;  // absolute file offset
    uint64_t bytes = 0;
    std::string what;     // "layer 3 gate_up tile 17", for the report
};
struct ReadOrderCheck {
    uint64_t spans = 0;
    uint64_t backward_jumps = 0;        // spans starting before the previous span's start
    uint64_t backward_bytes = 0;        // sum of those jumps' distances
    uint64_t gap_bytes = 0;             // forward distance skipped between consecutive spans
    std::string first_violation;        // "" when monotonic
};
// The non-expert weight ranges of a .cflow/.vflow in the forward pass's consumption order:
// per layer attention (norms, QKV tiles stripe by stripe, bias, O tiles), dense FFN (norm,
// gate/up, down), MoE router side (norm, router, expert table, shared expert); then the output
// norm and LM head. Expert tiles (random access after routing) and the token embedding (one row
// per token) are left out.
Result<std::vector<ReadSpan>> forward_read_order(const std::string& path);
ReadOrderCheck check_read_order(const std::vector<ReadSpan>& spans);

} // namespace cflow
