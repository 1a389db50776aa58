// Tools > Paper scorecard…: the dialog runs the engine's paper scorecard in-process (quick sizes),
// shows one row per claim and Table 4.1 from the source tree's resources; Cancel and closing
// mid-run stop it and remove its synthetic models; an unwritable folder is a message.
#include <QDir>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTableWidget>

#include <gtest/gtest.h>

#include "cflow/ui/scorecard_dialog.h"

namespace {

using cflow::ui::ScorecardDialog;

TEST(ScorecardDialog, ARowShowsTheClaimsFiguresAndVerdict) {
    cflow::ClaimResult claim;
    claim.claim = 1;
    claim.title = "Conditional expert loading";
    claim.verdict = cflow::Verdict::NotMeasurable;
    claim.measured = {{"k_over_e", 0.25, "ratio"}};
    const cflow::ui::ScorecardRow row = cflow::ui::scorecard_row(claim);
    EXPECT_EQ(row.claim, 1);
    EXPECT_EQ(row.figures, QStringList{QStringLiteral("k_over_e = 0.25 ratio")});
    EXPECT_EQ(row.verdict, QStringLiteral("not measurable here"));
}

TEST(ScorecardDialog, RunsInProcessAndShowsEveryClaim) {
    QTemporaryDir temp;
    ASSERT_TRUE(temp.isValid());
    ScorecardDialog dialog;
    dialog.setTempParent(temp.path());
    dialog.setResourcesDir(QStringLiteral(CFLOW_SOURCE_DIR "/resources"));
    dialog.setQuick(true);
    QSignalSpy done(&dialog, &ScorecardDialog::scorecardFinished);
    dialog.start();
    EXPECT_TRUE(dialog.isRunning());
    ASSERT_TRUE(done.wait(180000)) << dialog.statusText().toStdString();
    ASSERT_TRUE(done.at(0).at(0).toBool()) << dialog.statusText().toStdString();
    ASSERT_EQ(dialog.rows().size(), 8u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(dialog.rows()[size_t(i)].claim, i + 1);
    EXPECT_EQ(dialog.table()->rowCount(), 8);
    EXPECT_FALSE(dialog.table()->item(0, 2)->text().isEmpty()) << "a verdict in every row";
    EXPECT_TRUE(dialog.table()->item(0, 0)->toolTip().contains(QStringLiteral("Method: "))) << "figures and method on hover";
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("8 claims measured"))) << dialog.statusText().toStdString();
    EXPECT_TRUE(dialog.table41Text().contains(QStringLiteral("arch2_4_combined"))) << dialog.table41Text().toStdString();
    EXPECT_TRUE(QDir(temp.path()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot)) << "the synthetic models are removed";
}

TEST(ScorecardDialog, CancelStopsTheRunAndLeavesNothingBehind) {
    QTemporaryDir temp;
    ASSERT_TRUE(temp.isValid());
    ScorecardDialog dialog;
    dialog.setResourcesDir(QStringLiteral(CFLOW_SOURCE_DIR "/resources"));
    dialog.setTempParent(temp.path());
    dialog.setQuick(true);
    QSignalSpy done(&dialog, &ScorecardDialog::scorecardFinished);
    dialog.start();
    ASSERT_TRUE(dialog.isRunning());
    dialog.cancel();
    ASSERT_TRUE(done.count() == 1 || done.wait(120000)) << dialog.statusText().toStdString();
    EXPECT_FALSE(done.at(0).at(0).toBool());
    EXPECT_EQ(dialog.statusText(), QStringLiteral("Cancelled."));
    EXPECT_TRUE(dialog.rows().empty());
    EXPECT_FALSE(dialog.isRunning());
    EXPECT_TRUE(QDir(temp.path()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot)) << "the temporary folder is removed";
}

TEST(ScorecardDialog, AFolderThatCannotBeWrittenIsAMessage) {
    ScorecardDialog dialog;
    dialog.setTempParent(QStringLiteral("/nonexistent/cflow-scorecard-parent"));
    dialog.setQuick(true);
    QSignalSpy done(&dialog, &ScorecardDialog::scorecardFinished);
    dialog.start();
    ASSERT_TRUE(done.count() == 1 || done.wait(30000));
    EXPECT_FALSE(done.at(0).at(0).toBool());
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("/nonexistent/cflow-scorecard-parent"))) << dialog.statusText().toStdString();
    EXPECT_FALSE(dialog.isRunning());
}

TEST(ScorecardDialog, ClosingDuringARunWaitsForIt) {
    QTemporaryDir temp;
    ASSERT_TRUE(temp.isValid());
    {
        ScorecardDialog dialog;
        dialog.setTempParent(temp.path());
        dialog.setQuick(true);
        dialog.start();
        ASSERT_TRUE(dialog.isRunning());
    }  // destroyed mid-run: cancels and waits for the worker
    EXPECT_TRUE(QDir(temp.path()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot));
}

} // namespace
