#include "cflow/ui/schema_dialog.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/ui/fixed_font.h"
#include "cflow/ui/reply_format.h"

namespace cflow::ui {
namespace {

constexpr qint64 kSchemaDialogMaxFileBytes = qint64(1) << 20;  // json_schema_grammar's own limit

} // namespace

SchemaDialog::SchemaDialog(const QString& schema, QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("schemaDialog"));
    setWindowTitle(tr("Reply format: JSON Schema"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Replies will be JSON valid under this schema (types, enum, const, required and optional "
                                "properties, arrays, nested objects, anyOf, $ref, string formats)."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    editor_ = new QPlainTextEdit(this);
    editor_->setObjectName(QStringLiteral("schemaSource"));
    editor_->setAccessibleName(tr("JSON Schema"));
    editor_->setFont(fixed_pitch_font());
    editor_->setPlainText(schema);
    layout->addWidget(editor_, 1);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("schemaStatus"));
    status_->setAccessibleName(tr("Schema check"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);
    auto* row = new QHBoxLayout;
    load_ = new QPushButton(tr("Load .json…"), this);
    load_->setObjectName(QStringLiteral("schemaLoad"));
    load_->setAccessibleName(tr("Load a JSON Schema file"));
    row->addWidget(load_);
    row->addStretch(1);
    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    row->addWidget(buttons_);
    layout->addLayout(row);

    connect(editor_, &QPlainTextEdit::textChanged, this, &SchemaDialog::check);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(load_, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load a JSON Schema"), QString(),
                                                          tr("JSON Schema (*.json);;All files (*)"));
        if (!path.isEmpty()) loadFile(path);
    });
    check();
    resize(600, 480);
}

QString SchemaDialog::schema() const { return editor_->toPlainText(); }

QString SchemaDialog::statusText() const { return status_->text(); }

bool SchemaDialog::loadFile(const QString& path) {
    QFile file(path);
    if (file.size() > kSchemaDialogMaxFileBytes) {
        status_->setText(tr("%1 is larger than 1 MiB: not a schema this app can use.").arg(QFileInfo(path).fileName()));
        return false;
    }
    if (!file.open(QIODevice::ReadOnly)) {
        status_->setText(tr("Could not read %1: %2").arg(path, file.errorString()));
        return false;
    }
    editor_->setPlainText(QString::fromUtf8(file.readAll()));  // check() runs on the change
    return true;
}

void SchemaDialog::check() {
    const auto grammar = reply_format_grammar({ReplyFormatKind::JsonSchema, editor_->toPlainText()});
    usable_ = grammar.ok();
    status_->setText(usable_ ? tr("The schema can be used: replies will follow it.")
                             : tr("Not usable: %1").arg(QString::fromStdString(grammar.error())));
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(usable_);
}

} // namespace cflow::ui
