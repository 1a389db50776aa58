#pragma once
// What a conversation's replies must be: free text, one JSON object, or JSON valid under a
// schema the user gave (issue 33). Stored with the conversation's setup; the grammar that holds a
// reply to it is built once per choice (reply_format_grammar), not per reply.
#include <cstdint>
#include <memory>

#include <QString>

#include "cflow/base/result.h"
#include "cflow/engine/generation/grammar.h"

namespace cflow::ui {

enum class ReplyFormatKind : uint8_t { FreeText, JsonObject, JsonSchema };

struct ReplyFormat {
    ReplyFormatKind kind = ReplyFormatKind::FreeText;
    QString schema;  // JsonSchema: the schema's JSON text as the user gave it; "" otherwise
    bool operator==(const ReplyFormat&) const = default;
};

// "Free text", "JSON object", "JSON Schema" (the chat's mark on a reply; "" for free text).
QString reply_format_label(ReplyFormatKind kind);
QString reply_format_mark(const ReplyFormat& format);

// Stored names: "free", "json_object", "json_schema"; anything else reads as free text.
QString reply_format_key(ReplyFormatKind kind);
ReplyFormatKind reply_format_kind_from_key(const QString& key);

// The grammar a reply in this format is sampled under: null for free text. A schema the grammar
// cannot express fails with the engine's message, which names the JSON pointer of the keyword.
Result<std::shared_ptr<const Grammar>> reply_format_grammar(const ReplyFormat& format);

} // namespace cflow::ui
