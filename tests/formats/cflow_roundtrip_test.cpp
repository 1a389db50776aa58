// Synthetic models -> convert_to_cflow -> CflowFile::open -> every tile decoded and
// compared with its source tensor; headers, metadata, expert table, re-tiling,
// cancellation and atomic replacement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

using test::SyntheticSpec;

struct Converted {
    SourceModel model;
    std::shared_ptr<CflowFile> file;
    ConvertReport report;
    std::string path;
};

Converted convert_model(SourceModel model, ConvertOptions options, const std::string& name) {
    Converted c;
    c.model = std::move(model);
    c.path = (test::temp_dir("rt") / name).string();
    if (options.threads == 0) options.threads = 2;
    auto report = convert_to_cflow(c.model, c.path, options);
    EXPECT_TRUE(report.ok()) << report.error();
    if (!report.ok()) return c;
    c.report = *report;
    auto file = CflowFile::open(c.path);
    EXPECT_TRUE(file.ok()) << file.error();
    if (file.ok()) c.file = *file;
    return c;
}

Converted convert(const SyntheticSpec& spec, ConvertOptions options, const std::string& name = "model.cflow") {
    return convert_model(test::make_synthetic_model(spec), options, name);
}

// Decodes every tile of a tile list into per-part [rows x cols] matrices.
std::vector<std::vector<float>> decode_tiles(const std::vector<TileRef>& tiles, const std::vector<TilePart>& parts,
                                             uint32_t cols, DType dtype) {
    std::vector<std::vector<float>> out;
    for (const TilePart& p : parts) out.emplace_back(uint64_t{p.rows} * cols, std::nanf(""));
    std::vector<float> row(cols);
    for (const TileRef& t : tiles) {
        for (uint32_t r = 0; r < t.rows; ++r) {
            decode_tile_row(dtype, t.payload, t.rows, t.cols, r, row.data());
            std::memcpy(out[t.part].data() + (uint64_t{t.row_offset} + r) * cols + t.col_offset, row.data(),
                        uint64_t{t.cols} * 4);
        }
    }
    return out;
}

// Relative per-32-block tolerance of each target dtype (see tile_codec_test.cpp for the derivation).
double block_tolerance(DType t) {
    switch (t) {
        case DType::F32: return 0.0;
        case DType::F16: return 1.0 / 2048;
        case DType::Q8_0: return 1.0 / 254 + 1.0 / 1024;
        case DType::Q4_0: return 1.0 / 8 + 1.0 / 256;
        default: return 0.0;
    }
}

void expect_matrix_close(const std::vector<float>& got, const std::vector<float>& want, uint32_t cols, DType dtype,
                         const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    const double tol = block_tolerance(dtype);
    for (uint64_t start = 0; start < want.size(); start += 32) {
        const uint64_t row_end = (start / cols + 1) * cols;
        const uint64_t end = std::min<uint64_t>({start + 32, row_end, want.size()});
        float amax = 0.0f;
        for (uint64_t i = start; i < end; ++i) amax = std::max(amax, std::fabs(want[i]));
        for (uint64_t i = start; i < end; ++i) {
            if (tol == 0.0) {
                ASSERT_EQ(got[i], want[i]) << what << " element " << i;
            } else {
                ASSERT_LE(std::fabs(got[i] - want[i]), tol * amax + 1e-7) << what << " element " << i << " (row "
                                                                          << i / cols << ")";
            }
        }
        if (end == row_end) start = row_end - 32;  // next block starts at the next row
    }
}

std::vector<float> rows_of(const std::vector<float>& m, uint64_t first_row, uint64_t rows, uint64_t cols) {
    return std::vector<float>(m.begin() + static_cast<std::ptrdiff_t>(first_row * cols),
                              m.begin() + static_cast<std::ptrdiff_t>((first_row + rows) * cols));
}

std::vector<float> source(const Converted& c, const std::string& name) {
    const TensorView* t = c.model.find(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? test::tensor_to_f32(*t) : std::vector<float>{};
}

// Split-half order from adjacent-pair order per head (what the converter must apply when rope_interleaved).
std::vector<float> permute_heads(const std::vector<float>& m, uint32_t heads, uint32_t dk, uint64_t cols) {
    std::vector<float> out(m.size());
    for (uint32_t h = 0; h < heads; ++h)
        for (uint32_t i = 0; i < dk; ++i) {
            const uint32_t src = i < dk / 2 ? 2 * i : 2 * (i - dk / 2) + 1;
            std::memcpy(&out[(uint64_t{h} * dk + i) * cols], &m[(uint64_t{h} * dk + src) * cols], cols * 4);
        }
    return out;
}

void expect_raw(const RegionView& r, SegmentRole role, const std::vector<float>& want, const std::string& what) {
    const SegmentView* s = r.find(role);
    ASSERT_NE(s, nullptr) << what;
    ASSERT_EQ(s->bytes, want.size() * 4) << what;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(s->data) % 4, 0u) << what;
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(s->raw_f32()[i], want[i]) << what << " element " << i;
}

