// cflow-studio entry point: names the application (for AppDataLocation), sets up logging,
// shows the main window and opens the model given on the command line, if any.
// --self-test MODEL [--size WxH] --screenshot OUT.png runs one chat turn and exits (see self_test.h);
// --self-test convert / compare drive the conversion / comparison wizard (convert_self_test.h,
// compare_self_test.h).
#include <cstdio>
#include <string_view>

#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QSize>

#include <spdlog/spdlog.h>

#include "app_logging.h"
#include "cflow/ui/app_icon.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/database_recovery.h"
#include "cflow/ui/default_model.h"
#include "cflow/ui/main_window.h"
#include "compare_self_test.h"
#include "convert_self_test.h"
#include "process_exit.h"
#include "self_test.h"

namespace {

// The command line: every option declared once, for the app and for --help / --version.
struct StudioOptions {
    QCommandLineOption selfTest{QStringLiteral("self-test"),
                                QStringLiteral("Load MODEL, chat one turn, save a screenshot and exit; "
                                               "'convert' runs the conversion wizard instead, 'compare' the "
                                               "comparison wizard on the models given as arguments."),
                                QStringLiteral("MODEL")};
    QCommandLineOption screenshot{QStringLiteral("screenshot"), QStringLiteral("Where --self-test saves the window (PNG)."),
                                  QStringLiteral("OUT.png")};
    QCommandLineOption size{QStringLiteral("size"),
                            QStringLiteral("With --self-test: the window's exact size (the screenshot's), "
                                           "at least 800x600."),
                            QStringLiteral("WxH")};
    QCommandLineOption source{QStringLiteral("source"), QStringLiteral("With --self-test convert: the checkpoint to convert."),
                              QStringLiteral("SRC")};
    QCommandLineOption tokenizer{QStringLiteral("tokenizer"),
                                 QStringLiteral("With --self-test convert: a llama2.c source's tokenizer.bin."),
                                 QStringLiteral("FILE")};
    QCommandLineOption output{QStringLiteral("output"), QStringLiteral("With --self-test convert: the .cflow to write."),
                              QStringLiteral("OUT")};
    QCommandLineOption screenshotDir{QStringLiteral("screenshot-dir"),
                                     QStringLiteral("With --self-test convert or compare: where each wizard page's PNG goes."),
                                     QStringLiteral("DIR")};

    void addTo(QCommandLineParser& parser) const {
        parser.setApplicationDescription(
            QStringLiteral("Chat with local language models on the CPU and watch the inference."));
        parser.addHelpOption();
        parser.addVersionOption();
        parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("A .cflow model to open at start (optional)."),
                                     QStringLiteral("[model]"));
        for (const QCommandLineOption* option : {&selfTest, &screenshot, &size, &source, &tokenizer, &output, &screenshotDir})
            parser.addOption(*option);
    }
};

