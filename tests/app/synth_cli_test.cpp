// `cflow synth`: a small random model as .cflow + GGUF whose GGUF converts back to the very same
// tiles, that generates, that is the same for the same seed, and one-line errors for bad flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/source_model.h"
#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

const std::vector<std::string> kDense = {"synth", "--d", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                                         "--d-ff", "512", "--vocab", "512"};
const std::vector<std::string> kMoe = {"synth", "--d", "256", "--layers", "2", "--heads", "8", "--kv-heads", "2",
                                       "--experts", "4", "--top-k", "2", "--expert-hidden", "128", "--vocab", "300"};

std::vector<std::string> with_args(std::vector<std::string> base, const std::vector<std::string>& extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
}

std::string slurp_synth(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every segment of every region (tiles with_args their headers, norms, routers, expert tables) equal.
void expect_same_segments(const std::string& a_path, const std::string& b_path) {
    auto a = CflowFile::open(a_path);
    auto b = CflowFile::open(b_path);
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_TRUE(b.ok()) << b.error();
    std::vector<const RegionView*> ra, rb;
    for (const RegionView& r : (*a)->layers()) ra.push_back(&r);
    for (const RegionView& r : (*b)->layers()) rb.push_back(&r);
    ra.push_back(&(*a)->vocab());
    rb.push_back(&(*b)->vocab());
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
        ASSERT_EQ(ra[i]->segments.size(), rb[i]->segments.size()) << "region " << i;
        for (size_t k = 0; k < ra[i]->segments.size(); ++k) {
            const SegmentView& x = ra[i]->segments[k];
            const SegmentView& y = rb[i]->segments[k];
            EXPECT_EQ(x.role, y.role) << "region " << i << " segment " << k;
            EXPECT_EQ(x.dtype, y.dtype) << "region " << i << " segment " << k;
            ASSERT_EQ(x.bytes, y.bytes) << "region " << i << " segment " << k;
            EXPECT_EQ(std::memcmp(x.data, y.data, x.bytes), 0) << "region " << i << " segment " << k;
        }
    }
}

