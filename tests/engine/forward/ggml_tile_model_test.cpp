// A small llama GGUF whose every weight matrix is one of the ggml-block tile types without a
// quantiser (Q2_K, Q3_K, IQ4_XS, Q4_1, Q5_0, Q5_1, IQ4_NL), its blocks random but valid (finite
// f16 scales), written with write_gguf, read back with the GGUF reader and converted with kept
// types: every matrix is copied block for block (nothing re-quantised), the .cflow is about the
// GGUF's size, and the engine's logits match a float64 forward pass over the file's own
// dequantised weights (reference_forward.h) within the reference parity suite's 1e-4 relative L2
// at every position, on every kernel path (these types run on f32 activations everywhere).
// A Q4_K_M-style mix (Q4_K Q/K beside a Q5_0 V and a Q5_1 down, one fused QKV segment) checks
// that a segment mixing a type with int8 slices and one without runs per tile on the int8 paths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/kquant_quantize.h"
#include "cflow/formats/tile_codec.h"
#include "reference_forward.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test::ggml_tile_model {
namespace {

namespace fs = std::filesystem;

constexpr double kLogitRelTolerance = 1e-4;  // as tests/parity/reference_parity_test.cpp
// Int8 activations on this small random model (tests/parity/ggml/gguf_kquant_model_test.cpp's bound).
constexpr double kInt8ActivationTolerance = 5e-2;
constexpr double kMaxSizeRatio = 1.06;       // .cflow vs GGUF bytes (tile headers, region directories)
constexpr Isa kAllPaths[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
const std::vector<int32_t> kTokens = {1, 5, 17, 3, 42, 9, 0, 63, 21, 7, 250, 128};

// d_model and d_ff multiples of 256, so every type (super-blocks included) covers every matrix.
SyntheticSpec llama_spec() {
    SyntheticSpec spec;
    spec.d_model = 256;
    spec.n_layers = 2;
    spec.n_heads = 4;
    spec.n_kv_heads = 2;
    spec.head_dim = 64;
    spec.d_ff = 512;
    spec.vocab = 300;
    return spec;
}

void put_f16(uint8_t* p, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
}

// One random valid block of `dtype`: random quant bytes, f16 scales of a magnitude that keeps the
// weights' RMS near 0.05 (each type's typical |integer| product), with a random sign where the
// format allows one. Q4_K / Q5_K / Q6_K blocks come from ggml's quantiser instead.
// Block sizes and ggml type codes of every type a test GGUF holds: the ggml-block tile types and
// the Q8_0 / Q4_0 blocks that cflow re-tiles into its own tile layout.
// F16 counts as a "block" of one weight.
uint32_t block_bytes(DType dtype) {
    return dtype == DType::F16 ? 2 : dtype == DType::Q8_0 ? 34 : dtype == DType::Q4_0 ? 18 : ggml_tile_block_bytes(dtype);
}
uint32_t block_weights(DType dtype) {
    return dtype == DType::F16 ? 1 : is_block_quant(dtype) ? kQuantGroup : ggml_tile_block_weights(dtype);
}
uint32_t ggml_code(DType dtype) {
    return dtype == DType::F16 ? 1 : dtype == DType::Q8_0 ? 8 : dtype == DType::Q4_0 ? 2 : ggml_tile_ggml_type(dtype);
}

void random_block(DType dtype, std::mt19937& rng, uint8_t* block) {
    const uint32_t bytes = block_bytes(dtype);
    for (uint32_t i = 0; i < bytes; ++i) block[i] = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> spread(0.7f, 1.4f);
    const float sign = rng() % 2 ? -1.0f : 1.0f;
    const float target = 0.05f * spread(rng);
    switch (dtype) {
        case DType::Q2_K: put_f16(block + 80, target / 11), put_f16(block + 82, target / 20); break;  // d sc q - dmin mn
        case DType::Q3_K: put_f16(block + 108, sign * target / 40); break;                              // d (sc - 32) q
        case DType::IQ4_XS: put_f16(block, sign * target / 1000); break;                              // d (ls - 32) kvalue
        case DType::Q4_1: put_f16(block, target / 4.6f), put_f16(block + 2, -7.5f * target / 4.6f); break;  // d q + m
        case DType::Q5_0: put_f16(block, sign * target / 9); break;                                   // d (q - 16)
        case DType::Q5_1: put_f16(block, target / 9), put_f16(block + 2, -15.5f * target / 9); break;
        case DType::IQ4_NL: put_f16(block, sign * target / 65); break;                                // d kvalue
        case DType::MXFP4: block[0] = static_cast<uint8_t>(120 + rng() % 3); break;                  // 2^(e-128) kvalue, RMS ~6
        case DType::F16: put_f16(block, sign * target * spread(rng)); break;                          // the weight
        case DType::Q8_0: put_f16(block, sign * target / 74); break;                                  // d q
        case DType::Q4_0: put_f16(block, sign * target / 4.6f); break;                                // d (q - 8)
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K: {
            std::normal_distribution<float> normal(0.0f, target);
            float x[256];  // [256] f32 weights of one super-block
            for (float& v : x) v = normal(rng);
            if (dtype == DType::Q4_K) quantize_block_q4_k(x, block);
            else if (dtype == DType::Q5_K) quantize_block_q5_k(x, block);
            else quantize_block_q6_k(x, block);
            break;
        }
        default: FAIL() << "not a ggml-block tile type";
    }
}

struct Gguf {
    fs::path path;
    std::map<std::string, DType> matrix_types;  // every matrix written, by name
};

// Writes the synthetic llama as a GGUF: F32 norms as they are, each matrix as random blocks of
// type_of(name).
Gguf write_llama_gguf(const fs::path& path, const std::function<DType(const std::string&)>& type_of) {
    const SyntheticSpec spec = llama_spec();
    const SourceModel source = make_synthetic_model(spec);
    const std::vector<GgufKeyValue> metadata = synthetic_llama_gguf_metadata(spec, "ggml-tile-test");
    Gguf out{path, {}};
    std::mt19937 rng(1234);
    std::vector<std::vector<uint8_t>> payloads;  // alive until write_gguf returns
    payloads.reserve(source.tensors.size());
    std::vector<GgufTensorData> tensors;
    for (const auto& [name, view] : source.tensors) {
        if (view.shape.size() != 2) {
            tensors.push_back(gguf_tensor(view));  // norms: F32
            continue;
        }
        const DType dtype = type_of(name);
        const uint64_t blocks = view.shape[0] * view.shape[1] / block_weights(dtype);
        std::vector<uint8_t> bytes(blocks * block_bytes(dtype));  // [rows x cols/block] blocks
        for (uint64_t b = 0; b < blocks; ++b) random_block(dtype, rng, bytes.data() + b * block_bytes(dtype));
        payloads.push_back(std::move(bytes));
        tensors.push_back({name, ggml_code(dtype), view.shape, payloads.back().data(), payloads.back().size()});
        out.matrix_types[name] = dtype;
    }
    const Status s = write_gguf(path.string(), metadata, tensors);
    EXPECT_TRUE(s.ok()) << s.error();
    return out;
}

struct Checked {
    double max_rel_l2 = 0;
    bool ran = false;
};

// Teacher-forced logits on one kernel path against the float64 reference.
Checked check_path(const std::shared_ptr<const Model>& model, Isa isa, const std::vector<std::vector<double>>& want,
                   double tolerance, const std::string& label) {
    Checked c;
    if (!isa_supported(isa)) return c;
    SessionOptions so;
    so.threads = 2;
    so.isa = isa;
    so.kv_cache = KvCacheType::F32;
    auto session = Session::create(model, so);
    EXPECT_TRUE(session.ok()) << session.error();
    if (!session.ok()) return c;
    for (size_t p = 0; p < kTokens.size(); ++p) {
        auto logits = (*session)->step(kTokens[p]);
        EXPECT_TRUE(logits.ok()) << label << " position " << p << ": " << logits.error();
        if (!logits.ok()) return c;
        const double err = relative_l2_error(*logits, want[p]);
        c.max_rel_l2 = std::max(c.max_rel_l2, err);
        EXPECT_LE(err, tolerance) << label << " " << isa_name(isa) << ", logits at position " << p;
    }
    c.ran = true;
    return c;
}

struct Converted {
    std::shared_ptr<const Model> model;
    SourceModel source;  // the GGUF as read back (the reference's weights)
    ConvertReport report;
    double size_ratio = 0;
};

// keepMask: ConvertOptions::keep_dtype_mask (0: keep every tile type).
Converted convert_kept(const Gguf& gguf, const fs::path& out, uint32_t keepMask = 0) {
    Converted c;
    auto source = open_source_model(gguf.path.string());
    EXPECT_TRUE(source.ok()) << source.error();
    if (!source.ok()) return c;
    ConvertOptions options;
    options.keep_source_types = true;
    options.keep_dtype_mask = keepMask;
    options.threads = 2;
    auto report = convert_to_cflow(*source, out.string(), options);
    EXPECT_TRUE(report.ok()) << report.error();
    if (!report.ok()) return c;
    c.report = *report;
    c.size_ratio = double(fs::file_size(out)) / double(fs::file_size(gguf.path));
    auto model = Model::load(out.string());
    EXPECT_TRUE(model.ok()) << model.error();
    if (!model.ok()) return c;
    c.model = *model;
    c.source = std::move(*source);
    return c;
}

class GgmlTileModel : public ::testing::TestWithParam<DType> {};

TEST_P(GgmlTileModel, KeptTypesAreExactAndEveryPathMatchesTheFloat64Reference) {
    const DType dtype = GetParam();
    const std::string name(dtype_name(dtype));
    const fs::path dir = temp_dir("ggml-tile-" + name);
    const Gguf gguf = write_llama_gguf(dir / "model.gguf", [&](const std::string&) { return dtype; });
    Converted c = convert_kept(gguf, dir / "model.cflow");
    ASSERT_NE(c.model, nullptr);
    EXPECT_TRUE(c.report.requantised_tensors.empty()) << c.report.requantised_tensors.front();
    EXPECT_TRUE(c.report.kquant_fallbacks.empty()) << c.report.kquant_fallbacks.front();
    EXPECT_EQ(c.report.retiled_exact_tensors, gguf.matrix_types.size());
    EXPECT_LE(c.size_ratio, kMaxSizeRatio);
    for (const TensorView* t : {c.source.find("blk.0.attn_q.weight"), c.source.find("token_embd.weight")}) {
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->ggml_type, ggml_tile_ggml_type(dtype));
    }
    const SegmentView* qkv = c.model->layers().front().qkv;
    ASSERT_NE(qkv, nullptr);
    for (const TilePart& part : qkv->parts) EXPECT_EQ(part.dtype, dtype);
    for (const TilePart& part : c.model->token_embd().parts) EXPECT_EQ(part.dtype, dtype);

    const auto want = reference_logits(c.source, kTokens);
    for (const Isa isa : kAllPaths) {
        // The 32-weight block types take int8 activations on the int8 paths (per 32 weights, as
        // Q4_0 / Q8_0 do): held to the K-quant tests' int8 bound; every other path is exact.
        const bool int8Activations = isa_quantizes_activations(isa) && is_ggml32_int8(dtype);
        const Checked got = check_path(c.model, isa, want, int8Activations ? kInt8ActivationTolerance : kLogitRelTolerance, name);
        if (got.ran)
            std::printf("[ggml tile] %s kept (%s): %zu matrices re-tiled exactly, %.4f x the GGUF's bytes, logits rel L2 "
                        "vs float64 max over %zu positions %.2e\n",
                        name.c_str(), std::string(isa_name(isa)).c_str(), size_t(c.report.retiled_exact_tensors),
                        c.size_ratio, kTokens.size(), got.max_rel_l2);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, GgmlTileModel,
                         ::testing::Values(DType::Q2_K, DType::Q3_K, DType::IQ4_XS, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                           DType::IQ4_NL, DType::MXFP4),
                         [](const auto& type) { return std::string(dtype_name(type.param)); });

// llama.cpp's K-quant mixes: Q4_K matrices beside 32-weight-block fallbacks. The fused QKV
// segment holds Q4_K Q/K and a Q5_0 V: no single int8 slice layout serves it, so the int8 paths
// multiply it per tile (Q4_K tiles on their int8 kernels, Q5_0 on f32 activations), the other
// segments as usual. The f32 paths stay within 1e-4 of the reference; the int8 paths, whose Q4_K
// tiles see x rounded to int8 per 256 columns, within the Q4_K_M fixture's 5e-2
// (tests/parity/ggml/gguf_kquant_model_test.cpp).
TEST(GgmlTileModelMix, FusedSegmentMixingQ4KAndQ5_0RunsPerTileOnEveryPath) {
    constexpr double kInt8ActivationTolerance = 5e-2;
    const fs::path dir = temp_dir("ggml-tile-mix");
    const Gguf gguf = write_llama_gguf(dir / "model.gguf", [](const std::string& name) {
        if (name.find("attn_v") != std::string::npos) return DType::Q5_0;
        if (name.find("ffn_down") != std::string::npos) return DType::Q5_1;
        if (name.find("output.weight") != std::string::npos) return DType::Q6_K;
        return DType::Q4_K;
    });
    Converted c = convert_kept(gguf, dir / "model.cflow");
    ASSERT_NE(c.model, nullptr);
    EXPECT_TRUE(c.report.requantised_tensors.empty()) << c.report.requantised_tensors.front();
    EXPECT_EQ(c.report.retiled_exact_tensors, gguf.matrix_types.size());
    EXPECT_LE(c.size_ratio, kMaxSizeRatio);
    const SegmentView* qkv = c.model->layers().front().qkv;
    ASSERT_NE(qkv, nullptr);
    ASSERT_EQ(qkv->parts.size(), 3u);
    EXPECT_EQ(qkv->parts[0].dtype, DType::Q4_K);
    EXPECT_EQ(qkv->parts[1].dtype, DType::Q4_K);
    EXPECT_EQ(qkv->parts[2].dtype, DType::Q5_0);

    const auto want = reference_logits(c.source, kTokens);
    for (const Isa isa : kAllPaths) {
        const double tolerance = isa_quantizes_activations(isa) ? kInt8ActivationTolerance : kLogitRelTolerance;
        const Checked got = check_path(c.model, isa, want, tolerance, "q4_k/q5_0/q5_1 mix");
        if (got.ran)
            std::printf("[ggml tile] Q4_K + Q5_0 + Q5_1 mix (%s): %.4f x the GGUF's bytes, logits rel L2 vs float64 max %.2e\n",
                        std::string(isa_name(isa)).c_str(), c.size_ratio, got.max_rel_l2);
    }
}

// A K-quant file's Q8_0, Q4_0 and F16 matrices (llama-quantize's fallbacks for widths that are
// not whole super-blocks, its Q8_0 heads, the F16 it leaves where no block type fits) keep their
// type too, beside K-quant and 32-weight ggml-block parts in the same fused segment: nothing is
// re-quantised, as llama.cpp runs the file.
TEST(GgmlTileModelMix, Q8_0Q4_0AndF16MatricesBesideKQuantsAreKept) {
    const fs::path dir = temp_dir("ggml-tile-mix-q8");
    const Gguf gguf = write_llama_gguf(dir / "model.gguf", [](const std::string& name) {
        if (name.find("attn_v") != std::string::npos) return DType::Q8_0;
        if (name.find("attn_output") != std::string::npos) return DType::Q4_0;
        if (name.find("ffn_down") != std::string::npos) return DType::F16;
        if (name.find("output.weight") != std::string::npos) return DType::Q8_0;
        if (name.find("attn_k") != std::string::npos) return DType::Q5_0;
        return DType::Q4_K;
    });
    Converted c = convert_kept(gguf, dir / "model.cflow");
    ASSERT_NE(c.model, nullptr);
    EXPECT_TRUE(c.report.requantised_tensors.empty()) << c.report.requantised_tensors.front();
    size_t blockMatrices = 0;  // F16 ones are converted value for value, not counted as re-tiled blocks
    for (const auto& [name, dtype] : gguf.matrix_types) blockMatrices += dtype != DType::F16;
    EXPECT_EQ(c.report.retiled_exact_tensors, blockMatrices);
    const SegmentView* qkv = c.model->layers().front().qkv;
    ASSERT_NE(qkv, nullptr);
    ASSERT_EQ(qkv->parts.size(), 3u);
    EXPECT_EQ(qkv->parts[0].dtype, DType::Q4_K);
    EXPECT_EQ(qkv->parts[1].dtype, DType::Q5_0);
    EXPECT_EQ(qkv->parts[2].dtype, DType::Q8_0);
    ASSERT_NE(c.model->layers().front().down, nullptr);
    for (const TilePart& part : c.model->layers().front().down->parts) EXPECT_EQ(part.dtype, DType::F16);
    const auto want = reference_logits(c.source, kTokens);
    const Checked got = check_path(c.model, Isa::Scalar, want, kLogitRelTolerance, "q4_k/q5_0/q8_0/q4_0/f16 mix");
    EXPECT_TRUE(got.ran);
    std::printf("[ggml tile] Q4_K + Q5_0 + Q8_0 + Q4_0 + F16 mix (scalar): %zu matrices re-tiled exactly, logits rel L2 vs "
                "float64 max %.2e\n", size_t(c.report.retiled_exact_tensors), got.max_rel_l2);
}

// A keep mask without a type (ConvertOptions::keep_dtype_mask; the front ends pass the engine's
// kNativeSpeedTileDtypes, today every type) makes it the nearest kept type, listed: Q3_K Q6_K, the
// 32-weight types Q8_0. Q6_K holds Q3_K's values closely (1.9e-2 relative L2 on these logits; Q4_K
// would be 0.22, Q5_K 0.13, Q8_0 1.6e-2).
TEST(GgmlTileModelMix, AMaskWithoutATypeMakesItTheNearestKeptType) {
    const fs::path dir = temp_dir("ggml-tile-native-mask");
    const Gguf gguf = write_llama_gguf(dir / "model.gguf", [](const std::string& name) {
        if (name.find("attn_v") != std::string::npos) return DType::Q5_0;
        if (name.find("ffn_down") != std::string::npos) return DType::IQ4_NL;
        if (name.find("output.weight") != std::string::npos) return DType::Q6_K;
        return DType::Q3_K;
    });
    const uint32_t mask = kNativeSpeedTileDtypes & ~(dtype_bit(DType::Q3_K) | dtype_bit(DType::Q5_0) | dtype_bit(DType::IQ4_NL));
    Converted c = convert_kept(gguf, dir / "model.cflow", mask);
    ASSERT_NE(c.model, nullptr);
    size_t slowMatrices = 0;
    for (const auto& [name, dtype] : gguf.matrix_types) slowMatrices += dtype != DType::Q6_K;
    EXPECT_EQ(c.report.requantised_tensors.size(), slowMatrices);
    for (const std::string& line : c.report.requantised_tensors)
        EXPECT_TRUE(line.find("Q3_K -> q6_k") != std::string::npos || line.find("Q5_0 -> q8_0") != std::string::npos ||
                    line.find("IQ4_NL -> q8_0") != std::string::npos)
            << line;
    EXPECT_EQ(c.report.retiled_exact_tensors, gguf.matrix_types.size() - slowMatrices);
    const SegmentView* qkv = c.model->layers().front().qkv;
    ASSERT_NE(qkv, nullptr);
    ASSERT_EQ(qkv->parts.size(), 3u);
    EXPECT_EQ(qkv->parts[0].dtype, DType::Q6_K);
    EXPECT_EQ(qkv->parts[1].dtype, DType::Q6_K);
    EXPECT_EQ(qkv->parts[2].dtype, DType::Q8_0);
    for (const TilePart& part : c.model->layers().front().down->parts) EXPECT_EQ(part.dtype, DType::Q8_0);
    constexpr double kRequantisedTolerance = 5e-2;  // logits rel L2 vs the GGUF's own weights (measured 1.9e-2)
    const auto want = reference_logits(c.source, kTokens);
    const Checked got = check_path(c.model, Isa::Scalar, want, kRequantisedTolerance, "q3_k -> q6_k mix");
    EXPECT_TRUE(got.ran);
    std::printf("[ggml tile] Q3_K/Q5_0/IQ4_NL masked out, made Q6_K/Q8_0 (scalar): %zu re-quantised, logits rel L2 vs the "
                "GGUF's float64 forward max %.2e\n", c.report.requantised_tensors.size(), got.max_rel_l2);
}

// What the front ends ask for (kNativeSpeedTileDtypes): every ggml type of a mixed file kept, bit
// for bit, exact on the f32 paths and within the int8 bound on the int8 ones.
TEST(GgmlTileModelMix, TheFrontEndsKeepEveryGgufType) {
    const fs::path dir = temp_dir("ggml-tile-front-end-mask");
    const Gguf gguf = write_llama_gguf(dir / "model.gguf", [](const std::string& name) {
        if (name.find("attn_v") != std::string::npos) return DType::Q5_0;
        if (name.find("ffn_down") != std::string::npos) return DType::IQ4_NL;
        if (name.find("ffn_up") != std::string::npos) return DType::Q2_K;
        if (name.find("output.weight") != std::string::npos) return DType::Q6_K;
        return DType::Q3_K;
    });
    Converted c = convert_kept(gguf, dir / "model.cflow", kNativeSpeedTileDtypes);
    ASSERT_NE(c.model, nullptr);
    EXPECT_TRUE(c.report.requantised_tensors.empty()) << c.report.requantised_tensors.front();
    EXPECT_EQ(c.report.retiled_exact_tensors, gguf.matrix_types.size());
    EXPECT_LE(c.size_ratio, kMaxSizeRatio);
    const auto want = reference_logits(c.source, kTokens);
    for (const Isa isa : kAllPaths) {
        const Checked got = check_path(c.model, isa, want, isa_quantizes_activations(isa) ? kInt8ActivationTolerance : kLogitRelTolerance,
                                       "q3_k/q2_k/q5_0/iq4_nl/q6_k mix");
        if (got.ran)
            std::printf("[ggml tile] Q3_K + Q2_K + Q5_0 + IQ4_NL + Q6_K kept (%s): %.4f x the GGUF's bytes, logits rel L2 vs "
                        "float64 max %.2e\n", std::string(isa_name(isa)).c_str(), c.size_ratio, got.max_rel_l2);
    }
}

// An unquantised GGUF (an F16 export) is not a recipe to keep: its matrices take the class's
// target as without keep_source_types.
TEST(GgmlTileModelMix, AnAllF16FileTakesTheClassQuant) {
    const fs::path dir = temp_dir("ggml-tile-all-f16");
    const Gguf gguf = write_llama_gguf(dir / "model.gguf", [](const std::string&) { return DType::F16; });
    Converted c = convert_kept(gguf, dir / "model.cflow");
    ASSERT_NE(c.model, nullptr);
    const SegmentView* qkv = c.model->layers().front().qkv;
    ASSERT_NE(qkv, nullptr);
    for (const TilePart& part : qkv->parts) EXPECT_EQ(part.dtype, DType::Q4_0);
}

} // namespace
} // namespace cflow::test::ggml_tile_model