void expect_tiled(const RegionView& r, SegmentRole role, const std::vector<std::vector<float>>& want, DType dtype,
                  const std::string& what) {
    const SegmentView* s = r.find(role);
    ASSERT_NE(s, nullptr) << what;
    EXPECT_EQ(s->dtype, dtype) << what;
    ASSERT_EQ(s->parts.size(), want.size()) << what;
    // Stripes: one per part per 128 rows, each covering all column tiles of its stripe.
    size_t expected_stripes = 0;
    for (const TilePart& p : s->parts) expected_stripes += (p.rows + 127) / 128;
    EXPECT_EQ(s->stripes.size(), expected_stripes) << what;
    const auto got = decode_tiles(s->tiles, s->parts, s->cols, s->dtype);
    for (size_t p = 0; p < want.size(); ++p)
        expect_matrix_close(got[p], want[p], s->cols, dtype, what + " part " + std::to_string(p));
}

// Compares every segment of every region with the synthetic source.
void expect_model_matches(const Converted& c, const SyntheticSpec& spec, DType wq, DType eq) {
    ASSERT_TRUE(c.file);
    const GlobalHeader& h = c.file->header();
    EXPECT_EQ(std::memcmp(h.magic, kCflowMagic, 8), 0);
    EXPECT_EQ(h.version, kCflowVersion);
    EXPECT_EQ(h.d_model, spec.d_model);
    EXPECT_EQ(h.n_layers, spec.n_layers);
    EXPECT_EQ(h.n_heads, spec.n_heads);
    EXPECT_EQ(h.n_kv_heads, spec.n_kv_heads);
    EXPECT_EQ(h.head_dim, spec.head_dim);
    EXPECT_EQ(h.n_experts, spec.n_experts);
    EXPECT_EQ(h.top_k, spec.top_k);
    EXPECT_EQ(h.d_ff, spec.d_ff);
    EXPECT_EQ(h.vocab_size, spec.vocab);
    EXPECT_EQ(h.max_seq_len, spec.max_seq_len);
    EXPECT_EQ(h.weight_quant, static_cast<uint8_t>(wq));
    EXPECT_EQ(h.tile_rows, 128);
    EXPECT_EQ(h.tile_cols, 256);
    EXPECT_EQ(h.file_bytes, c.file->file_bytes());
    EXPECT_EQ(h.params_offset, 88u);
    EXPECT_EQ(h.layer_table_offset, 216u);
    EXPECT_EQ(h.combine_style, static_cast<uint8_t>(spec.combine_style));
    EXPECT_EQ((h.feature_flags & kFeatureTiedEmbeddings) != 0, spec.tied);
    EXPECT_EQ((h.feature_flags & kFeatureQkvBias) != 0, spec.qkv_bias);
    EXPECT_EQ((h.feature_flags & kFeatureQkNorm) != 0, spec.qk_norm);
    EXPECT_EQ(c.file->params().params_bytes, 128u);
    EXPECT_EQ(c.file->params().norm_eps, c.model.config.norm_eps);
    EXPECT_EQ(c.file->params().rope_theta, c.model.config.rope_theta);
    EXPECT_EQ(c.file->params().shared_expert_d_ff, spec.shared_expert_d_ff);
    EXPECT_EQ(c.file->header().expert_d_ff, spec.n_experts ? spec.expert_d_ff : 0u);

    // Metadata: the source's entries plus the converter's own keys.
    for (const auto& [key, value] : c.model.metadata.entries()) {
        const MetaValue* got = c.file->metadata().find(key);
        ASSERT_NE(got, nullptr) << key;
        EXPECT_EQ(*got, value) << key;
    }
    EXPECT_EQ(c.file->metadata().get_string("general.converter").value_or("").rfind("cflow ", 0), 0u);

    const uint32_t q = spec.n_heads * spec.head_dim, kv = spec.n_kv_heads * spec.head_dim, d = spec.d_model;
    ASSERT_EQ(c.file->layers().size(), spec.n_layers);
    for (uint32_t l = 0; l < spec.n_layers; ++l) {
        const RegionView& r = c.file->layers()[l];
        const std::string p = "blk." + std::to_string(l) + ".";
        const std::string L = "layer " + std::to_string(l) + " ";
        EXPECT_EQ(r.index, l);
        expect_raw(r, SegmentRole::AttnNorm, source(c, p + "attn_norm.weight"), L + "attn_norm");
        auto wq_src = source(c, p + "attn_q.weight"), wk_src = source(c, p + "attn_k.weight");
        if (spec.rope_interleaved) {
            wq_src = permute_heads(wq_src, spec.n_heads, spec.head_dim, d);
            wk_src = permute_heads(wk_src, spec.n_kv_heads, spec.head_dim, d);
        }
        expect_tiled(r, SegmentRole::Qkv, {wq_src, wk_src, source(c, p + "attn_v.weight")}, wq, L + "qkv");
        expect_tiled(r, SegmentRole::AttnOut, {source(c, p + "attn_output.weight")}, wq, L + "attn_output");
        if (spec.qkv_bias) {
            auto qb = source(c, p + "attn_q.bias"), kb = source(c, p + "attn_k.bias"), vb = source(c, p + "attn_v.bias");
            if (spec.rope_interleaved) {
                qb = permute_heads(qb, spec.n_heads, spec.head_dim, 1);
                kb = permute_heads(kb, spec.n_kv_heads, spec.head_dim, 1);
            }
            std::vector<float> all = qb;
            all.insert(all.end(), kb.begin(), kb.end());
            all.insert(all.end(), vb.begin(), vb.end());
            ASSERT_EQ(all.size(), uint64_t{q} + 2 * kv);
            expect_raw(r, SegmentRole::QkvBias, all, L + "qkv bias");
        } else {
            EXPECT_EQ(r.find(SegmentRole::QkvBias), nullptr);
        }
        if (spec.qk_norm) {
            auto qn = source(c, p + "attn_q_norm.weight"), kn = source(c, p + "attn_k_norm.weight");
            if (spec.rope_interleaved) {
                qn = permute_heads(qn, 1, spec.head_dim, 1);
                kn = permute_heads(kn, 1, spec.head_dim, 1);
            }
            expect_raw(r, SegmentRole::QNorm, qn, L + "q norm");
            expect_raw(r, SegmentRole::KNorm, kn, L + "k norm");
        }
        if (spec.d_ff > 0) {
            expect_raw(r, SegmentRole::FfnNorm, source(c, p + "ffn_norm.weight"), L + "ffn_norm");
            expect_tiled(r, SegmentRole::GateUp, {source(c, p + "ffn_gate.weight"), source(c, p + "ffn_up.weight")}, wq,
                         L + "gate/up");
            expect_tiled(r, SegmentRole::Down, {source(c, p + "ffn_down.weight")}, wq, L + "down");
        } else {
            EXPECT_EQ(r.find(SegmentRole::GateUp), nullptr);
        }
        if (spec.n_experts > 0) {
            expect_raw(r, SegmentRole::MoeNorm, source(c, spec.moe_norm ? p + "moe_norm.weight" : p + "ffn_norm.weight"),
                       L + "moe norm");
            expect_raw(r, SegmentRole::Router, source(c, p + "ffn_gate_inp.weight"), L + "router");
            const SegmentView* table = r.find(SegmentRole::ExpertTable);
            const SegmentView* bank = r.find(SegmentRole::ExpertBank);
            ASSERT_NE(table, nullptr);
            ASSERT_NE(bank, nullptr);
            const auto gate = source(c, p + "ffn_gate_exps.weight"), up = source(c, p + "ffn_up_exps.weight"),
                       down = source(c, p + "ffn_down_exps.weight");
            const uint32_t eff = spec.expert_d_ff;
            uint64_t next_offset = bank->offset;
            for (uint32_t e = 0; e < spec.n_experts; ++e) {
                ExpertEntry entry;
                std::memcpy(&entry, table->data + e * sizeof(ExpertEntry), sizeof(entry));
                auto view = c.file->expert(l, e);
                ASSERT_TRUE(view.ok()) << view.error();
                // Experts are stored back to back; each entry covers exactly that expert's bytes.
                EXPECT_EQ(entry.offset, next_offset) << "expert " << e;
                EXPECT_EQ(entry.length * spec.n_experts, bank->bytes) << "expert " << e;
                EXPECT_EQ(view->offset, entry.offset);
                EXPECT_EQ(view->bytes, entry.length);
                next_offset += entry.length;
                const uint8_t* first = reinterpret_cast<const uint8_t*>(view->gate_up.front().header);
                const TileRef& last_tile = view->down.back();
                const uint8_t* end = last_tile.payload + tile_payload_bytes(bank->dtype, last_tile.rows, last_tile.cols);
                EXPECT_EQ(first, c.file->file().data() + entry.offset);
                EXPECT_EQ(static_cast<uint64_t>(end - first), entry.length);
                EXPECT_EQ(view->gate_up.front().header->expert_id, e);
                const std::vector<TilePart> gu_parts = {{MatrixId::ExpertGate, eff}, {MatrixId::ExpertUp, eff}};
                const auto gu = decode_tiles(view->gate_up, gu_parts, d, bank->dtype);
                const auto dn = decode_tiles(view->down, {{MatrixId::ExpertDown, d}}, eff, bank->dtype);
                const std::string E = L + "expert " + std::to_string(e);
                expect_matrix_close(gu[0], rows_of(gate, uint64_t{e} * eff, eff, d), d, wq, E + " gate");
                expect_matrix_close(gu[1], rows_of(up, uint64_t{e} * eff, eff, d), d, wq, E + " up");
                expect_matrix_close(dn[0], rows_of(down, uint64_t{e} * d, d, eff), eff, wq, E + " down");
            }
            EXPECT_EQ(next_offset, bank->offset + bank->bytes);
            EXPECT_FALSE(c.file->expert(l, spec.n_experts).ok());
            if (spec.shared_expert_d_ff > 0) {
                expect_tiled(r, SegmentRole::SharedGateUp,
                             {source(c, p + "ffn_gate_shexp.weight"), source(c, p + "ffn_up_shexp.weight")}, wq, L + "shexp gate/up");
                expect_tiled(r, SegmentRole::SharedDown, {source(c, p + "ffn_down_shexp.weight")}, wq, L + "shexp down");
                expect_raw(r, SegmentRole::SharedGate, source(c, p + "ffn_gate_inp_shexp.weight"), L + "shexp gate");
            }
        }
        // Every segment starts 64-byte aligned.
        for (const SegmentView& s : r.segments) EXPECT_EQ(s.offset % 64, 0u) << L << "role " << int(s.role);
    }
    const RegionView& v = c.file->vocab();
    EXPECT_EQ(v.index, spec.n_layers);
    expect_raw(v, SegmentRole::OutputNorm, source(c, "output_norm.weight"), "output_norm");
    expect_tiled(v, SegmentRole::TokenEmbd, {source(c, "token_embd.weight")}, eq, "token_embd");
    if (spec.tied) {
        EXPECT_EQ(v.find(SegmentRole::LmHead), nullptr);
    } else {
        expect_tiled(v, SegmentRole::LmHead, {source(c, "output.weight")}, eq, "lm_head");
    }
    // Tile headers of vocabulary tiles carry layer_id = n_layers.
    EXPECT_EQ(v.find(SegmentRole::TokenEmbd)->tiles.front().header->layer_id, spec.n_layers);
}

