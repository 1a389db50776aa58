#pragma once
// After a conversion: does the new file behave like its source? On a short sample text:
// the tokenizer round trip (and the same ids as the source's own tokenizer), the chat
// template renders, a smoke generation runs, and teacher-forced over the sample the
// converted model's next-token distributions against the source evaluated in F32 (top-1
// agreement, KL divergence). Shared by `cflow convert --validate` and the conversion wizard.
#include <cstdint>
#include <functional>
#include <string>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"

namespace cflow {

// Thresholds of the verdict; the report prints them beside the figures.
inline constexpr double kPassMinTop1Agreement = 0.90;
inline constexpr double kPassMaxMeanKlNats = 0.10;
inline constexpr double kWarnMinTop1Agreement = 0.70;

// A few sentences of plain English: every tokenizer family splits them, and a model of any
// size predicts them well enough that agreement means something.
extern const char* const kDefaultValidationText;

struct ValidationRequest {
    std::string source_path;         // the checkpoint that was converted
    std::string tokenizer_path;      // llama2.c's tokenizer.bin, else ""
    std::string converted_path;      // the .cflow / .vflow written from it
    std::string sample_text;         // "" = kDefaultValidationText
    uint32_t max_positions = 128;    // teacher-forced positions compared
    uint32_t smoke_tokens = 24;
    unsigned threads = 0;
    // Where the F32 reference conversion of the source is written (and removed after): "" = beside the output.
    std::string scratch_dir;
};

struct ValidationStage {
    std::string name;     // "tokenizer", "template", "smoke", "reference", "agreement"
    double fraction = 0;  // of the stage, 0..1
};
using ValidationProgressFn = std::function<void(const ValidationStage&)>;

struct ValidationReport {
    std::string converted_path;
    uint32_t sample_tokens = 0;
    bool tokenizer_round_trip = false;
    bool tokenizer_matches_source = false;
    std::string tokenizer_detail;
    bool template_renders = false;
    std::string template_detail;      // the model's template, or that the fallback is used
    bool smoke_ok = false;
    std::string smoke_prompt;
    std::string smoke_text;
    double smoke_tokens_per_second = 0;
    bool reference_is_self = false;   // the output is all F32: nothing to compare against but itself
    uint32_t positions = 0;
    double top1_agreement = 0;        // share of positions where both argmaxes agree
    double mean_kl_nats = 0;          // mean over positions of KL(P_f32 || P_converted)
    double max_kl_nats = 0;
    std::string verdict;              // "pass", "warn", "fail"
    std::string verdict_reason;
};

// An Error for a cancel, a converted file that does not load, or a reference that cannot be
// written (disk full: the message says where); a failed check is a figure and a verdict.
Result<ValidationReport> validate_conversion(const ValidationRequest& request, const ValidationProgressFn& progress = {},
                                             const CancelToken* cancel = nullptr);

std::string validation_text(const ValidationReport& report);
std::string validation_json(const ValidationReport& report);

} // namespace cflow
