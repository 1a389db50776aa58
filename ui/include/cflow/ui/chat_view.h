#pragma once
// The conversation as a column of message cards. Each card renders its text as Markdown
// (code blocks in the fixed-pitch font) and has a Copy button; user cards also have Edit.
// Streaming appends go to the last card and re-render it.
#include <vector>

#include <QScrollArea>
#include <QString>

class QTextBrowser;
class QVBoxLayout;

namespace cflow::ui {

class ChatMessageCard : public QWidget {
    Q_OBJECT
public:
    ChatMessageCard(const QString& role, const QString& text, QWidget* parent = nullptr);
    const QString& role() const { return role_; }
    const QString& text() const { return text_; }
    void setText(const QString& text);
    QTextBrowser* browser() const { return browser_; }

signals:
    void editRequested();

private:
    void fitHeight();
    QString role_;
    QString text_;
    QTextBrowser* browser_;
};

class ChatView : public QScrollArea {
    Q_OBJECT
public:
    explicit ChatView(QWidget* parent = nullptr);

    int addMessage(const QString& role, const QString& text);  // returns its index
    void appendToLast(const QString& text);
    void setMessageText(int index, const QString& text);
    void removeFrom(int index);  // drops message index and every later one
    void clearMessages();
    int count() const { return static_cast<int>(cards_.size()); }
    ChatMessageCard* card(int index) const { return cards_.at(static_cast<size_t>(index)); }

signals:
    void editRequested(int index);

private:
    QVBoxLayout* column_;
    std::vector<ChatMessageCard*> cards_;
};

} // namespace cflow::ui
