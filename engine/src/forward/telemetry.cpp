#include "cflow/engine/forward/telemetry.h"

#include <nlohmann/json.hpp>

#include "cflow/engine/io/io_backend.h"

namespace cflow {

const char* stream_name(Stream s) {
    switch (s) {
    case Stream::Attention: return "attention";
    case Stream::Dense: return "dense";
    case Stream::Expert: return "expert";
    case Stream::Router: return "router";
    case Stream::Vocab: return "vocab";
    case Stream::Count_: break;
    }
    return "unknown";
}

uint64_t TokenTelemetry::bytes(Stream s) const {
    uint64_t total = s == Stream::Vocab ? vocabBytes : 0;
    for (const LayerRecord& r : layers) total += r.bytesRead[static_cast<size_t>(s)];
    return total;
}

std::string to_json_line(const TokenTelemetry& t, bool include_experts, bool include_stats) {
    nlohmann::ordered_json j;
    j["position"] = t.position;
    j["token"] = t.token;
    if (t.tokens != 1) j["tokens"] = t.tokens;  // a batched prefill chunk
    if (t.grammarVocabTokens != 0) {  // a grammar masked the sampling of this token
        j["grammarAllowedTokens"] = t.grammarAllowedTokens;
        j["grammarVocabTokens"] = t.grammarVocabTokens;
    }
    if (include_stats) {
        j["totalUs"] = t.totalUs;
        j["vocabBytes"] = t.vocabBytes;
        j["expertCacheHits"] = t.expertCacheHits;
        j["expertCacheMisses"] = t.expertCacheMisses;
        j["expertBytesSaved"] = t.expertBytesSaved;
        j["expertBytesFromDisk"] = t.expertBytesFromDisk;
        if (t.ioBackend != 0) j["ioBackend"] = std::string(io_backend_name(static_cast<IoBackend>(t.ioBackend)));
    }
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerRecord& r : t.layers) {
        nlohmann::ordered_json l;
        l["layer"] = r.layer;
        if (include_stats) {
            nlohmann::ordered_json bytes;
            for (size_t s = 0; s < size_t(Stream::Count_); ++s)
                bytes[std::string(stream_name(Stream(s))) + "Bytes"] = r.bytesRead[s];
            l["bytesRead"] = bytes;
            l["computeUs"] = r.computeUs;
            l["expertWaitUs"] = r.expertWaitUs;
            l["residualNorm"] = r.residualNorm;
        }
        if (include_experts && r.nSelected > 0) {
            nlohmann::ordered_json experts = nlohmann::ordered_json::array(), weights = nlohmann::ordered_json::array();
            for (uint32_t i = 0; i < r.nSelected; ++i) {
                experts.push_back(r.experts[i]);
                weights.push_back(r.expertWeights[i]);
            }
            l["experts"] = experts;
            l["expertWeights"] = weights;
            l["injectionLayer"] = r.injectionLayer;
        }
        layers.push_back(l);
    }
    j["layers"] = layers;
    return j.dump();
}

} // namespace cflow
