#pragma once
// File names for exporting a conversation (ConversationStore::exportMarkdown / exportJson):
// what the save dialog proposes, and the extension a chosen path must end in.
#include <QString>

namespace cflow::ui {

// The conversation's title as a file name: plain text (plain_title), with characters that
// are not allowed in file names on some system (/ \ : * ? " < > | and control characters)
// turned into spaces, whitespace collapsed, no leading or trailing dots or spaces, at most
// kMaxExportBaseChars characters before the extension; "conversation" when nothing is left.
// Ends in ".json" when asJson, else ".md".
QString suggested_export_file_name(const QString& title, bool asJson);

// path with ".md" / ".json" appended unless it already ends in it (any letter case); an
// empty path stays empty (the dialog was cancelled).
QString with_export_extension(const QString& path, bool asJson);

inline constexpr int kMaxExportBaseChars = 60;

} // namespace cflow::ui
