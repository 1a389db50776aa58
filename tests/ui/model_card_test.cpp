// The Model panel and the library say what a model is for and what it can do, from the
// file's description or the card beside it, before anyone reads header fields.
#include <filesystem>
#include <fstream>

#include <QTest>
#include <QTextBrowser>
#include <QToolButton>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_reader.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/model_card.h"
#include "cflow/ui/model_header_view.h"
#include "cflow/ui/model_library.h"
#include "cflow/ui/model_panel.h"
#include "cflow/ui/sampling_panel.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::read_model_card;
using cflow::ui::test::qpath;

const std::filesystem::path kDefaultModel = std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow";

std::shared_ptr<cflow::CflowFile> open_file(const std::filesystem::path& path) {
    auto file = cflow::CflowFile::open(path.string());
    EXPECT_TRUE(file) << file.error();
    return file ? std::shared_ptr<cflow::CflowFile>(std::move(file).value()) : nullptr;
}

TEST(ModelCard, TheDefaultModelSaysItContinuesStoriesAndWhatItIs) {
    auto file = open_file(kDefaultModel);
    ASSERT_TRUE(file);
    const auto card = read_model_card(*file, qpath(kDefaultModel));
    EXPECT_TRUE(card.purpose.contains(QStringLiteral("continues whatever you write"))) << card.purpose.toStdString();
    EXPECT_FALSE(card.purpose.contains(u'*')) << "plain text, no Markdown";
    EXPECT_TRUE(card.cardPath.endsWith(QStringLiteral("MODEL_CARD.md")));
    EXPECT_TRUE(card.capabilities.contains(QStringLiteral("Mixture of experts: 8 experts per layer, 2 used per token")))
        << card.capabilities.join(u'|').toStdString();
    EXPECT_TRUE(card.capabilities.contains(QStringLiteral("Context: 512 tokens")));
    EXPECT_TRUE(card.capabilities.join(u'|').contains(QStringLiteral("Weights: Q8_0")));
    EXPECT_TRUE(card.capabilities.join(u'|').contains(QStringLiteral(" M parameters in 6 layers (d_model 128)")))
        << card.capabilities.join(u'|').toStdString();
}

TEST(ModelCard, ACardBesideTheModelUnderItsStemComesFirstAndHugeFilesAreNotCards) {
    const auto dir = cflow::test::temp_dir("model_card_beside");
    const auto model = dir / "mine.cflow";
    std::filesystem::copy_file(cflow::ui::test::chatml_model(), model, std::filesystem::copy_options::overwrite_existing);
    auto file = open_file(model);
    ASSERT_TRUE(file);
    EXPECT_TRUE(read_model_card(*file, qpath(model)).purpose.isEmpty()) << "no card anywhere";
    EXPECT_TRUE(read_model_card(*file, qpath(model)).capabilities.join(u'|').contains(QStringLiteral("Dense")));
    std::ofstream(dir / "MODEL_CARD.md") << "# Generic\n\nThe folder's card.\n";
    std::ofstream(dir / "mine.md") << "# Mine\n\n| a | b |\n\nAnswers **questions** about\ncats.\n\nMore.\n";
    auto card = read_model_card(*file, qpath(model));
    EXPECT_EQ(card.purpose, QStringLiteral("Answers questions about cats."));
    EXPECT_TRUE(card.markdown.contains(QStringLiteral("More.")));
    std::ofstream(dir / "mine.md", std::ios::trunc) << std::string(cflow::ui::kMaxCardBytes + 10, 'x');
    EXPECT_EQ(read_model_card(*file, qpath(model)).purpose, QStringLiteral("The folder's card.")) << "an oversized card is skipped";
}

TEST(ModelCard, TheWindowShowsTheCardAndTheEmptyChatSaysWhatTheModelIsFor) {
    cflow::ui::test::ScopedDb db("model_card_window");
    cflow::ui::MainWindow window;
    window.openModel(qpath(kDefaultModel));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    auto* panel = window.findChild<cflow::ui::ModelPanel*>();
    ASSERT_NE(panel, nullptr);
    const QString shown = panel->cardView()->toPlainText();
    EXPECT_TRUE(shown.contains(QStringLiteral("does not follow instructions"))) << shown.toStdString();
    EXPECT_TRUE(shown.contains(QStringLiteral("Mixture of experts")));
    EXPECT_FALSE(window.headerView()->isVisibleTo(panel)) << "header fields wait behind their button";
    panel->detailsButton()->click();
    EXPECT_TRUE(window.headerView()->isVisibleTo(panel));
    EXPECT_EQ(window.headerView()->shownValue(QStringLiteral("Global header"), QStringLiteral("n_experts")), QStringLiteral("8"));

    EXPECT_TRUE(window.chatPanel()->welcomeText().contains(QStringLiteral("About this model"))) << window.chatPanel()->welcomeText().toStdString();
    cflow::ui::GenerationSettings s;
    s.maxTokens = 4;
    s.threads = 1;
    window.samplingPanel()->setSettings(s);
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Once upon a time")));
    EXPECT_FALSE(window.chatPanel()->welcomeText().contains(QStringLiteral("About this model")));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.controller()->isGenerating(); }, 60000));
}

TEST(ModelCard, TheLibraryListsWhatEachModelIsFor) {
    const auto dir = cflow::test::temp_dir("model_card_library");
    std::filesystem::copy_file(kDefaultModel, dir / "default-model.cflow", std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "MODEL_CARD.md", dir / "default-model.md",
                               std::filesystem::copy_options::overwrite_existing);
    const auto entries = cflow::ui::scan_model_folder(qpath(dir));
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_TRUE(entries[0].purpose.contains(QStringLiteral("story model"))) << entries[0].purpose.toStdString();
}

} // namespace