SyntheticSpec dense_spec() {
    SyntheticSpec s;
    s.d_model = 320;  // two column tiles, the second 64 wide
    s.n_heads = 5;
    s.n_kv_heads = 5;
    s.head_dim = 64;
    s.d_ff = 200;     // Down has 200 input columns: a partial 32-group (200 % 32 = 8)
    s.vocab = 300;    // three stripes, the last 44 rows
    return s;
}

TEST(CflowRoundTrip, DenseF32IsExact) {
    const SyntheticSpec spec = dense_spec();
    const Converted c = convert(spec, {.weight_quant = DType::F32});
    expect_model_matches(c, spec, DType::F32, DType::F32);
    EXPECT_EQ(c.report.file_bytes, c.file->file_bytes());
    EXPECT_EQ(c.report.retiled_exact_tensors, 0u);
    // 2 layers x (attn_norm, q, k, v, o, ffn_norm, gate, up, down) + output_norm, output, token_embd.
    EXPECT_EQ(c.report.tensors, 2u * 9 + 3);
}

TEST(CflowRoundTrip, DenseF16Q8Q4WithinTolerance) {
    SyntheticSpec spec = dense_spec();
    for (DType t : {DType::F16, DType::Q8_0, DType::Q4_0}) {
        SCOPED_TRACE(std::string(dtype_name(t)));
        const Converted c = convert(spec, {.weight_quant = t}, std::string(dtype_name(t)) + ".cflow");
        expect_model_matches(c, spec, t, t);
    }
}