void name_application() {
    QCoreApplication::setOrganizationName(QStringLiteral("cflow"));
    QCoreApplication::setApplicationName(QStringLiteral("cflow-studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(CFLOW_VERSION));
}

// --help and --version print and exit; a QApplication would first need a display for that.
bool asks_for_help_or_version(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--") return false;
        if (arg == "-h" || arg == "-?" || arg == "--help" || arg == "--help-all" || arg == "-v" || arg == "--version")
            return true;
    }
    return false;
}

int print_help_or_version(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    name_application();
    QCommandLineParser parser;
    const StudioOptions options;
    options.addTo(parser);
    parser.process(app);  // prints the help or the version and exits
    return 0;
}

// Everything the app owns lives in here, so it is all destroyed before main ends the process.
int run_studio(int argc, char** argv) {
    // Fractional scale factors (125%, 150%) as the desktop sets them, not rounded to 1x or 2x.
    QGuiApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    QApplication app(argc, argv);
    QApplication::setWindowIcon(cflow::ui::app_icon());
    name_application();
    // Wayland compositors and docks match the window to its .desktop entry (and icon) by this name.
    QGuiApplication::setDesktopFileName(QStringLiteral(CFLOW_APP_ID));

    QCommandLineParser parser;
    const StudioOptions studioOptions;
    studioOptions.addTo(parser);
    const QCommandLineOption& selfTest = studioOptions.selfTest;
    const QCommandLineOption& screenshot = studioOptions.screenshot;
    const QCommandLineOption& size = studioOptions.size;
    const QCommandLineOption& source = studioOptions.source;
    const QCommandLineOption& tokenizer = studioOptions.tokenizer;
    const QCommandLineOption& output = studioOptions.output;
    const QCommandLineOption& screenshotDir = studioOptions.screenshotDir;
    parser.process(app);
    // `--self-test convert`: the conversion wizard alone, page by page (convert_self_test.h).
    if (parser.value(selfTest) == QStringLiteral("convert")) {
        if (!parser.isSet(source) || !parser.isSet(output) || !parser.isSet(screenshotDir)) {
            std::fprintf(stderr, "cflow-studio: --self-test convert needs --source SRC --output OUT --screenshot-dir DIR\n");
            return 2;
        }
        cflow::studio::install_app_logger();
        cflow::studio::ConvertSelfTest convertTest(parser.value(source), parser.value(tokenizer), parser.value(output),
                                                   parser.value(screenshotDir));
        convertTest.start();
        const int status = app.exec();
        spdlog::shutdown();
        return status;
    }
    // `--self-test compare`: the comparison wizard on 2-8 models (compare_self_test.h).
    if (parser.value(selfTest) == QStringLiteral("compare")) {
        const QStringList models = parser.positionalArguments();
        if (!parser.isSet(screenshotDir) || models.size() < 2 || models.size() > 8) {
            std::fprintf(stderr, "cflow-studio: --self-test compare needs --screenshot-dir DIR and 2 to 8 MODEL files\n");
            return 2;
        }
        cflow::studio::install_app_logger();
        cflow::studio::CompareSelfTest compareTest(models, parser.value(screenshotDir));
        compareTest.start();
        const int status = app.exec();
        spdlog::shutdown();
        return status;
    }
    if (parser.isSet(selfTest) && !parser.isSet(screenshot)) {
        std::fprintf(stderr, "cflow-studio: --self-test needs --screenshot OUT.png\n");
        return 2;
    }

    QSize windowSize;
    if (parser.isSet(size)) {
        const QStringList parts = parser.value(size).split(u'x');
        bool okW = false, okH = false;
        if (parts.size() == 2) windowSize = QSize(parts[0].toInt(&okW), parts[1].toInt(&okH));
        if (!okW || !okH || windowSize.width() < cflow::ui::MainWindow::kMinimumWidth ||
            windowSize.height() < cflow::ui::MainWindow::kMinimumHeight || windowSize.width() > 16384 ||
            windowSize.height() > 16384) {
            std::fprintf(stderr, "cflow-studio: --size wants WIDTHxHEIGHT from %dx%d to 16384x16384, got '%s'\n",
                         cflow::ui::MainWindow::kMinimumWidth, cflow::ui::MainWindow::kMinimumHeight,
                         parser.value(size).toLocal8Bit().constData());
            return 2;
        }
    }

    const QString logPath = cflow::studio::install_app_logger();
    spdlog::info("cflow-studio {} starting (Qt {}, log {})", CFLOW_VERSION, qVersion(),
                 logPath.isEmpty() ? std::string("stderr") : logPath.toStdString());

    cflow::ui::MainWindowOptions windowOptions;
    // Before any window: a damaged conversation database is asked about, and Quit ends here.
    auto store = std::make_shared<cflow::ui::OpenedStore>(cflow::ui::open_conversation_store(
        cflow::ui::default_database_path(), [](const QString& path, const QString& problem) {
            return cflow::ui::ask_about_damaged_database(nullptr, path, problem);
        }));
    if (!store->store) {
        spdlog::info("quitting: the conversation database could not be used");
        return 1;
    }
    windowOptions.store = std::move(store);
    windowOptions.measureReadBandwidth = !parser.isSet(selfTest);  // the self-test measures nothing it does not need
    windowOptions.rememberLayout = !parser.isSet(selfTest);        // and always starts from the default layout
    cflow::ui::MainWindow window(nullptr, windowOptions);
    window.setLogPath(logPath);
    if (windowSize.isValid()) window.resize(windowSize);  // before show: the docks are sized for it
    window.show();

    std::unique_ptr<cflow::studio::SelfTest> test;
    if (parser.isSet(selfTest)) {
        test = std::make_unique<cflow::studio::SelfTest>(window, parser.value(selfTest), parser.value(screenshot),
                                                         windowSize);
        test->start();
    } else {
        const QStringList positional = parser.positionalArguments();
        if (positional.size() > 1) spdlog::warn("ignoring {} extra command-line arguments", positional.size() - 1);
        // Without an argument the model (and conversation) of the last session reopen; on a first
        // start the embedded default model opens, so it needs no set-up.
        const QString model = !positional.isEmpty() ? QDir::current().absoluteFilePath(positional.front())
                                                    : window.startupModel(cflow::ui::default_model_path());
        if (!model.isEmpty()) {
            // The task suspends on the worker and finishes inside app.exec(); it reports through the window.
            window.openModel(model);
        } else {
            spdlog::warn("no model given and no embedded default model found beside the executable");
        }
    }

    const int status = app.exec();
    spdlog::info("cflow-studio exiting with status {}", status);
    spdlog::shutdown();
    return status;
}

} // namespace

int main(int argc, char** argv) {
    if (asks_for_help_or_version(argc, argv)) return print_help_or_version(argc, argv);
    return cflow::studio::end_process(run_studio(argc, argv));
}
