// Staged and sync direct-I/O expert fetch give bit-identical results to reading experts from the
// mapping, records expert-wait time, and reads exactly the selected experts.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/io/expert_cache_budget.h"
#include "cflow/formats/converter.h"
#include "io_uring_refused.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::shared_ptr<const Model> delayed_moe_model(const std::string& name, CombineStyle style, uint8_t dd, uint8_t de,
                                               float router_skew = 0.0f) {
    SyntheticSpec spec;
    spec.n_layers = 4;
    spec.n_experts = 8;
    spec.top_k = 2;
    spec.expert_d_ff = 64;
    spec.combine_style = style;
    spec.dense_delay = dd;
    spec.expert_delay = de;
    spec.router_skew = router_skew;
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

// Every read backend (io_uring, overlapped I/O, the reader pool): an explicit one this OS or
// kernel cannot run makes Session::create fail with Unsupported, and the test skips naming why.
class ExpertFetchBackends : public ::testing::TestWithParam<IoBackend> {};

TEST_P(ExpertFetchBackends, StagedAndSyncReadsMatchMappedBitForBit) {
    const IoBackend backend = GetParam();
    for (auto [style, dd, de] : {std::tuple{CombineStyle::DelayedSum, 1, 2}, std::tuple{CombineStyle::Sequential, 0, 0},
                                 std::tuple{CombineStyle::AsyncExperts, 0, 2}}) {
        SCOPED_TRACE(int(style));
        auto model = delayed_moe_model("m" + std::to_string(int(style)), style, uint8_t(dd), uint8_t(de));
        ASSERT_TRUE(model);
        SessionOptions mapped_opts{1, 64};
        SessionOptions staged_opts{1, 64};
        staged_opts.expert_fetch = ExpertFetch::Staged;
        staged_opts.io_backend = backend;
        SessionOptions sync_opts{1, 64};
        sync_opts.expert_fetch = ExpertFetch::Sync;
        sync_opts.io_backend = backend;
        // The same arms with an expert cache of a quarter of the bank: hits come from RAM.
        const uint64_t quarter = expert_bank_bytes(*model) / 4;
        SessionOptions staged_cache_opts = staged_opts, sync_cache_opts = sync_opts;
        staged_cache_opts.expert_cache_bytes = quarter;
        sync_cache_opts.expert_cache_bytes = quarter;
        auto mapped = Session::create(model, mapped_opts);
        auto staged = Session::create(model, staged_opts);
        if (!staged && staged.kind() == ErrorKind::Unsupported) GTEST_SKIP() << staged.error();
        auto sync = Session::create(model, sync_opts);
        auto staged_cache = Session::create(model, staged_cache_opts);
        auto sync_cache = Session::create(model, sync_cache_opts);
        ASSERT_TRUE(mapped.ok() && staged.ok() && sync.ok() && staged_cache.ok() && sync_cache.ok());
        uint64_t hits = 0;
        std::cout << "[expert fetch] " << io_backend_name(backend) << ": direct I/O "
                  << ((*staged)->staged_direct_io() ? "in use" : "refused by the file system; buffered reads") << "\n";
        for (auto* s : {&staged, &sync, &staged_cache, &sync_cache}) EXPECT_EQ((**s)->io_backend(), backend);
        EXPECT_FALSE((*mapped)->io_backend().has_value());  // the mapped arm reads nothing itself
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
            auto d = (*staged_cache)->step(token);
            ASSERT_TRUE(d.ok()) << d.error();
            for (size_t i = 0; i < d->size(); ++i) ASSERT_EQ(mapped_logits[i], (*d)[i]) << "staged + cache, logit " << i;
            auto e = (*sync_cache)->step(token);
            ASSERT_TRUE(e.ok()) << e.error();
            for (size_t i = 0; i < e->size(); ++i) ASSERT_EQ(mapped_logits[i], (*e)[i]) << "sync + cache, logit " << i;
            hits += (*staged_cache)->telemetry().expertCacheHits;
            EXPECT_EQ((*staged_cache)->telemetry().expertCacheHits, (*sync_cache)->telemetry().expertCacheHits);
            EXPECT_EQ((*staged)->telemetry().expertCacheHits, 0u);
            EXPECT_EQ((*mapped)->telemetry().expertCacheMisses, 0u);  // the mapped arm reads nothing itself
            EXPECT_EQ((*staged)->telemetry().ioBackend, uint8_t(backend));
            EXPECT_EQ((*mapped)->telemetry().ioBackend, 0u);
            EXPECT_EQ((*sync)->telemetry().bytes(Stream::Expert), (*mapped)->telemetry().bytes(Stream::Expert));
            const TokenTelemetry& ta = (*mapped)->telemetry();
            const TokenTelemetry& tb = (*staged)->telemetry();
            EXPECT_EQ(ta.bytes(Stream::Expert), tb.bytes(Stream::Expert));
            float wait_us = 0;
            for (const LayerRecord& r : tb.layers) wait_us += r.expertWaitUs;
            EXPECT_GE(wait_us, 0.0f);
            for (const LayerRecord& r : ta.layers) EXPECT_EQ(r.expertWaitUs, 0.0f);
        }
        EXPECT_GT(hits, 0u) << "8 tokens over 32 experts with 8 cached: some must hit";
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, ExpertFetchBackends,
                         ::testing::Values(IoBackend::Uring, IoBackend::Overlapped, IoBackend::Threads),
                         [](const ::testing::TestParamInfo<IoBackend>& param) {
                             return std::string(io_backend_name(param.param));
                         });

// Auto takes the OS's asynchronous backend where it runs, the reader pool with a stated reason
// where it does not (here: a seccomp filter refusing io_uring_setup on the session's thread);
// either way the logits are the mapped arm's.
TEST(ExpertFetch, AutoPicksTheOsBackendOrSaysWhyNot) {
    auto model = delayed_moe_model("auto", CombineStyle::DelayedSum, 1, 2);
    ASSERT_TRUE(model);
    SessionOptions staged_opts{1, 16};
    staged_opts.expert_fetch = ExpertFetch::Staged;
    auto mapped = Session::create(model, SessionOptions{1, 16});
    ASSERT_TRUE(mapped.ok()) << mapped.error();
    std::vector<std::vector<float>> reference;
    for (int32_t token : {5, 9, 77}) {
        auto r = (*mapped)->step(token);
        ASSERT_TRUE(r.ok()) << r.error();
        reference.emplace_back(r->begin(), r->end());
    }
    auto run = [&](IoBackend& ran, std::string& note, bool& identical) {
        auto staged = Session::create(model, staged_opts);
        if (!staged) return;
        ran = *(*staged)->io_backend();
        note = (*staged)->io_backend_note();
        identical = true;
        int i = 0;
        for (int32_t token : {5, 9, 77}) {
            auto r = (*staged)->step(token);
            identical = identical && r.ok() && std::equal(r->begin(), r->end(), reference[size_t(i++)].begin());
        }
    };
    IoBackend ran = IoBackend::Auto;
    std::string note;
    bool identical = false;
    run(ran, note, identical);
    std::cout << "[expert fetch] auto runs " << io_backend_name(ran) << (note.empty() ? "" : ": " + note) << "\n";
    EXPECT_TRUE(identical);
    EXPECT_NE(ran, IoBackend::Auto);
    EXPECT_EQ(note.empty(), ran != IoBackend::Threads) << note;  // the pool only ever with a reason
    if (ran != IoBackend::Uring) return;  // the refused-io_uring half needs io_uring to refuse
    std::string why;
    IoBackend refused_ran = IoBackend::Auto;
    std::string refused_note;
    bool refused_identical = false;
    if (!run_with_io_uring_refused([&] { run(refused_ran, refused_note, refused_identical); }, why)) GTEST_SKIP() << why;
    EXPECT_EQ(refused_ran, IoBackend::Threads);
    EXPECT_NE(refused_note.find("io_uring_queue_init"), std::string::npos) << refused_note;
    EXPECT_TRUE(refused_identical);
}

// With a cache of a quarter of the expert bank on a model whose routing favours a few experts,
// the expert bytes read from storage fall by exactly the measured hit rate: every routed expert is
// either served from RAM or read, never both, and counted at its own size.
TEST(ExpertFetch, ACacheCutsExpertBytesReadByItsHitRate) {
    auto model = delayed_moe_model("skewed", CombineStyle::DelayedSum, 1, 2, /*router_skew=*/4.0f);
    ASSERT_TRUE(model);
    const GlobalHeader& h = model->header();
    for (ExpertFetch arm : {ExpertFetch::Sync, ExpertFetch::Staged}) {
        SCOPED_TRACE(std::string(expert_fetch_name(arm)));
        SessionOptions options{1, 80};
        options.expert_fetch = arm;
        options.expert_cache_bytes = expert_bank_bytes(*model) / 4;
        auto session = Session::create(model, options);
        ASSERT_TRUE(session.ok()) << session.error();
        EXPECT_EQ((*session)->expert_cache_bytes(), options.expert_cache_bytes);
        uint64_t hits = 0, misses = 0, saved = 0, read = 0, needed = 0;
        int32_t token = 1;
        for (int t = 0; t < 64; ++t) {
            auto logits = (*session)->step(token);
            ASSERT_TRUE(logits.ok()) << logits.error();
            token = int32_t((token * 31 + 7) % 250) + 1;
            const TokenTelemetry& tt = (*session)->telemetry();
            EXPECT_EQ(tt.expertCacheHits + tt.expertCacheMisses, h.n_layers * h.top_k);
            EXPECT_EQ(tt.expertBytesSaved + tt.expertBytesFromDisk, tt.bytes(Stream::Expert));
            hits += tt.expertCacheHits;
            misses += tt.expertCacheMisses;
            saved += tt.expertBytesSaved;
            read += tt.expertBytesFromDisk;
            needed += tt.bytes(Stream::Expert);
        }
        const uint64_t lookups = hits + misses;
        ASSERT_GT(lookups, 0u);
        // bytes_read == (1 - hit_rate) * bytes_needed, in integers: read * lookups == misses * needed.
        EXPECT_EQ(read * lookups, misses * needed);
        EXPECT_EQ(saved * lookups, hits * needed);
        const double hit_rate = double(hits) / double(lookups);
        std::cout << "[expert cache] " << expert_fetch_name(arm) << ": hit rate " << hit_rate << " with a quarter of the bank\n";
        EXPECT_GT(hits, 0u);
        EXPECT_LT(read, needed);
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
#ifdef _WIN32
    GTEST_SKIP() << "Windows deletes an open file only when its last handle closes, so it never vanishes under a model";
#endif
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
    std::error_code shrinkError;
    std::filesystem::resize_file(path, 4096, shrinkError);
    if (shrinkError) GTEST_SKIP() << "this OS refuses to shrink a file that is open (" << shrinkError.message() << ")";
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
