// The engine's forward pass against a naive double-precision reference written from the
// semantics spec and evaluated directly on the source tensors (before conversion). The
// reference applies RoPE in the source's own convention, so it also checks the converter's
// Q/K permutation for interleaved (llama2.c / GGUF-llama) checkpoints.
#include <cmath>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/tile_codec.h"
#include "reference_forward.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr double kF32RelTol = 1e-4;  // float32 engine vs double reference, relative L2 of the logits
constexpr double kQ8RelTol = 5e-2;   // Q8_0 weights: per-block rounding noise

struct Case {
    const char* name;
    SyntheticSpec spec;
    DType quant;
    double tolerance;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    SyntheticSpec base;
    out.push_back({"dense_mha_f32", base, DType::F32, kF32RelTol});
    SyntheticSpec gqa = base;
    gqa.n_heads = 8;
    gqa.n_kv_heads = 2;
    gqa.rope_interleaved = true;
    out.push_back({"gqa_interleaved_rope_f32", gqa, DType::F32, kF32RelTol});
    SyntheticSpec qwen = base;
    qwen.qkv_bias = true;
    qwen.tied = true;
    out.push_back({"qkv_bias_tied_f32", qwen, DType::F32, kF32RelTol});
    SyntheticSpec wide = base;
    wide.d_model = 320;   // two column tiles per row, an edge tile of 64 columns
    wide.d_ff = 300;      // edge stripe and partial 32-groups
    wide.n_heads = 5;
    wide.n_kv_heads = 5;
    wide.head_dim = 64;
    out.push_back({"edge_tiles_f32", wide, DType::F32, kF32RelTol});
    out.push_back({"edge_tiles_q8_0", wide, DType::Q8_0, kQ8RelTol});
    return out;
}

TEST(ForwardReference, EngineMatchesNaiveReference) {
    for (const Case& tc : cases()) {
        SCOPED_TRACE(tc.name);
        SourceModel source = make_synthetic_model(tc.spec);
        const auto path = (temp_dir(tc.name) / "model.cflow").string();
        ConvertOptions options;
        options.weight_quant = tc.quant;
        auto converted = convert_to_cflow(source, path, options);
        ASSERT_TRUE(converted.ok()) << converted.error();
        auto model = Model::load(path);
        ASSERT_TRUE(model.ok()) << model.error();
        for (unsigned threads : {1u, 3u}) {
            auto session = Session::create(model.value(), SessionOptions{threads, 0});
            ASSERT_TRUE(session.ok()) << session.error();
            const std::vector<int32_t> tokens = {1, 5, 17, 3, 42, 9, 0, 63, 21, 7};
            const auto want = reference_logits(source, tokens);
            for (size_t i = 0; i < tokens.size(); ++i) {
                auto got = (*session)->step(tokens[i]);
                ASSERT_TRUE(got.ok()) << got.error();
                EXPECT_LT(relative_l2_error(*got, want[i]), tc.tolerance) << "position " << i << ", threads " << threads;
            }
        }
    }
}

TEST(ForwardReference, ContextFullAndBadTokenAreErrors) {
    SourceModel source = make_synthetic_model(SyntheticSpec{});
    const auto path = (temp_dir("ctx") / "model.cflow").string();
    ASSERT_TRUE(convert_to_cflow(source, path, ConvertOptions{}).ok());
    auto model = Model::load(path);
    ASSERT_TRUE(model.ok()) << model.error();
    auto session = Session::create(model.value(), SessionOptions{1, 4});
    ASSERT_TRUE(session.ok());
    auto bad = (*session)->step(int32_t((*model)->header().vocab_size));
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.kind(), ErrorKind::InvalidInput) << bad.error();
    EXPECT_NE(bad.error().find(std::to_string((*model)->header().vocab_size)), std::string::npos) << bad.error();
    EXPECT_EQ((*session)->position(), 0u);  // a refused token takes no position
    for (int i = 0; i < 4; ++i) ASSERT_TRUE((*session)->step(1).ok());
    auto full = (*session)->step(1);
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.kind(), ErrorKind::ContextFull) << full.error();
    EXPECT_EQ((*session)->position(), 4u);
    (*session)->reset();
    EXPECT_TRUE((*session)->step(1).ok());
}

} // namespace
} // namespace cflow::test
