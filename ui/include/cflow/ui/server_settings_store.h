#pragma once
// The local server's settings as the app keeps them between runs: QSettings keys server/host,
// server/port, server/apiKey and server/parallel (the threads per slot are not kept: they follow
// the machine). Absent keys read as ServerSettings' defaults.
#include "cflow/ui/server_controller.h"

class QSettings;

namespace cflow::ui {

ServerSettings read_server_settings(const QSettings& stored);
void write_server_settings(QSettings& stored, const ServerSettings& settings);

} // namespace cflow::ui
