// Conversion preflight and plan on the real llama2.c stories260K (GGUF and .bin): the planned
// size is the written size for every quantisation and container, per-class quantisation
// reaches the file's segments, and every refusal of the corrupt / unsupported set names its
// reason before a byte is written.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "cflow/engine/convert/conversion_preflight.h"
#include "cflow/engine/forward/model.h"
#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/gguf_writer.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;
constexpr const char* kDir = "assets/models/llama2c-stories260K/";

// stories260K: embedding 512 x 64, five layers of wq/wo 64 x 64, wk/wv 32 x 64, w1/w2/w3
// 172 x 64 and two norms of 64, the final norm; its GGUF also carries the classifier
// (output.weight, 512 x 64), which the llama2.c file shares with the embedding.
constexpr uint64_t kStories260kParameters = 512 * 64 + 5 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 172 * 64 + 2 * 64) + 64;
constexpr uint64_t kStories260kGgufParameters = kStories260kParameters + 512 * 64;

std::vector<char> read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_all(const fs::path& p, const std::vector<char>& bytes) {
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

PreflightReport preflight(const std::string& source, const std::string& tokenizer, const std::string& output,
                          const ConvertOptions& options = {}) {
    PreflightRequest request;
    request.source_path = source;
    request.tokenizer_path = tokenizer;
    request.output_path = output;
    request.options = options;
    request.probe_bandwidth = false;
    auto r = run_preflight(request);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? *r : PreflightReport{};
}

std::string blocking_messages(const PreflightReport& r) {
    std::string s;
    for (const auto& f : r.findings)
        if (f.blocking) s += f.message + "\n";
    return s;
}

TEST(ConversionPlan, PlannedBytesAreTheWrittenBytesForEveryQuantAndContainer) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kDir) + "stories260K.gguf");
    auto source = open_source_model(gguf.string());
    ASSERT_TRUE(source.ok()) << source.error();
    const fs::path dir = temp_dir("conversion-plan");
    for (DType q : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0})
        for (ContainerFormat format : {ContainerFormat::Cflow, ContainerFormat::Vflow}) {
            ConvertOptions options;
            options.weight_quant = q;
            options.format = format;
            auto plan = plan_conversion(*source, options);
            ASSERT_TRUE(plan.ok()) << plan.error();
            const fs::path out = dir / (std::string(dtype_name(q)) + (format == ContainerFormat::Vflow ? ".vflow" : ".cflow"));
            auto written = convert_to_cflow(*source, out.string(), options);
            ASSERT_TRUE(written.ok()) << written.error();
            EXPECT_EQ(plan->file_bytes, fs::file_size(out)) << out;
            EXPECT_EQ(plan->file_bytes, plan->embedding_bytes + plan->output_bytes + plan->attention_bytes +
                                            plan->dense_ffn_bytes + plan->expert_bank_bytes + plan->shared_expert_bytes +
                                            plan->other_bytes);
            EXPECT_GT(plan->output_bytes, 0u) << "the GGUF has its own output.weight";
            // Decode reads every layer and the LM head, but one row of the embedding table.
            const uint64_t read_all_but_embedding = plan->attention_bytes + plan->dense_ffn_bytes + plan->output_bytes;
            EXPECT_GT(plan->decode_bytes_per_token, read_all_but_embedding);
            EXPECT_LE(plan->decode_bytes_per_token, plan->file_bytes - plan->embedding_bytes + plan->embedding_bytes / 512);
            EXPECT_EQ(plan->parameters_total, kStories260kGgufParameters);
            EXPECT_EQ(plan->parameters_active, kStories260kGgufParameters);
        }
}

