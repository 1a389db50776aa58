// Tools > Paper scorecard…: the dialog runs the real `cflow scorecard --json --quick`, shows one
// row per claim and Table 4.1 from the source tree's resources; its parsing refuses output that
// is not the scorecard's, and a missing CLI is a message, not a hang.
#include <QFile>
#include <QSignalSpy>
#include <QTableWidget>

#include <gtest/gtest.h>

#include "cflow/ui/scorecard_dialog.h"

namespace {

using cflow::ui::ScorecardDialog;

TEST(ScorecardDialog, ParsesTheClaimsAndRefusesOtherOutput) {
    const QByteArray good = R"([{"claim":1,"title":"Conditional expert loading","verdict":"proven","reason":"r",
        "method":"m","measured":[{"name":"k_over_e","value":0.25,"unit":"ratio"}]},
        {"claim":2,"title":"t","verdict":"not measurable here","reason":"no PMU","method":"m","measured":[]}])";
    auto rows = cflow::ui::parse_scorecard_json(good);
    ASSERT_TRUE(rows) << rows.error();
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[0].claim, 1);
    EXPECT_EQ((*rows)[0].figures, QStringList{QStringLiteral("k_over_e = 0.25 ratio")});
    EXPECT_EQ((*rows)[1].verdict, QStringLiteral("not measurable here"));
    EXPECT_FALSE(cflow::ui::parse_scorecard_json("cflow scorecard: the paper's eight claims"));
    EXPECT_FALSE(cflow::ui::parse_scorecard_json(R"({"claim":1})")) << "an object, not an array";
    EXPECT_FALSE(cflow::ui::parse_scorecard_json(R"([{"claim":9,"verdict":"proven"}])")) << "no claim 9";
    EXPECT_FALSE(cflow::ui::parse_scorecard_json(R"([{"claim":3}])")) << "no verdict";
}

TEST(ScorecardDialog, Table41IsTheFirstTableOfTheResults) {
    QFile results(QStringLiteral(CFLOW_SOURCE_DIR "/resources/training/RESULTS.md"));
    ASSERT_TRUE(results.open(QIODevice::ReadOnly));
    const QString table = cflow::ui::table_4_1_markdown(QString::fromUtf8(results.readAll()));
    EXPECT_TRUE(table.startsWith(QStringLiteral("# "))) << table.left(80).toStdString();
    EXPECT_GE(table.count(QLatin1Char('\n')), 4) << "heading, header, rule and rows";
    EXPECT_TRUE(cflow::ui::table_4_1_markdown(QStringLiteral("# Title\n\nno table")).isEmpty());
}

TEST(ScorecardDialog, RunsTheCliAndShowsEveryClaim) {
    ScorecardDialog dialog;
    dialog.setCliPath(QStringLiteral(CFLOW_CLI_PATH));
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
    EXPECT_FALSE(dialog.table41Text().isEmpty());
}

TEST(ScorecardDialog, AMissingCliIsAMessage) {
    ScorecardDialog dialog;
    dialog.setCliPath(QStringLiteral("/nonexistent/cflow"));
    QSignalSpy done(&dialog, &ScorecardDialog::scorecardFinished);
    dialog.start();
    ASSERT_TRUE(done.count() == 1 || done.wait(10000));
    EXPECT_FALSE(done.at(0).at(0).toBool());
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("failed"))) << dialog.statusText().toStdString();
    EXPECT_FALSE(dialog.isRunning());
}

} // namespace
