// Batched prefill (Session::prefill) against the token-by-token path (Session::step): the same
// logits bit for bit after the prompt, and the same KV cache, checked by decoding on from both
// and comparing every step's logits bit for bit (where a rows-in-lanes kernel runs, from
// kMatmatLaneTokens tokens a chunk, as close as the int8 path is to the f32 path: see
// expect_logits_match). On every kernel path this CPU has (the f32
// references and the int8 paths, whose batched kernel loads each weight block once for a
// group of tokens), for dense, MoE (with a shared expert), ParallelSqrt2, biased/QK-normed
// attention, GQA, chunk boundaries and prompts that continue an existing context.
#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr Isa kPrefillPaths[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx2Int8, Isa::AvxVnni};

// d = 608: two full 256-column tiles and one of 96 (3 groups: a pair and an odd one); FFN 544
// likewise; vocab 301: an LM-head stripe of 45 rows (off the 4- and 2-row blocks); 19 query
// heads on one KV head.
test::SyntheticSpec base_spec(DType dtype) {
    test::SyntheticSpec spec;
    spec.d_model = 608;
    spec.n_heads = 19;
    spec.n_kv_heads = 1;
    spec.head_dim = 32;
    spec.d_ff = 544;
    spec.vocab = 301;
    spec.dtype = dtype;
    spec.max_seq_len = 512;
    return spec;
}

std::shared_ptr<const Model> build(const test::SyntheticSpec& spec, const std::string& name) {
    const auto path = (test::temp_dir("prefill_" + name) / "m.cflow").string();
    ConvertOptions convert;
    convert.weight_quant = spec.dtype;
    auto written = convert_to_cflow(test::make_synthetic_model(spec), path, convert);
    EXPECT_TRUE(written.ok()) << written.error();
    auto model = Model::load(path);
    EXPECT_TRUE(model.ok()) << model.error();
    return model.ok() ? *model : nullptr;
}

std::vector<int32_t> prompt_tokens(size_t n, uint32_t vocab, uint32_t salt) {
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = int32_t(3 + (i * 37 + salt * 11) % (vocab - 3));
    return ids;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ||a - b|| / ||b||
double relative_l2(std::span<const float> a, std::span<const float> b) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        norm += double(b[i]) * b[i];
    }
    return a.size() == b.size() ? std::sqrt(diff / std::max(norm, 1e-30)) : 1e30;
}

// The rows-in-lanes batched kernels (AVX-512 VNNI; AVX2 and AVX-VNNI for Q4_0) order each row's
// f32 additions differently from the matvec
// once a tile meets kMatmatLaneTokens tokens (its integer block dots are the same exact
// values): per matvec a relative difference of ~1e-7 (kernels_test.cpp bounds it). But the next
// layer quantizes its input to int8 again, and a value that moved by 1e-7 across a rounding
// boundary changes by a whole quantization step: the reordering is amplified to the size of the
// int8 path's own error. So the reordered run must be as close to the token-by-token run as the
// int8 path is to the f32-activation path (Avx512) on the same tokens, with a factor of 2 for
// the two runs' independent roundings; a wrong weight, token or KV entry moves logits by O(1).
bool reorders_sums(Isa isa, DType dtype, size_t prompt) {
    if (prompt < kMatmatLaneTokens) return false;
    if (isa == Isa::Avx512Vnni) return dtype == DType::Q4_0 || dtype == DType::Q8_0;
    return (isa == Isa::Avx2Int8 || isa == Isa::AvxVnni) && dtype == DType::Q4_0;
}

void expect_logits_match(std::span<const float> got, std::span<const float> expected, std::span<const float> f32_path,
                         bool exact, const std::string& what) {
    if (exact) {
        EXPECT_TRUE(same_bits(got, expected)) << what << ": differs from the token-by-token logits";
        return;
    }
    const double int8_error = relative_l2(expected, f32_path);
    EXPECT_LT(relative_l2(got, expected), 2.0 * int8_error + 1e-5)
        << what << ": the int8 path itself differs from the f32 path by " << int8_error;
}

