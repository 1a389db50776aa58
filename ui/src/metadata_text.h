#pragma once
// A .cflow metadata string as shown in the UI: the value of key, or "" when the file has none.
#include <QString>

#include "cflow/formats/cflow_reader.h"

namespace cflow::ui {

inline QString metadata_text(const CflowFile& file, const char* key) {
    auto value = file.metadata().get_string(key);
    return value ? QString::fromStdString(*value) : QString();
}

} // namespace cflow::ui
