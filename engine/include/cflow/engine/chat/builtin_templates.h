#pragma once
// Chat templates every front end offers besides the model's own: for models converted without
// one (a GGUF or checkpoint whose tokenizer_config lacked it) or with a wrong one. Each is the
// Jinja text of a well-known family, rendered by the same interpreter as a model's template.
#include <span>
#include <string_view>

namespace cflow {

struct BuiltinTemplate {
    std::string_view name;    // stable identifier stored with conversations ("chatml", "llama2", ...)
    std::string_view label;   // for menus ("ChatML")
    std::string_view source;  // Jinja
};

std::span<const BuiltinTemplate> builtin_chat_templates();
// nullptr when no built-in has that name.
const BuiltinTemplate* find_builtin_template(std::string_view name);

} // namespace cflow
