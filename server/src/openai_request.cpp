#include "cflow/server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "cflow/formats/json_depth.h"
#include "openai_tool_request.h"
#include <utility>

namespace cflow::server {
namespace {

using nlohmann::json;

std::string shown(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
}

ApiError wrong(const std::string& param, const std::string& expectation, const json& value) {
    return bad_request("'" + param + "' must be " + expectation + ", got " + shown(value), param);
}

// Each reader leaves `out` alone when the field is absent or null and returns the error otherwise.
std::optional<ApiError> read_number(const json& body, const char* name, double min, double max, float& out) {
    const auto it = body.find(name);
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < min || it->get<double>() > max)
        return wrong(name, "a number from " + json(min).dump() + " to " + json(max).dump(), *it);
    out = static_cast<float>(it->get<double>());
    return std::nullopt;
}

std::optional<ApiError> read_integer(const json& body, const char* name, int64_t min, int64_t max,
                                     std::optional<int64_t>& out) {
    const auto it = body.find(name);
    if (it == body.end() || it->is_null()) return std::nullopt;
    const bool integral = it->is_number_integer() ||
                          (it->is_number_float() && std::nearbyint(it->get<double>()) == it->get<double>() &&
                           std::fabs(it->get<double>()) < 9.0e15);
    if (!integral) return wrong(name, "an integer", *it);
    const bool is_unsigned_big = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
    const int64_t value = is_unsigned_big ? std::numeric_limits<int64_t>::max()
                          : it->is_number_float() ? static_cast<int64_t>(it->get<double>())
                                                  : it->get<int64_t>();
    if (value < min || value > max)
        return wrong(name, "an integer from " + std::to_string(min) + " to " + std::to_string(max), *it);
    out = value;
    return std::nullopt;
}

std::optional<ApiError> read_bool(const json& body, const char* name, bool& out) {
    const auto it = body.find(name);
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) return wrong(name, "true or false", *it);
    out = it->get<bool>();
    return std::nullopt;
}

// Chat: `logprobs` true/false and `top_logprobs` 0..20, which needs logprobs true (OpenAI refuses
// it alone). Completions (the legacy API): `logprobs` is the number of alternatives, 0..5.
std::optional<ApiError> read_logprobs(const json& body, GenerationRequest& request) {
    std::optional<int64_t> top;
    if (request.kind == GenerationRequest::Kind::Completion) {
        if (auto e = read_integer(body, "logprobs", 0, 5, top)) return e;
        request.logprobs = top.has_value();
        request.top_logprobs = uint32_t(top.value_or(0));
        return std::nullopt;
    }
    if (auto e = read_bool(body, "logprobs", request.logprobs)) return e;
    if (auto e = read_integer(body, "top_logprobs", 0, 20, top)) return e;
    if (top && !request.logprobs)
        return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    request.top_logprobs = uint32_t(top.value_or(0));
    return std::nullopt;
}

