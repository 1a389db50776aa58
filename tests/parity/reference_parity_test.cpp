// Engine vs the PyTorch reference (tests/reference/README.md): each of the 12 reference
// folders is converted (.cflow and .vflow, F32), loaded and run token by token; logits,
// per-layer residual norms, routed experts and their weights must match trace.json, and 64
// greedy tokens must be identical. Q4_0 conversions are held to argmax agreement, and the
// expert stream must read exactly k/E of each expert bank per MoE application.
//
// The folders come from the ctest fixture reference_models_generate (CFLOW_REFERENCE_DIR),
// or from CFLOW_REFERENCE_MODELS_DIR of the build when the binary is run by hand.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The cases of tests/reference/README.md, fixed here so that test discovery (at build time,
// before the fixture has run) lists them and a missing folder fails instead of vanishing.
const std::vector<std::string> kCases = {
    "arch1_decoupled_streams", "arch2_4_combined",     "arch2_4_sync",      "arch3_pipeline_registers",
    "arch4_async_experts",     "arch5_fixed_point",    "gemma_parallel_sqrt2", "delayed_dd0_de2_sum",
    "llama_dense",             "mixtral_moe",          "qwen2moe_shared",   "olmoe_softmax_all"};

constexpr double kLogitRelTolerance = 1e-4;     // relative L2 norm of the logits error
constexpr double kNormRelTolerance = 1e-4;      // relative error of each residual norm
constexpr double kWeightAbsTolerance = 1e-4;    // absolute error of each expert weight
constexpr int32_t kGreedyTokens = 64;

fs::path reference_dir() {
    if (const char* env = std::getenv("CFLOW_REFERENCE_DIR"); env && *env) return env;
    return CFLOW_REFERENCE_MODELS_DIR;
}

// Why a case folder is unusable: "" when it is there.
std::string missing_reason(const std::string& case_name, bool* skip) {
    const fs::path dir = reference_dir();
    std::error_code ec;
    *skip = true;
    if (!CFLOW_REFERENCE_TORCH && !fs::exists(dir / case_name / "trace.json", ec))
        return "reference models not generated: " CFLOW_REFERENCE_PYTHON " could not import torch when CMake was "
               "configured, and tests/reference/make_reference_models.py needs torch (point CFLOW_REFERENCE_DIR at "
               "pre-generated folders to run these tests)";
    if (!fs::is_directory(dir, ec))
        return "reference models not found in '" + dir.string() + "': run through ctest (fixture reference_models_generate) or " +
               CFLOW_REFERENCE_PYTHON + " tests/reference/make_reference_models.py " + dir.string();
    *skip = false;  // the folder set is there but this case is not: generation is broken
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "trace.json"})
        if (!fs::exists(dir / case_name / f, ec)) return (dir / case_name / f).string() + " is missing";
    return "";
}

#define CFLOW_REQUIRE_REFERENCE(case_name)                 \
    do {                                                   \
        bool skip_ = false;                                \
        const std::string why_ = missing_reason(case_name, &skip_); \
        if (!why_.empty()) {                               \
            if (skip_) GTEST_SKIP() << why_;               \
            FAIL() << why_;                                \
        }                                                  \
    } while (0)

struct Trace {
    int combine_style = 0;
    std::vector<int32_t> tokens;                                    // [positions]
    std::vector<std::vector<double>> logits;                        // [positions x vocab]
    std::vector<std::vector<double>> residual_norms;                // [positions x effective layers]
    std::vector<std::vector<std::vector<int>>> experts;             // [positions x MoE applications x k]
    std::vector<std::vector<std::vector<double>>> expert_weights;   // [positions x MoE applications x k]
    std::vector<int32_t> greedy_prompt;
    std::vector<int32_t> greedy_tokens;                             // [64]
};

