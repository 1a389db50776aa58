#include "cflow/ui/reply_format.h"

#include <QCoreApplication>

#include "cflow/engine/generation/json_grammar.h"
#include "cflow/engine/generation/json_schema_grammar.h"

namespace cflow::ui {

QString reply_format_label(ReplyFormatKind kind) {
    switch (kind) {
    case ReplyFormatKind::JsonObject: return QCoreApplication::translate("ReplyFormat", "JSON object");
    case ReplyFormatKind::JsonSchema: return QCoreApplication::translate("ReplyFormat", "JSON Schema");
    case ReplyFormatKind::FreeText: break;
    }
    return QCoreApplication::translate("ReplyFormat", "Free text");
}

QString reply_format_mark(const ReplyFormat& format) {
    return format.kind == ReplyFormatKind::FreeText ? QString() : reply_format_label(format.kind);
}

QString reply_format_key(ReplyFormatKind kind) {
    switch (kind) {
    case ReplyFormatKind::JsonObject: return QStringLiteral("json_object");
    case ReplyFormatKind::JsonSchema: return QStringLiteral("json_schema");
    case ReplyFormatKind::FreeText: break;
    }
    return QStringLiteral("free");
}

ReplyFormatKind reply_format_kind_from_key(const QString& key) {
    if (key == QLatin1String("json_object")) return ReplyFormatKind::JsonObject;
    if (key == QLatin1String("json_schema")) return ReplyFormatKind::JsonSchema;
    return ReplyFormatKind::FreeText;
}

Result<std::shared_ptr<const Grammar>> reply_format_grammar(const ReplyFormat& format) {
    switch (format.kind) {
    case ReplyFormatKind::JsonObject: return json_object_grammar();
    case ReplyFormatKind::JsonSchema: {
        if (format.schema.trimmed().isEmpty())
            return make_error(ErrorKind::InvalidInput, "the schema is empty: paste a JSON Schema or load a .json file");
        const QByteArray utf8 = format.schema.toUtf8();
        return json_schema_grammar(std::string_view(utf8.constData(), size_t(utf8.size())));
    }
    case ReplyFormatKind::FreeText: break;
    }
    return std::shared_ptr<const Grammar>();
}

} // namespace cflow::ui
