// Model::load rejects schedules the file's tensors cannot satisfy, with a clear message,
// after the reader has accepted the bytes.
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string convert_for_load(const SyntheticSpec& spec, const std::string& name) {
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
        const auto path = convert_for_load(p.spec, p.name);
        ASSERT_TRUE(Model::load(path).ok()) << "the unpatched file must load";
        patch_byte(path, p.offset, p.value);
        auto m = Model::load(path);
        ASSERT_FALSE(m.ok());
        EXPECT_EQ(m.kind(), ErrorKind::InvalidInput) << m.error();
        EXPECT_NE(m.error().find(p.expected), std::string::npos) << m.error();
        EXPECT_NE(m.error().find(path), std::string::npos) << "the message names the file: " << m.error();
    }
}

TEST(ModelLoad, ExpertViewsAreLocatedLazilyAndCached) {
    SyntheticSpec moe;
    moe.n_experts = 4;
    moe.top_k = 2;
    moe.expert_d_ff = 32;
    const auto path = convert_for_load(moe, "lazy");
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

// Callers branch on the kind: a missing file is the OS's answer (Io), a damaged one is bad input,
// a newer format version is a file this build cannot read (Unsupported).
TEST(ModelLoad, ReportsTheKindOfFailure) {
    const auto dir = temp_dir("load-kinds");
    const std::string missing_path = (dir / "missing.cflow").string();
    auto missing = Model::load(missing_path);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.kind(), ErrorKind::Io) << missing.error();
    EXPECT_NE(missing.error().find(missing_path), std::string::npos) << missing.error();

    const auto path = convert_for_load(SyntheticSpec{}, "load-kinds-model");
    const auto truncated = (dir / "truncated.cflow").string();
    std::filesystem::copy_file(path, truncated);
    std::filesystem::resize_file(truncated, std::filesystem::file_size(path) / 2);
    auto cut = Model::load(truncated);
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.kind(), ErrorKind::InvalidInput) << cut.error();
    EXPECT_NE(cut.error().find("file_bytes"), std::string::npos) << cut.error();

    constexpr size_t kVersion = offsetof(GlobalHeader, version);
    patch_byte(path, kVersion, uint8_t(kCflowVersion + 1));
    auto newer = Model::load(path);
    ASSERT_FALSE(newer.ok());
    EXPECT_EQ(newer.kind(), ErrorKind::Unsupported) << newer.error();
    EXPECT_NE(newer.error().find("GlobalHeader.version"), std::string::npos) << newer.error();
}

TEST(ModelLoad, SessionOnAnIsaTheCpuLacksIsUnsupported) {
    std::optional<Isa> missing_isa;
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx2Int8, Isa::AvxVnni})
        if (!isa_supported(isa)) missing_isa = isa;
    if (!missing_isa) GTEST_SKIP() << "this CPU supports every kernel path";
    auto m = Model::load(convert_for_load(SyntheticSpec{}, "isa-model"));
    ASSERT_TRUE(m.ok()) << m.error();
    SessionOptions options;
    options.isa = *missing_isa;
    auto session = Session::create(*m, options);
    ASSERT_FALSE(session.ok());
    EXPECT_EQ(session.kind(), ErrorKind::Unsupported) << session.error();
    EXPECT_NE(session.error().find(std::string(isa_name(*missing_isa))), std::string::npos) << session.error();
}

// Issue 38: a mapped model truncated while a session runs on it killed the process with SIGBUS.
// The step that read past the new end fails with Io naming the file, its logits are never handed
// out, position() stays, and so does every later step and prefill; a copy in memory runs on.
TEST(ModelLoad, AFileTruncatedWhileInUseFailsTheStepNotTheProcess) {
    SyntheticSpec spec;
    spec.max_seq_len = 64;
    const std::string path = convert_for_load(spec, "model-truncated");
    const std::string copy_path = convert_for_load(spec, "model-truncated-copy");
    auto mapped = Model::load(path, LoadOptions{LoadMode::Map});
    auto copied = Model::load(copy_path, LoadOptions{LoadMode::ReadAnon});
    ASSERT_TRUE(mapped.ok() && copied.ok());
    SessionOptions options;
    options.threads = 1;
    auto session = Session::create(*mapped, options);
    auto copy_session = Session::create(*copied, options);
    ASSERT_TRUE(session.ok() && copy_session.ok());
    ASSERT_TRUE((*session)->step(1).ok());
    ASSERT_TRUE((*copy_session)->step(1).ok());

#if defined(_WIN32)
    // Windows refuses to truncate a file while a view of it is mapped: the model is safe as it is.
    std::error_code refused;
    std::filesystem::resize_file(path, 4096, refused);
    EXPECT_TRUE(refused) << "a mapped file was truncated";
    EXPECT_TRUE((*session)->step(2).ok());
    return;
#endif
    std::filesystem::resize_file(path, 4096);
    std::filesystem::resize_file(copy_path, 4096);
    auto failed = (*session)->step(2);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.kind(), ErrorKind::Io);
    EXPECT_NE(failed.error().find(path + " changed on disk while in use"), std::string::npos) << failed.error();
    EXPECT_EQ((*session)->position(), 1u);
    const std::vector<int32_t> prompt = {3, 4, 5};
    auto prefill = (*session)->prefill(prompt);
    ASSERT_FALSE(prefill.ok());
    EXPECT_NE(prefill.error().find("changed on disk while in use"), std::string::npos) << prefill.error();
    EXPECT_EQ((*session)->position(), 1u);
    EXPECT_TRUE((*copy_session)->step(2).ok()) << "weights in memory do not depend on the file";
}

} // namespace
} // namespace cflow::test
