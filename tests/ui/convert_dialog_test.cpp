// ConvertDialog: converts the stories260K GGUF to q8_0 through the dialog, and cancelling a
// conversion reports failure and leaves no output behind.
#include <QProgressBar>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_reader.h"
#include "cflow/ui/convert_dialog.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ConvertDialog;
using cflow::ui::test::qpath;

TEST(ConvertDialog, ConvertsGgufToQ8) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    const auto out = cflow::test::temp_dir("convert_dialog_ok") / "stories260K.cflow";
    ConvertDialog dialog(qpath(gguf));
    EXPECT_TRUE(dialog.outputPath().endsWith(QStringLiteral("stories260K.cflow")));
    dialog.setOutputPath(qpath(out));
    ASSERT_TRUE(dialog.setQuantization(QStringLiteral("q8_0")));
    EXPECT_FALSE(dialog.setQuantization(QStringLiteral("q3_k")));

    QSignalSpy finished(&dialog, &ConvertDialog::finished);
    QSignalSpy progressed(&dialog, &ConvertDialog::progressed);
    dialog.start();
    EXPECT_TRUE(dialog.isRunning());
    ASSERT_TRUE(finished.wait(120000));
    ASSERT_EQ(finished.count(), 1);
    EXPECT_TRUE(finished.at(0).at(0).toBool()) << dialog.lastError().toStdString();
    EXPECT_EQ(finished.at(0).at(1).toString(), qpath(out));
    EXPECT_TRUE(dialog.lastError().isEmpty());
    EXPECT_GT(progressed.count(), 0);
    EXPECT_EQ(dialog.progressBar()->value(), dialog.progressBar()->maximum());

    auto file = cflow::CflowFile::open(out.string());
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ(static_cast<cflow::DType>((*file)->header().weight_quant), cflow::DType::Q8_0);
    EXPECT_EQ((*file)->header().n_layers, 5u);  // stories260K: 5 layers
}

TEST(ConvertDialog, CancelLeavesNoOutput) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    const auto dir = cflow::test::temp_dir("convert_dialog_cancel");
    const auto out = dir / "cancelled.cflow";
    ConvertDialog dialog(qpath(gguf));
    dialog.setOutputPath(qpath(out));
    QSignalSpy finished(&dialog, &ConvertDialog::finished);
    dialog.start();
    dialog.cancel();
    ASSERT_TRUE(finished.wait(60000));
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    EXPECT_TRUE(dialog.lastError().contains(QStringLiteral("cancelled"))) << dialog.lastError().toStdString();
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_TRUE(std::filesystem::is_empty(dir));  // no temporary file left either
}

TEST(ConvertDialog, MissingSourceReportsReaderError) {
    const auto dir = cflow::test::temp_dir("convert_dialog_missing");
    ConvertDialog dialog(qpath(dir / "absent.gguf"));
    QSignalSpy finished(&dialog, &ConvertDialog::finished);
    dialog.start();
    ASSERT_TRUE(finished.count() == 1 || finished.wait(30000));
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    EXPECT_TRUE(dialog.lastError().contains(QStringLiteral("absent.gguf"))) << dialog.lastError().toStdString();
    EXPECT_FALSE(std::filesystem::exists(dir / "absent.cflow"));
}

} // namespace
