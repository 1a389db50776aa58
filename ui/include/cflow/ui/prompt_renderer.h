#pragma once
// Turns a conversation into the exact prompt text and token ids the engine is fed: the
// model's chat template when it has one that renders, otherwise the visible
// "role: content" fallback (render_fallback_chat), with the reason recorded.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cflow/engine/chat_template.h"
#include "cflow/engine/model.h"
#include "cflow/ui/chat_types.h"

namespace cflow::ui {

class PromptRenderer {
public:
    // Compiles the model's template once; a template that does not compile is remembered
    // as the reason for using the fallback.
    explicit PromptRenderer(const Model& model);

    RenderedPrompt render(const Conversation& conversation) const;
    // Text -> ids: control tokens in the text are parsed (the template writes them), BOS is
    // prepended unless the text already starts with it.
    std::vector<int32_t> tokenize(const QString& promptText) const;
    // Ids for text that continues a context already in the KV cache: no BOS, and without the
    // SentencePiece dummy-prefix space. Empty when that prefix is merged into the first piece.
    std::vector<int32_t> tokenizeContinuation(const QString& text) const;
    // Ids of end-of-turn markers of common templates (<|im_end|>, <|eot_id|>, ...) that the
    // vocabulary has as single control tokens: generation stops at them.
    std::vector<int32_t> endOfTurnTokens() const;

private:
    const Model* model_;
    std::optional<ChatTemplate> template_;
    QString compileError_;
};

} // namespace cflow::ui
