#pragma once
// The status bar's content: a message (an error stays red until the next message replaces
// it), the prompt's progress while it is processed, the live decode rate, and the last
// reply's metrics, and the local server's address while it runs. Every text is painted elided inside its own box, so nothing overlaps at
// any window width; the full text is the tooltip.
#include <QString>
#include <QWidget>

#include "cflow/ui/chat_types.h"

class QProgressBar;

namespace cflow::ui {

class ElidedText;

// The metrics line of a reply written by an endpoint (issue 34): time to the first text and the
// rate as received, the server's usage and llama.cpp's timings when it sent them, the attempts
// (429/503 retries), and how it ended.
QString remote_reply_metrics_text(const ReplyStats& stats);

class StatusArea : public QWidget {
    Q_OBJECT
public:
    explicit StatusArea(QWidget* parent = nullptr);

    void showInfo(const QString& text);
    void showError(const QString& text);
    void showPromptProgress(int processed, int total);  // hidden once processed == total
    void showDecoding(int tokens, double tokensPerS);
    void showMetrics(const QString& text);
    void clearActivity();  // the reply ended: no progress, no live rate
    void showServer(const QString& text);  // the local server's URL and requests ("": not serving, hidden)

    QString message() const;
    bool showsError() const { return error_; }
    QString activity() const;  // progress or live rate text ("" when idle)
    QString metrics() const;
    QString server() const;
    QProgressBar* progressBar() const { return progress_; }

private:
    ElidedText* message_;
    QProgressBar* progress_;
    ElidedText* activity_;
    ElidedText* metrics_;
    ElidedText* server_;
    bool error_ = false;
};

} // namespace cflow::ui
