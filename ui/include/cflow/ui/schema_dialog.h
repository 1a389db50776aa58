#pragma once
// Where the user gives the JSON Schema replies must follow (Prompt panel, Reply format "JSON
// Schema…"): paste it or load a .json file. Every edit is checked by building the grammar
// (json_schema_grammar), and a schema it cannot hold replies to shows the engine's message, with
// the JSON pointer of the keyword, under the editor; OK is enabled only for a usable schema.
#include <QDialog>
#include <QString>

class QDialogButtonBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace cflow::ui {

class SchemaDialog : public QDialog {
    Q_OBJECT
public:
    explicit SchemaDialog(const QString& schema, QWidget* parent = nullptr);

    QString schema() const;
    QPlainTextEdit* editor() const { return editor_; }
    // Reads a schema file into the editor (what "Load .json…" does after its file dialog); false,
    // with the reason shown, when it cannot be read.
    bool loadFile(const QString& path);
    bool isUsable() const { return usable_; }
    QString statusText() const;

private:
    void check();
    QPlainTextEdit* editor_;
    QLabel* status_;
    QPushButton* load_;
    QDialogButtonBox* buttons_;
    bool usable_ = false;
};

} // namespace cflow::ui