TEST(CflowRoundTrip, GqaQkvBiasQkNormWithQ8EmbeddingsAtF16) {
    SyntheticSpec spec;
    spec.d_model = 128;
    spec.n_heads = 8;
    spec.n_kv_heads = 2;
    spec.head_dim = 16;
    spec.d_ff = 96;
    spec.qkv_bias = true;
    spec.qk_norm = true;
    spec.seed = 7;
    const Converted c = convert(spec, {.weight_quant = DType::Q8_0, .embedding_quant = DType::F16});
    expect_model_matches(c, spec, DType::Q8_0, DType::F16);
}

TEST(CflowRoundTrip, TiedEmbeddingsHaveNoLmHead) {
    SyntheticSpec spec;
    spec.tied = true;
    const Converted c = convert(spec, {.weight_quant = DType::F16});
    expect_model_matches(c, spec, DType::F16, DType::F16);
}

TEST(CflowRoundTrip, MissingOutputWeightMeansTied) {
    SyntheticSpec spec;
    SourceModel model = test::make_synthetic_model(spec);
    model.tensors.erase("output.weight");
    const std::string path = (test::temp_dir("rt") / "untied.cflow").string();
    auto report = convert_to_cflow(model, path, {.weight_quant = DType::F32, .threads = 1});
    ASSERT_TRUE(report.ok()) << report.error();
    auto file = CflowFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_NE((*file)->header().feature_flags & kFeatureTiedEmbeddings, 0);
    EXPECT_EQ((*file)->vocab().find(SegmentRole::LmHead), nullptr);
}