// `cflow convert GGUF -o y` (extra_args: e.g. --quant) gives the very segments of x, and the two
// generate the same greedy text; returns x's text.
std::string expect_gguf_converts_to_the_same_model(const std::string& x, const std::string& gguf, const std::string& y,
                                                   const std::vector<std::string>& extra_args = {}) {
    auto r = run_cflow(with_args({"convert", gguf, "-o", y, "--quiet"}, extra_args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return {};
    expect_same_segments(x, y);
    auto gx = run_cflow({"generate", x, "-p", "hello", "-n", "8", "--temp", "0"});
    EXPECT_EQ(gx.exit_code, 0) << gx.err;
    auto gy = run_cflow({"generate", y, "-p", "hello", "-n", "8", "--temp", "0"});
    EXPECT_EQ(gy.exit_code, 0) << gy.err;
    EXPECT_EQ(gx.out, gy.out) << gguf;
    return gx.out;
}

// synth -> .cflow + .gguf; convert the .gguf -> .cflow; the tiles must be identical.
void check_gguf_round_trip(const std::vector<std::string>& synth_args, const std::string& quant) {
    const auto dir = temp_dir("synth");
    const std::string x = (dir / "x.cflow").string(), gguf = (dir / "x.gguf").string(), y = (dir / "y.cflow").string();
    auto r = run_cflow(with_args(synth_args, {"--quant", quant, "-o", x, "--gguf", gguf}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("wrote " + gguf), std::string::npos) << r.err;

    auto g = read_gguf(gguf);
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->version, 3u);
    EXPECT_EQ(g->metadata.get_string("general.architecture"), "llama");
    for (const GgufTensorInfo& t : g->tensors) {
        const bool vector = t.ne.size() == 1 || t.name.find("ffn_gate_inp") != std::string::npos;
        EXPECT_EQ(t.ggml_type, vector ? kGgmlF32 : (quant == "q4_0" ? kGgmlQ4_0 : kGgmlQ8_0)) << t.name;
    }

    const std::string text = expect_gguf_converts_to_the_same_model(x, gguf, y, {"--quant", quant});
    EXPECT_EQ(text.rfind("hello", 0), 0u) << text;
    EXPECT_GT(text.size(), std::string("hello").size()) << text;
}

TEST(SynthCli, DenseGgufConvertsToTheSameTilesAndGenerates) { check_gguf_round_trip(kDense, "q4_0"); }

TEST(SynthCli, MoeGgufConvertsToTheSameTilesAndGenerates) { check_gguf_round_trip(kMoe, "q8_0"); }

// --quant q4_k_m: llama.cpp's Q4_K_M recipe per tensor in the GGUF, and `cflow convert` of that GGUF
// (no --quant: each matrix keeps its type) gives the very tiles synth wrote.
TEST(SynthCli, Q4KMGgufFollowsTheRecipeAndConvertsToTheSameTiles) {
    const auto dir = temp_dir("synth-q4km");
    const std::string x = (dir / "x.cflow").string(), gguf = (dir / "x.gguf").string(), y = (dir / "y.cflow").string();
    const std::vector<std::string> geometry = {"synth", "--d", "256", "--layers", "4", "--heads", "4", "--kv-heads", "2",
                                               "--d-ff", "512", "--vocab", "512"};
    auto r = run_cflow(with_args(geometry, {"--quant", "q4_k_m", "-o", x, "--gguf", gguf}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto g = read_gguf(gguf);
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->metadata.get_int("general.file_type"), 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    // use_more_bits with 4 layers: n/8 = 0, so layers 2 ((2 - 0) % 3 == 2) and 3 (>= 7 * 4 / 8).
    auto expected = [](const std::string& name) -> uint32_t {
        if (name.find("norm") != std::string::npos) return kGgmlF32;
        if (name == "output.weight") return kGgmlQ6_K;
        const bool more_bits_tensor = name.find("attn_v") != std::string::npos || name.find("ffn_down") != std::string::npos;
        const bool more_bits_layer = name.rfind("blk.2.", 0) == 0 || name.rfind("blk.3.", 0) == 0;
        return more_bits_tensor && more_bits_layer ? kGgmlQ6_K : kGgmlQ4_K;
    };
    for (const GgufTensorInfo& t : g->tensors) EXPECT_EQ(t.ggml_type, expected(t.name)) << t.name;

    expect_gguf_converts_to_the_same_model(x, gguf, y);

    auto bad = run_cflow({"synth", "--d", "288", "--layers", "2", "--heads", "6", "--d-ff", "768", "--quant", "q4_k_m", "-o", x});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("option --d: 288 is not a multiple of 256"), std::string::npos) << bad.err;
}

// --quant q4_1 / q5_0 / q5_1 / iq4_nl (the 32-weight types llama-quantize falls back to): every
// matrix in the GGUF is that type, general.file_type says so, and `cflow convert` of the GGUF (no
// --quant: kept by default, they have int8 kernels) gives the very tiles synth wrote.
TEST(SynthCli, ThirtyTwoWeightBlockTypesRoundTripThroughTheGguf) {
    struct Case {
        const char* quant;
        uint32_t ggml_type;
        int64_t file_type;  // LLAMA_FTYPE_MOSTLY_*
    };
    for (const Case& c : {Case{"q4_1", kGgmlQ4_1, 3}, Case{"q5_0", kGgmlQ5_0, 8}, Case{"q5_1", kGgmlQ5_1, 9},
                          Case{"iq4_nl", kGgmlIQ4_NL, 25}}) {
        SCOPED_TRACE(c.quant);
        const auto dir = temp_dir(std::string("synth-") + c.quant);
        const std::string x = (dir / "x.cflow").string(), gguf = (dir / "x.gguf").string(), y = (dir / "y.cflow").string();
        auto r = run_cflow(with_args(kDense, {"--quant", c.quant, "-o", x, "--gguf", gguf}));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.err.find(std::string("(") + c.quant + ", seed"), std::string::npos) << r.err;
        auto g = read_gguf(gguf);
        ASSERT_TRUE(g.ok()) << g.error();
        EXPECT_EQ(g->metadata.get_int("general.file_type"), c.file_type);
        for (const GgufTensorInfo& t : g->tensors)
            EXPECT_EQ(t.ggml_type, t.ne.size() == 1 ? kGgmlF32 : c.ggml_type) << t.name;
        expect_gguf_converts_to_the_same_model(x, gguf, y);
    }
    auto bad = run_cflow(with_args(kDense, {"--quant", "q3_k", "-o", (temp_dir("synth-bad-quant") / "x.cflow").string()}));
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("q4_0, q8_0, q4_k_m, q4_1, q5_0, q5_1 or iq4_nl"), std::string::npos) << bad.err;
}

// The shapes of the benchmark rows (BENCHMARKS.md), scaled down: llama3.2-1b (tied LM head in
// the head's Q6_K, Llama 3.1 rope scaling as rope_freqs.weight) and qwen3-moe (architecture
// qwen3moe, heads of 128 beside d 256, Q/K norms, NEOX). Each GGUF reads back as llama.cpp's
// converter would write it and converts to the very tiles synth wrote.
TEST(SynthCli, Llama32AndQwen3MoePresetsRoundTrip) {
    struct Case {
        std::vector<std::string> args;
        const char* quant;
        const char* arch;
    };
    const Case cases[] = {
        {{"synth", "--preset", "llama3.2-1b", "--d", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--d-ff",
          "512", "--vocab", "512"},
         "q4_k_m", "llama"},
        {{"synth", "--preset", "qwen3-moe", "--d", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--experts",
          "8", "--top-k", "2", "--expert-hidden", "256", "--vocab", "512"},
         "q4_0", "qwen3moe"},
    };
    for (const Case& c : cases) {
        const auto dir = temp_dir(std::string("synth-") + c.arch);
        const std::string x = (dir / "x.cflow").string(), gguf = (dir / "x.gguf").string(), y = (dir / "y.cflow").string();
        auto r = run_cflow(with_args(c.args, {"--quant", c.quant, "-o", x, "--gguf", gguf}));
        ASSERT_EQ(r.exit_code, 0) << c.arch << ": " << r.err;
        auto g = read_gguf(gguf);
        ASSERT_TRUE(g.ok()) << g.error();
        EXPECT_EQ(g->metadata.get_string("general.architecture"), c.arch);
        auto source = read_gguf_model(gguf);
        ASSERT_TRUE(source.ok()) << source.error();
        const ModelConfig& cfg = source->config;
        if (std::string(c.arch) == "llama") {
            EXPECT_EQ(source->find("output.weight"), nullptr) << "Llama 3.2 1B ties its head";
            EXPECT_TRUE(cfg.feature_flags & kFeatureTiedEmbeddings);
            ASSERT_NE(source->find("token_embd.weight"), nullptr);
            EXPECT_EQ(source->find("token_embd.weight")->ggml_type, kGgmlQ6_K) << "the tied head keeps the head's type";
            ASSERT_EQ(cfg.rope_freq_factors.size(), 32u);
            EXPECT_FLOAT_EQ(cfg.rope_freq_factors.front(), 1.0f) << "high frequencies are kept";
            EXPECT_FLOAT_EQ(cfg.rope_freq_factors.back(), 32.0f) << "low frequencies are divided by the factor";
            EXPECT_FLOAT_EQ(cfg.rope_theta, 500000.0f);
        } else {
            EXPECT_EQ(cfg.head_dim, 128u) << "heads of 128 whatever d is";
            EXPECT_TRUE(cfg.feature_flags & kFeatureQkNorm);
            EXPECT_FALSE(cfg.rope_interleaved);
            EXPECT_EQ(cfg.n_experts, 8u);
            EXPECT_EQ(cfg.expert_d_ff, 256u);
            EXPECT_EQ(static_cast<int>(cfg.router_mode), static_cast<int>(RouterMode::SoftmaxTopK));
        }
        expect_gguf_converts_to_the_same_model(x, gguf, y);
    }
}

TEST(SynthCli, SameSeedSameBytesOtherSeedOtherBytes) {
    const auto dir = temp_dir("seeds");
    auto write = [&](const std::string& name, const std::string& seed) {
        const std::string gguf = (dir / (name + ".gguf")).string();
        auto r = run_cflow(with_args(kDense, {"--seed", seed, "-o", (dir / (name + ".cflow")).string(), "--gguf", gguf}));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return slurp_synth(gguf);
    };
    const std::string a = write("a", "7"), b = write("b", "7"), c = write("c", "8");
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(slurp_synth(dir / "a.cflow"), slurp_synth(dir / "b.cflow"));
}

TEST(SynthCli, FlagsOverrideAPreset) {
    const auto dir = temp_dir("preset");
    const std::string out = (dir / "m.cflow").string();
    auto r = run_cflow({"synth", "--preset", "moe-1b", "--d", "256", "--layers", "2", "--expert-hidden", "128",
                        "--vocab", "300", "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto file = CflowFile::open(out);
    ASSERT_TRUE(file.ok()) << file.error();
    const GlobalHeader& h = (*file)->header();
    EXPECT_EQ(h.d_model, 256u);
    EXPECT_EQ(h.n_layers, 2u);
    EXPECT_EQ(h.n_heads, 32u);     // from the preset
    EXPECT_EQ(h.n_kv_heads, 4u);
    EXPECT_EQ(h.n_experts, 8u);
    EXPECT_EQ(h.top_k, 2u);
    EXPECT_EQ(h.expert_d_ff, 128u);
    EXPECT_EQ(h.d_ff, 0u);
    EXPECT_EQ(h.vocab_size, 300u);
    EXPECT_EQ(h.weight_quant, static_cast<uint8_t>(DType::Q4_0));
}

TEST(SynthCli, BadFlagsFailWithOneLine) {
    const auto dir = temp_dir("bad");
    const std::string out = (dir / "x.cflow").string();
    auto bad = [&](std::vector<std::string> args, const std::string& needle) {
        if (std::find(args.begin(), args.end(), "-o") == args.end()) args = with_args(args, {"-o", out});
        expect_one_line_failure(run_cflow(args), needle);
    };
    bad({"synth", "--preset", "tiny"}, "--preset");
    bad({"synth", "--preset", "dense-1b", "-o"}, "-o");
    expect_one_line_failure(run_cflow({"synth", "--preset", "dense-1b"}), "-o");
    bad({"synth", "--layers", "2", "--heads", "4", "--d-ff", "512"}, "--d");
    bad({"synth", "--d", "256", "--layers", "2", "--heads", "4"}, "--d-ff or --experts");
    bad(with_args(kDense, {"--d", "100"}), "--d: 100 is not a multiple of 32");
    bad(with_args(kDense, {"--heads", "3"}), "--heads");
    bad(with_args(kDense, {"--heads", "256"}), "odd head dimension");
    bad(with_args(kDense, {"--kv-heads", "3"}), "--kv-heads");
    bad(with_args(kDense, {"--d-ff", "500"}), "--d-ff");
    bad(with_args(kDense, {"--top-k", "2"}), "--top-k needs --experts");
    bad(with_args(kDense, {"--experts", "4", "--expert-hidden", "128"}), "--top-k");
    bad(with_args(kMoe, {"--top-k", "5"}), "--top-k: 5 exceeds --experts 4");
    bad(with_args(kMoe, {"--expert-hidden", "100"}), "--expert-hidden");
    bad(with_args(kDense, {"--vocab", "100"}), "--vocab");
    bad(with_args(kDense, {"--layers", "0"}), "--layers");
    bad(with_args(kDense, {"--dense-delay", "2"}), "--dense-delay");
    bad(with_args(kDense, {"--expert-delay", "5"}), "--expert-delay");
    bad(with_args(kDense, {"--expert-delay", "1"}), "needs experts");
    bad(with_args(kMoe, {"--combine-style", "DelayedSum", "--dense-delay", "1"}), "needs a dense FFN");  // the loader refused such files
    bad(with_args(kDense, {"--combine-style", "Bogus"}), "--combine-style");
    bad(with_args(kDense, {"--combine-style", "FixedPoint"}), "FixedPoint");
    bad(with_args(kDense, {"--combine-style", "ParallelSqrt2", "--dense-delay", "1"}), "ParallelSqrt2");
    bad(with_args(kDense, {"--quant", "q3_k"}), "--quant");
    bad(with_args(kDense, {"--seed", "-1"}), "--seed");
    bad(with_args(kDense, {"--bogus", "1"}), "--bogus");
    bad(with_args(kMoe, {"--d-ff", "512", "--gguf", (dir / "x.gguf").string()}), "--gguf");
    bad(with_args(kDense, {"-o", out, "--gguf", out}), "same file");
    bad(with_args(kDense, {"-o", (dir / "missing" / "x.cflow").string()}), "missing");
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a failed synth left files in " << dir;
}

} // namespace
} // namespace cflow::test

namespace cflow::test {
namespace {

// How often each expert was routed over a greedy generation (--trace-experts), all layers together.
std::vector<int> expert_counts(const std::string& model, const std::filesystem::path& trace, uint32_t experts) {
    auto r = run_cflow({"generate", model, "-p", "the quick brown fox", "-n", "40", "--temp", "0", "--trace-experts",
                        "--telemetry-file", trace.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<int> counts(experts, 0);
    std::ifstream in(trace);
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        for (const auto& l : j["layers"])
            if (l.contains("experts"))
                for (const auto& e : l["experts"]) ++counts.at(e.get<size_t>());
    }
    return counts;
}

// --router-skew S: low-numbered experts win top-k more often than the even share; S out of range
// is a one-line error.
TEST(SynthCli, RouterSkewFavoursLowNumberedExperts) {
    const auto dir = temp_dir("skew");
    const std::vector<std::string> moe8 = {"synth", "--d", "256", "--layers", "2", "--heads", "8", "--kv-heads", "2",
                                           "--experts", "8", "--top-k", "2", "--expert-hidden", "128", "--vocab", "300"};
    const std::string flat = (dir / "flat.cflow").string(), skewed = (dir / "skewed.cflow").string();
    ASSERT_EQ(run_cflow(with_args(moe8, {"-o", flat})).exit_code, 0);
    ASSERT_EQ(run_cflow(with_args(moe8, {"--router-skew", "8", "-o", skewed})).exit_code, 0);
    const auto f = expert_counts(flat, dir / "flat.jsonl", 8), s = expert_counts(skewed, dir / "skewed.jsonl", 8);
    int total = 0, low_flat = 0, low_skewed = 0;
    for (int e = 0; e < 8; ++e) total += s[size_t(e)];
    for (int e = 0; e < 2; ++e) {
        low_flat += f[size_t(e)];
        low_skewed += s[size_t(e)];
    }
    std::cout << "[router skew] experts 0-1 took " << low_flat << " (flat) and " << low_skewed << " (skew 8) of " << total
              << " routings\n";
    ASSERT_GT(total, 0);
    EXPECT_GT(low_skewed, total / 4) << "above the even share of 2 experts in 8";
    EXPECT_GT(low_skewed, low_flat);
    expect_one_line_failure(run_cflow(with_args(moe8, {"--router-skew", "-1", "-o", (dir / "x.cflow").string()})), "--router-skew");
    expect_one_line_failure(run_cflow(with_args(moe8, {"--router-skew", "lots", "-o", (dir / "x.cflow").string()})), "--router-skew");
}

} // namespace
} // namespace cflow::test
