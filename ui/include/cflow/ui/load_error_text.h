#pragma once
// A model that fails to open, said in plain words for the desktop app (issue 37: the user saw
// "GlobalHeader.magic at offset 0: bad magic"). The reader's exact message stays available as
// the detail (a disclosure in the dialog); this is the sentence above it.
#include <QString>

namespace cflow::ui {

// What went wrong with the file at `path` and what the user can do, from the reader's `message`.
QString plain_load_error(const QString& path, const QString& message);

} // namespace cflow::ui