SyntheticSpec moe_spec() {
    SyntheticSpec spec;
    spec.d_model = 64;
    spec.d_ff = 0;
    spec.n_experts = 4;
    spec.top_k = 2;
    spec.expert_d_ff = 160;  // two stripes for gate/up (128 + 32 rows)
    spec.shared_expert_d_ff = 64;
    spec.moe_norm = false;   // falls back to ffn_norm
    spec.seed = 11;
    return spec;
}

TEST(CflowRoundTrip, MoeWithSharedExpertQ4) {
    const SyntheticSpec spec = moe_spec();
    const Converted c = convert(spec, {.weight_quant = DType::Q4_0});
    expect_model_matches(c, spec, DType::Q4_0, DType::Q4_0);
}

TEST(CflowRoundTrip, MoeWithDenseFfnAndDelaysF32) {
    SyntheticSpec spec = moe_spec();
    spec.d_ff = 96;
    spec.moe_norm = true;
    spec.shared_expert_d_ff = 0;
    spec.n_layers = 3;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 2;
    const Converted c = convert(spec, {.weight_quant = DType::F32});
    expect_model_matches(c, spec, DType::F32, DType::F32);
    EXPECT_EQ(c.file->header().dense_delay, 1);
    EXPECT_EQ(c.file->header().expert_delay, 2);
}

TEST(CflowRoundTrip, RopeInterleavedPermutesQKRowsBiasesAndNorms) {
    SyntheticSpec spec;
    spec.n_heads = 4;
    spec.n_kv_heads = 2;
    spec.rope_interleaved = true;
    spec.qkv_bias = true;
    spec.qk_norm = true;
    const Converted c = convert(spec, {.weight_quant = DType::F32});
    expect_model_matches(c, spec, DType::F32, DType::F32);  // compares against permute_heads()
    // Spot check by hand: head 1, output row dk/2 + 3 of Q is source row 2*3 + 1 of that head.
    const auto& qkv = *c.file->layers()[0].find(SegmentRole::Qkv);
    const auto got = decode_tiles(qkv.tiles, qkv.parts, qkv.cols, qkv.dtype);
    const auto src = source(c, "blk.0.attn_q.weight");
    const uint32_t dk = spec.head_dim, out_row = dk + dk / 2 + 3, src_row = dk + 7;
    for (uint32_t col = 0; col < spec.d_model; ++col)
        ASSERT_EQ(got[0][out_row * spec.d_model + col], src[src_row * spec.d_model + col]);
}

TEST(CflowRoundTrip, Bf16AndF16SourcesConvertExactlyToF32) {
    for (DType src : {DType::BF16, DType::F16}) {
        SyntheticSpec spec;
        spec.dtype = src;
        SCOPED_TRACE(std::string(dtype_name(src)));
        const Converted c = convert(spec, {.weight_quant = DType::F32}, std::string(dtype_name(src)) + ".cflow");
        expect_model_matches(c, spec, DType::F32, DType::F32);
    }
}

TEST(CflowRoundTrip, BlockQuantSourcesDequantizeForOtherTargets) {
    for (DType src : {DType::Q4_0, DType::Q8_0}) {
        SyntheticSpec spec = moe_spec();
        spec.dtype = src;
        spec.d_ff = 96;
        SCOPED_TRACE(std::string(dtype_name(src)));
        const Converted c = convert(spec, {.weight_quant = DType::F32}, std::string(dtype_name(src)) + ".cflow");
        expect_model_matches(c, spec, DType::F32, DType::F32);  // dequantized source == decoded f32 tiles, exactly
        EXPECT_EQ(c.report.retiled_exact_tensors, 0u);
    }
}

// Byte-compares every block of a tiled segment with the ggml blocks of its source tensor rows.
void expect_blocks_equal(const SegmentView& seg, const std::vector<const TensorView*>& sources, uint64_t first_row,
                         const std::vector<TileRef>& tiles, uint32_t cols) {
    const uint64_t bb = seg.dtype == DType::Q4_0 ? 18 : 34, qbytes = bb - 2;
    for (const TileRef& t : tiles) {
        const uint32_t groups = t.cols / 32;
        const uint8_t* scales = t.payload;
        const uint8_t* data = t.payload + uint64_t{t.rows} * groups * 2;
        const TensorView* src = sources[t.part];
        for (uint32_t r = 0; r < t.rows; ++r)
            for (uint32_t g = 0; g < groups; ++g) {
                const uint64_t b = uint64_t{r} * groups + g;
                const uint8_t* block =
                    src->data + ((first_row + t.row_offset + r) * (cols / 32) + t.col_offset / 32 + g) * bb;
                ASSERT_EQ(std::memcmp(scales + b * 2, block, 2), 0) << "scale of block " << b;
                ASSERT_EQ(std::memcmp(data + b * qbytes, block + 2, qbytes), 0) << "quants of block " << b;
            }
    }
}

