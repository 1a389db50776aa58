#include "cflow/ui/tools/picked_files_tool.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>
#include <QStringDecoder>
#include <QtConcurrent/QtConcurrentRun>

#include <QCoro/QCoroFuture>

#include "qt_text.h"
#include "tool_arguments.h"

namespace cflow::ui {

ToolResult read_picked_file(const QString& path, qint64 maxBytes) {
    const QString fileName = QFileInfo(path).fileName();
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {false, QStringLiteral("%1 cannot be read: %2").arg(fileName, file.errorString())};
    const qint64 sizeBytes = file.size();
    if (sizeBytes > maxBytes)
        return {false, QStringLiteral("%1 is %2; read_file reads files up to %3")
                           .arg(fileName, QLocale::c().formattedDataSize(sizeBytes, 1, QLocale::DataSizeIecFormat),
                                QLocale::c().formattedDataSize(maxBytes, 0, QLocale::DataSizeIecFormat))};
    // One more byte than allowed: a file that grew since size() is still caught.
    const QByteArray bytes = file.read(maxBytes + 1);
    if (bytes.size() > maxBytes)
        return {false, QStringLiteral("%1 is larger than %2; read_file reads no more")
                           .arg(fileName, QLocale::c().formattedDataSize(maxBytes, 0, QLocale::DataSizeIecFormat))};
    if (bytes.contains('\0')) return {false, QStringLiteral("%1 is not a text file (it holds NUL bytes)").arg(fileName)};
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);  // a cut sequence at the end is an error too
    const QString text = decoder.decode(bytes);
    if (decoder.hasError()) return {false, QStringLiteral("%1 is not UTF-8 text").arg(fileName)};
    return {true, text};
}

PickedFilesTool::PickedFilesTool(qint64 maxBytes, QObject* parent) : ToolProvider(parent), maxBytes_(maxBytes) {}

QString PickedFilesTool::name() const { return tr("Picked files"); }

QString PickedFilesTool::summary() const {
    if (paths_.isEmpty()) return tr("No file picked: the model can read only files you pick");
    QStringList names;
    for (const QString& p : paths_) names << QFileInfo(p).fileName();
    return tr("The model can read: %1").arg(names.join(QStringLiteral(", ")));
}

std::vector<cflow::ToolDefinition> PickedFilesTool::tools() const {
    if (paths_.isEmpty()) return {};
    QJsonArray names;
    for (const QString& p : paths_) names.append(QFileInfo(p).fileName());
    const QJsonObject nameParam{{QStringLiteral("type"), QStringLiteral("string")},
                                {QStringLiteral("enum"), names},
                                {QStringLiteral("description"), QStringLiteral("The file's name, as listed")}};
    const QJsonObject schema{{QStringLiteral("type"), QStringLiteral("object")},
                             {QStringLiteral("properties"), QJsonObject{{QStringLiteral("name"), nameParam}}},
                             {QStringLiteral("required"), QJsonArray{QStringLiteral("name")}},
                             {QStringLiteral("additionalProperties"), false}};
    const QString description =
        QStringLiteral("Reads a text file the user shared with you (UTF-8, up to %1 bytes) and returns its contents. "
                       "Only these files can be read: %2.")
            .arg(maxBytes_)
            .arg(QString::fromUtf8(QJsonDocument(names).toJson(QJsonDocument::Compact)));
    return {{"read_file", utf8(description), QJsonDocument(schema).toJson(QJsonDocument::Compact).toStdString()}};
}

QString PickedFilesTool::pathOf(const QString& fileName) const {
    for (const QString& p : paths_)
        if (QFileInfo(p).fileName() == fileName) return p;
    return {};
}

QStringList PickedFilesTool::addFiles(const QStringList& paths) {
    QStringList refusals;
    bool added = false;
    for (const QString& path : paths) {
        const QString absolute = QFileInfo(path).absoluteFilePath();
        const QString fileName = QFileInfo(absolute).fileName();
        if (paths_.contains(absolute)) continue;
        const QString same = pathOf(fileName);
        if (!same.isEmpty()) {
            refusals << tr("%1 was not added: a file of the same name is picked already (%2)")
                            .arg(QDir::toNativeSeparators(absolute), QDir::toNativeSeparators(same));
            continue;
        }
        paths_ << absolute;
        added = true;
    }
    if (added) emit toolsChanged();
    return refusals;
}

void PickedFilesTool::removeFile(const QString& fileName) {
    const QString path = pathOf(fileName);
    if (path.isEmpty()) return;
    paths_.removeAll(path);
    emit toolsChanged();
}

QCoro::Task<ToolResult> PickedFilesTool::call(cflow::ToolCall call) {
    QString error;
    const QJsonObject args = tool_arguments_object(call.arguments_json, error);
    if (!error.isEmpty()) co_return ToolResult{false, error};
    const QString fileName = args.value(QStringLiteral("name")).toString();
    if (fileName.isEmpty()) co_return ToolResult{false, tr("read_file needs a \"name\" string")};
    const QString path = pathOf(fileName);
    if (path.isEmpty())
        co_return ToolResult{false, tr("%1 is not among the files the user picked; only those can be read").arg(fileName)};
    // A named future and a free function, no lambda: GCC 12 and temporaries in co_await
    // expressions (main_window.cpp). Nothing of `this` is used after the co_await, so the tool
    // may be gone by then.
    QFuture<ToolResult> reading = QtConcurrent::run(&read_picked_file, path, maxBytes_);
    ToolResult result = co_await reading;
    co_return result;
}

} // namespace cflow::ui
