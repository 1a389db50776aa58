#include "cflow/ui/prompt_renderer.h"

#include <string_view>

namespace cflow::ui {
namespace {

std::vector<ChatMessage> to_messages(const Conversation& conversation) {
    std::vector<ChatMessage> messages;
    messages.reserve(conversation.size());
    for (const ChatTurn& turn : conversation)
        messages.push_back(ChatMessage{turn.role.toStdString(), turn.content.toStdString(), {}});
    return messages;
}

// The vocabulary string of a special token, "" when the model has none.
std::string special_piece(const Tokenizer& tokenizer, int32_t id) {
    return id >= 0 ? tokenizer.piece(id) : std::string();
}

} // namespace

PromptRenderer::PromptRenderer(const Model& model) : model_(&model) {
    if (model.chat_template().empty()) {
        compileError_ = QStringLiteral("the model has no chat template");
        return;
    }
    auto compiled = ChatTemplate::compile(model.chat_template());
    if (compiled)
        template_ = std::move(compiled).value();
    else
        compileError_ = QStringLiteral("the model's chat template does not compile: ") +
                        QString::fromStdString(compiled.error());
}

RenderedPrompt PromptRenderer::render(const Conversation& conversation) const {
    RenderedPrompt prompt;
    const std::vector<ChatMessage> messages = to_messages(conversation);
    if (template_) {
        TemplateOptions options;
        options.add_generation_prompt = true;
        options.bos_token = special_piece(model_->tokenizer(), model_->tokenizer().bos_id());
        options.eos_token = special_piece(model_->tokenizer(), model_->tokenizer().eos_id());
        auto rendered = template_->render(messages, options);
        if (rendered) {
            prompt.text = QString::fromStdString(*rendered);
            prompt.kind = TemplateKind::Model;
            return prompt;
        }
        prompt.templateNote =
            QStringLiteral("the model's chat template failed: ") + QString::fromStdString(rendered.error());
    } else {
        prompt.templateNote = compileError_;
    }
    prompt.text = QString::fromStdString(render_fallback_chat(messages, true));
    prompt.kind = TemplateKind::Fallback;
    return prompt;
}

std::vector<int32_t> PromptRenderer::tokenize(const QString& promptText) const {
    const Tokenizer& tokenizer = model_->tokenizer();
    const std::string text = promptText.toStdString();
    const std::string bos = special_piece(tokenizer, tokenizer.bos_id());
    // Templates that write bos_token themselves must not get a second one.
    const bool templateHasBos = !bos.empty() && std::string_view(text).substr(0, bos.size()) == bos;
    // Whether the vocabulary wants a BOS at all (add_bos_token): what encoding "" with specials gives.
    const std::vector<int32_t> specials = tokenizer.encode("", true);
    const bool vocabAddsBos = !specials.empty() && specials.front() == tokenizer.bos_id();
    std::vector<int32_t> ids = tokenizer.encode(text, false, true);
    if (vocabAddsBos && !templateHasBos) ids.insert(ids.begin(), tokenizer.bos_id());
    return ids;
}

std::vector<int32_t> PromptRenderer::tokenizeContinuation(const QString& text) const {
    const Tokenizer& tokenizer = model_->tokenizer();
    auto spell = [&](const std::vector<int32_t>& ids, size_t from = 0) {
        std::string out;
        for (size_t i = from; i < ids.size(); ++i) out += tokenizer.token_bytes(ids[i]);
        return out;
    };
    const std::string bytes = text.toStdString();
    std::vector<int32_t> ids = tokenizer.encode(bytes, false, true);
    if (ids.empty() || spell(ids) == bytes) return ids;
    // SentencePiece encoders put a dummy-prefix space before the first piece; inside a
    // context it would be a real space. Its spelling is what encoding "a" adds before the "a".
    std::string dummyPrefix = spell(tokenizer.encode("a", false, false));
    if (dummyPrefix.empty() || dummyPrefix.back() != 'a') return ids;
    dummyPrefix.pop_back();
    if (dummyPrefix.empty()) return ids;
    size_t covered = 0;
    size_t dropped = 0;
    while (dropped < ids.size() && covered < dummyPrefix.size()) covered += tokenizer.token_bytes(ids[dropped++]).size();
    if (spell(ids).compare(0, dummyPrefix.size(), dummyPrefix) != 0) return ids;  // no prefix was added
    if (covered != dummyPrefix.size() || dropped == ids.size()) return {};  // merged into a piece: cannot split
    ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(dropped));
    return ids;
}

std::vector<int32_t> PromptRenderer::endOfTurnTokens() const {
    static constexpr std::string_view kMarkers[] = {"<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>",
                                                    "<|endoftext|>"};
    const Tokenizer& tokenizer = model_->tokenizer();
    std::vector<int32_t> ids;
    for (std::string_view marker : kMarkers) {
        const std::vector<int32_t> encoded = tokenizer.encode(marker, false, true);
        if (encoded.size() == 1 && tokenizer.is_control(encoded.front())) ids.push_back(encoded.front());
    }
    return ids;
}

} // namespace cflow::ui
