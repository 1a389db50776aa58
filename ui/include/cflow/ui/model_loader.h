#pragma once
// Opening a model for the GUI: runs on a worker thread (QtConcurrent), so it returns a
// plain value that carries either the opened file and its summary or the reader's error.
#include <memory>

#include <QString>

#include "cflow/formats/mapped_file.h"
#include "cflow/ui/model_card.h"
#include "cflow/ui/model_summary.h"

namespace cflow {
class CflowFile;
}

namespace cflow::ui {

struct LoadedModel {
    std::shared_ptr<const CflowFile> file;  // null when opening failed
    ModelSummary summary;                   // empty when opening failed
    ModelCard card;
    QString error;                          // the reader's message when opening failed

    bool ok() const { return file != nullptr; }
};

// Opens and validates path (UTF-8 on every OS) and summarises it. Never throws.
LoadedModel load_model(const QString& path, LoadMode mode = LoadMode::Map);

} // namespace cflow::ui
