#pragma once
// Add or edit one MCP server of a conversation: a name, the command, its arguments (one line,
// quoted as a shell would: "a b" is one argument) and environment variables (NAME=value, one a
// line). OK is refused, with the reason shown, while the setup is unusable.
#include <QDialog>

#include "cflow/ui/tools/mcp_server_config.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace cflow::ui {

class McpServerDialog : public QDialog {
    Q_OBJECT
public:
    explicit McpServerDialog(const McpServerConfig& initial = {}, QWidget* parent = nullptr);
    McpServerConfig config() const;
    void accept() override;

    // Arguments as the field shows them (quoted where needed) and back (QProcess::splitCommand).
    static QString joinArguments(const QStringList& arguments);
    static QStringList splitArguments(const QString& text);

private:
    QLineEdit* name_ = nullptr;
    QLineEdit* command_ = nullptr;
    QLineEdit* arguments_ = nullptr;
    QPlainTextEdit* environment_ = nullptr;
    QLabel* problem_ = nullptr;
};

} // namespace cflow::ui
