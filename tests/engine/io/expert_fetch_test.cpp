// Staged and sync direct-I/O expert fetch give bit-identical results to reading experts from the
// mapping, records expert-wait time, and reads exactly the selected experts.
#include <cmath>
#include <filesystem>
#include <system_error>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::shared_ptr<const Model> delayed_moe_model(const std::string& name, CombineStyle style, uint8_t dd, uint8_t de) {
    SyntheticSpec spec;
    spec.n_layers = 4;
    spec.n_experts = 8;
    spec.top_k = 2;
    spec.expert_d_ff = 64;
    spec.combine_style = style;
    spec.dense_delay = dd;
    spec.expert_delay = de;
    auto source = make_synthetic_model(spec);
    const auto path = (temp_dir(name) / "model.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q4_0;
    auto r = convert_to_cflow(source, path, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    auto m = Model::load(path);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
    return m.ok() ? m.value() : nullptr;
}

TEST(ExpertFetch, StagedReadsMatchMappedBitForBit) {
    for (auto [style, dd, de] : {std::tuple{CombineStyle::DelayedSum, 1, 2}, std::tuple{CombineStyle::Sequential, 0, 0},
                                 std::tuple{CombineStyle::AsyncExperts, 0, 2}}) {
        SCOPED_TRACE(int(style));
        auto model = delayed_moe_model("m" + std::to_string(int(style)), style, uint8_t(dd), uint8_t(de));
        ASSERT_TRUE(model);
        SessionOptions mapped_opts{1, 64};
        SessionOptions staged_opts{1, 64};
        staged_opts.expert_fetch = ExpertFetch::Staged;
        SessionOptions sync_opts{1, 64};
        sync_opts.expert_fetch = ExpertFetch::Sync;
        auto mapped = Session::create(model, mapped_opts);
        auto staged = Session::create(model, staged_opts);
        auto sync = Session::create(model, sync_opts);
        ASSERT_TRUE(mapped.ok() && staged.ok() && sync.ok());
        std::cout << "[expert fetch] direct I/O " << ((*staged)->staged_direct_io() ? "in use" : "refused by the file system; buffered reads")
                  << "\n";
        for (int32_t token : {1, 7, 42, 3, 99, 12, 5, 64}) {
            auto a = (*mapped)->step(token);
            const std::vector<float> mapped_logits(a->begin(), a->end());
            auto b = (*staged)->step(token);
            auto c = (*sync)->step(token);
            ASSERT_TRUE(a.ok() && b.ok() && c.ok());
            ASSERT_EQ(a->size(), b->size());
            ASSERT_EQ(a->size(), c->size());
            for (size_t i = 0; i < a->size(); ++i) ASSERT_EQ((*a)[i], (*b)[i]) << "logit " << i;
            for (size_t i = 0; i < a->size(); ++i) ASSERT_EQ(mapped_logits[i], (*c)[i]) << "sync arm, logit " << i;
            EXPECT_EQ((*sync)->telemetry().bytes(Stream::Expert), (*mapped)->telemetry().bytes(Stream::Expert));
            const TokenTelemetry& ta = (*mapped)->telemetry();
            const TokenTelemetry& tb = (*staged)->telemetry();
            EXPECT_EQ(ta.bytes(Stream::Expert), tb.bytes(Stream::Expert));
            float wait_us = 0;
            for (const LayerRecord& r : tb.layers) wait_us += r.expertWaitUs;
            EXPECT_GE(wait_us, 0.0f);
            for (const LayerRecord& r : ta.layers) EXPECT_EQ(r.expertWaitUs, 0.0f);
        }
    }
}

TEST(ExpertFetch, ExpertBytesPerTokenAreExactlyTopKOfTheBank) {
    auto model = delayed_moe_model("bytes", CombineStyle::Sequential, 0, 0);
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 16});
    ASSERT_TRUE(session.ok());
    const GlobalHeader& h = model->header();
    for (int32_t token : {1, 2, 3, 4}) {
        ASSERT_TRUE((*session)->step(token).ok());
        for (uint32_t l = 0; l < h.n_layers; ++l) {
            const LayerRecord& r = (*session)->telemetry().layers[l];
            const uint64_t bank = model->layers()[l].expert_bank->bytes;
            EXPECT_EQ(r.bytesRead[size_t(Stream::Expert)] * h.n_experts, bank * h.top_k) << "layer " << l;
            uint64_t selected = 0;
            for (uint32_t i = 0; i < r.nSelected; ++i) selected += model->expert(l, r.experts[i]).value()->bytes;
            EXPECT_EQ(r.bytesRead[size_t(Stream::Expert)], selected);
        }
    }
}

// Staged reads open the file a second time; when the OS refuses (here: the file is gone while
// the model still maps it), Session::create reports Io with the path, not a generic failure.
TEST(ExpertFetch, StagedFetchOfAVanishedFileIsAnIoError) {
    auto model = delayed_moe_model("vanished", CombineStyle::Sequential, 0, 0);
    ASSERT_TRUE(model);
    const std::string path = model->file().path();
    std::error_code ec;
    if (!std::filesystem::remove(path, ec)) GTEST_SKIP() << "this OS keeps a mapped file from being removed";
    SessionOptions options{1, 16};
    options.expert_fetch = ExpertFetch::Staged;
    auto session = Session::create(model, options);
    ASSERT_FALSE(session.ok());
    EXPECT_EQ(session.kind(), ErrorKind::Io) << session.error();
    EXPECT_NE(session.error().find(path), std::string::npos) << session.error();
}

// A file that shrinks under a staged session: the direct reads hit its end before the bytes they
// asked for, and the step fails with an io error instead of computing with stale staging bytes.
TEST(ExpertFetch, StagedReadOfAShrunkFileIsAnIoError) {
    auto mapped = delayed_moe_model("shrunk", CombineStyle::Sequential, 0, 0);
    ASSERT_TRUE(mapped);
    const std::string path = mapped->file().path();
    mapped.reset();
    LoadOptions load;
    load.mode = LoadMode::ReadAnon;  // the dense weights stay valid in anonymous memory
    auto model = Model::load(path, load);
    ASSERT_TRUE(model.ok()) << model.error();
    SessionOptions options{1, 16};
    options.expert_fetch = ExpertFetch::Staged;
    auto session = Session::create(*model, options);
    ASSERT_TRUE(session.ok()) << session.error();
    std::filesystem::resize_file(path, 4096);
    Status failure;
    for (int32_t t = 0; t < 8 && failure.ok(); ++t) {
        auto r = (*session)->step(3 + t);
        if (!r) failure = r.take_error();
    }
    ASSERT_FALSE(failure.ok()) << "every expert lies past byte 4096";
    EXPECT_EQ(failure.kind(), ErrorKind::Io) << failure.error();
    EXPECT_NE(failure.error().find("did it shrink"), std::string::npos) << failure.error();
}

} // namespace
} // namespace cflow::test