Result<Trace> load_trace(const fs::path& path) {
    try {
        std::ifstream in(path, std::ios::binary);
        if (!in) return make_error(path.string() + ": cannot open");
        const json j = json::parse(in);
        Trace t;
        t.combine_style = j.at("combine_style").get<int>();
        t.tokens = j.at("tokens").get<std::vector<int32_t>>();
        t.logits = j.at("logits").get<std::vector<std::vector<double>>>();
        t.residual_norms = j.at("residual_norms").get<std::vector<std::vector<double>>>();
        t.experts = j.at("experts").get<std::vector<std::vector<std::vector<int>>>>();
        t.expert_weights = j.at("expert_weights").get<std::vector<std::vector<std::vector<double>>>>();
        t.greedy_prompt = j.at("greedy").at("prompt").get<std::vector<int32_t>>();
        t.greedy_tokens = j.at("greedy").at("tokens").get<std::vector<int32_t>>();
        const size_t n = t.tokens.size();
        if (n == 0 || t.logits.size() != n || t.residual_norms.size() != n || t.experts.size() != n ||
            t.expert_weights.size() != n)
            return make_error(path.string() + ": tokens, logits, residual_norms, experts and expert_weights differ in length");
        return t;
    } catch (const json::exception& e) {
        return make_error(path.string() + ": " + e.what());
    }
}

const char* format_name(ContainerFormat f) { return f == ContainerFormat::Vflow ? "vflow" : "cflow"; }

// HF folder -> converted file under out_dir -> loaded model.
Result<std::shared_ptr<const Model>> convert_and_load(const std::string& case_name, DType quant, ContainerFormat format,
                                                      const fs::path& out_dir) {
    auto source = open_source_model((reference_dir() / case_name).string());
    if (!source) return source.take_error();
    ConvertOptions options;
    options.weight_quant = quant;
    options.format = format;
    options.threads = 2;
    const fs::path out = out_dir / (case_name + "." + format_name(format));
    auto report = convert_to_cflow(*source, out.string(), options);
    if (!report) return report.take_error();
    return Model::load(out.string());
}

double relative_l2(std::span<const float> got, const std::vector<double>& want) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return std::sqrt(err) / std::sqrt(ref);
}

size_t argmax(const auto& v) {  // ties -> lowest index, as the reference's greedy
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
        if (v[i] > v[best]) best = i;
    return best;
}

std::unique_ptr<Session> make_session(std::shared_ptr<const Model> model) {
    SessionOptions options;
    options.threads = 2;
    auto session = Session::create(std::move(model), options);
    if (!session) {
        ADD_FAILURE() << session.error();
        return nullptr;
    }
    return std::move(session.value());
}

struct ParityCase {
    std::string name;
    ContainerFormat format;
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name << " (." << format_name(c.format) << ")"; }

class ReferenceParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(ReferenceParity, TeacherForcedStepsMatchTheTrace) {
    const ParityCase& pc = GetParam();
    CFLOW_REQUIRE_REFERENCE(pc.name);
    auto trace = load_trace(reference_dir() / pc.name / "trace.json");
    ASSERT_TRUE(trace.ok()) << trace.error();
    auto model = convert_and_load(pc.name, DType::F32, pc.format, test::temp_dir(pc.name));
    ASSERT_TRUE(model.ok()) << model.error();
    ASSERT_EQ(static_cast<int>((*model)->header().combine_style), trace->combine_style);
    auto session = make_session(*model);
    ASSERT_NE(session, nullptr);
    const size_t effective = (*model)->effective_layers();
    ASSERT_EQ(effective, trace->residual_norms[0].size()) << "effective layers (FixedPoint: n_blocks * n_iter)";

