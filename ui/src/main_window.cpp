#include "cflow/ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QStatusBar>
#include <QtConcurrent/QtConcurrentRun>

#include <QCoro/QCoroFuture>
#include <spdlog/spdlog.h>

#include "cflow/formats/cflow_reader.h"
#include "cflow/ui/model_header_view.h"
#include "cflow/ui/model_loader.h"

namespace cflow::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("cflow studio"));
    headerView_ = new ModelHeaderView(this);
    setCentralWidget(headerView_);
    createMenus();
    statusBar()->showMessage(tr("No model open. File > Open model… to inspect a .cflow file."));
    resize(900, 700);
}

MainWindow::~MainWindow() = default;

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model…"), this, &MainWindow::chooseModel);
    open->setShortcut(QKeySequence::Open);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About cflow studio"), this, &MainWindow::showAbout);
}

void MainWindow::chooseModel() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open model"), QString(), tr("cflow models (*.cflow);;All files (*)"));
    if (path.isEmpty()) return;
    // Fire and forget: the task runs to completion on its own and reports through signals.
    openModel(path);
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About cflow studio"),
                       tr("<b>cflow studio</b> %1<br>Chat with local language models on the CPU and watch the "
                          "inference: tile-native .cflow weights, conditional expert loading and a delay-aware "
                          "scheduler.<br>Built with Qt %2.")
                           .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion())));
}

QCoro::Task<bool> MainWindow::openModel(QString path) {
    const uint64_t request = ++openRequest_;
    QPointer<MainWindow> self(this);
    statusBar()->showMessage(tr("Opening %1…").arg(QDir::toNativeSeparators(path)));
    spdlog::info("opening model '{}'", path.toStdString());

    // The future is a named local and no lambda is involved on purpose: with GCC 12, a
    // capturing lambda temporary inside the co_await expression corrupted the frame's
    // `path` (its QString was released one time too many; the known GCC coroutine bugs
    // around temporaries in co_await expressions).
    QFuture<LoadedModel> pending = QtConcurrent::run(&load_model, path, LoadMode::Map);
    LoadedModel loaded = co_await pending;

    if (!self) co_return false;                    // the window closed while the worker ran
    if (request != openRequest_) co_return false;  // a newer openModel call owns the view now

    if (!loaded.ok()) {
        reportError(path, loaded.error);
        co_return false;
    }
    model_ = std::move(loaded.file);
    lastError_.clear();
    headerView_->showSummary(loaded.summary);
    setWindowTitle(tr("%1 — cflow studio").arg(QFileInfo(path).fileName()));
    statusBar()->showMessage(tr("Opened %1: %2 layers, %3")
                                 .arg(QDir::toNativeSeparators(path))
                                 .arg(model_->header().n_layers)
                                 .arg(QLocale().formattedDataSize(static_cast<qint64>(model_->file_bytes()))));
    spdlog::info("opened model '{}' ({} bytes)", path.toStdString(), model_->file_bytes());
    emit modelOpened(path);
    co_return true;
}

void MainWindow::reportError(const QString& path, const QString& message) {
    lastError_ = message;
    statusBar()->showMessage(tr("Could not open %1").arg(QDir::toNativeSeparators(path)));
    spdlog::warn("cannot open model '{}': {}", path.toStdString(), message.toStdString());

    // open() rather than exec(): window-modal without a nested event loop, so nothing
    // (a test, a queued open) blocks on the dialog.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot open model"), tr("The model could not be opened."),
                                QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("openErrorBox"));
    box->setInformativeText(message);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    emit openFailed(path, message);
}

} // namespace cflow::ui