TEST(CflowRoundTrip, BlockQuantSourcesRetileBitExact) {
    for (DType src : {DType::Q4_0, DType::Q8_0}) {
        SyntheticSpec spec = moe_spec();
        spec.dtype = src;
        spec.d_model = 320;  // column tiles of 256 and 64
        spec.d_ff = 96;
        spec.n_layers = 1;
        SCOPED_TRACE(std::string(dtype_name(src)));
        const Converted c = convert(spec, {.weight_quant = src}, std::string(dtype_name(src)) + ".cflow");
        ASSERT_TRUE(c.file);
        expect_model_matches(c, spec, src, src);
        // Every matrix: q, k, v, o, gate, up, down, 3 expert banks, 3 shared, output, token_embd.
        EXPECT_EQ(c.report.retiled_exact_tensors, 15u);
        const RegionView& r = c.file->layers()[0];
        const SegmentView& qkv = *r.find(SegmentRole::Qkv);
        expect_blocks_equal(qkv, {c.model.find("blk.0.attn_q.weight"), c.model.find("blk.0.attn_k.weight"),
                                  c.model.find("blk.0.attn_v.weight")}, 0, qkv.tiles, qkv.cols);
        const SegmentView& down = *r.find(SegmentRole::Down);
        expect_blocks_equal(down, {c.model.find("blk.0.ffn_down.weight")}, 0, down.tiles, down.cols);
        const SegmentView& emb = *c.file->vocab().find(SegmentRole::TokenEmbd);
        expect_blocks_equal(emb, {c.model.find("token_embd.weight")}, 0, emb.tiles, emb.cols);
        auto e2 = c.file->expert(0, 2);
        ASSERT_TRUE(e2.ok()) << e2.error();
        const SegmentView& bank = *r.find(SegmentRole::ExpertBank);
        expect_blocks_equal(bank, {c.model.find("blk.0.ffn_gate_exps.weight"), c.model.find("blk.0.ffn_up_exps.weight")},
                            2ull * spec.expert_d_ff, e2->gate_up, spec.d_model);
        expect_blocks_equal(bank, {c.model.find("blk.0.ffn_down_exps.weight")}, 2ull * spec.d_model, e2->down,
                            spec.expert_d_ff);

        // With retile_exact off the same tensors are requantized from f32 instead.
        const Converted requant =
            convert(spec, {.weight_quant = src, .retile_exact = false}, std::string(dtype_name(src)) + "-requant.cflow");
        EXPECT_EQ(requant.report.retiled_exact_tensors, 0u);
        expect_model_matches(requant, spec, src, src);
    }
}

TEST(CflowRoundTrip, RopeInterleavedPermutationWorksOnBlockQuantSources) {
    SyntheticSpec spec;
    spec.dtype = DType::Q4_0;
    spec.rope_interleaved = true;
    const Converted c = convert(spec, {.weight_quant = DType::Q4_0});
    expect_model_matches(c, spec, DType::Q4_0, DType::Q4_0);
    EXPECT_GT(c.report.retiled_exact_tensors, 0u);
}

// Where each block type keeps its f16 (Q8_K: f32) scales, so random blocks can be made finite.
struct ScaleFields {
    uint32_t ggml_type;
    std::vector<uint32_t> f16_offsets;
};

// Replaces every matrix of a synthetic model (cols are multiples of 256) by random but valid
// blocks of the GGUF types the converter dequantises (DType::GgmlBlock), one type after another.
std::vector<std::vector<uint8_t>> make_ggml_block_matrices(SourceModel& model) {
    const std::vector<ScaleFields> kinds = {
        {kGgmlQ4_K, {0, 2}}, {kGgmlQ6_K, {208}}, {kGgmlQ5_K, {0, 2}}, {kGgmlQ3_K, {108}}, {kGgmlQ2_K, {80, 82}},
        {kGgmlQ8_K, {}},     {kGgmlIQ4_NL, {0}}, {kGgmlQ4_1, {0, 2}}, {kGgmlQ5_0, {0}},   {kGgmlQ5_1, {0, 2}}};
    std::vector<std::vector<uint8_t>> storage;
    uint32_t s = 7, next = 0;
    for (auto& [name, t] : model.tensors) {
        if (t.shape.size() != 2 || t.shape[1] % 256 != 0) continue;
        const ScaleFields& k = kinds[next++ % kinds.size()];
        const GgmlBlockType* block = find_ggml_block_type(k.ggml_type);
        std::vector<uint8_t> bytes(t.shape[0] * t.shape[1] / block->block_elements * block->block_bytes);
        for (auto& b : bytes) b = static_cast<uint8_t>((s = s * 1664525u + 1013904223u) >> 24);
        for (uint64_t at = 0; at < bytes.size(); at += block->block_bytes) {
            for (uint32_t off : k.f16_offsets) {
                const uint16_t h = f32_to_f16(0.002f * static_cast<float>(bytes[at + off] % 16 + 1));
                std::memcpy(bytes.data() + at + off, &h, 2);
            }
            if (k.ggml_type == kGgmlQ8_K) {
                const float d = 0.0004f;
                std::memcpy(bytes.data() + at, &d, 4);
            }
        }
        t.dtype = DType::GgmlBlock;
        t.ggml_type = k.ggml_type;
        t.data = bytes.data();
        t.bytes = bytes.size();
        storage.push_back(std::move(bytes));
    }
    EXPECT_GE(next, kinds.size()) << "every kind is used at least once";
    return storage;
}

