#include "cflow/ui/load_error_text.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace cflow::ui {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("LoadErrorText", text); }

bool has(const QString& message, const char* needle) { return message.contains(QLatin1String(needle), Qt::CaseInsensitive); }

} // namespace

QString plain_load_error(const QString& path, const QString& message) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (has(message, "No such file") || has(message, "cannot open"))
        return tr("The file does not exist or cannot be read (check the name and the permissions).");
    if (has(message, "changed on disk"))
        return tr("The file changed while it was in use (rewritten or cut short by another program). Open it again "
                  "once that program has finished.");
    if (has(message, "(truncated)") || has(message, "past its end"))
        return tr("The file is incomplete: it ends before the size its header gives, as after an interrupted download "
                  "or copy. Download or convert it again.");
    const bool not_a_cflow = has(message, "bad magic") || has(message, "smaller than the") || has(message, "not a .cflow");
    if (not_a_cflow && (suffix == QLatin1String("gguf") || suffix == QLatin1String("safetensors") ||
                        suffix == QLatin1String("bin") || suffix == QLatin1String("json")))
        return tr("This is a .%1 file. cflow studio runs .cflow models: convert it first with File › Convert model….")
            .arg(suffix);
    if (not_a_cflow)
        return tr("This file is not a cflow model (.cflow or .vflow), or its start is damaged.");
    if (has(message, "unsupported") || has(message, "unknown architecture") || has(message, "not supported"))
        return tr("This model uses something cflow studio does not run yet (see the detail).");
    if (has(message, "out of memory") || has(message, "Cannot allocate"))
        return tr("There is not enough memory to open this model.");
    return tr("The file could not be read as a model (see the detail).");
}

} // namespace cflow::ui
