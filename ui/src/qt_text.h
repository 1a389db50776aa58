#pragma once
// UTF-8 at the edge between the engine's std::string and Qt's QString.
#include <string>
#include <string_view>

#include <QString>

namespace cflow::ui {

inline QString qt(std::string_view utf8Text) { return QString::fromUtf8(utf8Text.data(), qsizetype(utf8Text.size())); }
inline std::string utf8(const QString& text) { return text.toStdString(); }

} // namespace cflow::ui
