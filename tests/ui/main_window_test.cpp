// MainWindow end to end on the offscreen platform: a real .cflow file written by the
// converter is opened through the window's coroutine, and what the header view shows is
// compared with the spec the file was made from and with an independent CflowFile::open.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSignalSpy>
#include <QStatusBar>
#include <QSemaphore>
#include <QTest>

#include <QCoro/QCoroTask>
#include <gtest/gtest.h>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "cflow/engine/forward/model.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/load_error_text.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/status_area.h"
#include "cflow/ui/model_header_view.h"
#include "synthetic_model.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

constexpr int kOpenTimeoutMs = 30000;

// A deliberately non-default geometry so each shown number can only come from the file.
cflow::test::SyntheticSpec small_spec() {
    cflow::test::SyntheticSpec spec;
    spec.d_model = 96;
    spec.n_layers = 3;
    spec.n_heads = 6;
    spec.n_kv_heads = 2;
    spec.head_dim = 16;
    spec.d_ff = 160;
    spec.vocab = 320;
    spec.max_seq_len = 512;
    spec.seed = 7;
    return spec;
}

const std::string kChatTemplate =
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

// Converts the synthetic model once per test binary; returns its path.
const std::filesystem::path& model_path() {
    static const std::filesystem::path path = [] {
        const auto dir = cflow::test::temp_dir("ui_main_window");
        const auto out = dir / "small.cflow";
        cflow::SourceModel source = cflow::test::make_synthetic_model(small_spec());
        source.metadata.set("tokenizer.chat_template", kChatTemplate);
        cflow::ConvertOptions options;
        options.weight_quant = cflow::DType::Q8_0;
        options.threads = 2;
        auto report = cflow::convert_to_cflow(source, out.string(), options);
        if (!report) ADD_FAILURE() << "converting the synthetic model failed: " << report.error();
        return out;
    }();
    return path;
}

std::filesystem::path write_garbage_file() {
    const auto path = cflow::test::temp_dir("ui_garbage") / "garbage.cflow";
    std::ofstream out(path, std::ios::binary);
    const char bytes[10] = {'n', 'o', 't', ' ', 'c', 'f', 'l', 'o', 'w', '!'};
    out.write(bytes, sizeof(bytes));
    return path;
}

using cflow::ui::test::qpath;

// Spins the event loop until the task finishes, then returns its value. With a window, an
// opened model is also waited for in the engine: the header, title and inspector show it then.
bool finish(QCoro::Task<bool>& task, cflow::ui::MainWindow* window = nullptr) {
    const bool done = QTest::qWaitFor([&] { return task.isReady(); }, kOpenTimeoutMs);
    EXPECT_TRUE(done) << "openModel did not finish within " << kOpenTimeoutMs << " ms";
    const bool opened = done && QCoro::waitFor(task);
    if (opened && window) {
        EXPECT_TRUE(QTest::qWaitFor([&] { return window->controller()->modelReady(); }, kOpenTimeoutMs));
    }
    return opened;
}

void close_error_boxes(QWidget& window) {
    for (QMessageBox* box : window.findChildren<QMessageBox*>()) box->close();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
}

// Holds the engine's thread until open(), so loads asked for meanwhile are guaranteed to wait in
// its queue: a fast load cannot finish before the next request is made. Declare it after the
// window: it must open before the window joins the engine's thread.
class MainWindowEngineGate {
public:
    explicit MainWindowEngineGate(cflow::ui::EngineWorker* worker) {
        QMetaObject::invokeMethod(worker, [this] {
            holding_.release();
            release_.acquire();
        });
        held_ = holding_.tryAcquire(1, kOpenTimeoutMs);
    }
    ~MainWindowEngineGate() { open(); }
    bool holding() const { return held_; }
    void open() {
        if (!released_) release_.release();
        released_ = true;
    }

private:
    QSemaphore holding_;
    QSemaphore release_;
    bool held_ = false;
    bool released_ = false;
};