TEST(ConversionPlan, PerClassQuantisationReachesTheSegments) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kDir) + "stories260K.gguf");
    auto source = open_source_model(gguf.string());
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.weight_quant = DType::Q4_0;
    set_quant_for(options, TensorClass::Attention, DType::Q8_0);
    set_quant_for(options, TensorClass::Embeddings, DType::F16);
    EXPECT_EQ(quant_for(options, TensorClass::DenseFfn), DType::Q4_0);
    EXPECT_EQ(quant_for(options, TensorClass::Output), DType::F16) << "the LM head follows the embeddings when unset";
    const fs::path out = temp_dir("conversion-classes") / "mixed.cflow";
    auto plan = plan_conversion(*source, options);
    ASSERT_TRUE(plan.ok()) << plan.error();
    ASSERT_TRUE(convert_to_cflow(*source, out.string(), options).ok());
    EXPECT_EQ(plan->file_bytes, fs::file_size(out));
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ((*model)->token_embd().dtype, DType::F16);
    EXPECT_EQ((*model)->lm_head().dtype, DType::F16);
    for (const auto& layer : (*model)->layers()) {
        EXPECT_EQ(layer.qkv->dtype, DType::Q8_0);
        EXPECT_EQ(layer.gate_up->dtype, DType::Q4_0);
        EXPECT_EQ(layer.down->dtype, DType::Q4_0);
    }
    // A class quant the tiles cannot hold is refused by name.
    ConvertOptions bad;
    set_quant_for(bad, TensorClass::Experts, DType::BF16);
    auto refused = plan_conversion(*source, bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find("experts quant bf16 is not a type the converter quantises to"), std::string::npos) << refused.error();
}

TEST(ConversionPreflight, ReportsWhatTheSourceHoldsAndWhatTheOutputCosts) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kDir) + "stories260K.gguf");
    const fs::path out = temp_dir("preflight-ok") / "s.cflow";
    const PreflightReport r = preflight(gguf.string(), "", out.string());
    EXPECT_FALSE(r.blocked()) << blocking_messages(r);
    EXPECT_TRUE(r.source_opened);
    EXPECT_EQ(r.source_format, "gguf");
    EXPECT_EQ(r.config.d_model, 64u);
    EXPECT_EQ(r.plan.parameters_total, kStories260kGgufParameters);
    EXPECT_NE(r.tokenizer.find("512 tokens"), std::string::npos) << r.tokenizer;
    ASSERT_EQ(r.estimates.size(), 5u);
    EXPECT_GT(r.estimates[0].file_bytes, r.estimates[1].file_bytes) << "f32 > f16";
    EXPECT_GT(r.estimates[1].file_bytes, r.estimates[2].file_bytes) << "f16 > q8_0";
    EXPECT_GT(r.estimates[2].file_bytes, r.estimates[3].file_bytes) << "q8_0 > q4_0";
    EXPECT_EQ(r.estimates[4].file_bytes, r.estimates[3].file_bytes) << "the default choice is q4_0";
    EXPECT_GT(r.output_free_bytes, 0u);
    EXPECT_EQ(r.kv_cache_bytes, 2ull * 5 * 4 * 8 * r.context_tokens * 2);
    EXPECT_EQ(r.run_memory_bytes, r.plan.file_bytes + r.kv_cache_bytes + (64ull << 20));
    EXPECT_FALSE(fs::exists(out)) << "preflight writes nothing";
    const std::string text = preflight_text(r);
    EXPECT_NE(text.find("verdict: ready to convert"), std::string::npos) << text;
}

TEST(ConversionPreflight, TheBandwidthProbeGivesASpeedPerQuantisation) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kDir) + "stories260K.gguf");
    PreflightRequest request;
    request.source_path = gguf.string();
    request.threads = 1;
    auto r = run_preflight(request);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_GT(r->read_bandwidth_bytes_per_second, 1e8);
    for (const auto& e : r->estimates)
        EXPECT_DOUBLE_EQ(e.decode_tokens_per_second, r->read_bandwidth_bytes_per_second / double(e.decode_bytes_per_token));
}

struct Refusal {
    const char* name;
    std::string needle;
};