    double max_logit_err = 0, max_norm_err = 0, max_weight_err = 0;
    size_t routings = 0, routings_identical = 0;
    for (size_t p = 0; p < trace->tokens.size(); ++p) {
        auto logits = session->step(trace->tokens[p]);
        ASSERT_TRUE(logits.ok()) << "position " << p << ": " << logits.error();
        ASSERT_EQ(logits->size(), trace->logits[p].size());
        const double logit_err = relative_l2(*logits, trace->logits[p]);
        max_logit_err = std::max(max_logit_err, logit_err);
        EXPECT_LT(logit_err, kLogitRelTolerance) << "logits at position " << p;

        const TokenTelemetry& tel = session->telemetry();
        ASSERT_EQ(tel.layers.size(), effective);
        std::vector<const LayerRecord*> applications;  // MoE applications, by routing (effective) layer
        for (size_t l = 0; l < effective; ++l) {
            const LayerRecord& rec = tel.layers[l];
            const double want = trace->residual_norms[p][l];
            const double norm_err = std::abs(rec.residualNorm - want) / want;
            max_norm_err = std::max(max_norm_err, norm_err);
            EXPECT_LT(norm_err, kNormRelTolerance) << "residual norm at position " << p << ", layer " << l << ": engine "
                                                   << rec.residualNorm << ", reference " << want;
            if (rec.nSelected > 0) applications.push_back(&rec);
        }
        ASSERT_EQ(applications.size(), trace->experts[p].size()) << "MoE applications at position " << p;
        for (size_t a = 0; a < applications.size(); ++a) {
            const LayerRecord& rec = *applications[a];
            const std::vector<int>& want_ids = trace->experts[p][a];
            const std::vector<double>& want_w = trace->expert_weights[p][a];
            ASSERT_EQ(rec.nSelected, want_ids.size()) << "position " << p << ", layer " << rec.layer;
            std::vector<int> got_ids(rec.experts.begin(), rec.experts.begin() + rec.nSelected);
            ++routings;
            if (got_ids == want_ids) ++routings_identical;
            EXPECT_EQ(got_ids, want_ids) << "experts at position " << p << ", layer " << rec.layer;
            for (size_t i = 0; i < want_w.size(); ++i) {
                const double w_err = std::abs(rec.expertWeights[i] - want_w[i]);
                max_weight_err = std::max(max_weight_err, w_err);
                EXPECT_LT(w_err, kWeightAbsTolerance) << "weight " << i << " at position " << p << ", layer " << rec.layer;
            }
        }
    }
    std::printf("[parity] %-24s %-5s logits rel L2 max %.2e | residual norm rel max %.2e | expert weight abs max %.2e | "
                "routings identical %zu/%zu\n",
                pc.name.c_str(), format_name(pc.format), max_logit_err, max_norm_err, max_weight_err, routings_identical,
                routings);
}

TEST_P(ReferenceParity, GreedyTokensMatchTheTrace) {
    const ParityCase& pc = GetParam();
    CFLOW_REQUIRE_REFERENCE(pc.name);
    auto trace = load_trace(reference_dir() / pc.name / "trace.json");
    ASSERT_TRUE(trace.ok()) << trace.error();
    ASSERT_EQ(trace->greedy_tokens.size(), size_t(kGreedyTokens));
    auto model = convert_and_load(pc.name, DType::F32, pc.format, test::temp_dir(pc.name));
    ASSERT_TRUE(model.ok()) << model.error();
    auto session = make_session(*model);
    ASSERT_NE(session, nullptr);

    GenerateRequest request;
    request.prompt = trace->greedy_prompt;
    request.sampling.temperature = 0.0f;
    request.max_tokens = kGreedyTokens;
    request.stop_at_end_of_generation = false;  // the reference does not stop at </s>
    std::vector<int32_t> generated;
    auto stats = generate(*session, request, [&](int32_t token, std::string_view) {
        if (token >= 0) generated.push_back(token);  // -1: the decoder's flushed tail, not a token
        return true;
    });
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->stop_reason, StopReason::MaxTokens);
    EXPECT_EQ(generated, trace->greedy_tokens);
    size_t same_prefix = 0;
    while (same_prefix < generated.size() && same_prefix < trace->greedy_tokens.size() &&
           generated[same_prefix] == trace->greedy_tokens[same_prefix])
        ++same_prefix;
    std::printf("[parity] %-24s %-5s greedy: %zu/%d tokens identical before the first difference\n", pc.name.c_str(),
                format_name(pc.format), same_prefix, kGreedyTokens);
}