// Feeds `history` token by token to both sessions, then `prompt` token by token to one and as
// one prefill to the other, then decodes `decode` greedy tokens from both.
void expect_prefill_matches_steps(const std::shared_ptr<const Model>& model, Isa isa, DType dtype, KvCacheType kv,
                                  size_t history, size_t prompt, const std::string& what) {
    SessionOptions options;
    options.threads = 2;
    options.isa = isa;
    options.kv_cache = kv;
    auto stepped = Session::create(model, options);
    auto batched = Session::create(model, options);
    SessionOptions f32_options = options;  // the f32-activation path: the int8 error's yardstick
    f32_options.isa = isa_supported(Isa::Avx512) ? Isa::Avx512 : Isa::Scalar;
    auto f32_path = Session::create(model, f32_options);
    ASSERT_TRUE(stepped.ok() && batched.ok() && f32_path.ok());
    const uint32_t vocab = model->header().vocab_size;
    for (int32_t id : prompt_tokens(history, vocab, 1)) {
        ASSERT_TRUE((*stepped)->step(id, false).ok());
        ASSERT_TRUE((*batched)->step(id, false).ok());
        ASSERT_TRUE((*f32_path)->step(id, false).ok());
    }
    const std::vector<int32_t> ids = prompt_tokens(prompt, vocab, 2);
    std::vector<float> expected, reference;
    for (size_t i = 0; i < ids.size(); ++i) {
        auto r = (*stepped)->step(ids[i], i + 1 == ids.size());
        auto f = (*f32_path)->step(ids[i], i + 1 == ids.size());
        ASSERT_TRUE(r.ok() && f.ok()) << r.error();
        if (i + 1 == ids.size()) {
            expected.assign(r->begin(), r->end());
            reference.assign(f->begin(), f->end());
        }
    }
    auto got = (*batched)->prefill(ids, true);
    ASSERT_TRUE(got.ok()) << got.error();
    const std::string where = what + " on " + std::string(isa_name(isa)) + ", " + std::to_string(history) +
                              " tokens of context + " + std::to_string(prompt) + "-token prompt";
    const bool exact = !reorders_sums(isa, dtype, prompt) || !(*batched)->batched_prefill();
    expect_logits_match(*got, expected, reference, exact, where + ", prefill logits");
    EXPECT_EQ((*batched)->position(), (*stepped)->position()) << where;
    int32_t next = 3;
    for (int n = 0; n < 4; ++n) {  // decoding on reads every KV entry the prefill wrote
        auto a = (*stepped)->step(next);
        auto b = (*batched)->step(next);
        auto f = (*f32_path)->step(next);
        ASSERT_TRUE(a.ok() && b.ok() && f.ok());
        expect_logits_match(*b, *a, *f, exact, where + ", decode step " + std::to_string(n) + " after the prefill");
        next = int32_t(std::max_element(a->begin(), a->end()) - a->begin());
    }
}

struct PrefillCase {
    std::string name;
    test::SyntheticSpec spec;
    bool batched = true;  // the chunked path (else prefill falls back to steps)
    KvCacheType kv = KvCacheType::F32;
};

std::vector<PrefillCase> prefill_cases() {
    std::vector<PrefillCase> out;
    out.push_back({"dense_q4", base_spec(DType::Q4_0)});
    out.push_back({"dense_q8", base_spec(DType::Q8_0)});
    out.push_back({"dense_f32", base_spec(DType::F32)});
    PrefillCase moe{"moe_q4_shared", base_spec(DType::Q4_0)};
    moe.spec.d_ff = 0;
    moe.spec.n_experts = 6;
    moe.spec.top_k = 2;
    moe.spec.expert_d_ff = 288;
    moe.spec.shared_expert_d_ff = 160;
    out.push_back(moe);
    PrefillCase parallel{"parallel_sqrt2_moe_q8", base_spec(DType::Q8_0)};
    parallel.spec.combine_style = CombineStyle::ParallelSqrt2;
    parallel.spec.n_experts = 4;
    parallel.spec.top_k = 2;
    parallel.spec.expert_d_ff = 256;
    out.push_back(parallel);
    PrefillCase f16{"dense_q4_f16_kv", base_spec(DType::Q4_0)};
    f16.kv = KvCacheType::F16;
    out.push_back(f16);
    PrefillCase qwen{"bias_qknorm_q4", base_spec(DType::Q4_0)};
    qwen.spec.qkv_bias = true;
    qwen.spec.qk_norm = true;
    out.push_back(qwen);
    // gpt-oss: sinks in every softmax, output / router / expert biases, the clamped SwiGLU.
    PrefillCase gpt_oss{"gpt_oss_moe_q8", base_spec(DType::Q8_0)};
    gpt_oss.spec.gpt_oss = true;
    gpt_oss.spec.d_ff = 0;
    gpt_oss.spec.n_experts = 4;
    gpt_oss.spec.top_k = 2;
    gpt_oss.spec.expert_d_ff = 256;
    out.push_back(gpt_oss);
    PrefillCase delayed{"delayed_sum_falls_back", base_spec(DType::Q4_0)};
    delayed.spec.combine_style = CombineStyle::DelayedSum;
    delayed.spec.n_experts = 4;
    delayed.spec.top_k = 2;
    delayed.spec.expert_d_ff = 256;
    delayed.spec.dense_delay = 1;
    delayed.spec.expert_delay = 1;
    delayed.batched = false;
    out.push_back(delayed);
    return out;
}

