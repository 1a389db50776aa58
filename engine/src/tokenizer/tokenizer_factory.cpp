// Tokenizer::from_metadata: picks the tokenizer family from tokenizer.ggml.model and applies each
// family's llama.cpp defaults for keys the metadata leaves out.
#include <memory>
#include <new>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_bpe.h"
#include "tokenizer/tokenizer_common.h"
#include "tokenizer/tokenizer_spm.h"
#include "tokenizer/tokenizer_wordpiece.h"

namespace cflow {

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_metadata(const Metadata& metadata) {
    try {
        const auto model = metadata.get_string("tokenizer.ggml.model");
        if (!model) return make_error("tokenizer: metadata key 'tokenizer.ggml.model' is missing");

        if (*model == "llama") {
            auto vocab = tok::load_vocab(metadata, tok::VocabDefaults{.add_bos = true, .add_eos = false, .add_space_prefix = true});
            if (!vocab) return vocab.take_error();
            // llama.cpp's SPM defaults for ids the metadata leaves out.
            const auto default_id = [&](int32_t& id, int32_t fallback) {
                if (id < 0 && static_cast<size_t>(fallback) < vocab->pieces.size()) id = fallback;
            };
            if (!metadata.contains("tokenizer.ggml.unknown_token_id")) default_id(vocab->unk, 0);
            if (!metadata.contains("tokenizer.ggml.bos_token_id")) default_id(vocab->bos, 1);
            if (!metadata.contains("tokenizer.ggml.eos_token_id")) default_id(vocab->eos, 2);
            return std::unique_ptr<Tokenizer>(tok::make_spm_tokenizer(std::move(vocab).value()));
        }
        if (*model == "gpt2") {
            auto vocab = tok::load_vocab(metadata, tok::VocabDefaults{});
            if (!vocab) return vocab.take_error();
            return tok::make_bpe_tokenizer(std::move(vocab).value(), metadata);
        }
        if (*model == "bert") {
            // BERT: [CLS] text [SEP]; GGUF stores them as cls_token_id / seperator_token_id (sic).
            auto vocab = tok::load_vocab(metadata, tok::VocabDefaults{.add_bos = true, .add_eos = true, .add_space_prefix = false});
            if (!vocab) return vocab.take_error();
            const size_t n = vocab->pieces.size();
            const auto id_key = [&](const char* key) -> int32_t {
                const auto value = metadata.get_int(key);
                return value && *value >= 0 && static_cast<uint64_t>(*value) < n ? static_cast<int32_t>(*value) : -1;
            };
            if (vocab->bos < 0) vocab->bos = id_key("tokenizer.ggml.cls_token_id");
            if (vocab->eos < 0) vocab->eos = id_key("tokenizer.ggml.seperator_token_id");
            if (vocab->eos < 0) vocab->eos = id_key("tokenizer.ggml.separator_token_id");
            return std::unique_ptr<Tokenizer>(tok::make_wordpiece_tokenizer(std::move(vocab).value()));
        }
        return make_error(ErrorKind::Unsupported, "tokenizer: 'tokenizer.ggml.model' = '" + *model +
                                                      "' is not supported (supported: llama, gpt2, bert)");
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, "tokenizer: out of memory while building the tokenizer");
    }
}

} // namespace cflow
