#include "cflow/ui/tools/mcp_server_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QVBoxLayout>

namespace cflow::ui {

McpServerDialog::McpServerDialog(const McpServerConfig& initial, QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("mcpServerDialog"));
    setWindowTitle(initial.name.isEmpty() ? tr("Add MCP server") : tr("Edit MCP server"));
    auto* form = new QFormLayout;
    name_ = new QLineEdit(initial.name, this);
    name_->setObjectName(QStringLiteral("mcpNameEdit"));
    name_->setAccessibleName(tr("Name"));
    name_->setPlaceholderText(tr("files"));
    form->addRow(tr("&Name:"), name_);

    command_ = new QLineEdit(initial.command, this);
    command_->setObjectName(QStringLiteral("mcpCommandEdit"));
    command_->setAccessibleName(tr("Command"));
    command_->setPlaceholderText(tr("npx, uvx, node, or the server's program"));
    auto* browse = new QPushButton(tr("&Browse…"), this);
    browse->setAccessibleName(tr("Browse for the command"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString program = QFileDialog::getOpenFileName(this, tr("MCP server program"));
        if (!program.isEmpty()) command_->setText(program);
    });
    auto* commandRow = new QHBoxLayout;
    commandRow->addWidget(command_, 1);
    commandRow->addWidget(browse);
    form->addRow(tr("&Command:"), commandRow);

    arguments_ = new QLineEdit(joinArguments(initial.arguments), this);
    arguments_->setObjectName(QStringLiteral("mcpArgumentsEdit"));
    arguments_->setAccessibleName(tr("Arguments"));
    arguments_->setPlaceholderText(tr("-y @modelcontextprotocol/server-filesystem \"/home/me/My notes\""));
    form->addRow(tr("&Arguments:"), arguments_);

    environment_ = new QPlainTextEdit(initial.environment.join(QLatin1Char('\n')), this);
    environment_->setObjectName(QStringLiteral("mcpEnvironmentEdit"));
    environment_->setAccessibleName(tr("Environment"));
    environment_->setPlaceholderText(tr("NAME=value, one a line"));
    environment_->setTabChangesFocus(true);
    form->addRow(tr("&Environment:"), environment_);

    problem_ = new QLabel(this);
    problem_->setObjectName(QStringLiteral("mcpProblemLabel"));
    problem_->setWordWrap(true);
    problem_->hide();

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &McpServerDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &McpServerDialog::reject);

    auto* layout = new QVBoxLayout(this);
    auto* note = new QLabel(tr("The server runs on this computer as a child process of cflow studio and talks over its "
                               "standard input and output (the MCP stdio transport). Each call it gets is shown to you "
                               "for approval first."),
                            this);
    note->setWordWrap(true);
    layout->addWidget(note);
    layout->addLayout(form);
    layout->addWidget(problem_);
    layout->addWidget(buttons);
}

QString McpServerDialog::joinArguments(const QStringList& arguments) {
    QStringList quoted;
    for (const QString& a : arguments) {
        if (!a.isEmpty() && !a.contains(QLatin1Char(' ')) && !a.contains(QLatin1Char('"')) && !a.contains(QLatin1Char('\t'))) {
            quoted << a;
        } else {
            QString inner = a;
            inner.replace(QLatin1String("\""), QLatin1String("\"\"\""));  // splitCommand: """ is one literal quote
            quoted << QLatin1Char('"') + inner + QLatin1Char('"');
        }
    }
    return quoted.join(QLatin1Char(' '));
}

QStringList McpServerDialog::splitArguments(const QString& text) { return QProcess::splitCommand(text); }

McpServerConfig McpServerDialog::config() const {
    McpServerConfig config;
    config.name = name_->text().trimmed();
    config.command = command_->text().trimmed();
    config.arguments = splitArguments(arguments_->text());
    for (const QString& line : environment_->toPlainText().split(QLatin1Char('\n'))) {
        const QString variable = line.trimmed();
        if (!variable.isEmpty()) config.environment << variable;
    }
    return config;
}

void McpServerDialog::accept() {
    const QString problem = config().problem();
    if (!problem.isEmpty()) {
        problem_->setText(tr("Cannot save: %1.").arg(problem));
        problem_->show();
        return;
    }
    QDialog::accept();
}

} // namespace cflow::ui
