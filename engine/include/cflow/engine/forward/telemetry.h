#pragma once
// What the engine records for every token and (effective) layer: the records the CLI's
// --stats / --trace-experts print as JSON lines and the GUI charts. Fixed-size, trivially
// copyable, so they can cross threads through a lock-free ring.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cflow {

inline constexpr uint32_t kMaxTopK = 16;  // experts per token the records (and the engine) support

enum class Stream : uint8_t { Attention = 0, Dense = 1, Expert = 2, Router = 3, Vocab = 4, Count_ = 5 };
const char* stream_name(Stream s);  // "attention", "dense", "expert", "router", "vocab"

struct LayerRecord {
    uint32_t position = 0;            // token position in the context
    uint16_t layer = 0;               // effective layer (FixedPoint: block * n_iter + iteration)
    uint16_t routing_layer = 0;       // MoE: the layer whose router chose the experts injected here
    std::array<uint64_t, size_t(Stream::Count_)> bytesRead{};  // weight bytes this layer read per stream
    float computeUs = 0;              // wall time of the layer's compute, expert wait excluded
    float expertWaitUs = 0;           // time blocked waiting for expert data to arrive
    float residualNorm = 0;           // ||layer output|| as defined per combine style (formats/docs/cflow-format.md)
    uint8_t nSelected = 0;            // experts this layer's router chose (0 for dense layers)
    int16_t injectionLayer = -1;      // where this layer's expert output is added (-1: no MoE)
    std::array<uint8_t, kMaxTopK> experts{};      // chosen expert ids, by descending router logit
    std::array<float, kMaxTopK> expertWeights{};  // their combine weights
};

struct TokenTelemetry {
    uint32_t position = 0;            // position of the (first) token this record covers
    uint32_t tokens = 1;              // tokens it covers: 1 for a step, the chunk for a batched prefill
    int32_t token = -1;               // the token fed at this position (a prefill chunk: its last token)
    std::vector<LayerRecord> layers;  // one per effective layer
    uint64_t vocabBytes = 0;          // embedding row + output norm + LM head (when logits were computed)
    // Direct-I/O expert fetch (Staged / Sync; zeros for Mapped): routed experts served from the
    // expert cache (hits) or read from storage (misses), and their bytes (ExpertView::bytes, the
    // Expert stream's count; the reader rounds each read out to 4 KiB sectors on top of this).
    uint32_t expertCacheHits = 0;
    uint32_t expertCacheMisses = 0;
    uint64_t expertBytesSaved = 0;    // served from the cache instead of storage
    uint64_t expertBytesFromDisk = 0; // read from storage
    uint8_t expertFetch = 0;          // the session's ExpertFetch (session.h: 0 mapped, 1 staged, 2 sync), so a
                                      // chart can tell tokens of different arms apart after a switch
    uint8_t ioBackend = 0;            // the IoBackend that read the experts (io_backend.h: 1 uring, 2 overlapped,
                                      // 3 threads); 0 when nothing was read directly (mapped experts, dense)
    float totalUs = 0;
    // Grammar-constrained sampling (generate.h GenerateRequest::grammar): how many tokens of the
    // vocabulary the grammar allowed when the token fed here was sampled, and the vocabulary's
    // size then; both 0 when no grammar masked this step (prefill chunks, free replies).
    uint32_t grammarAllowedTokens = 0;
    uint32_t grammarVocabTokens = 0;

    uint64_t bytes(Stream s) const;   // summed over layers (vocab included for Stream::Vocab)
};

// One JSON object per line, units in the key names.
std::string to_json_line(const TokenTelemetry& t, bool include_experts, bool include_stats);

} // namespace cflow