std::vector<ParityCase> all_parity_cases() {
    std::vector<ParityCase> out;
    for (ContainerFormat f : {ContainerFormat::Cflow, ContainerFormat::Vflow})
        for (const auto& name : kCases) out.push_back({name, f});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Reference, ReferenceParity, ::testing::ValuesIn(all_parity_cases()),
                         [](const ::testing::TestParamInfo<ParityCase>& param_info) {
                             return param_info.param.name + "_" + format_name(param_info.param.format);
                         });

// Q4_0 weights cannot reproduce f32 logits; the argmax of each teacher-forced position is
// compared with the trace's, per case, and held to the measured floor.
//
// Why the floor is far below 95%: these are random models whose top-1 logit leads the
// runner-up by only ~0.2 logit standard deviations (median), while Q4_0 moves the logits by
// 40-100% relative L2. Measured 108/288 = 37.5% (per case 3..13 of 24). The reference itself,
// run in float64 on the same weights round-tripped through ggml Q4_0 (tiled matrices only, as
// the converter does), also agrees on exactly 108/288 with per-case differences of at most 2
// positions, so this is the quantisation, not the engine; at Q8_0 that simulation gives
// 258/288. The floor leaves 8 positions for ISA-dependent rounding of borderline positions; a
// broken Q4_0 path agrees on ~1/320 of positions and fails it.
TEST(ReferenceQ4, ArgmaxAgreesWithTheTraceOnMostPositions) {
    constexpr size_t kMinAgreeingPositions = 100;  // of 12 cases x 24 positions
    size_t agree_total = 0, positions_total = 0;
    for (const std::string& name : kCases) {
        CFLOW_REQUIRE_REFERENCE(name);
        auto trace = load_trace(reference_dir() / name / "trace.json");
        ASSERT_TRUE(trace.ok()) << trace.error();
        auto model = convert_and_load(name, DType::Q4_0, ContainerFormat::Cflow, test::temp_dir(name));
        ASSERT_TRUE(model.ok()) << model.error();
        auto session = make_session(*model);
        ASSERT_NE(session, nullptr);
        size_t agree = 0;
        double max_logit_err = 0;
        for (size_t p = 0; p < trace->tokens.size(); ++p) {
            auto logits = session->step(trace->tokens[p]);
            ASSERT_TRUE(logits.ok()) << name << " position " << p << ": " << logits.error();
            if (argmax(*logits) == argmax(trace->logits[p])) ++agree;
            max_logit_err = std::max(max_logit_err, relative_l2(*logits, trace->logits[p]));
        }
        const std::string isa(isa_name(session->isa()));
        std::printf("[q4_0] %-24s argmax agreement %2zu/%zu (%5.1f%%), logits rel L2 max %.3f (%s kernels)\n", name.c_str(),
                    agree, trace->tokens.size(), 100.0 * double(agree) / double(trace->tokens.size()), max_logit_err,
                    isa.c_str());
        agree_total += agree;
        positions_total += trace->tokens.size();
    }
    const double overall = double(agree_total) / double(positions_total);
    std::printf("[q4_0] overall argmax agreement %zu/%zu (%.1f%%)\n", agree_total, positions_total, 100.0 * overall);
    EXPECT_EQ(positions_total, kCases.size() * 24);
    EXPECT_GE(agree_total, kMinAgreeingPositions);
}

