// Model::load rejects schedules the file's tensors cannot satisfy, with a clear message,
// after the reader has accepted the bytes.
#include <fstream>
#include <iterator>

#include "cflow/engine/model.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string convert(const SyntheticSpec& spec, const std::string& name) {
    auto source = make_synthetic_model(spec);
    const auto path = (temp_dir(name) / "model.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto r = convert_to_cflow(source, path, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return path;
}

void patch_byte(const std::string& path, size_t offset, uint8_t value) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    f.put(char(value));
}

struct Patch {
    const char* name;
    SyntheticSpec spec;
    size_t offset;   // into GlobalHeader
    uint8_t value;
    const char* expected;
};

TEST(ModelLoad, RejectsSchedulesTheTensorsCannotSatisfy) {
    SyntheticSpec dense;
    dense.n_layers = 4;
    SyntheticSpec moe = dense;
    moe.n_experts = 4;
    moe.top_k = 2;
    moe.expert_d_ff = 32;
    SyntheticSpec delayed = moe;
    delayed.combine_style = CombineStyle::DelayedSum;
    delayed.dense_delay = 1;
    delayed.expert_delay = 2;
    constexpr size_t kDenseDelay = 80, kExpertDelay = 81, kCombineStyle = 82;
    const Patch patches[] = {
        {"expert_delay_without_experts", [&] { auto s = dense; s.combine_style = CombineStyle::DelayedSum; return s; }(),
         kExpertDelay, 1, "has no experts"},
        {"delays_on_sequential", moe, kExpertDelay, 1, "takes no delays"},
        {"async_with_dense_delay", [&] { auto s = delayed; s.combine_style = CombineStyle::AsyncExperts; s.dense_delay = 0; return s; }(),
         kDenseDelay, 1, "AsyncExperts"},
        {"fixed_point_without_iterations", delayed, kCombineStyle, 6, "FixedPoint needs"},
    };
    for (const Patch& p : patches) {
        SCOPED_TRACE(p.name);
        const auto path = convert(p.spec, p.name);
        ASSERT_TRUE(Model::load(path).ok()) << "the unpatched file must load";
        patch_byte(path, p.offset, p.value);
        auto m = Model::load(path);
        ASSERT_FALSE(m.ok());
        EXPECT_NE(m.error().find(p.expected), std::string::npos) << m.error();
        EXPECT_NE(m.error().find(path), std::string::npos) << "the message names the file: " << m.error();
    }
}

TEST(ModelLoad, ExpertViewsAreLocatedLazilyAndCached) {
    SyntheticSpec moe;
    moe.n_experts = 4;
    moe.top_k = 2;
    moe.expert_d_ff = 32;
    const auto path = convert(moe, "lazy");
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << m.error();
    auto a = (*m)->expert(1, 3);
    auto b = (*m)->expert(1, 3);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a.value(), b.value());
    EXPECT_GT(a.value()->bytes, 0u);
    EXPECT_FALSE((*m)->expert(1, 4).ok());
    EXPECT_FALSE((*m)->expert(2, 0).ok());
}

} // namespace
} // namespace cflow::test
