// Special-token ids in tokenizer metadata: a BOS / EOS / unknown id past the vocabulary is an
// error naming the key and the id (it was dropped silently, so prompts lost their BOS), while
// "none" as GGUF writers store it (-1, 0xFFFFFFFF) still means no such token.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {
namespace {

Metadata llama_vocab() {
    Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("llama"));
    metadata.set("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "a", "b"});
    metadata.set("tokenizer.ggml.scores", std::vector<float>(5, 0.0f));
    metadata.set("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3, 1, 1});
    return metadata;
}

TEST(TokenizerSpecialIds, AnIdPastTheVocabularyIsRefusedNamingKeyAndId) {
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"}) {
        Metadata metadata = llama_vocab();
        metadata.set(key, int64_t{5});
        auto made = Tokenizer::from_metadata(metadata);
        ASSERT_FALSE(made.ok()) << key;
        EXPECT_EQ(made.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(made.error().find(std::string("'") + key + "' is 5, outside the vocabulary of 5 tokens"), std::string::npos)
            << made.error();
    }
}

TEST(TokenizerSpecialIds, NoneMeansNoTokenAndInRangeIdsAreKept) {
    Metadata none = llama_vocab();
    none.set("tokenizer.ggml.eos_token_id", int64_t{0xFFFFFFFF});
    none.set("tokenizer.ggml.bos_token_id", int64_t{-1});
    auto made = Tokenizer::from_metadata(none);
    ASSERT_TRUE(made.ok()) << made.error();
    EXPECT_EQ((*made)->eos_id(), -1);
    EXPECT_EQ((*made)->bos_id(), -1);

    Metadata ids = llama_vocab();
    ids.set("tokenizer.ggml.bos_token_id", int64_t{2});
    ids.set("tokenizer.ggml.eos_token_id", int64_t{1});
    ids.set("tokenizer.ggml.padding_token_id", int64_t{5});  // one past the end: left out, never fed to the model
    auto kept = Tokenizer::from_metadata(ids);
    ASSERT_TRUE(kept.ok()) << kept.error();
    EXPECT_EQ((*kept)->bos_id(), 2);
    EXPECT_EQ((*kept)->eos_id(), 1);
}

} // namespace
} // namespace cflow