// GGUF block types beyond Q4_0/Q8_0 reach the tiles through read_rows_f32: F32 tiles equal
// dequantize_ggml_row of the source rows (RoPE row permutation included), and quantising them
// to Q4_0 / Q8_0 stays within the usual block tolerance; nothing is re-tiled block for block.
TEST(CflowRoundTrip, GgmlBlockSourcesDequantizeThroughReadRows) {
    SyntheticSpec spec;
    spec.d_model = 256;
    spec.n_heads = 4;
    spec.n_kv_heads = 2;
    spec.head_dim = 64;
    spec.d_ff = 512;
    spec.vocab = 300;
    spec.rope_interleaved = true;
    for (DType target : {DType::F32, DType::Q8_0}) {
        SCOPED_TRACE(std::string(dtype_name(target)));
        SourceModel model = test::make_synthetic_model(spec);
        const auto storage = make_ggml_block_matrices(model);
        const Converted c = convert_model(std::move(model), {.weight_quant = target}, "ggml.cflow");
        expect_model_matches(c, spec, target, target);
        EXPECT_EQ(c.report.retiled_exact_tensors, 0u);
    }
}

TEST(CflowRoundTrip, FixedPointStoresUniqueBlocks) {
    SyntheticSpec spec;
    spec.n_layers = 2;
    spec.combine_style = CombineStyle::FixedPoint;
    spec.n_iter = 3;
    const Converted c = convert(spec, {.weight_quant = DType::F16});
    expect_model_matches(c, spec, DType::F16, DType::F16);
    EXPECT_EQ(c.file->params().n_blocks, 2);
    EXPECT_EQ(c.file->params().n_iter, 3);
}

TEST(CflowRoundTrip, LargeVocabularyIsEncodedInSeveralChunks) {
    // 12,000 x 256 f32 = 12.3 MB of token embedding: more than one 8 MiB encoding chunk,
    // so chunk boundaries must land exactly (F32 makes any misplaced byte visible).
    SyntheticSpec spec;
    spec.d_model = 256;
    spec.n_heads = 4;
    spec.head_dim = 64;
    spec.n_layers = 1;
    spec.d_ff = 64;
    spec.vocab = 12000;
    spec.tied = true;
    const Converted c = convert(spec, {.weight_quant = DType::F32, .threads = 3});
    expect_model_matches(c, spec, DType::F32, DType::F32);
}

TEST(CflowRoundTrip, OutputIsIndependentOfThreadCount) {
    const SyntheticSpec spec = moe_spec();
    const Converted one = convert(spec, {.weight_quant = DType::Q4_0, .threads = 1}, "one.cflow");
    const Converted many = convert(spec, {.weight_quant = DType::Q4_0, .threads = 5}, "many.cflow");
    ASSERT_TRUE(one.file && many.file);
    ASSERT_EQ(one.file->file_bytes(), many.file->file_bytes());
    EXPECT_EQ(std::memcmp(one.file->file().data(), many.file->file().data(), one.file->file_bytes()), 0);
}

TEST(CflowRoundTrip, ProgressReportsEveryTensor) {
    const SyntheticSpec spec = moe_spec();
    const SourceModel model = test::make_synthetic_model(spec);
    const std::string path = (test::temp_dir("rt") / "progress.cflow").string();
    std::vector<ConvertProgress> seen;
    auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q8_0, .threads = 2},
                                   [&](const ConvertProgress& p) { seen.push_back(p); });
    ASSERT_TRUE(report.ok()) << report.error();
    ASSERT_EQ(seen.size(), report->tensors);
    for (size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(seen[i].tensors_done, i + 1);
        EXPECT_EQ(seen[i].tensors_total, report->tensors);
        EXPECT_NE(model.find(seen[i].current), nullptr) << seen[i].current;
        if (i) {
            EXPECT_GE(seen[i].bytes_written, seen[i - 1].bytes_written);
        }
    }
    EXPECT_EQ(seen.back().current, "token_embd.weight");
}