TEST(ConversionPreflight, EveryRefusalNamesItsReason) {
    CFLOW_REQUIRE_ASSET(gguf, std::string(kDir) + "stories260K.gguf");
    CFLOW_REQUIRE_ASSET(bin, std::string(kDir) + "stories260K.bin");
    CFLOW_REQUIRE_ASSET(tok, std::string(kDir) + "tok512.bin");
    const fs::path dir = temp_dir("preflight-refusals");
    const auto gguf_bytes = read_all(gguf);

    auto truncated = gguf_bytes;
    truncated.resize(truncated.size() / 2);
    write_all(dir / "truncated.gguf", truncated);

    auto other_arch = gguf_bytes;  // general.architecture "llama" -> "llamb", same length
    const std::string key = "general.architecture";
    auto at = std::search(other_arch.begin(), other_arch.end(), key.begin(), key.end());
    ASSERT_NE(at, other_arch.end());
    const std::string llama = "llama";
    auto value = std::search(at, other_arch.end(), llama.begin(), llama.end());
    ASSERT_NE(value, other_arch.end());
    value[4] = 'b';
    write_all(dir / "llamb.gguf", other_arch);

    write_all(dir / "noise.gguf", std::vector<char>(4096, 'x'));
    ConvertOptions q4;
    const fs::path converted = dir / "already.cflow";
    {
        auto source = open_source_model(gguf.string());
        ASSERT_TRUE(source.ok());
        ASSERT_TRUE(convert_to_cflow(*source, converted.string(), q4).ok());
    }

    struct Case {
        std::string source, tokenizer, output, needle;
    };
    const std::vector<Case> cases = {
        {(dir / "missing.gguf").string(), "", "", "nothing there"},
        {(dir / "truncated.gguf").string(), "", "", "truncated.gguf"},
        {(dir / "llamb.gguf").string(), "", "", "unsupported architecture 'llamb'"},
        {(dir / "noise.gguf").string(), "", "", "noise.gguf"},
        {converted.string(), "", "", "already a converted cflow model"},
        {bin.string(), "", "", "tokenizer"},
        {gguf.string(), "", (dir / "no-such-folder" / "x.cflow").string(), "does not exist"},
        {gguf.string(), "", (dir / "x.bin").string(), "must end in .cflow or .vflow"},
    };
    for (const Case& c : cases) {
        const PreflightReport r = preflight(c.source, c.tokenizer, c.output);
        EXPECT_TRUE(r.blocked()) << c.source << " -> " << c.output;
        EXPECT_NE(blocking_messages(r).find(c.needle), std::string::npos)
            << "expected '" << c.needle << "' in: " << blocking_messages(r);
        EXPECT_NE(preflight_text(r).find("verdict: cannot convert"), std::string::npos);
    }
    // The llama2.c checkpoint with its tokenizer is fine.
    const PreflightReport tied = preflight(bin.string(), tok.string(), "");
    EXPECT_FALSE(tied.blocked()) << blocking_messages(tied);
    EXPECT_EQ(tied.plan.parameters_total, kStories260kParameters) << "the llama2.c file shares its classifier";
    EXPECT_EQ(tied.plan.output_bytes, 0u);
}

// Issue 38: a GGUF whose chat template never finishes converted with exit 0 and nothing said;
// the preflight now names it (the conversion itself is not blocked: chat falls back).
TEST(ConversionPreflight, AChatTemplateOverItsBudgetIsReported) {
    const fs::path dir = temp_dir("preflight-template");
    const SyntheticSpec spec;
    const SourceModel source = make_synthetic_model(spec);
    std::vector<GgufTensorData> tensors;
    for (const auto& [name, view] : source.tensors) tensors.push_back(gguf_tensor(view));
    auto write_with_template = [&](const std::string& file, const std::string& chat_template) {
        std::vector<GgufKeyValue> metadata = synthetic_llama_gguf_metadata(spec, "preflight-template");
        metadata.push_back({"tokenizer.chat_template", chat_template});
        const Status s = write_gguf((dir / file).string(), metadata, tensors);
        EXPECT_TRUE(s.ok()) << s.error();
        return (dir / file).string();
    };
    const std::string hostile = write_with_template(
        "hostile.gguf", "{%- set ns = namespace(d={}) -%}{%- for i in range(100000) -%}"
                        "{%- set ns.d = dict(ns.d, **{('k' ~ i): i}) -%}{%- endfor -%}{{ messages | length }}");
    const std::string plain = write_with_template(
        "plain.gguf", "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}");

    const PreflightReport refused = preflight(hostile, "", "");
    EXPECT_FALSE(refused.blocked()) << blocking_messages(refused);
    const std::string text = preflight_text(refused);
    EXPECT_NE(text.find("chat template was refused"), std::string::npos) << text;
    EXPECT_TRUE(text.find("more than 64 MiB") != std::string::npos || text.find("ran longer than 2000 ms") != std::string::npos)
        << text;
    EXPECT_NE(text.find("chat will use the fallback"), std::string::npos) << text;

    const PreflightReport fine = preflight(plain, "", "");
    EXPECT_EQ(preflight_text(fine).find("chat template was refused"), std::string::npos) << preflight_text(fine);
}

} // namespace
} // namespace cflow::test
