#pragma once
// The built-in "read_file" tool: the model reads, by name, only the files the user picked for the
// conversation (the Tools panel's "Pick files…"), nothing else on disk. Text only (UTF-8 without
// NUL bytes) and at most maxBytes; anything else is a plain error the model is told. The file is
// read when called, on a worker thread, so an edited file is read as it is now.
#include <QStringList>

#include "cflow/ui/tools/tool_provider.h"

namespace cflow::ui {

class PickedFilesTool : public ToolProvider {
    Q_OBJECT
public:
    static constexpr qint64 kDefaultMaxBytes = 256 * 1024;
    explicit PickedFilesTool(qint64 maxBytes = kDefaultMaxBytes, QObject* parent = nullptr);

    QString name() const override;
    QString summary() const override;
    // Empty until a file is picked; then read_file, whose "name" parameter is an enum of the
    // picked files' names.
    std::vector<cflow::ToolDefinition> tools() const override;
    QCoro::Task<ToolResult> call(cflow::ToolCall call) override;

    // Adds absolute paths; a file whose name (without folder) is already picked from another
    // folder is refused (the model names files without folders). Returns the refusals, one line each.
    QStringList addFiles(const QStringList& paths);
    void removeFile(const QString& fileName);
    const QStringList& paths() const { return paths_; }
    qint64 maxBytes() const { return maxBytes_; }

private:
    QString pathOf(const QString& fileName) const;  // "" when not picked

    qint64 maxBytes_;
    QStringList paths_;  // absolute, in the order picked
};

// Reads path as the tool does (exposed for the worker thread and tests).
ToolResult read_picked_file(const QString& path, qint64 maxBytes);

} // namespace cflow::ui
