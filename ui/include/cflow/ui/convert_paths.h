#pragma once
// Where a conversion goes by default and how its errors read: shared by the conversion wizard
// and anything else that converts from the GUI.
#include <QString>

namespace cflow::ui {

// Where a conversion of sourcePath goes by default: <source base name>.cflow beside the source
// (a folder source: <folder>.cflow beside the folder) when that folder is writable, else in
// fallbackDir (default: Documents/models).
QString default_convert_output_path(const QString& sourcePath, const QString& fallbackDir = QString());
// A converter error as the user should read it: the converter writes to "<output>.tmp-<n>"
// and renames on success, so mentions of that temporary file name the output instead.
QString user_facing_convert_error(const QString& error, const QString& outputPath);

} // namespace cflow::ui
