#pragma once
// The Model panel: the opened model's card first (name, what it is for, what it can do, the
// card text), the raw header fields behind "Header fields" for those who want them.
#include <QWidget>

#include "cflow/ui/model_card.h"
#include "cflow/ui/model_summary.h"

class QTextBrowser;
class QToolButton;

namespace cflow::ui {

class ModelHeaderView;

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);

    void showModel(const ModelCard& card, const ModelSummary& summary);
    ModelHeaderView* headerView() const { return header_; }
    QTextBrowser* cardView() const { return card_; }
    QToolButton* detailsButton() const { return details_; }

private:
    QTextBrowser* card_;
    QToolButton* details_;
    ModelHeaderView* header_;
};

// The card as Markdown for the panel: name, purpose, capabilities, then the card's own text.
QString card_markdown(const ModelCard& card);

} // namespace cflow::ui
