#pragma once
// The whole paper scorecard as `cflow scorecard` and the desktop's Tools > Paper scorecard… run it,
// in-process: the synthetic models the claims need (a MoE with an expert delay; a dense model as
// .cflow and .vflow) are generated into a temporary folder that is removed afterwards (cancelled,
// failed or not), the trained model and the zoo are found in the resources folder, then the
// claims run (scorecard.h). No Qt; runs on the caller's thread and never throws.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/scorecard/scorecard.h"
#include "cflow/formats/synth/synth_spec.h"

namespace cflow {

struct PaperScorecardSetup {
    // The folder holding default-model.cflow, models/*.cflow and training/RESULTS.md (an
    // installation's share folder or the source tree's resources/); "" = none of them.
    std::string resources_dir;
    ScorecardOptions options;
    std::string temp_parent;  // where the temporary folder goes; "" = the system's temp folder
};

// Where the run is: generating the synthetic models (claim 0), or before claim `claim`.
struct PaperScorecardStep {
    int claim = 0;   // 0 while the synthetic models are made
    int done = 0;    // claims finished
    int total = 0;   // claims requested
    std::string what;  // "generating the synthetic MoE", "claim 3"
};
// Return false to cancel.
using PaperScorecardProgress = std::function<bool(const PaperScorecardStep&)>;

// One ClaimResult per requested claim. Errors: the temporary folder or a synthetic model could not
// be written (the message names which and where), or cancellation (ErrorKind::Cancelled).
Result<std::vector<ClaimResult>> run_paper_scorecard(const PaperScorecardSetup& setup,
                                                     const PaperScorecardProgress& progress = {},
                                                     const CancelToken* cancel = nullptr);

// The synthetic models' geometries (quick: small sizes for tests).
SynthSpec scorecard_moe_spec(bool quick);
SynthSpec scorecard_dense_spec(bool quick);

// Table 4.1 of the trained zoo's RESULTS.md as the scorecard shows it beside the claims: the
// file's first heading, a blank line, then its first markdown table; "" when it has no table.
std::string results_table_4_1(std::string_view results_markdown);

} // namespace cflow
