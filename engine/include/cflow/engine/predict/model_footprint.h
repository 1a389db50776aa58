#pragma once
// What one token of a model reads and computes, from its tile plan: the predictor's input
// (predictor.h). Exact per file: every tile counted with its own dtype (a K-quant mix stays a
// mix), experts as top_k of n per MoE layer pass, everything else on every pass. A footprint can
// be re-typed to another quantisation (what `cflow convert --quant Q` would make of the same
// matrices) so alternatives are priced from the same plan.
#include <array>
#include <cstdint>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/formats/dtype.h"

namespace cflow {

class Model;

inline constexpr size_t kFootprintDTypes = 17;  // DType values 0..16 (dtype.h)

// Tiled weights by dtype: how many weights (the matvec work) and how many bytes (the reads).
struct WeightsByType {
    std::array<double, kFootprintDTypes> weights{};  // [dtype] weights
    std::array<double, kFootprintDTypes> bytes{};    // [dtype] bytes, tile headers included

    void add(DType dtype, double weightCount, double byteCount);
    double totalWeights() const;
    double totalBytes() const;
    // The dtype holding the most bytes (F32 when empty).
    DType dominant() const;
};

struct ModelFootprint {
    uint64_t fileBytes = 0;
    uint32_t passes = 0;           // layer passes per token (FixedPoint: blocks x iterations)
    uint32_t moePasses = 0;        // passes through a layer with routed experts
    uint32_t nHeads = 0, nKvHeads = 0, headDim = 0;
    uint32_t dModel = 0, vocab = 0, maxSeqLen = 0;
    uint32_t nExperts = 0, topK = 0, expertDelay = 0;
    uint32_t widestHidden = 0;     // max(d_ff, expert d_ff, shared d_ff): scratch sizing
    // [passes] KV positions a pass keeps: its sliding window plus a prefill chunk, 0 = the whole context.
    std::vector<uint32_t> kvRing;

    WeightsByType perToken;        // tiles every token reads: attention, dense FFN, shared expert, LM head
    WeightsByType lmHead;          // the LM head's share of perToken (a prompt token before the last skips it)
    // Whether Session::prefill runs a prompt in batches (Sequential and ParallelSqrt2 styles, experts
    // not streamed: prefill.cpp); otherwise every prompt token is one step, as in decode.
    bool batchedPrefill = true;
    double rawBytesPerToken = 0;   // f32 vectors every token reads: norms, biases, routers, one embedding row
    WeightsByType routedPerToken;  // the top_k routed experts of every MoE pass
    WeightsByType stored;          // every tile of the file once (embedding table and every expert included)
    uint64_t expertBankBytes = 0;  // every routed expert of every layer, stored once
    uint64_t expertBytes = 0;      // one expert (the largest; experts of a file share a geometry)
    // Token-embedding tiles a mapped session does not touch (it reads one row per token); 0 when
    // the embedding is the LM head (tied), which every token reads whole.
    uint64_t untouchedEmbeddingBytes = 0;

    // KV cache bytes at `positions` filled positions, elemBytes per value (K and V).
    double kvBytesAt(uint32_t positions, double elemBytes) const;
};

// The footprint of a loaded model (a mapped load is enough: nothing is read but the tile headers).
// Fails only when an expert-table entry is corrupt.
Result<ModelFootprint> model_footprint(const Model& model);

// Bytes per weight of a tile of `dtype` (a full 128 x 256 tile with its 16-byte header).
double tile_bytes_per_weight(DType dtype);

// `f` with every tile re-typed to `dtype` (bytes = weights x tile_bytes_per_weight; the file
// grows or shrinks by the difference). The converter keeps norms and routers f32, as here.
ModelFootprint retyped_footprint(const ModelFootprint& f, DType dtype);

} // namespace cflow
