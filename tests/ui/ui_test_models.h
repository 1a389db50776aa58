#pragma once
// Synthetic .cflow models for the chat tests, converted once per process: a tiny dense
// model whose tokenizer has byte tokens (every text encodes) and a ChatML chat template.
#include <filesystem>
#include <string>

#include <QString>

namespace cflow::ui::test {

inline const std::string kChatMlTemplate =
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

// The ChatML model (context 1024 tokens).
const std::filesystem::path& chatml_model();
// A model converted with the given chat template text, written under name.
std::filesystem::path model_with_template(const std::string& name, const std::string& chatTemplate);

inline QString qpath(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

} // namespace cflow::ui::test
