#include "cflow/ui/model_panel.h"

#include <QDir>
#include <QTextBrowser>
#include <QToolButton>
#include <QVBoxLayout>

#include "cflow/ui/model_header_view.h"

namespace cflow::ui {

QString card_markdown(const ModelCard& card) {
    QString md = QStringLiteral("### %1\n\n").arg(card.name);
    if (!card.purpose.isEmpty()) md += card.purpose + QStringLiteral("\n\n");
    for (const QString& line : card.capabilities) md += QStringLiteral("- %1\n").arg(line);
    if (!card.markdown.isEmpty()) {
        md += QStringLiteral("\n---\n\n");
        md += card.markdown;
        if (!card.cardPath.isEmpty())
            md += QObject::tr("\n\n*Card: %1*\n").arg(QDir::toNativeSeparators(card.cardPath));
    } else {
        md += QObject::tr("\n*No model card: the file has no general.description and no MODEL_CARD.md beside it.*\n");
    }
    return md;
}

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    card_ = new QTextBrowser(this);
    card_->setObjectName(QStringLiteral("modelCard"));
    card_->setAccessibleName(tr("Model card"));
    card_->setOpenExternalLinks(true);
    card_->setMarkdown(tr("No model open."));
    layout->addWidget(card_, 1);
    details_ = new QToolButton(this);
    details_->setObjectName(QStringLiteral("headerFieldsButton"));
    details_->setText(tr("Header fields"));
    details_->setAccessibleName(tr("Show the file's header fields"));
    details_->setToolTip(details_->accessibleName());
    details_->setCheckable(true);
    details_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    details_->setArrowType(Qt::RightArrow);
    layout->addWidget(details_);
    header_ = new ModelHeaderView(this);
    header_->hide();
    layout->addWidget(header_, 1);
    connect(details_, &QToolButton::toggled, this, [this](bool on) {
        header_->setVisible(on);
        details_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
}

void ModelPanel::showModel(const ModelCard& card, const ModelSummary& summary) {
    card_->setMarkdown(card_markdown(card));
    header_->showSummary(summary);
}

} // namespace cflow::ui
