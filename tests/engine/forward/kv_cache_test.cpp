// The F16 KV cache against the f32 one on trained models: teacher-forced over a text, the two
// must pick the same next token at (almost) every position and give nearly the same logits.
// Each stored value is rounded to the nearest half (relative error <= 2^-11), so a wrong
// conversion, layout or kernel shows up as a large logit difference, not as a small one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

// KvCache::kPositionBlock (engine-internal): the test spans more than two blocks.
constexpr uint32_t KvCachePositionBlockForTests = 256;

constexpr const char* kStory =
    "Once upon a time, there was a little dog named Max. Max liked to run in the park with his friend Lily. "
    "One day, Lily found a big red ball under a tree. She threw the ball and Max ran after it as fast as he could. "
    "The ball rolled into the pond and Max jumped in with a splash. Lily laughed and clapped her hands. "
    "Max swam back with the ball in his mouth and shook the water off his fur. They were wet and happy, "
    "and they played until the sun went down. Then they walked home together, tired but smiling.";

struct Agreement {
    size_t positions = 0;
    size_t sameTop1 = 0;
    double worstRelL2 = 0;  // max over positions of ||f16 - f32|| / ||f32||
};

size_t argmax(std::span<const float> v) { return size_t(std::max_element(v.begin(), v.end()) - v.begin()); }

Agreement compare_kv_types(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& ids) {
    SessionOptions f32;
    f32.threads = 2;
    f32.isa = Isa::Scalar;  // the reference path: the comparison isolates the cache's rounding
    SessionOptions f16 = f32;
    f16.kv_cache = KvCacheType::F16;
    auto a = Session::create(model, f32);
    auto b = Session::create(model, f16);
    EXPECT_TRUE(a.ok() && b.ok());
    Agreement out;
    if (!a.ok() || !b.ok()) return out;
    EXPECT_EQ((*b)->kv_cache_type(), KvCacheType::F16);
    for (int32_t id : ids) {
        auto la = (*a)->step(id);
        auto lb = (*b)->step(id);
        EXPECT_TRUE(la.ok() && lb.ok());
        if (!la.ok() || !lb.ok()) return out;
        double diff = 0, norm = 0;
        for (size_t i = 0; i < la->size(); ++i) {
            diff += double((*la)[i] - (*lb)[i]) * ((*la)[i] - (*lb)[i]);
            norm += double((*la)[i]) * (*la)[i];
        }
        out.worstRelL2 = std::max(out.worstRelL2, std::sqrt(diff / std::max(norm, 1e-30)));
        out.sameTop1 += argmax(*la) == argmax(*lb);
        ++out.positions;
    }
    return out;
}

void expect_agreement(const Agreement& r, const std::string& what) {
    ASSERT_GT(r.positions, 50u) << what;
    EXPECT_GE(double(r.sameTop1) / r.positions, 0.99) << what << ": top-1 agreement " << r.sameTop1 << " / " << r.positions;
    EXPECT_LT(r.worstRelL2, 1e-2) << what << ": logits moved by a relative " << r.worstRelL2;
    std::printf("[ info ] %s: f16 KV top-1 agreement %zu / %zu, worst relative logit difference %.2e\n", what.c_str(),
                r.sameTop1, r.positions, r.worstRelL2);
}

TEST(KvCacheF16, DefaultModelAgreesWithF32) {
    const auto path = std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow";
    auto model = Model::load(path.string());
    ASSERT_TRUE(model.ok()) << model.error();
    const auto ids = (*model)->tokenizer().encode(kStory, true);
    expect_agreement(compare_kv_types(*model, ids), "default model (DelayedSum MoE, 6 layers)");
}

TEST(KvCacheF16, Stories260kAgreesWithF32) {
    CFLOW_REQUIRE_ASSET(dir, "assets/models/llama2c-stories260K");
    auto source = read_llama2c_model((dir / "stories260K.bin").string(), (dir / "tok512.bin").string());
    ASSERT_TRUE(source.ok()) << source.error();
    const auto out = (test::temp_dir("kv_f16_stories") / "s.cflow").string();
    ConvertOptions convert;
    convert.weight_quant = DType::F32;
    ASSERT_TRUE(convert_to_cflow(*source, out, convert).ok());
    auto model = Model::load(out);
    ASSERT_TRUE(model.ok()) << model.error();
    const auto ids = (*model)->tokenizer().encode(kStory, true);
    expect_agreement(compare_kv_types(*model, ids), "stories260K (llama2.c, GQA 8/4)");
}

