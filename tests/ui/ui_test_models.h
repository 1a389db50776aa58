#pragma once
// Synthetic .cflow models for the chat tests, converted once per process: a tiny dense
// model whose tokenizer has byte tokens (every text encodes) and a ChatML chat template.
#include <cstdint>
#include <filesystem>
#include <string>

#include <QByteArray>
#include <QString>

namespace cflow::ui::test {

inline const std::string kChatMlTemplate =
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

// The ChatML model (context 1024 tokens).
const std::filesystem::path& chatml_model();
// The same with 4 experts (top-2) per layer, so the inspector's routing strip has a column per token.
const std::filesystem::path& moe_chatml_model();
// A model converted with the given chat template text, written under name; experts 0 = dense;
// contextLength: its context in tokens.
std::filesystem::path model_with_template(const std::string& name, const std::string& chatTemplate,
                                          uint32_t experts = 0, uint32_t contextLength = 1024);

inline QString qpath(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

// Points the window's conversation store at a fresh file for the test's lifetime.
struct ScopedDb {
    QString path;
    QByteArray previous;
    explicit ScopedDb(const std::string& name);
    ~ScopedDb();
};

// QSettings of the test's own for its lifetime (an organization name with the test's name and
// the process id): ctest runs suites' tests in parallel processes, which otherwise share one
// settings file (the recent models, the window geometry).
struct IsolatedSettings {
    QString previous;
    explicit IsolatedSettings(const std::string& name);
    ~IsolatedSettings();
};

} // namespace cflow::ui::test