// The expert stream reads exactly the chosen experts: per MoE application top_k experts of
// bank_bytes / n_experts each (all experts of a bank are the same size), nothing of the others.
class ReferenceExpertBytes : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceExpertBytes, ExpertBytesPerTokenAreKOverEOfTheBank) {
    const std::string& name = GetParam();
    CFLOW_REQUIRE_REFERENCE(name);
    auto trace = load_trace(reference_dir() / name / "trace.json");
    ASSERT_TRUE(trace.ok()) << trace.error();
    auto model = convert_and_load(name, DType::F32, ContainerFormat::Cflow, test::temp_dir(name));
    ASSERT_TRUE(model.ok()) << model.error();
    const Model& m = **model;
    const GlobalHeader& h = m.header();
    ASSERT_GT(h.n_experts, 0);
    ASSERT_LT(h.top_k, h.n_experts);
    ASSERT_EQ(m.params().shared_expert_d_ff, 0u) << "a shared expert would add its own bytes";
    const bool fixed_point = static_cast<CombineStyle>(h.combine_style) == CombineStyle::FixedPoint;
    const uint32_t n_iter = fixed_point ? m.params().n_iter : 1;
    auto expert_bytes = [&](uint32_t physical_layer) {  // one expert of that layer's bank
        const SegmentView* bank = m.layers()[physical_layer].expert_bank;
        EXPECT_NE(bank, nullptr);
        EXPECT_EQ(bank ? bank->bytes % h.n_experts : 1, 0u) << "bank of layer " << physical_layer;
        return bank ? bank->bytes / h.n_experts : 0;
    };

    auto session = make_session(*model);
    ASSERT_NE(session, nullptr);
    for (size_t p = 0; p < trace->tokens.size(); ++p) {
        ASSERT_TRUE(session->step(trace->tokens[p]).ok());
        const TokenTelemetry& tel = session->telemetry();
        // What each layer must have read: the experts of every routing injected there.
        std::vector<uint64_t> expected(tel.layers.size(), 0);
        uint64_t expected_token = 0, banks_token = 0;
        for (const LayerRecord& rec : tel.layers) {
            if (rec.nSelected == 0) continue;
            ASSERT_EQ(rec.nSelected, h.top_k);
            ASSERT_GE(rec.injectionLayer, 0);
            ASSERT_LT(size_t(rec.injectionLayer), expected.size());
            const uint32_t physical = rec.layer / n_iter;
            const uint64_t bytes = uint64_t{h.top_k} * expert_bytes(physical);
            expected[size_t(rec.injectionLayer)] += bytes;
            expected_token += bytes;
            banks_token += m.layers()[physical].expert_bank->bytes;
        }
        for (size_t l = 0; l < tel.layers.size(); ++l)
            EXPECT_EQ(tel.layers[l].bytesRead[size_t(Stream::Expert)], expected[l]) << "position " << p << ", layer " << l;
        EXPECT_EQ(tel.bytes(Stream::Expert), expected_token) << "position " << p;
        EXPECT_LT(tel.bytes(Stream::Expert), banks_token);  // k < E: never the whole bank
        EXPECT_GT(expected_token, 0u);
    }
    std::printf("[expert bytes] %-20s per MoE application %u x %llu of a %llu-byte bank (k/E = %u/%u)\n", name.c_str(),
                unsigned(h.top_k), static_cast<unsigned long long>(expert_bytes(0)),
                static_cast<unsigned long long>(m.layers()[0].expert_bank->bytes), unsigned(h.top_k), unsigned(h.n_experts));
    // Every expert, chosen or not, is bank / E bytes: the k/E figure is not an average.
    for (uint32_t l = 0; l < h.n_layers; ++l)
        for (uint32_t e = 0; e < h.n_experts; ++e) {
            auto view = m.expert(l, e);
            ASSERT_TRUE(view.ok()) << view.error();
            EXPECT_EQ((*view)->bytes, expert_bytes(l)) << "layer " << l << ", expert " << e;
        }
}

// MoE cases without a shared expert: Sequential, DelayedSum with delays, FixedPoint.
INSTANTIATE_TEST_SUITE_P(Reference, ReferenceExpertBytes,
                         ::testing::Values("mixtral_moe", "olmoe_softmax_all", "arch2_4_combined", "arch5_fixed_point"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

} // namespace
} // namespace cflow