// The fields both endpoints share: model, sampling, max_tokens, stop, seed, stream, n.
std::optional<ApiError> read_common(const json& body, const RequestLimits& limits, GenerationRequest& request) {
    if (const auto it = body.find("model"); it != body.end() && !it->is_null()) {
        if (!it->is_string()) return wrong("model", "a string", *it);
        request.model = it->get<std::string>();
    }
    if (auto e = read_number(body, "temperature", 0, 2, request.sampling.temperature)) return e;
    if (auto e = read_number(body, "top_p", 0, 1, request.sampling.top_p)) return e;
    if (auto e = read_number(body, "min_p", 0, 1, request.sampling.min_p)) return e;
    if (auto e = read_number(body, "repeat_penalty", 0.01, 100, request.sampling.repeat_penalty)) return e;
    float ignored = 0;
    if (auto e = read_number(body, "presence_penalty", -2, 2, ignored)) return e;
    if (auto e = read_number(body, "frequency_penalty", -2, 2, ignored)) return e;
    std::optional<int64_t> top_k;
    if (auto e = read_integer(body, "top_k", 0, 1 << 24, top_k)) return e;
    if (top_k) request.sampling.top_k = static_cast<int32_t>(*top_k);
    // A request that names no nucleus/top-k/min-p gets the chat core's defaults for them.

    std::optional<int64_t> max_tokens;
    if (auto e = read_integer(body, "max_tokens", 1, std::numeric_limits<int32_t>::max(), max_tokens)) return e;
    if (auto e = read_integer(body, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max(), max_tokens)) return e;
    if (max_tokens) request.max_tokens = static_cast<int32_t>(*max_tokens);

    std::optional<int64_t> seed;
    if (auto e = read_integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), seed))
        return e;
    if (seed) request.seed = static_cast<uint64_t>(*seed);

    std::optional<int64_t> n;
    if (auto e = read_integer(body, "n", 1, 1, n)) return e;
    std::optional<int64_t> best_of;
    if (auto e = read_integer(body, "best_of", 1, 1, best_of)) return e;

    if (const auto it = body.find("stop"); it != body.end() && !it->is_null()) {
        std::vector<json> stops;
        if (it->is_string()) stops.push_back(*it);
        else if (it->is_array()) stops.assign(it->begin(), it->end());
        else return wrong("stop", "a string or an array of strings", *it);
        if (stops.size() > limits.max_stop_sequences)
            return bad_request("'stop' holds " + std::to_string(stops.size()) + " strings; at most " +
                                   std::to_string(limits.max_stop_sequences) + " are accepted", "stop");
        for (const json& stop : stops) {
            if (!stop.is_string()) return wrong("stop", "a string or an array of strings", stop);
            std::string text = stop.get<std::string>();
            if (text.size() > limits.max_stop_bytes)
                return bad_request("a 'stop' string is " + std::to_string(text.size()) + " bytes; at most " +
                                       std::to_string(limits.max_stop_bytes) + " are accepted", "stop");
            if (!text.empty()) request.stop.push_back(std::move(text));
        }
    }

    if (auto e = read_bool(body, "stream", request.stream)) return e;
    if (const auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) return wrong("stream_options", "an object", *it);
        if (auto e = read_bool(*it, "include_usage", request.include_usage)) {
            e->param = "stream_options.include_usage";
            return e;
        }
    }

    if (auto e = read_logprobs(body, request)) return e;
    if (const auto it = body.find("logit_bias"); it != body.end() && !it->is_null() && !(it->is_object() && it->empty()))
        return bad_request("'logit_bias' is not supported by this server", "logit_bias");
    if (request.kind == GenerationRequest::Kind::Chat) {
        if (auto e = read_tool_fields(body, limits, request)) return e;
    } else if (const auto it = body.find("tools"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty())) {
        return bad_request("tools are served by POST /v1/chat/completions, not by completions", "tools");
    }
    if (const auto it = body.find("functions"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty()))
        return bad_request("the deprecated 'functions' is not served: send them as 'tools'", "functions");
    if (const auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
        const std::string type = it->is_object() && it->value("type", json()).is_string() ? it->value("type", "") : "";
        if (type == "json_object") {
            request.json_object = true;  // grammar-constrained: the reply is one JSON object
        } else if (type == "json_schema") {
            // {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}: the
            // reply is JSON valid under the schema (grammar-constrained, strict or not); the schema is
            // converted, and refused with its JSON pointer, where the grammar is built.
            const json& format = it->value("json_schema", json());
            if (!format.is_object()) return wrong("response_format.json_schema", "an object with 'name' and 'schema'", format);
            const json& name = format.value("name", json());
            if (!name.is_string() || name.get<std::string>().empty() || name.get<std::string>().size() > 64)
                return wrong("response_format.json_schema.name", "a name of 1 to 64 characters", name);
            if (const json& strict = format.value("strict", json()); !strict.is_null() && !strict.is_boolean())
                return wrong("response_format.json_schema.strict", "a boolean", strict);
            const json& schema = format.value("schema", json());
            if (!schema.is_object() && !schema.is_boolean())
                return wrong("response_format.json_schema.schema", "a JSON Schema (an object)", schema);
            request.json_schema = schema.dump();
        } else if (type != "text") {
            return bad_request("the response format must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                               "{\"type\": \"json_schema\", \"json_schema\": {...}}",
                               "response_format");
        }
    }
    return std::nullopt;
}

std::optional<ApiError> read_content(const json& value, size_t index, ChatMessage& message) {
    const std::string param = "messages[" + std::to_string(index) + "].content";
    if (value.is_string()) {
        message.content = value.get<std::string>();
        return std::nullopt;
    }
    if (value.is_null()) {
        if (message.role == "assistant") return std::nullopt;  // a turn that only called tools
        return wrong(param, "a string or an array of text parts", value);
    }
    if (!value.is_array()) return wrong(param, "a string or an array of text parts", value);
    for (const json& part : value) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            return wrong(param, "an array of {\"type\": \"text\", \"text\": ...} parts", part);
        if (part["type"] != "text")
            return bad_request("content parts of type " + shown(part["type"]) + " are not supported (text only)", param);
        if (!part.contains("text") || !part["text"].is_string())
            return wrong(param + ".text", "a string", part.value("text", json()));
        message.content += part["text"].get<std::string>();
    }
    return std::nullopt;
}

