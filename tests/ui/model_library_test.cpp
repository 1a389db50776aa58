// ModelLibrary: a folder with two synthetic models (dense, MoE with delays) and one garbage
// .cflow file lists three rows with the header geometry, the garbage row carrying the error.
#include <fstream>

#include <QLocale>
#include <QSignalSpy>
#include <QTreeWidget>

#include <gtest/gtest.h>

#include "cflow/formats/converter.h"
#include "cflow/engine/convert/conversion_report.h"
#include "cflow/ui/model_library.h"
#include "synthetic_model.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ModelLibrary;
using cflow::ui::test::qpath;

void write_model(const cflow::test::SyntheticSpec& spec, const std::filesystem::path& path, cflow::DType quant) {
    cflow::SourceModel model = cflow::test::make_synthetic_model(spec);
    model.metadata.set("general.name", std::string(path.stem().string()));
    auto report = cflow::convert_to_cflow(model, path.string(), {.weight_quant = quant});
    ASSERT_TRUE(report.ok()) << report.error();
}

TEST(ModelLibrary, ListsModelsAndUnreadableFiles) {
    const auto dir = cflow::test::temp_dir("model_library");
    cflow::test::SyntheticSpec dense;
    dense.n_layers = 2;
    dense.max_seq_len = 512;
    write_model(dense, dir / "a-dense.cflow", cflow::DType::Q8_0);

    cflow::test::SyntheticSpec moe;
    moe.n_layers = 3;
    moe.d_ff = 96;
    moe.n_experts = 4;
    moe.top_k = 2;
    moe.expert_d_ff = 64;
    moe.combine_style = cflow::CombineStyle::DelayedSum;
    moe.dense_delay = 1;
    moe.expert_delay = 2;
    write_model(moe, dir / "b-moe.cflow", cflow::DType::F32);

    {
        std::ofstream garbage(dir / "c-garbage.cflow", std::ios::binary);
        garbage << "this is not a cflow file, just text padding it out to a plausible length........";
    }
    { std::ofstream other(dir / "notes.txt"); other << "not listed"; }

    ModelLibrary library;
    QSignalSpy finished(&library, &ModelLibrary::scanFinished);
    library.setFolder(qpath(dir));
    ASSERT_TRUE(finished.wait(30000));
    EXPECT_EQ(finished.at(0).at(0).toInt(), 3);
    ASSERT_EQ(library.tree()->topLevelItemCount(), 3);

    const auto& e = library.entries();
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[0].fileName, QStringLiteral("a-dense.cflow"));
    EXPECT_TRUE(e[0].error.isEmpty()) << e[0].error.toStdString();
    EXPECT_EQ(e[0].name, QStringLiteral("a-dense"));
    EXPECT_EQ(e[0].architecture, QStringLiteral("llama"));
    EXPECT_EQ(e[0].layers, 2u);
    EXPECT_EQ(e[0].experts, 0u);
    EXPECT_EQ(e[0].quantization, QStringLiteral("q8_0"));
    EXPECT_EQ(e[0].contextTokens, 512u);
    EXPECT_EQ(e[0].fileBytes, std::filesystem::file_size(dir / "a-dense.cflow"));
    // Dense geometry: d=64, 4 heads x 16, d_ff 128, vocab 300, untied.
    const uint64_t denseLayer = 4 * 64 * 64 + 2 * 64 + 3 * 64 * 128;
    EXPECT_EQ(e[0].parameters, 2 * denseLayer + 64 + 2 * 300 * 64);

    EXPECT_EQ(e[1].fileName, QStringLiteral("b-moe.cflow"));
    EXPECT_TRUE(e[1].error.isEmpty()) << e[1].error.toStdString();
    EXPECT_EQ(e[1].layers, 3u);
    EXPECT_EQ(e[1].experts, 4u);
    EXPECT_EQ(e[1].topK, 2u);
    EXPECT_EQ(e[1].denseDelay, 1u);
    EXPECT_EQ(e[1].expertDelay, 2u);
    EXPECT_EQ(e[1].quantization, QStringLiteral("f32"));
    const uint64_t moeLayer = 4 * 64 * 64 + 2 * 64 + 3 * 64 * 96 + 4 * (3 * 64 * 64 + 64);
    EXPECT_EQ(e[1].parameters, 3 * moeLayer + 64 + 2 * 300 * 64);

    EXPECT_EQ(e[2].fileName, QStringLiteral("c-garbage.cflow"));
    EXPECT_FALSE(e[2].error.isEmpty());

    // The rows show the same: find them by file name (the view sorts).
    auto row = [&](const QString& file) -> QTreeWidgetItem* {
        const auto items = library.tree()->findItems(file, Qt::MatchExactly, ModelLibrary::File);
        return items.size() == 1 ? items.front() : nullptr;
    };
    QTreeWidgetItem* moeRow = row(QStringLiteral("b-moe.cflow"));
    ASSERT_NE(moeRow, nullptr);
    EXPECT_EQ(moeRow->text(ModelLibrary::Layers), QStringLiteral("3"));
    EXPECT_EQ(moeRow->text(ModelLibrary::Moe), QStringLiteral("4/2"));
    EXPECT_EQ(moeRow->text(ModelLibrary::Delays), QStringLiteral("1/2"));
    QTreeWidgetItem* garbageRow = row(QStringLiteral("c-garbage.cflow"));
    ASSERT_NE(garbageRow, nullptr);
    EXPECT_EQ(garbageRow->text(ModelLibrary::Status), e[2].error);
    EXPECT_TRUE(garbageRow->text(ModelLibrary::Layers).isEmpty());

    QSignalSpy open(&library, &ModelLibrary::openRequested);
    emit library.tree()->itemDoubleClicked(moeRow, 0);
    ASSERT_EQ(open.count(), 1);
    EXPECT_EQ(open.at(0).at(0).toString(), qpath(dir / "b-moe.cflow"));
}

} // namespace

