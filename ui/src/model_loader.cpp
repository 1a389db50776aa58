// Runs on a QtConcurrent worker: everything it touches is either local or immutable
// once CflowFile::open returns, so the result can be handed to the GUI thread as is.
#include "cflow/ui/model_loader.h"

#include <new>

#include "cflow/formats/cflow_reader.h"

namespace cflow::ui {

LoadedModel load_model(const QString& path, LoadMode mode) {
    LoadedModel loaded;
    if (path.isEmpty()) {
        loaded.error = QStringLiteral("No model file given.");
        return loaded;
    }
    try {
        auto opened = CflowFile::open(path.toStdString(), mode);  // QString::toStdString is UTF-8
        if (!opened) {
            loaded.error = QString::fromStdString(opened.error());
            return loaded;
        }
        loaded.summary = summarize_model(**opened);
        loaded.card = read_model_card(**opened, path);
        loaded.file = std::move(opened).value();
    } catch (const std::bad_alloc&) {
        // A hostile header can make the summary's containers huge; report instead of crashing the app.
        loaded = LoadedModel{};
        loaded.error = path + QStringLiteral(": out of memory while opening the model");
    }
    return loaded;
}

} // namespace cflow::ui
