#pragma once
// The studio's log: a rotating file under AppDataLocation/logs, falling back to stderr
// when that folder cannot be written (read-only home, sandbox).
#include <QString>

namespace cflow::studio {

// Installs the default spdlog logger; returns the log file path, or an empty string when
// only the stderr fallback could be set up. Call after QApplication names are set.
QString install_app_logger();

} // namespace cflow::studio
