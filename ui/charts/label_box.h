#pragma once
// Internal to the inspector charts: hosts a QLabel whose text changes every frame (counters,
// summaries) without a layout of its own. QLabel::setText asks its parent's layout to
// relayout each time, which cascades through the whole inspector dock (QTabWidget asks every
// page's word-wrapped labels for heightForWidth, geometries are re-set): ~3 ms per frame. In
// the box the request stops here and is passed on only when the label no longer fits the
// box (its wrapped height at the current width changed, or its minimum width grew past the box);
// otherwise only the label repaints. Size hints are the label's, so the layout treats it the same.
#include <QEvent>
#include <QLabel>
#include <QWidget>

namespace cflow::ui::detail {

class LabelBox : public QWidget {
public:
    LabelBox(QLabel* label, QWidget* parent) : QWidget(parent), label_(label) {
        label_->setParent(this);
        setSizePolicy(label_->sizePolicy());
    }
    QSize sizeHint() const override { return label_->sizeHint(); }
    QSize minimumSizeHint() const override { return label_->minimumSizeHint(); }
    bool hasHeightForWidth() const override { return label_->hasHeightForWidth(); }
    int heightForWidth(int w) const override { return label_->heightForWidth(w); }

protected:
    void resizeEvent(QResizeEvent*) override { label_->setGeometry(rect()); }
    bool event(QEvent* e) override {
        if (e->type() == QEvent::LayoutRequest) {
            // Compared with what was last asked for, not with height(): the layout may give the box
            // more than it asks (stretch, a taller neighbour), and that is no reason to relayout.
            const int wanted = hasHeightForWidth() ? heightForWidth(width()) : sizeHint().height();
            // A wrapped label's minimum width is its longest word; measuring it lays out the text
            // again, so only unwrapped labels are checked.
            const int minWidth = label_->wordWrap() ? 0 : minimumSizeHint().width();
            if (wanted != askedHeight_ || wanted > height() || minWidth > width() || label_->isHidden()) {
                askedHeight_ = wanted;
                updateGeometry();
            }
            return true;
        }
        return QWidget::event(e);
    }

private:
    QLabel* label_;
    int askedHeight_ = -1;  // the label's wanted height when the layout was last asked to relayout
};

} // namespace cflow::ui::detail