size_t files_in(const std::filesystem::path& dir) {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

TEST(CflowRoundTrip, CancellationLeavesNoOutputAndNoTempFile) {
    const SourceModel model = test::make_synthetic_model(moe_spec());
    const auto dir = test::temp_dir("cancel");
    const std::string path = (dir / "cancelled.cflow").string();
    {
        CancelToken cancel;
        cancel.cancel();
        auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q4_0}, {}, &cancel);
        ASSERT_FALSE(report.ok());
        EXPECT_EQ(report.kind(), ErrorKind::Cancelled) << report.error();
        EXPECT_EQ(files_in(dir), 0u);
    }
    {
        CancelToken cancel;  // cancelled from the progress callback after the third tensor
        auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q4_0},
                                       [&](const ConvertProgress& p) {
                                           if (p.tensors_done == 3) cancel.cancel();
                                       },
                                       &cancel);
        ASSERT_FALSE(report.ok());
        EXPECT_EQ(report.kind(), ErrorKind::Cancelled) << report.error();
        EXPECT_EQ(files_in(dir), 0u);
    }
    {
        // An existing target survives a cancelled conversion untouched.
        std::ofstream(path) << "previous contents";
        CancelToken cancel;
        cancel.cancel();
        auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q4_0}, {}, &cancel);
        ASSERT_FALSE(report.ok());
        EXPECT_EQ(report.kind(), ErrorKind::Cancelled) << report.error();
        std::ifstream in(path);
        EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "previous contents");
        EXPECT_EQ(files_in(dir), 1u);
    }
}

TEST(CflowRoundTrip, ConvertingOverAnExistingFileReplacesIt) {
    const SourceModel model = test::make_synthetic_model(SyntheticSpec{});
    const auto dir = test::temp_dir("replace");
    const std::string path = (dir / "model.cflow").string();
    std::ofstream(path) << "an old file that is not a cflow model";
    ASSERT_FALSE(CflowFile::open(path).ok());
    auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q8_0});
    ASSERT_TRUE(report.ok()) << report.error();
    auto file = CflowFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ((*file)->file_bytes(), report->file_bytes);
    EXPECT_EQ(files_in(dir), 1u);  // no temp file left
}

TEST(CflowRoundTrip, NonexistentOutputDirectoryFailsClearly) {
    const SourceModel model = test::make_synthetic_model(SyntheticSpec{});
    const auto dir = test::temp_dir("nodir");
    const std::string path = (dir / "missing" / "model.cflow").string();
    auto report = convert_to_cflow(model, path, {.weight_quant = DType::Q8_0});
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.kind(), ErrorKind::Io) << report.error();
    EXPECT_NE(report.error().find((dir / "missing").string()), std::string::npos) << report.error();
}

// Conversion pre-flight: each broken source is rejected before any file is created.
struct BadSource {
    const char* name;
    void (*mutate)(SourceModel&);
    const char* expected;
};

TEST(CflowRoundTrip, ValidationRejectsBadSources) {
    const BadSource cases[] = {
        {"missing tensor", [](SourceModel& m) { m.tensors.erase("blk.1.attn_k.weight"); },
         "tensor 'blk.1.attn_k.weight' is missing (expected shape [64 x 64]"},
        {"wrong shape", [](SourceModel& m) { m.tensors["blk.0.ffn_up.weight"].shape = {64, 128}; },
         "shape [64 x 128], expected [128 x 64]"},
        {"wrong byte size", [](SourceModel& m) { m.tensors["blk.0.attn_norm.weight"].bytes -= 4; }, "needs 256"},
        {"heads not divisible", [](SourceModel& m) { m.config.n_kv_heads = 3; }, "is not divisible by n_kv_heads 3"},
        {"top_k > experts", [](SourceModel& m) { m.config.top_k = 1; }, "top_k 1 exceeds n_experts 0"},
        {"delay >= layers", [](SourceModel& m) { m.config.dense_delay = 2; }, "dense_delay 2 must be below n_layers 2"},
        {"combine style", [](SourceModel& m) { m.config.combine_style = static_cast<CombineStyle>(9); },
         "unknown combine_style 9"},
        {"zero d_model", [](SourceModel& m) { m.config.d_model = 0; }, "d_model 0 must be in"},
        {"vocab", [](SourceModel& m) { m.config.vocab_size = 0; }, "vocab_size is 0"},
        {"too many experts", [](SourceModel& m) { m.config.n_experts = 300; }, "n_experts 300 must be below 255"},
    };
    const auto dir = test::temp_dir("invalid");
    for (const BadSource& bad : cases) {
        SCOPED_TRACE(bad.name);
        SourceModel model = test::make_synthetic_model(SyntheticSpec{});
        bad.mutate(model);
        auto report = convert_to_cflow(model, (dir / "out.cflow").string(), {.weight_quant = DType::F32});
        ASSERT_FALSE(report.ok());
        EXPECT_EQ(report.kind(), ErrorKind::InvalidInput) << report.error();
        EXPECT_NE(report.error().find(bad.expected), std::string::npos) << report.error();
        EXPECT_EQ(files_in(dir), 0u);
    }
    // A real dtype the tiles cannot hold is a feature this writer lacks, not a broken source.
    auto bf16 = convert_to_cflow(test::make_synthetic_model(SyntheticSpec{}), (dir / "out.cflow").string(),
                                 {.weight_quant = DType::BF16});
    ASSERT_FALSE(bf16.ok());
    EXPECT_EQ(bf16.kind(), ErrorKind::Unsupported) << bf16.error();
    EXPECT_NE(bf16.error().find("weight quant"), std::string::npos) << bf16.error();
    EXPECT_EQ(files_in(dir), 0u);
}

} // namespace
} // namespace cflow
