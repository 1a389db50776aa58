#pragma once
// A button a screen reader can name and a keyboard can reach: object name (for tests and
// style sheets), accessible name, tooltip (the accessible name unless given) and Tab focus.
#include <QPushButton>
#include <QString>

namespace cflow::ui {

template <class Button = QPushButton>
Button* labelled_button(const QString& text, const QString& objectName, const QString& accessibleName,
                        QWidget* parent, const QString& toolTip = QString()) {
    auto* button = new Button(parent);
    button->setText(text);
    button->setObjectName(objectName);
    button->setAccessibleName(accessibleName);
    button->setToolTip(toolTip.isEmpty() ? accessibleName : toolTip);
    button->setFocusPolicy(Qt::StrongFocus);
    return button;
}

} // namespace cflow::ui
