#include "cflow/ui/app_icon.h"

#include <QIconEngine>
#include <QPainter>
#include <QPainterPath>

namespace cflow::ui {
namespace {

// A rounded tile with three bands flowing through it: tiles streamed in compute order.
class AppIconEngine : public QIconEngine {
public:
    void paint(QPainter* p, const QRect& rect, QIcon::Mode mode, QIcon::State) override {
        p->save();
        p->setRenderHint(QPainter::Antialiasing);
        const QRectF r = QRectF(rect).adjusted(rect.width() * 0.04, rect.height() * 0.04, -rect.width() * 0.04,
                                                -rect.height() * 0.04);
        const qreal radius = r.width() * 0.22;
        QColor base(0x1f, 0x5f, 0xa8);
        if (mode == QIcon::Disabled) base = QColor(0x88, 0x88, 0x88);
        p->setPen(Qt::NoPen);
        p->setBrush(base);
        p->drawRoundedRect(r, radius, radius);
        const QColor bands[] = {QColor(0xff, 0xff, 0xff, 235), QColor(0x9c, 0xd3, 0xff, 235), QColor(0xff, 0xc8, 0x57, 235)};
        for (int i = 0; i < 3; ++i) {
            const qreal y = r.top() + r.height() * (0.3 + 0.2 * i);
            QPainterPath wave(QPointF(r.left() + r.width() * 0.14, y));
            wave.cubicTo(QPointF(r.left() + r.width() * 0.4, y - r.height() * 0.12),
                         QPointF(r.left() + r.width() * 0.6, y + r.height() * 0.12),
                         QPointF(r.right() - r.width() * 0.14, y));
            p->setPen(QPen(bands[i], std::max<qreal>(1.0, r.height() * 0.09), Qt::SolidLine, Qt::RoundCap));
            p->setBrush(Qt::NoBrush);
            p->drawPath(wave);
        }
        p->restore();
    }
    QPixmap pixmap(const QSize& size, QIcon::Mode mode, QIcon::State state) override {
        QPixmap pm(size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        paint(&p, QRect(QPoint(0, 0), size), mode, state);
        return pm;
    }
    QIconEngine* clone() const override { return new AppIconEngine; }
};

} // namespace

QIcon app_icon() { return QIcon(new AppIconEngine); }

} // namespace cflow::ui
