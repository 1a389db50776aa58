#include "cflow/remote/stream_chunk.h"

#include <nlohmann/json.hpp>

namespace cflow::remote {
namespace {

using nlohmann::json;

Error malformed(const std::string& what) { return make_error(ErrorKind::InvalidInput, what); }

// A number field of `object`, 0 when absent or not a number.
template <class T>
T number_or_zero(const json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<T>() : T(0);
}

} // namespace

Result<StreamChunk> read_stream_chunk(std::string_view json_text) {
    json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
        std::string shown(json_text.substr(0, 120));
        return malformed("chunk is not JSON: '" + shown + (json_text.size() > 120 ? "...'" : "'"));
    }
    if (!root.is_object()) return malformed("chunk is not a JSON object");
    StreamChunk chunk;
    if (auto e = root.find("error"); e != root.end() && !e->is_null()) {
        if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
            chunk.error = (*e)["message"].get<std::string>();
        else
            chunk.error = e->dump();
        return chunk;
    }
    if (auto choices = root.find("choices"); choices != root.end()) {
        if (!choices->is_array()) return malformed("chunk: choices is not an array");
        if (!choices->empty()) {
            const json& choice = (*choices)[0];
            if (!choice.is_object()) return malformed("chunk: choices[0] is not an object");
            const char* holder = choice.contains("delta") ? "delta" : "message";
            if (auto d = choice.find(holder); d != choice.end() && !d->is_null()) {
                if (!d->is_object()) return malformed(std::string("chunk: choices[0].") + holder + " is not an object");
                if (auto c = d->find("content"); c != d->end() && !c->is_null()) {
                    if (!c->is_string())
                        return malformed(std::string("chunk: choices[0].") + holder + ".content is not a string");
                    chunk.content = c->get<std::string>();
                }
            }
            if (auto f = choice.find("finish_reason"); f != choice.end() && !f->is_null()) {
                if (!f->is_string()) return malformed("chunk: choices[0].finish_reason is not a string");
                chunk.finish_reason = f->get<std::string>();
            }
        }
    }
    if (auto u = root.find("usage"); u != root.end() && u->is_object()) {
        RemoteUsage usage;
        usage.prompt_tokens = number_or_zero<int64_t>(*u, "prompt_tokens");
        usage.completion_tokens = number_or_zero<int64_t>(*u, "completion_tokens");
        chunk.usage = usage;
    }
    if (auto t = root.find("timings"); t != root.end() && t->is_object()) {
        RemoteTimings timings;
        timings.prompt_n = number_or_zero<int64_t>(*t, "prompt_n");
        timings.prompt_ms = number_or_zero<double>(*t, "prompt_ms");
        timings.predicted_n = number_or_zero<int64_t>(*t, "predicted_n");
        timings.predicted_ms = number_or_zero<double>(*t, "predicted_ms");
        timings.predicted_per_second = number_or_zero<double>(*t, "predicted_per_second");
        chunk.timings = timings;
    }
    return chunk;
}

} // namespace cflow::remote
