// ConvertDialog: converts the stories260K GGUF to q8_0 through the dialog, and cancelling a
// conversion reports failure and leaves no output behind; its layout (wide path fields, Browse
// buttons, a size that holds while converting), default output path and error wording.
#include <unistd.h>

#include <QDir>
#include <QFormLayout>
#include <QProxyStyle>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include <fstream>

#include "cflow/formats/cflow_reader.h"
#include "cflow/ui/convert_dialog.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ConvertDialog;
using cflow::ui::test::qpath;

TEST(ConvertDialog, DefaultOutputGoesBesideAWritableSourceElseToTheFallback) {
    const auto dir = cflow::test::temp_dir("convert_dialog_default_output");
    const QString fallback = qpath(dir / "fallback");
    EXPECT_EQ(cflow::ui::default_convert_output_path(qpath(dir / "model.gguf"), fallback), qpath(dir / "model.cflow"));
    std::filesystem::create_directories(dir / "hf-model");
    EXPECT_EQ(cflow::ui::default_convert_output_path(qpath(dir / "hf-model"), fallback), qpath(dir / "hf-model.cflow"));
    EXPECT_EQ(cflow::ui::default_convert_output_path(QStringLiteral("/no/such/folder/model.gguf"), fallback),
              fallback + QStringLiteral("/model.cflow"));
    EXPECT_TRUE(cflow::ui::default_convert_output_path(QStringLiteral("/no/such/folder/model.gguf"))
                    .endsWith(QStringLiteral("/models/model.cflow")));
    if (geteuid() != 0) {  // root writes anywhere: a read-only folder only tells for others
        const auto readOnly = dir / "read-only";
        std::filesystem::create_directories(readOnly);
        std::filesystem::permissions(readOnly, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
        EXPECT_EQ(cflow::ui::default_convert_output_path(qpath(readOnly / "model.gguf"), fallback),
                  fallback + QStringLiteral("/model.cflow"));
        std::filesystem::permissions(readOnly, std::filesystem::perms::owner_all);
    }
}

// A style whose forms keep fields at their size hint (as macOS does): the path fields must
// grow all the same.
class SizeHintFormsStyle : public QProxyStyle {
public:
    int styleHint(StyleHint hint, const QStyleOption* option, const QWidget* widget,
                  QStyleHintReturn* returnData) const override {
        if (hint == QStyle::SH_FormLayoutFieldGrowthPolicy) return QFormLayout::FieldsStayAtSizeHint;
        return QProxyStyle::styleHint(hint, option, widget, returnData);
    }
};

TEST(ConvertDialog, PathFieldsGrowWithTheDialogAndHaveBrowseButtons) {
    SizeHintFormsStyle style;
    ConvertDialog dialog;
    dialog.setStyle(&style);
    dialog.resize(1000, dialog.sizeHint().height());
    dialog.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&dialog));
    for (const char* name : {"convertSource", "convertTokenizer", "convertOutput"}) {
        auto* field = dialog.findChild<QLineEdit*>(QString::fromLatin1(name));
        ASSERT_NE(field, nullptr) << name;
        EXPECT_GE(field->width(), dialog.width() / 2) << name;
    }
    for (const char* name : {"browseSource", "browseSourceFolder", "browseTokenizer", "browseOutput"}) {
        auto* button = dialog.findChild<QPushButton*>(QString::fromLatin1(name));
        ASSERT_NE(button, nullptr) << name;
        EXPECT_FALSE(button->accessibleName().isEmpty()) << name;
        EXPECT_FALSE(button->toolTip().isEmpty()) << name;
    }
}

TEST(ConvertDialog, KeepsItsSizeWhileConverting) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    // A long source path: "Reading <path>" wraps onto more lines than the idle status had.
    auto dir = cflow::test::temp_dir("convert_dialog_size");
    for (int i = 0; i < 3; ++i) dir /= "a-folder-with-a-rather-long-name-" + std::to_string(i);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(gguf, dir / "stories260K.gguf");
    ConvertDialog dialog(qpath(dir / "stories260K.gguf"));
    dialog.setQuantization(QStringLiteral("q8_0"));
    dialog.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&dialog));
    auto* status = dialog.findChild<QLabel*>(QStringLiteral("convertStatus"));
    ASSERT_NE(status, nullptr);
    // The status line's room is there before any message, and fixed while converting.
    EXPECT_GE(status->minimumHeight(), 3 * status->fontMetrics().lineSpacing());
    const QSize before = dialog.size();
    QSignalSpy finished(&dialog, &ConvertDialog::finished);
    std::vector<QSize> sizes;
    bool statusHeld = true;
    const auto sample = [&] {
        if (!dialog.isRunning()) return;
        sizes.push_back(dialog.size());
        statusHeld = statusHeld && status->maximumHeight() == status->minimumHeight();
    };
    QObject::connect(&dialog, &ConvertDialog::progressed, &dialog, sample, Qt::QueuedConnection);
    dialog.start();
    QCoreApplication::processEvents();
    sample();
    ASSERT_TRUE(finished.wait(120000));
    EXPECT_TRUE(finished.at(0).at(0).toBool()) << dialog.lastError().toStdString();
    ASSERT_GE(sizes.size(), 1u);
    EXPECT_TRUE(statusHeld);
    for (const QSize& s : sizes) EXPECT_EQ(s, before);
}

TEST(ConvertDialog, ErrorsNameTheOutputNotItsTemporaryFile) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    const auto dir = cflow::test::temp_dir("convert_dialog_temp_error");
    // A regular file where the output's folder should be: the temporary file cannot be created.
    { std::ofstream(dir / "not-a-folder") << "x"; }
    const QString output = qpath(dir / "not-a-folder" / "out.cflow");
    ConvertDialog dialog(qpath(gguf));
    dialog.setOutputPath(output);
    QSignalSpy finished(&dialog, &ConvertDialog::finished);
    dialog.start();
    ASSERT_TRUE(finished.count() == 1 || finished.wait(60000));
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    EXPECT_TRUE(dialog.lastError().contains(output)) << dialog.lastError().toStdString();
    EXPECT_FALSE(dialog.lastError().contains(QStringLiteral(".tmp-"))) << dialog.lastError().toStdString();
    auto* status = dialog.findChild<QLabel*>(QStringLiteral("convertStatus"));
    ASSERT_NE(status, nullptr);
    EXPECT_FALSE(status->text().contains(QStringLiteral(".tmp-"))) << status->text().toStdString();

    EXPECT_EQ(cflow::ui::user_facing_convert_error(QStringLiteral("/m/x.cflow.tmp-4711: disk full"),
                                                   QStringLiteral("/m/x.cflow")),
              QStringLiteral("/m/x.cflow: disk full"));
}

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
