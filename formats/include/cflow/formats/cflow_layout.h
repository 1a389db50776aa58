#pragma once
// Byte-level layout of the .cflow file, version 6 (version-5 files are still read). The normative description is
// formats/docs/cflow-format.md; this header is its machine-readable twin.
// All integers little-endian; all structs packed; sizes pinned by static_assert.
//
// File = GlobalHeader (88 B) @0
//      | ModelParams (128 B) @GlobalHeader::params_offset
//      | LayerTable: (n_layers + 1) x RegionEntry @GlobalHeader::layer_table_offset
//          entries 0..n_layers-1 are decoder layers in execution order,
//          entry n_layers is the vocabulary region (final norm, LM head, embedding)
//      | region data (each region = RegionHeader + SegmentEntry[n_segments] + segment bytes)
//      | metadata section @ModelParams::metadata_offset (typed key/value, see metadata.h)
#include <cstddef>
#include <cstdint>

#include "cflow/formats/dtype.h"

namespace cflow {

inline constexpr char kCflowMagic[8] = {'C', 'F', 'L', 'O', 'W', '\0', '\0', '\0'};
inline constexpr uint32_t kCflowVersion = 6;
// Version 6 added the K-quant tile types and SegmentEntry::part_dtype. A version-5 file is the
// same layout with part_dtype 0 and every part of a segment in the segment's dtype.
inline constexpr uint32_t kCflowOldestReadableVersion = 5;
inline constexpr uint16_t kTileRows = 128;  // output rows per tile
inline constexpr uint16_t kTileCols = 256;  // input columns per tile

// feature_flags bits
enum FeatureFlag : uint8_t {
    kFeatureEmbedScaleSqrtD = 1u << 0,  // x_0 = emb * sqrt(d_model)
    kFeatureVNorm = 1u << 1,            // RMSNorm without scale on V before caching
    kFeatureTiedEmbeddings = 1u << 2,   // LM head = token embedding (no LM_HEAD segment)
    kFeatureQkvBias = 1u << 3,          // QKV_BIAS segment present in every layer (Qwen2)
    kFeatureQkNorm = 1u << 4,           // Q_NORM / K_NORM segments (per-head RMSNorm, Qwen3/Gemma)
    // Metadata kRopeFreqFactorsKey holds one divisor per rotary frequency (Llama 3's rope
    // scaling, GGUF rope_freqs.weight): angle_i = pos * theta^(-2i/n_rot) / factor_i.
    kFeatureRopeFreqFactors = 1u << 5,
    // Metadata kRopeSkipLayersKey marks the layers whose attention applies no RoPE at all
    // (SmolLM3's NoPE layers: every fourth).
    kFeatureRopeSkipLayers = 1u << 6,
    // ModelParams.extended_features and the fields after it are in use (ExtendedFeature bits,
    // query_scale, rope_local_theta). A file without this bit has them all 0; a reader that
    // predates them refuses the bit instead of computing a different model.
    kFeatureExtended = 1u << 7,
};
// Every bit above is known to this build; a reader refuses a file with any other.
inline constexpr uint8_t kKnownFeatureFlags = 0xFF;

// ModelParams.extended_features bits (with kFeatureExtended).
enum ExtendedFeature : uint32_t {
    // ATTN_POST_NORM / FFN_POST_NORM segments in every layer: the attention output and the dense
    // FFN output are RMS-normalised before they reach the residual (Gemma 2 / 3's sandwich norms).
    kExtPostNorms = 1u << 0,
    // Metadata kSlidingLayersKey marks the layers that attend over the last sliding_window
    // positions only; the others attend over the whole context. Without the bit, sliding_window
    // applies to every layer (Mistral).
    kExtSlidingLayers = 1u << 1,
    // Sliding-window layers rotate with ModelParams.rope_local_theta and without the rope
    // frequency factors; the full-attention layers use rope_theta and the factors (Gemma 3).
    kExtLocalRope = 1u << 2,
    // LongRoPE (Phi-3.5 / Phi-4-mini): kRopeFreqFactorsKey holds the short factors, metadata
    // kRopeLongFactorsKey the long ones, which a session uses when its context length exceeds
    // ModelParams.rope_original_context (llama.cpp's rule).
    kExtLongRope = 1u << 3,
    // ATTN_SINKS segment in every layer: one learned logit per query head that joins each softmax
    // of its scores and takes its share of the probability mass without a value (gpt-oss).
    kExtAttnSinks = 1u << 4,
    // ATTN_OUT_BIAS segment in every layer: a bias added to the attention output projection (gpt-oss).
    kExtAttnOutBias = 1u << 5,
    // ROUTER_BIAS and EXPERT_BIAS segments in every MoE layer: the router's logits and each
    // expert's gate, up and down projections carry biases (gpt-oss).
    kExtMoeBiases = 1u << 6,
};
inline constexpr uint32_t kKnownExtendedFeatures = (1u << 7) - 1;
// FloatArray [rotary_dim_count(head_dim, rope_fraction) / 2], each finite and > 0.
inline constexpr const char* kRopeFreqFactorsKey = "cflow.rope.freq_factors";
// IntArray [n_layers] of 0 / 1: 1 = that layer's queries and keys are not rotated.
inline constexpr const char* kRopeSkipLayersKey = "cflow.rope.skip_layers";
// FloatArray [rotary_dim_count / 2]: LongRoPE's long factors (kExtLongRope), divisors as kRopeFreqFactorsKey's.
inline constexpr const char* kRopeLongFactorsKey = "cflow.rope.freq_factors_long";
// IntArray [n_layers] of 0 / 1: 1 = that layer attends over a sliding window (kExtSlidingLayers).
inline constexpr const char* kSlidingLayersKey = "cflow.attention.sliding_layers";

// The dims of a head that rotate: head_dim * rope_fraction rounded down to even (all of
// head_dim, rounded down to even, when the fraction is 0, >= 1 or not a number).
inline uint32_t rotary_dim_count(uint32_t head_dim, float rope_fraction) {
    if (!(rope_fraction > 0.0f) || rope_fraction >= 1.0f) return head_dim & ~1u;
    return static_cast<uint32_t>(static_cast<float>(head_dim) * rope_fraction) & ~1u;
}

enum class CombineStyle : uint8_t {
    ParallelSqrt2 = 0,
    DelayedSum = 1,
    AsyncExperts = 2,
    Sequential = 3,
    DecoupledStreams = 4,
    PipelineRegisters = 5,
    FixedPoint = 6,
};

// ClampedSwiGLU (gpt-oss): g = min(gate, limit), u = clamp(up, -limit, limit),
// h = g * sigmoid(alpha * g) * (u + 1), with ModelParams.ffn_alpha / ffn_limit.
enum class FfnActivation : uint8_t { SwiGLU = 0, GeGLUTanh = 1, ClampedSwiGLU = 2 };

// Router weighting: 0 = softmax over the k selected logits (Mixtral);
// 1 = softmax over all E, take top-k, no renormalisation (OLMoE, Qwen-MoE norm_topk_prob=false).
enum class RouterMode : uint8_t { SoftmaxTopK = 0, SoftmaxAllNoRenorm = 1 };

#pragma pack(push, 1)
struct GlobalHeader {
    char magic[8];               // "CFLOW\0\0\0"
    uint32_t version;            // kCflowVersion
    uint32_t d_model;            // hidden size d
    uint32_t n_layers;           // decoder layers stored (for FixedPoint: unique blocks * 1; see ModelParams)
    uint16_t n_heads;            // query heads
    uint16_t n_kv_heads;         // key/value heads (GQA)
    uint16_t head_dim;           // d_k
    uint16_t n_experts;          // E, 0 = dense model
    uint16_t top_k;              // k experts per token
    uint8_t weight_quant;        // DType of the bulk of the weight tiles (informational; segments carry their own)
    uint8_t reserved0;           // 0
    uint32_t d_ff;               // dense FFN hidden size, 0 = no dense FFN
    uint32_t expert_d_ff;        // hidden size of each expert
    uint32_t vocab_size;
    uint32_t max_seq_len;        // trained context length
    uint16_t tile_rows;          // kTileRows
    uint16_t tile_cols;          // kTileCols
    uint32_t sliding_window;     // 0 = full attention everywhere
    uint64_t layer_table_offset; // byte offset of the RegionEntry table
    uint64_t params_offset;      // byte offset of ModelParams
    uint64_t file_bytes;         // total file size; a shorter file is truncated
    uint8_t dense_delay;         // v5 tail
    uint8_t expert_delay;
    uint8_t combine_style;       // CombineStyle
    uint8_t feature_flags;       // FeatureFlag bits
    float final_logit_softcap;   // 0 = disabled; else logits = c * tanh(z / c)
};
static_assert(sizeof(GlobalHeader) == 88, "GlobalHeader must be 88 bytes");
static_assert(offsetof(GlobalHeader, dense_delay) == 80, "v5 tail starts at byte 80");

struct ModelParams {
    uint32_t params_bytes;       // sizeof(ModelParams) = 128
    float norm_eps;              // RMSNorm epsilon
    float rope_theta;
    float rope_fraction;         // fraction of head_dim that rotates (1.0 = all)
    uint8_t ffn_activation;      // FfnActivation
    uint8_t router_mode;         // RouterMode
    uint8_t merge_interval;      // DecoupledStreams merge period (default 3)
    uint8_t n_blocks;            // FixedPoint unique blocks (= n_layers), else 0
    uint8_t n_iter;              // FixedPoint iterations per block, else 0
    uint8_t reserved1[3];
    float attn_logit_softcap;    // 0 = disabled
    float embedding_scale;       // 0 = none; else emb *= embedding_scale (kFeatureEmbedScaleSqrtD takes sqrt(d))
    uint64_t metadata_offset;    // typed key/value metadata section (tokenizer, template, name, licence)
    uint64_t metadata_bytes;
    uint32_t shared_expert_d_ff; // Qwen2-MoE shared expert hidden size, 0 = none
    // kFeatureExtended tail (all 0 without the flag):
    uint32_t extended_features;  // ExtendedFeature bits
    float query_scale;           // 0 = 1 / sqrt(head_dim); else scores = q.k * query_scale (Gemma's query_pre_attn_scalar^-0.5)
    float rope_local_theta;      // RoPE base of the sliding-window layers (kExtLocalRope), else 0
    uint32_t rope_original_context;  // kExtLongRope: contexts above it use the long factors, else 0
    float rope_attn_factor;      // 0 = 1; else cos and sin of every rotation are multiplied by it (LongRoPE's / YaRN's attention factor)
    float ffn_alpha;             // ClampedSwiGLU's sigmoid slope (gpt-oss 1.702), else 0
    float ffn_limit;             // ClampedSwiGLU's clamp (gpt-oss 7.0), else 0
    uint8_t reserved[48];        // zero
};
static_assert(sizeof(ModelParams) == 128, "ModelParams must be 128 bytes");
static_assert(offsetof(ModelParams, extended_features) == 52, "the kFeatureExtended tail starts at byte 52");
static_assert(offsetof(ModelParams, ffn_alpha) == 72, "ffn_alpha follows rope_attn_factor");

struct RegionEntry {
    uint64_t offset;  // absolute byte offset of the region's RegionHeader
    uint64_t bytes;   // region length including its header and directory
};
static_assert(sizeof(RegionEntry) == 16, "RegionEntry must be 16 bytes");

inline constexpr char kLayerRegionMagic[4] = {'L', 'A', 'Y', 'R'};
inline constexpr char kVocabRegionMagic[4] = {'V', 'O', 'C', 'B'};

struct RegionHeader {
    char magic[4];         // "LAYR" or "VOCB"
    uint32_t layer_index;  // layer number, or n_layers for the vocabulary region
    uint32_t n_segments;   // SegmentEntry count that follows
    uint32_t reserved;     // 0
};
static_assert(sizeof(RegionHeader) == 16, "RegionHeader must be 16 bytes");

// What a segment holds. Values are stable on disk.
enum class SegmentRole : uint8_t {
    AttnNorm = 0,       // raw f32 [d]
    QNorm = 1,          // raw f32 [head_dim]
    KNorm = 2,          // raw f32 [head_dim]
    Qkv = 3,            // tiles: parts Q [H*dk x d], K [Hkv*dk x d], V [Hkv*dk x d], interleaved by stripe
    QkvBias = 4,        // raw f32 [(H + 2 Hkv) * dk]: q bias, k bias, v bias
    AttnOut = 5,        // tiles: part O [d x H*dk]
    FfnNorm = 6,        // raw f32 [d]
    GateUp = 7,         // tiles: parts gate [d_ff x d], up [d_ff x d], interleaved by stripe
    Down = 8,           // tiles: part down [d x d_ff]
    MoeNorm = 9,        // raw f32 [d]
    Router = 10,        // raw f32 [E x d], row-major
    ExpertTable = 11,   // raw ExpertEntry[E]
    ExpertBank = 12,    // tiles of all experts: per expert gate/up interleaved then down
    SharedGateUp = 13,  // tiles: shared expert gate/up
    SharedDown = 14,    // tiles: shared expert down
    SharedGate = 15,    // raw f32 [d]: sigmoid gate of the shared expert
    OutputNorm = 16,    // raw f32 [d]               (vocabulary region)
    LmHead = 17,        // tiles: part [vocab x d]   (vocabulary region; absent when tied)
    TokenEmbd = 18,     // tiles: part [vocab x d]   (vocabulary region)
    AttnPostNorm = 19,  // raw f32 [d]: RMSNorm of the attention output (kExtPostNorms)
    FfnPostNorm = 20,   // raw f32 [d]: RMSNorm of the dense FFN output (kExtPostNorms)
    AttnSinks = 21,     // raw f32 [H]: each query head's sink logit (kExtAttnSinks)
    AttnOutBias = 22,   // raw f32 [d]: bias of the attention output projection (kExtAttnOutBias)
    RouterBias = 23,    // raw f32 [E]: bias of the router logits (kExtMoeBiases)
    ExpertBias = 24,    // raw f32 [E x (2 eff + d)]: per expert, gate bias [eff], up bias [eff], down bias [d] (kExtMoeBiases)
    Count_ = 25,
};

// matrix_id values of TileHeader
enum class MatrixId : uint8_t {
    Q = 0, K = 1, V = 2, O = 3, Gate = 4, Up = 5, Down = 6, Router = 7,
    ExpertGate = 8, ExpertUp = 9, ExpertDown = 10,
    SharedGate = 11, SharedUp = 12, SharedDown = 13,
    LmHead = 14, TokenEmbd = 15,
};

inline constexpr uint8_t kNoExpert = 0xFF;

struct SegmentEntry {
    uint8_t role;               // SegmentRole
    uint8_t dtype;              // DType of tiles (of part 0 in a mixed segment), F32 for raw segments
    uint8_t n_parts;            // matrices interleaved in a tiled segment (0 for raw)
    uint8_t reserved0;
    uint32_t cols;              // input dimension shared by all parts (raw: element count per row)
    uint8_t part_matrix[4];     // MatrixId of each part
    uint32_t part_rows[4];      // output rows of each part (raw: rows; 1 for vectors)
    uint64_t offset;            // absolute byte offset of the segment's first byte
    uint64_t bytes;             // segment length; must equal the size implied by geometry
    uint32_t n_tiles;           // tiles in the segment (0 for raw)
    uint32_t reserved1;
    // v6: DType of each part's tiles (a GGUF's Q4_K_M keeps Q4_K q/k beside a Q6_K v in one
    // fused segment); part_dtype[0] == dtype; 0 past n_parts and in raw segments. v5: all 0.
    uint8_t part_dtype[4];
    uint8_t reserved2[8];
};
static_assert(sizeof(SegmentEntry) == 64, "SegmentEntry must be 64 bytes");

// The paper's 16-byte tile header (3.2.2). Followed by the payload:
//   Q4_0: f16 scales[rows * G] then u8 nibbles[rows * G * 16]       (G = ceil(cols / 32))
//   Q8_0: f16 scales[rows * G] then i8 quants[rows * G * 32]
//   F16:  f16 [rows * cols] row-major;  F32: f32 [rows * cols] row-major
//   Q4_K / Q5_K / Q6_K: rows x one ggml super-block (cols == 256), bytes as GGUF stores them
// A partial last group (cols % 32 != 0) is padded with zero weights.
struct TileHeader {
    uint16_t layer_id;     // decoder layer (n_layers for vocabulary tiles)
    uint8_t matrix_id;     // MatrixId
    uint8_t expert_id;     // expert index, kNoExpert otherwise
    uint32_t row_offset;   // first output row of the tile in its matrix
    uint16_t col_offset;   // first input column of the tile (input dims above 65,536 are rejected)
    uint16_t tile_rows;    // <= 128
    uint16_t tile_cols;    // <= 256
    uint16_t quant_group;  // 32 for Q8_0/Q4_0, 256 for the K-quants, 0 for F16/F32
};
static_assert(sizeof(TileHeader) == 16, "TileHeader must be 16 bytes");

struct ExpertEntry {
    uint64_t offset;  // absolute byte offset of the expert's first tile
    uint64_t length;  // bytes of the expert's gate, up and down tiles
};
static_assert(sizeof(ExpertEntry) == 16, "ExpertEntry must be 16 bytes");
#pragma pack(pop)

} // namespace cflow