TEST(MainWindowTest, OpensConvertedModelAndShowsItsHeader) {
    ASSERT_TRUE(std::filesystem::exists(model_path()));
    cflow::ui::MainWindow window;
    QSignalSpy opened(&window, &cflow::ui::MainWindow::modelOpened);
    QSignalSpy failed(&window, &cflow::ui::MainWindow::openFailed);

    auto task = window.openModel(qpath(model_path()));
    ASSERT_TRUE(finish(task, &window)) << window.lastError().toStdString();

    EXPECT_EQ(opened.count(), 1);
    EXPECT_EQ(failed.count(), 0);
    EXPECT_TRUE(window.lastError().isEmpty());
    ASSERT_NE(window.controller()->model().model, nullptr);

    const cflow::ui::ModelHeaderView& view = *window.headerView();
    const QString header = QStringLiteral("Global header");
    EXPECT_EQ(view.shownValue(header, QStringLiteral("d_model")), QStringLiteral("96"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("n_layers")), QStringLiteral("3"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("n_heads")), QStringLiteral("6"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("n_kv_heads")), QStringLiteral("2"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("head_dim")), QStringLiteral("16"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("d_ff")), QStringLiteral("160"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("vocab_size")), QStringLiteral("320"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("max_seq_len")), QStringLiteral("512"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("n_experts")), QStringLiteral("0"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("weight_quant")), QStringLiteral("q8_0"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("tile")), QStringLiteral("128 x 256"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("combine_style")), QStringLiteral("sequential"));
    EXPECT_EQ(view.shownValue(header, QStringLiteral("version")), QString::number(cflow::kCflowVersion));
    EXPECT_EQ(view.shownValue(QStringLiteral("Model parameters"), QStringLiteral("params_bytes")),
              QStringLiteral("128"));

    // Region rows agree with an independent open of the same file.
    auto direct = cflow::CflowFile::open(model_path().string());
    ASSERT_TRUE(direct) << direct.error();
    const auto& layers = (*direct)->layers();
    ASSERT_EQ(layers.size(), 3u);
    for (size_t i = 0; i < layers.size(); ++i) {
        const QString shown = view.shownValue(QStringLiteral("Regions"), QStringLiteral("layer %1").arg(i));
        EXPECT_TRUE(shown.startsWith(QLocale::c().toString(static_cast<qulonglong>(layers[i].bytes)) + u' '))
            << "layer " << i << ": " << shown.toStdString();
        EXPECT_TRUE(shown.contains(QStringLiteral("%1 segments").arg(layers[i].segments.size())))
            << shown.toStdString();
    }
    EXPECT_FALSE(view.shownValue(QStringLiteral("Regions"), QStringLiteral("vocabulary")).isEmpty());
    EXPECT_TRUE(view.shownValue(QStringLiteral("Regions"), QStringLiteral("layer 3")).isNull());
    EXPECT_EQ(view.shownValue(QStringLiteral("File"), QStringLiteral("size")).section(u' ', 0, 0),
              QLocale::c().toString(static_cast<qulonglong>(std::filesystem::file_size(model_path()))));

    // Metadata: the vocabulary is summarised, long values are cut and kept on one line.
    EXPECT_TRUE(view.shownValue(QStringLiteral("Metadata"), QStringLiteral("tokenizer.ggml.tokens"))
                    .startsWith(QStringLiteral("320 strings: [")));
    const QString chatTemplate = view.shownValue(QStringLiteral("Metadata"), QStringLiteral("tokenizer.chat_template"));
    EXPECT_TRUE(chatTemplate.startsWith(QStringLiteral("{% for message in messages %}"))) << chatTemplate.toStdString();
    EXPECT_FALSE(chatTemplate.contains(u'\n'));
    EXPECT_TRUE(chatTemplate.contains(QStringLiteral("\\n")));
    EXPECT_LE(chatTemplate.size(), cflow::ui::kMaxValueChars);

    EXPECT_TRUE(window.statusArea()->message().contains(QStringLiteral("ready: context 512 tokens")))
        << window.statusArea()->message().toStdString();
    EXPECT_TRUE(window.windowTitle().startsWith(QStringLiteral("small.cflow")));
}

TEST(MainWindowTest, CorruptFileReportsTheReadersError) {
    const auto garbage = write_garbage_file();
    auto direct = cflow::CflowFile::open(garbage.string());
    ASSERT_FALSE(direct) << "10 bytes of text must not open as a .cflow file";

    cflow::ui::MainWindow window;
    QSignalSpy opened(&window, &cflow::ui::MainWindow::modelOpened);
    QSignalSpy failed(&window, &cflow::ui::MainWindow::openFailed);
    auto task = window.openModel(qpath(garbage));
    EXPECT_FALSE(finish(task));

    EXPECT_EQ(opened.count(), 0);
    ASSERT_EQ(failed.count(), 1);
    EXPECT_EQ(failed.at(0).at(0).toString(), qpath(garbage));
    EXPECT_EQ(failed.at(0).at(1).toString(), QString::fromStdString(direct.error()));
    EXPECT_EQ(window.lastError(), QString::fromStdString(direct.error()));
    EXPECT_TRUE(window.lastError().contains(qpath(garbage))) << window.lastError().toStdString();
    EXPECT_EQ(window.controller()->model().model, nullptr);
    EXPECT_EQ(window.headerView()->topLevelItemCount(), 0);

    // The message box is shown without blocking: the file's name and plain words (issue 37: the
    // user saw "GlobalHeader at offset 0: ..."), the reader's text in the disclosure.
    auto* box = window.findChild<QMessageBox*>(QStringLiteral("openErrorBox"));
    ASSERT_NE(box, nullptr);
    EXPECT_TRUE(box->isVisible());
    EXPECT_TRUE(box->text().contains(QString::fromStdString(garbage.filename().string()))) << box->text().toStdString();
    EXPECT_EQ(box->informativeText(), cflow::ui::plain_load_error(qpath(garbage), window.lastError()));
    EXPECT_FALSE(box->informativeText().contains(QStringLiteral("GlobalHeader"))) << box->informativeText().toStdString();
    EXPECT_EQ(box->detailedText(), window.lastError());
    close_error_boxes(window);
}

