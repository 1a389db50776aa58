// The Hugging Face tokenizer.json of a family gives the same ids as llama.cpp's GGUF vocabulary
// of that family on every conformance string (the .out files were produced by HF tokenizers).
#include <fstream>
#include <iostream>
#include <sstream>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/hf_tokenizer_files.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Family {
    const char* tokenizer_json;  // under assets/tokenizers/
    const char* vocab;           // ggml-vocab-<vocab>.gguf.inp/.out under assets/tokenizer-vocab-gguf/llama.cpp/
};

TEST(HfTokenizerJson, SameIdsAsTheGgufVocabularyOfItsFamily) {
    for (const Family f : {Family{"gpt2-hf/tokenizer.json", "gpt-2"},
                           Family{"llama2-hf-swift-transformers/tokenizer.json", "llama-spm"}}) {
        SCOPED_TRACE(f.tokenizer_json);
        CFLOW_REQUIRE_ASSET(json, std::string("assets/tokenizers/") + f.tokenizer_json);
        const auto base = shared_asset(std::string("assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-") + f.vocab + ".gguf");
        auto meta = read_hf_tokenizer(json.string());
        ASSERT_TRUE(meta.ok()) << meta.error();
        auto tok = Tokenizer::from_metadata(*meta);
        ASSERT_TRUE(tok.ok()) << tok.error();
        const std::string inputs = slurp(base.string() + ".inp"), outputs = slurp(base.string() + ".out");
        ASSERT_FALSE(inputs.empty());
        std::istringstream out_lines(outputs);
        const std::string sep = "\n__ggml_vocab_test__\n";
        size_t start = 0, cases = 0, passes = 0;
        for (size_t at = inputs.find(sep); at != std::string::npos; at = inputs.find(sep, start)) {
            const std::string text = inputs.substr(start, at - start);
            start = at + sep.size();
            std::string line;
            std::getline(out_lines, line);
            std::istringstream ids(line);
            std::vector<int32_t> want;
            for (int32_t id; ids >> id;) want.push_back(id);
            const auto got = (*tok)->encode(text, /*add_special=*/false);
            ++cases;
            passes += got == want;
            EXPECT_EQ(got, want) << "text: '" << text << "'";
        }
        std::cout << "[tokenizer.json] " << f.tokenizer_json << ": " << passes << "/" << cases
                  << " strings match ggml-vocab-" << f.vocab << "\n";
        EXPECT_EQ(cases, 46u);
    }
}

} // namespace
} // namespace cflow::test