// GQA: with at least one KV head per thread the query heads of a KV head attend together over
// blocks of keys and values (KvCache::attend with a group); with more threads than KV heads each query
// head attends alone. Per head the arithmetic is the same, so the logits are bit-identical, past
// several position blocks, for steps and for batched prefill, with f32 and f16 caches.
TEST(KvCacheGqa, GroupedHeadsGiveTheLogitsOfSingleHeads) {
    test::SyntheticSpec spec;  // d 64, 4 query heads of 16 on 2 KV heads
    spec.n_kv_heads = 2;
    spec.dtype = DType::Q8_0;
    spec.max_seq_len = 1024;
    const auto out = (test::temp_dir("kv_gqa") / "m.cflow").string();
    ConvertOptions convert;
    convert.weight_quant = DType::Q8_0;
    ASSERT_TRUE(convert_to_cflow(test::make_synthetic_model(spec), out, convert).ok());
    auto model = Model::load(out);
    ASSERT_TRUE(model.ok()) << model.error();
    const uint32_t positions = 2 * KvCachePositionBlockForTests + 77;
    std::vector<int32_t> ids(positions);
    for (uint32_t i = 0; i < positions; ++i) ids[i] = int32_t(3 + (i * 31) % 290);
    for (KvCacheType kv : {KvCacheType::F32, KvCacheType::F16}) {
        SessionOptions grouped;  // 2 threads, 2 KV heads: grouped
        grouped.threads = 2;
        grouped.context_length = positions + 8;
        grouped.kv_cache = kv;
        SessionOptions single = grouped;  // 3 threads > 2 KV heads: one query head at a time
        single.threads = 3;
        auto a = Session::create(*model, grouped);
        auto b = Session::create(*model, single);
        ASSERT_TRUE(a.ok() && b.ok());
        for (uint32_t i = 0; i < positions; ++i) {
            auto la = (*a)->step(ids[i]);
            auto lb = (*b)->step(ids[i]);
            ASSERT_TRUE(la.ok() && lb.ok());
            if (i % 97 == 0 || i + 1 == positions) {
                ASSERT_EQ(std::vector<float>(la->begin(), la->end()), std::vector<float>(lb->begin(), lb->end()))
                    << "position " << i << ", " << kv_cache_type_name(kv) << " cache";
            }
        }
        (*a)->reset();
        (*b)->reset();
        auto pa = (*a)->prefill(ids, true);
        auto pb = (*b)->prefill(ids, true);
        ASSERT_TRUE(pa.ok() && pb.ok());
        ASSERT_EQ(std::vector<float>(pa->begin(), pa->end()), std::vector<float>(pb->begin(), pb->end()))
            << "batched prefill, " << kv_cache_type_name(kv) << " cache";
    }
}

TEST(KvCacheF16, SizeLimitCountsTwoBytesPerValue) {
    const auto path = std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow";
    auto model = Model::load(path.string());
    ASSERT_TRUE(model.ok()) << model.error();
    // 6 layers x 128 values x 2 (K, V): 6 KiB per position in f32, 3 KiB in f16, so 2^24
    // positions in f32 and 2^25 in f16 both need 96 GiB, over the 64 GiB cap.
    SessionOptions options;
    options.threads = 1;
    options.context_length = 1u << 24;
    auto f32 = Session::create(*model, options);
    ASSERT_FALSE(f32.ok());
    EXPECT_NE(f32.error().find("98304 MiB"), std::string::npos) << f32.error();
    options.kv_cache = KvCacheType::F16;
    options.context_length = 1u << 25;
    auto f16 = Session::create(*model, options);
    ASSERT_FALSE(f16.ok());
    EXPECT_NE(f16.error().find("98304 MiB"), std::string::npos) << f16.error();
    EXPECT_EQ(parse_kv_cache_type("f16"), KvCacheType::F16);
    EXPECT_EQ(parse_kv_cache_type("f32"), KvCacheType::F32);
    EXPECT_FALSE(parse_kv_cache_type("q8"));
    EXPECT_EQ(kv_cache_type_name(KvCacheType::F16), "f16");
}

} // namespace
} // namespace cflow
