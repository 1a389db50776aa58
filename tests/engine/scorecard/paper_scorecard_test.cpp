// The whole paper scorecard run (the CLI's and the desktop's): its synthetic models go into a
// folder of their own that is removed on every way out, an unwritable folder is an error naming
// it, cancellation is ErrorKind::Cancelled, and Table 4.1 is read from RESULTS.md's first table.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cflow/engine/scorecard/paper_scorecard.h"
#include "cflow/formats/synth/synth_spec.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

bool is_empty_dir(const fs::path& dir) { return fs::is_directory(dir) && fs::directory_iterator(dir) == fs::directory_iterator(); }

TEST(PaperScorecard, SyntheticModelsAreValidGeometries) {
    for (bool quick : {true, false}) {
        EXPECT_TRUE(check_synth_spec(scorecard_moe_spec(quick))) << quick;
        EXPECT_TRUE(check_synth_spec(scorecard_dense_spec(quick))) << quick;
    }
}

TEST(PaperScorecard, RunsOneClaimAndRemovesItsModels) {
    const fs::path parent = temp_dir("paper-scorecard-run");
    PaperScorecardSetup setup;
    setup.temp_parent = parent.string();
    setup.resources_dir = std::string(CFLOW_SOURCE_DIR) + "/resources";
    setup.options.quick = true;
    setup.options.claims = {8};  // reads the synthetic dense model as .cflow and .vflow
    std::vector<PaperScorecardStep> steps;
    bool models_seen = false;
    auto results = run_paper_scorecard(setup, [&](const PaperScorecardStep& step) {
        steps.push_back(step);
        if (step.claim == 8)  // the models exist while the claims run
            for (const auto& entry : fs::directory_iterator(parent))
                models_seen = fs::exists(entry.path() / "dense.vflow") && fs::exists(entry.path() / "moe.cflow");
        return true;
    });
    ASSERT_TRUE(results) << results.error();
    ASSERT_EQ(results->size(), 1u);
    EXPECT_EQ((*results)[0].claim, 8);
    // The claim read the generated pair; where the OS cannot drop the page cache (Windows) that
    // is all it can say, and it says why.
    const ClaimResult& claim = (*results)[0];
    if (claim.verdict == Verdict::NotMeasurable) {
        EXPECT_NE(claim.reason.find("the page cache cannot be dropped here"), std::string::npos) << claim.reason;
    }
    EXPECT_EQ(claim.reason.find("was not given"), std::string::npos) << claim.reason;
    EXPECT_TRUE(models_seen);
    ASSERT_GE(steps.size(), 3u);
    EXPECT_EQ(steps.front().claim, 0) << "the synthetic models are made first";
    EXPECT_EQ(steps.back().claim, 8);
    EXPECT_TRUE(is_empty_dir(parent)) << "the temporary folder is removed after the run";
}

TEST(PaperScorecard, CancellationIsAnErrorAndLeavesNothing) {
    const fs::path parent = temp_dir("paper-scorecard-cancel");
    PaperScorecardSetup setup;
    setup.temp_parent = parent.string();
    setup.options.quick = true;
    CancelToken cancel;
    int calls = 0;
    auto results = run_paper_scorecard(setup, [&](const PaperScorecardStep& step) {
        ++calls;
        if (step.claim == 0 && calls == 2) cancel.cancel();  // after the MoE, before the dense model
        return true;
    }, &cancel);
    ASSERT_FALSE(results);
    EXPECT_EQ(results.kind(), ErrorKind::Cancelled) << results.error();
    EXPECT_EQ(calls, 2);
    EXPECT_TRUE(is_empty_dir(parent));
}

TEST(PaperScorecard, AnUnwritableFolderIsNamed) {
    PaperScorecardSetup setup;
    setup.temp_parent = "/nonexistent/paper-scorecard-parent";
    setup.options.quick = true;
    auto results = run_paper_scorecard(setup);
    ASSERT_FALSE(results);
    EXPECT_EQ(results.kind(), ErrorKind::Io);
    EXPECT_NE(results.error().find("/nonexistent/paper-scorecard-parent"), std::string::npos) << results.error();
}

TEST(PaperScorecard, Table41IsTheFirstTableUnderTheFirstHeading) {
    std::ifstream in(std::string(CFLOW_SOURCE_DIR) + "/resources/training/RESULTS.md");
    ASSERT_TRUE(in);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string table = results_table_4_1(text.str());
    EXPECT_EQ(table.rfind("# ", 0), 0u) << table.substr(0, 80);
    EXPECT_GE(std::count(table.begin(), table.end(), '\n'), 5) << "heading, blank line, header, rule and rows";
    EXPECT_EQ(results_table_4_1("# Title\r\n\r\n| a |\r\n|---|\r\n| 1 |\r\n\r\n| second |\r\n"),
              "# Title\n\n| a |\n|---|\n| 1 |\n") << "CRLF lines, only the first table";
    EXPECT_EQ(results_table_4_1("# Title\n\nno table"), "");
}

} // namespace
} // namespace cflow::test