std::optional<ApiError> read_messages(const json& body, const RequestLimits& limits, GenerationRequest& request) {
    const auto it = body.find("messages");
    if (it == body.end() || it->is_null()) return bad_request("'messages' is required", "messages");
    if (!it->is_array()) return wrong("messages", "an array of messages", *it);
    if (it->empty()) return bad_request("'messages' must hold at least one message", "messages");
    if (it->size() > limits.max_messages)
        return bad_request("'messages' holds " + std::to_string(it->size()) + " messages; at most " +
                               std::to_string(limits.max_messages) + " are accepted", "messages");
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return wrong(at, "an object", m);
        const auto role = m.find("role");
        if (role == m.end() || !role->is_string()) return wrong(at + ".role", "a string", m.value("role", json()));
        ChatMessage message;
        message.role = role->get<std::string>();
        if (message.role == "developer") message.role = "system";  // OpenAI's newer name for it
        if (message.role != "system" && message.role != "user" && message.role != "assistant" && message.role != "tool")
            return bad_request("unknown role " + shown(*role) + " (system, developer, user, assistant or tool)", at + ".role");
        const auto content = m.find("content");
        if (content == m.end()) {
            if (message.role != "assistant") return bad_request("'" + at + ".content' is required", at + ".content");
        } else if (auto e = read_content(*content, i, message)) {
            return e;
        }
        if (auto e = read_message_tool_fields(m, i, limits, message)) return e;
        request.messages.push_back(std::move(message));
    }
    return std::nullopt;
}

std::optional<ApiError> read_prompt(const json& body, GenerationRequest& request) {
    const auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
    const auto ids_of = [](const json& array) -> std::optional<std::vector<int32_t>> {
        std::vector<int32_t> ids;
        for (const json& id : array) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
                return std::nullopt;
            ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
        return ids;
    };
    const char* expectation = "a string, an array of one string, or an array of token ids";
    if (it->is_string()) {
        request.prompt = it->get<std::string>();
    } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
        request.prompt = (*it)[0].get<std::string>();
    } else if (it->is_array() && !it->empty() && (*it)[0].is_array()) {
        if (it->size() != 1) return bad_request("one prompt per request is supported, got " + std::to_string(it->size()), "prompt");
        auto ids = ids_of((*it)[0]);
        if (!ids) return wrong("prompt", expectation, *it);
        request.prompt_ids = std::move(*ids);
    } else if (it->is_array() && !it->empty() && (*it)[0].is_number()) {
        auto ids = ids_of(*it);
        if (!ids) return wrong("prompt", expectation, *it);
        request.prompt_ids = std::move(*ids);
    } else if (it->is_array() && it->size() > 1 && (*it)[0].is_string()) {
        return bad_request("one prompt per request is supported, got " + std::to_string(it->size()), "prompt");
    } else {
        return wrong("prompt", expectation, *it);
    }
    if (request.prompt_ids && request.prompt_ids->empty()) return bad_request("'prompt' holds no tokens", "prompt");
    bool echo = false;
    if (auto e = read_bool(body, "echo", echo)) return e;
    if (echo) return bad_request("'echo' is not supported by this server", "echo");
    if (const auto suffix = body.find("suffix"); suffix != body.end() && !suffix->is_null() &&
                                                 !(suffix->is_string() && suffix->get<std::string>().empty()))
        return bad_request("'suffix' (insertion) is not supported by this server", "suffix");
    return std::nullopt;
}

ParsedRequest parse_body(std::string_view body, const RequestLimits& limits, json& out) {
    ParsedRequest parsed;
    // nlohmann builds, copies and destroys values recursively: refuse deep bodies unparsed.
    if (cflow::json_nesting_depth(body) > limits.max_nesting_depth) {
        parsed.error = bad_request("the JSON body nests deeper than " + std::to_string(limits.max_nesting_depth) + " levels");
        return parsed;
    }
    try {
        out = json::parse(body.begin(), body.end());
    } catch (const json::exception& e) {
        // parse_error, and out_of_range for a number beyond double (found by the fuzzer).
        parsed.error = bad_request(std::string("the body is not valid JSON: ") + e.what());
        return parsed;
    }
    if (!out.is_object()) parsed.error = bad_request("the body must be a JSON object, got " + shown(out));
    return parsed;
}

ParsedRequest finish(GenerationRequest request, std::optional<ApiError> error) {
    ParsedRequest parsed;
    if (error) {
        parsed.error = std::move(*error);
        return parsed;
    }
    parsed.request = std::move(request);
    return parsed;
}

} // namespace

ParsedRequest parse_chat_completion_request(std::string_view body, const RequestLimits& limits) {
    json parsed_json;
    ParsedRequest parsed = parse_body(body, limits, parsed_json);
    if (!parsed_json.is_object()) return parsed;
    GenerationRequest request;
    request.kind = GenerationRequest::Kind::Chat;
    if (auto e = read_messages(parsed_json, limits, request)) return finish({}, std::move(e));
    auto error = read_common(parsed_json, limits, request);
    return finish(std::move(request), std::move(error));
}

ParsedRequest parse_completion_request(std::string_view body, const RequestLimits& limits) {
    json parsed_json;
    ParsedRequest parsed = parse_body(body, limits, parsed_json);
    if (!parsed_json.is_object()) return parsed;
    GenerationRequest request;
    request.kind = GenerationRequest::Kind::Completion;
    request.max_tokens = 16;  // the OpenAI default for this endpoint
    if (auto e = read_prompt(parsed_json, request)) return finish({}, std::move(e));
    auto error = read_common(parsed_json, limits, request);
    return finish(std::move(request), std::move(error));
}

} // namespace cflow::server
