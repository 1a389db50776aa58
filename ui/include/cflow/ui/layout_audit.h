#pragma once
// Finds what a user would see as a broken layout in a shown window: text cut off inside a
// label or button, widgets of one layout drawn over each other, and layout items pushed
// outside their parent. Used by the window tests at several sizes and by
// `cflow-studio --self-test` before it saves its screenshot.
#include <QString>
#include <QStringList>

class QWidget;

namespace cflow::ui {

// One line per problem ("label 'Context: 12 / 512 tokens' needs 190 px, has 120 (ChatPanel)").
// Only visible widgets count; elided and word-wrapped texts are fine by design.
QStringList layout_problems(const QWidget* root);

} // namespace cflow::ui