TEST(Prefill, MatchesStepsOnEveryPath) {
    for (const PrefillCase& c : prefill_cases()) {
        const auto model = build(c.spec, c.name);
        ASSERT_TRUE(model) << c.name;
        for (Isa isa : kPrefillPaths) {
            // Under TSan the threads are what is checked, and they are the same on every path.
            if (test::kThreadSanitizedBuild && isa != detect_best_isa()) continue;
            if (!isa_supported(isa)) {
                std::printf("[ skip ] %s on %s: this CPU/OS lacks the path\n", c.name.c_str(), std::string(isa_name(isa)).c_str());
                continue;
            }
            {
                SessionOptions options;
                options.isa = isa;
                auto probe = Session::create(model, options);
                ASSERT_TRUE(probe.ok());
                EXPECT_EQ((*probe)->batched_prefill(), c.batched) << c.name;
            }
            // 2 tokens (the smallest batch), 7 (a 4-token block and 3 left), 150 (two full
            // chunks and a partial one), and a prompt that continues a 5-token context.
            // A sanitized build (kSanitizedBuild) keeps the 150-token prompt on the default path only:
            // that case is most of this test's time, and its chunking is the same on every path.
            for (const auto& [history, prompt] : {std::pair<size_t, size_t>{0, 2}, {0, 7}, {0, 150}, {5, 70}}) {
                if (test::kSanitizedBuild && prompt == 150 && isa != detect_best_isa()) continue;
                expect_prefill_matches_steps(model, isa, c.spec.dtype, c.kv, history, prompt, c.name);
            }
        }
    }
}

TEST(Prefill, ChunkTelemetryCountsEachWeightOnce) {
    const auto model = build(base_spec(DType::Q4_0), "telemetry");
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 256});
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->step(5).ok());
    const uint64_t perStep = (*session)->telemetry().bytes(Stream::Attention) + (*session)->telemetry().bytes(Stream::Dense);
    ASSERT_TRUE((*session)->prefill(prompt_tokens(80, 301, 3), true).ok());
    const TokenTelemetry& t = (*session)->telemetry();
    EXPECT_EQ(t.position, 1u + Session::kPrefillChunk);  // the last chunk: positions 65..80
    EXPECT_EQ(t.tokens, 80u - Session::kPrefillChunk);
    EXPECT_EQ(t.bytes(Stream::Attention) + t.bytes(Stream::Dense), perStep) << "a chunk reads each weight once";
    EXPECT_EQ((*session)->position(), 81u);
}

TEST(Prefill, RefusesWhatDoesNotFitAndBadIdsWithoutMoving) {
    const auto model = build(base_spec(DType::Q8_0), "errors");
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 16});
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->prefill(prompt_tokens(10, 301, 4), false).ok());
    auto full = (*session)->prefill(prompt_tokens(7, 301, 5), true);
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.kind(), ErrorKind::ContextFull) << full.error();
    std::vector<int32_t> bad = prompt_tokens(4, 301, 6);
    bad[2] = 301;
    auto out_of_range = (*session)->prefill(bad, true);
    ASSERT_FALSE(out_of_range.ok());
    EXPECT_EQ(out_of_range.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(out_of_range.error().find("301"), std::string::npos) << out_of_range.error();
    EXPECT_EQ((*session)->position(), 10u);
    EXPECT_TRUE((*session)->prefill(prompt_tokens(6, 301, 7), true).ok()) << "exactly the rest of the context fits";
    EXPECT_EQ((*session)->position(), 16u);
}

} // namespace
} // namespace cflow
