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

// One {token, logprob, bytes} object at `where` (for messages).
Result<RemoteLogprobCandidate> read_candidate(const json& item, const std::string& where) {
    if (!item.is_object()) return malformed("chunk: " + where + " is not an object");
    RemoteLogprobCandidate c;
    const auto token = item.find("token");
    if (token == item.end() || !token->is_string()) return malformed("chunk: " + where + ".token is not a string");
    c.token = token->get<std::string>();
    const auto logprob = item.find("logprob");
    if (logprob == item.end() || !logprob->is_number()) return malformed("chunk: " + where + ".logprob is not a number");
    c.logprob = logprob->get<double>();
    c.bytes = c.token;
    if (const auto bytes = item.find("bytes"); bytes != item.end() && !bytes->is_null()) {
        if (!bytes->is_array()) return malformed("chunk: " + where + ".bytes is not an array of bytes");
        std::string raw;
        for (const json& b : *bytes) {
            if (!b.is_number_integer() || b.get<int64_t>() < 0 || b.get<int64_t>() > 255)
                return malformed("chunk: " + where + ".bytes holds " + b.dump() + ", not a byte");
            raw += char(b.get<int>());
        }
        c.bytes = std::move(raw);
        c.bytes_sent = true;
    }
    return c;
}

Result<std::vector<RemoteTokenLogprob>> read_logprobs(const json& logprobs) {
    if (!logprobs.is_object()) return malformed("chunk: choices[0].logprobs is not an object");
    std::vector<RemoteTokenLogprob> tokens;
    const auto content = logprobs.find("content");
    if (content == logprobs.end() || content->is_null()) return tokens;
    if (!content->is_array()) return malformed("chunk: choices[0].logprobs.content is not an array");
    for (size_t i = 0; i < content->size(); ++i) {
        const std::string where = "choices[0].logprobs.content[" + std::to_string(i) + "]";
        auto chosen = read_candidate((*content)[i], where);
        if (!chosen) return chosen.take_error();
        RemoteTokenLogprob entry;
        entry.chosen = std::move(chosen).value();
        if (const auto top = (*content)[i].find("top_logprobs"); top != (*content)[i].end() && !top->is_null()) {
            if (!top->is_array()) return malformed("chunk: " + where + ".top_logprobs is not an array");
            for (size_t k = 0; k < top->size(); ++k) {
                auto alternative = read_candidate((*top)[k], where + ".top_logprobs[" + std::to_string(k) + "]");
                if (!alternative) return alternative.take_error();
                entry.top.push_back(std::move(alternative).value());
            }
        }
        tokens.push_back(std::move(entry));
    }
    return tokens;
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
            if (auto l = choice.find("logprobs"); l != choice.end() && !l->is_null()) {
                auto logprobs = read_logprobs(*l);
                if (!logprobs) return logprobs.take_error();
                chunk.logprobs = std::move(logprobs).value();
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
