#include "cflow/ui/layout_audit.h"

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTextEdit>
#include <QCheckBox>
#include <QLabel>
#include <QLayout>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollBar>
#include <QStyle>
#include <QStyleOptionButton>
#include <QTextDocument>
#include <QWidget>

namespace cflow::ui {
namespace {

QString where(const QWidget* w) {
    QStringList path;
    for (const QWidget* p = w; p; p = p->parentWidget()) {
        const QString name = p->objectName().isEmpty() ? QString::fromLatin1(p->metaObject()->className()) : p->objectName();
        path.prepend(name);
        if (p->isWindow()) break;
    }
    return path.join(u'/');
}

bool shown(const QWidget* w, const QWidget* root) {
    return w->isVisible() && w->width() > 0 && w->height() > 0 && w->window() == root->window();
}

void check_label(const QLabel* label, QStringList& problems) {
    if (label->wordWrap() || label->text().isEmpty() || !label->pixmap().isNull()) return;
    QString text = label->text();
    // A label with a buddy draws "&Port:" as "Port:" with P underlined ("&&" is one '&').
    if (label->buddy()) text.replace(QStringLiteral("&&"), QStringLiteral("\x01")).remove(u'&').replace(u'\x01', u'&');
    if (Qt::mightBeRichText(text) || label->textFormat() == Qt::RichText) {
        QTextDocument doc;
        doc.setHtml(text);
        text = doc.toPlainText();
    }
    int needed = 0;
    for (const QString& line : text.split(u'\n')) needed = std::max(needed, label->fontMetrics().horizontalAdvance(line));
    const int available = label->contentsRect().width() - 2 * label->margin() - label->indent();
    if (needed > available + 1)
        problems << QStringLiteral("label '%1' needs %2 px, has %3 (%4)").arg(text.left(60)).arg(needed).arg(available).arg(where(label));
}

void check_button(const QAbstractButton* button, QStringList& problems) {
    if (button->text().isEmpty()) return;
    // What the text needs inside the button's frame (not its size hint, which holds a
    // minimum width that is not text).
    const QString text = QString(button->text()).remove(u'&');
    int needed = button->fontMetrics().horizontalAdvance(text);
    if (qobject_cast<const QCheckBox*>(button) || qobject_cast<const QRadioButton*>(button)) {
        needed += button->style()->pixelMetric(QStyle::PM_IndicatorWidth) + 4;
    } else if (qobject_cast<const QPushButton*>(button)) {
        needed += 8;  // the frame and its inner padding: less and the text touches or crosses the border
    }
    if (needed > button->width() + 1)
        problems << QStringLiteral("button '%1' needs %2 px, has %3 (%4)").arg(text).arg(needed).arg(button->width()).arg(where(button));
}

void check_layout(const QWidget* owner, const QLayout* layout, QStringList& problems) {
    std::vector<const QWidget*> items;
    for (int i = 0; i < layout->count(); ++i) {
        QLayoutItem* item = layout->itemAt(i);
        if (const QWidget* w = item->widget(); w && !w->isHidden() && !w->isWindow()) items.push_back(w);
        else if (const QLayout* inner = item->layout()) check_layout(owner, inner, problems);
    }
    const QRect inside = owner->rect();
    for (size_t i = 0; i < items.size(); ++i) {
        const QRect a = items[i]->geometry();
        if (!a.intersects(inside)) continue;  // parked out of sight (a dock in a background tab)
        if (!inside.contains(a) && a.intersected(inside) != a)
            problems << QStringLiteral("%1 is cut off by its parent (%2 outside %3x%4)")
                            .arg(where(items[i]))
                            .arg(QStringLiteral("%1,%2 %3x%4").arg(a.x()).arg(a.y()).arg(a.width()).arg(a.height()))
                            .arg(inside.width())
                            .arg(inside.height());
        for (size_t j = i + 1; j < items.size(); ++j)
            if (a.intersects(items[j]->geometry()))
                problems << QStringLiteral("%1 overlaps %2").arg(where(items[i]), where(items[j]));
    }
}

bool audit_is_control(const QWidget* w) {
    return qobject_cast<const QAbstractButton*>(w) || qobject_cast<const QLineEdit*>(w) ||
           qobject_cast<const QPlainTextEdit*>(w) || qobject_cast<const QTextEdit*>(w) || qobject_cast<const QComboBox*>(w) ||
           qobject_cast<const QAbstractSpinBox*>(w) || qobject_cast<const QAbstractItemView*>(w) ||
           qobject_cast<const QAbstractSlider*>(w);
}

// What a screen reader says for it: its accessible name, its text, or the label it is the buddy of.
QString audit_spoken_name(const QWidget* w, const QWidget* window) {
    if (!w->accessibleName().isEmpty()) return w->accessibleName();
    if (const auto* b = qobject_cast<const QAbstractButton*>(w); b && !b->text().isEmpty()) return b->text();
    for (const QLabel* label : window->findChildren<const QLabel*>())
        if (label->buddy() == w && !label->text().isEmpty()) return label->text();
    return {};
}

} // namespace

QStringList accessibility_problems(const QWidget* root) {
    QStringList problems;
    const QWidget* window = root->window();
    for (const QWidget* w : root->findChildren<const QWidget*>()) {
        // Line edits inside spin and combo boxes belong to them.
        const QWidget* parent = w->parentWidget();
        // So do a view's headers and corner button (cell widgets sit in its viewport, and count).
        if (qobject_cast<const QAbstractSpinBox*>(parent) || qobject_cast<const QComboBox*>(parent) ||
            qobject_cast<const QAbstractItemView*>(parent))
            continue;
        if (qobject_cast<const QScrollBar*>(w)) continue;  // reached through the view it scrolls
        if (!w->isVisible() || !w->isEnabled() || !audit_is_control(w) || w->window() != window ||
            w->objectName().startsWith(QLatin1String("qt_")))
            continue;
        const QString what = QString::fromLatin1(w->metaObject()->className()) + u' ' + where(w);
        if (audit_spoken_name(w, window).isEmpty()) problems << what + QStringLiteral(": no accessible name");
        if (!(w->focusPolicy() & Qt::TabFocus)) problems << what + QStringLiteral(": not reachable with Tab");
    }
    return problems;
}

QStringList layout_problems(const QWidget* root) {
    QStringList problems;
    QList<const QWidget*> widgets{root};
    for (const QWidget* w : root->findChildren<const QWidget*>()) widgets.push_back(w);
    for (const QWidget* w : widgets) {
        if (!shown(w, root)) continue;
        if (const auto* label = qobject_cast<const QLabel*>(w)) check_label(label, problems);
        if (const auto* button = qobject_cast<const QAbstractButton*>(w)) check_button(button, problems);
        if (const QLayout* layout = w->layout()) check_layout(w, layout, problems);
    }
    return problems;
}

} // namespace cflow::ui
