#pragma once
// Finds what a user would see as a broken layout in a shown window: text cut off inside a
// label or button, widgets of one layout drawn over each other, and layout items pushed
// outside their parent. Used by the window tests at several sizes and by
// `cflow-studio --self-test` before it saves its screenshot, and by the dialog tests at
// QT_SCALE_FACTOR 1, 1.5 and 2 (tests/ui/CMakeLists.txt).
#include <QString>
#include <QStringList>

class QWidget;

namespace cflow::ui {

// One line per problem ("label 'Context: 12 / 512 tokens' needs 190 px, has 120 (ChatPanel)").
// Only visible widgets count; elided and word-wrapped texts are fine by design.
QStringList layout_problems(const QWidget* root);

// One line per control a keyboard or screen-reader user cannot use ("QLineEdit wizardOutput: no
// accessible name"): every visible, enabled control of root's window (buttons, fields, combo and
// spin boxes, lists, tables, text views) needs a name a screen reader can say (its accessible
// name, its text, or a label whose buddy it is) and must take focus with Tab.
QStringList accessibility_problems(const QWidget* root);

} // namespace cflow::ui