TEST(LoadErrorText, ReadersMessagesInPlainWords) {
    using cflow::ui::plain_load_error;
    EXPECT_TRUE(plain_load_error(QStringLiteral("/m/x.cflow"), QStringLiteral("/m/x.cflow: GlobalHeader at offset 0: file is "
                                                                              "11 bytes, smaller than the 88-byte header"))
                    .startsWith(QStringLiteral("This file is not a cflow model")));
    EXPECT_TRUE(plain_load_error(QStringLiteral("/m/x.gguf"), QStringLiteral("GlobalHeader.magic at offset 0: bad magic"))
                    .contains(QStringLiteral("File › Convert model")));
    EXPECT_TRUE(plain_load_error(QStringLiteral("/m/cut.cflow"),
                                 QStringLiteral("GlobalHeader.file_bytes at offset 72: header says the file has 4911234 "
                                                "bytes but it has 300000 (truncated)"))
                    .startsWith(QStringLiteral("The file is incomplete")));
    EXPECT_TRUE(plain_load_error(QStringLiteral("/m/gone.cflow"), QStringLiteral("/m/gone.cflow: cannot open: No such file or "
                                                                                 "directory"))
                    .startsWith(QStringLiteral("The file does not exist")));
    EXPECT_TRUE(plain_load_error(QStringLiteral("/m/x.cflow"), QStringLiteral("something new")).contains(QStringLiteral("detail")));
}

TEST(MainWindowTest, MissingFileNamesThePath) {
    const auto missing = cflow::test::temp_dir("ui_missing") / "does-not-exist.cflow";
    cflow::ui::MainWindow window;
    auto task = window.openModel(qpath(missing));
    EXPECT_FALSE(finish(task));
    EXPECT_TRUE(window.lastError().contains(qpath(missing))) << window.lastError().toStdString();
    close_error_boxes(window);
}

TEST(MainWindowTest, FailedOpenKeepsThePreviousModel) {
    cflow::ui::MainWindow window;
    auto good = window.openModel(qpath(model_path()));
    ASSERT_TRUE(finish(good, &window)) << window.lastError().toStdString();
    const auto shown = window.controller()->model().model;
    ASSERT_NE(shown, nullptr);

    auto bad = window.openModel(qpath(write_garbage_file()));
    EXPECT_FALSE(finish(bad));
    EXPECT_FALSE(window.lastError().isEmpty());
    EXPECT_EQ(window.controller()->model().model, shown);
    EXPECT_EQ(window.headerView()->shownValue(QStringLiteral("Global header"), QStringLiteral("d_model")),
              QStringLiteral("96"));
    close_error_boxes(window);
}

// Descriptors this process holds open on path (Linux: /proc/self/fd); -1 where that cannot be seen.
int main_window_descriptors_on(const std::filesystem::path& path) {
#ifdef __linux__
    std::error_code error;
    const auto target = std::filesystem::canonical(path, error);
    if (error) return -1;
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
        std::error_code linkError;
        if (std::filesystem::read_symlink(entry.path(), linkError) == target && !linkError) ++count;
    }
    return error ? -1 : count;
#else
    (void)path;
    return -1;
#endif
}

