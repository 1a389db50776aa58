#pragma once
// Conversation titles come from the first message, which is Markdown ("# Plan", "**Fix**
// `foo()`"): the sidebar, dialogs and export file names show them as plain one-line text.
#include <QString>

namespace cflow::ui {

// markdownText without Markdown syntax (heading #, emphasis * _ ~~, backticks, links and
// images [text](url) -> text, list markers, > quotes), whitespace runs and line breaks
// collapsed to single spaces, trimmed; longer than maxChars it is cut to maxChars
// characters ending in "…". maxChars <= 0: no limit.
QString plain_title(const QString& markdownText, int maxChars);

} // namespace cflow::ui