namespace {

TEST(ModelLibrary, ShowsTheConversionReportBesideAModel) {
    const auto dir = cflow::test::temp_dir("model_library_report");
    cflow::test::SyntheticSpec dense;
    dense.n_layers = 1;
    write_model(dense, dir / "m.cflow", cflow::DType::Q4_0);
    write_model(dense, dir / "n.cflow", cflow::DType::Q4_0);  // no report
    cflow::ValidationReport v;
    v.verdict = "warn";
    v.top1_agreement = 0.8125;
    v.mean_kl_nats = 0.125;
    cflow::ConversionRecord record;
    record.output_path = (dir / "m.cflow").string();
    record.validation = &v;
    ASSERT_TRUE(cflow::write_conversion_report(record).ok());

    ModelLibrary library;
    QSignalSpy finished(&library, &ModelLibrary::scanFinished);
    library.setFolder(qpath(dir));
    ASSERT_TRUE(finished.wait(30000));
    ASSERT_EQ(library.tree()->topLevelItemCount(), 2);
    const auto item = [&](const char* file) {
        return library.tree()->findItems(QString::fromLatin1(file), Qt::MatchExactly, ModelLibrary::File).value(0);
    };
    ASSERT_NE(item("m.cflow"), nullptr);
    ASSERT_NE(item("n.cflow"), nullptr);
    EXPECT_EQ(item("m.cflow")->text(ModelLibrary::Validation), QStringLiteral("warn: top-1 81.3%, KL 0.13"));
    EXPECT_TRUE(item("m.cflow")->toolTip(ModelLibrary::Validation).contains(QStringLiteral("| verdict | warn")));
    EXPECT_EQ(item("n.cflow")->text(ModelLibrary::Validation), QStringLiteral("—"));
    EXPECT_TRUE(cflow::ui::validation_summary("{\"source\": \"x\"}").isEmpty());
    EXPECT_TRUE(cflow::ui::validation_summary("not json").isEmpty());
}

TEST(ModelLibrary, WarnsWhenAModelExceedsTheFreeMemory) {
    cflow::ui::LibraryEntry dense;
    dense.fileBytes = 3ull << 30;
    EXPECT_TRUE(cflow::ui::memory_warning(dense, 4ull << 30).isEmpty());
    EXPECT_TRUE(cflow::ui::memory_warning(dense, 0).isEmpty()) << "unknown free memory: no warning";
    const QString denseWarning = cflow::ui::memory_warning(dense, 2ull << 30);
    EXPECT_TRUE(denseWarning.startsWith(QStringLiteral("needs "))) << denseWarning.toStdString();
    EXPECT_FALSE(denseWarning.contains(QStringLiteral("staged")));
    cflow::ui::LibraryEntry moe = dense;
    moe.experts = 8;
    moe.expertBankBytes = moe.fileBytes - (512ull << 20);  // 512 MiB outside the experts
    const QString moeWarning = cflow::ui::memory_warning(moe, 2ull << 30);
    EXPECT_TRUE(moeWarning.contains(QStringLiteral("choose staged expert reads"))) << moeWarning.toStdString();
    // Half of the 2 GiB free, less the 512 MiB resident: a 512 MiB cache is proposed.
    EXPECT_TRUE(moeWarning.contains(QLocale().formattedDataSize(qint64(512ull << 20)) + QStringLiteral(" (Expert cache")))
        << moeWarning.toStdString();
    // Without its experts it still does not fit: staged is no way out, and the note says so.
    moe.expertBankBytes = 1ull << 20;
    const QString tooBig = cflow::ui::memory_warning(moe, 2ull << 30);
    EXPECT_TRUE(tooBig.contains(QStringLiteral("even without them"))) << tooBig.toStdString();
    EXPECT_FALSE(tooBig.contains(QStringLiteral("choose staged")));
}

} // namespace
