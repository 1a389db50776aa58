#include "app_logging.h"

#include <QDir>
#include <QFile>
#include <QStandardPaths>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace cflow::studio {
namespace {
constexpr size_t kLogFileBytes = 5u << 20;  // per file before rotating
constexpr size_t kLogFilesKept = 3;
} // namespace

QString install_app_logger() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/logs");
    const QString path = dir + QStringLiteral("/cflow-studio.log");
    try {
        if (!QDir().mkpath(dir)) throw spdlog::spdlog_ex("cannot create " + dir.toStdString());
        // encodeName: the file system's 8-bit encoding (UTF-8 on Linux), what spdlog's std::string paths expect.
        auto logger = spdlog::rotating_logger_mt("cflow-studio", QFile::encodeName(path).toStdString(), kLogFileBytes,
                                                 kLogFilesKept);
        logger->flush_on(spdlog::level::info);  // a crash must not lose the lines that lead up to it
        spdlog::set_default_logger(logger);
        return path;
    } catch (const spdlog::spdlog_ex& e) {
        auto logger = spdlog::stderr_color_mt("cflow-studio-stderr");
        spdlog::set_default_logger(logger);
        spdlog::warn("cannot write the log file {}: {}; logging to stderr", path.toStdString(), e.what());
        return {};
    }
}

} // namespace cflow::studio