// Issue 36: each open read and validated the file twice (the window for the header and card on a
// pool thread, then the engine), and both copies stayed open. Now the engine's one load feeds the
// header, the card and the chat: the loader runs once per open, and one descriptor holds the file.
TEST(MainWindowTest, EachOpenReadsTheModelFileOnce) {
    const std::filesystem::path& path = model_path();
    ASSERT_TRUE(std::filesystem::exists(path));
    std::atomic<int> loads{0};
    cflow::ui::MainWindowOptions options;
    options.modelLoader = [&loads](const std::string& file, const cflow::LoadOptions& load) {
        loads.fetch_add(1);
        return cflow::Model::load(file, load);
    };
    cflow::ui::MainWindow window(nullptr, options);
    QSignalSpy opened(&window, &cflow::ui::MainWindow::modelOpened);

    auto first = window.openModel(qpath(path));
    ASSERT_TRUE(finish(first, &window)) << window.lastError().toStdString();
    EXPECT_EQ(loads.load(), 1);
    EXPECT_EQ(opened.count(), 1);
    if (const int held = main_window_descriptors_on(path); held >= 0) {
        EXPECT_EQ(held, 1) << "the file is held open twice";
    }
    // What the Model panel shows came with that load.
    EXPECT_EQ(window.headerView()->shownValue(QStringLiteral("Global header"), QStringLiteral("d_model")), QStringLiteral("96"));

    auto again = window.openModel(qpath(path));
    ASSERT_TRUE(finish(again, &window)) << window.lastError().toStdString();
    EXPECT_EQ(loads.load(), 2) << "opening it again reads it again, once";
    EXPECT_EQ(opened.count(), 2);

    auto bad = window.openModel(qpath(write_garbage_file()));
    EXPECT_FALSE(finish(bad));
    EXPECT_EQ(loads.load(), 3) << "a file that fails is read once too";
    EXPECT_FALSE(window.lastError().isEmpty());
    close_error_boxes(window);
}

TEST(MainWindowTest, NewerOpenSupersedesAnOlderOne) {
    ASSERT_TRUE(std::filesystem::exists(model_path()));
    cflow::ui::MainWindow window;
    QSignalSpy opened(&window, &cflow::ui::MainWindow::modelOpened);
    QSignalSpy failed(&window, &cflow::ui::MainWindow::openFailed);
    MainWindowEngineGate gate(window.engine());
    ASSERT_TRUE(gate.holding());
    auto older = window.openModel(qpath(model_path()));
    auto newer = window.openModel(qpath(write_garbage_file()));
    gate.open();  // the older (valid) model is first in the engine's queue: it must still not be shown
    EXPECT_FALSE(finish(newer));
    EXPECT_FALSE(finish(older));
    EXPECT_EQ(opened.count(), 0);
    EXPECT_EQ(failed.count(), 1);
    EXPECT_EQ(window.controller()->model().model, nullptr);
    EXPECT_EQ(window.headerView()->topLevelItemCount(), 0);
    close_error_boxes(window);
}

TEST(MainWindowTest, ClosingTheWindowDuringAnOpenIsSafe) {
    ASSERT_TRUE(std::filesystem::exists(model_path()));
    auto* window = new cflow::ui::MainWindow;
    auto task = window->openModel(qpath(model_path()));
    // The engine's answer needs this thread's event loop, which has not run yet.
    EXPECT_FALSE(task.isReady());
    delete window;  // joins the engine's thread, which may be loading the model
    EXPECT_FALSE(finish(task)) << "a result arriving after the window closed must be dropped";
}

} // namespace

namespace {

// Every menu entry under the bar, submenus' own entries included.
void collect_actions(QMenu* menu, QList<QAction*>& out) {
    for (QAction* action : menu->actions()) {
        if (action->isSeparator()) continue;
        out << action;
        if (action->menu()) collect_actions(action->menu(), out);
    }
}

// Issue 37: File > Bundled models… was greyed out without a reason. Every entry that is
// disabled says why in its tooltip, before and after a model is open.
TEST(MainWindowTest, EveryDisabledMenuEntrySaysWhy) {
    cflow::ui::test::ScopedDb db("main_window_disabled_entries");
    cflow::ui::test::IsolatedSettings isolated("main_window_disabled_entries");
    cflow::ui::MainWindowOptions options;
    options.bundledModelsFolder = QString();  // a build without the zoo
    cflow::ui::MainWindow window(nullptr, options);
    const auto check = [&](const char* when) {
        QList<QAction*> actions;
        for (QAction* top : window.menuBar()->actions())
            if (top->menu()) collect_actions(top->menu(), actions);
        int disabled = 0;
        for (QAction* action : actions) {
            if (action->isEnabled()) continue;
            ++disabled;
            EXPECT_TRUE(action->toolTip().startsWith(QStringLiteral("Not available")))
                << when << ": '" << action->text().toStdString() << "' is greyed out with the tooltip '"
                << action->toolTip().toStdString() << "'";
        }
        return disabled;
    };
    EXPECT_GE(check("no model"), 3) << "bundled models, the server switch and the empty recent list";
    window.openModel(qpath(cflow::ui::test::chatml_model()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    check("a model open");
}

} // namespace
