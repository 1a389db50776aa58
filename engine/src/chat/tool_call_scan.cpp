#include "chat/tool_call_scan.h"

#include <algorithm>
#include <array>
#include <random>
#include <span>

namespace cflow {
namespace {

constexpr size_t kScanMaxHarmonyHeaderBytes = 256;  // '<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json'
constexpr size_t kScanMaxJsonDepth = 128;           // deeper arguments are not a call (and would recurse in the dump)

bool scan_is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t scan_skip_space(std::string_view text, size_t at) {
    while (at < text.size() && scan_is_space(text[at])) ++at;
    return at;
}

// Where the run of whitespace that ends at `at` begins.
size_t scan_space_run_start(std::string_view text, size_t at) {
    while (at > 0 && scan_is_space(text[at - 1])) --at;
    return at;
}

std::span<const std::string_view> scan_open_markers(ToolCallFormat format) {
    static constexpr std::array<std::string_view, 1> kHermes = {"<tool_call>"};
    static constexpr std::array<std::string_view, 1> kLlama = {"<|python_tag|>"};
    static constexpr std::array<std::string_view, 1> kMistral = {"[TOOL_CALLS]"};
    static constexpr std::array<std::string_view, 2> kHarmony = {"<|start|>", "<|channel|>"};
    static constexpr std::array<std::string_view, 1> kPhi = {"<|tool_call|>"};
    switch (format) {
    case ToolCallFormat::Hermes: return kHermes;
    case ToolCallFormat::Llama31: return kLlama;
    case ToolCallFormat::Mistral: return kMistral;
    case ToolCallFormat::Harmony: return kHarmony;
    case ToolCallFormat::Phi4: return kPhi;
    case ToolCallFormat::None: break;
    }
    return {};
}

// What opens a call only as the reply's first text: Llama 3.1's bare JSON object, the harmony
// recipient of a reply whose '<|start|>assistant' the prompt already wrote.
std::string_view scan_reply_start_marker(ToolCallFormat format) {
    if (format == ToolCallFormat::Llama31) return "{";
    if (format == ToolCallFormat::Harmony) return "to=";
    return {};
}

enum class JsonSpan : uint8_t { Complete, Incomplete, Invalid };
struct JsonSpanEnd {
    JsonSpan state;
    size_t end = 0;  // Complete: one past the closing bracket
};

// The extent of the JSON object or array that opens at `begin` (text[begin] is '{' or '['), by its
// brackets and strings alone; the parser checks the rest.
JsonSpanEnd scan_json_extent(std::string_view text, size_t begin) {
    std::vector<char> closers;  // [depth] the bracket each open level waits for
    bool in_string = false;
    for (size_t at = begin; at < text.size(); ++at) {
        const char c = text[at];
        if (in_string) {
            if (c == '\\') ++at;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (closers.size() >= kScanMaxJsonDepth) return {JsonSpan::Invalid};
            closers.push_back(c == '{' ? '}' : ']');
        } else if (c == '}' || c == ']') {
            if (closers.empty() || closers.back() != c) return {JsonSpan::Invalid};
            closers.pop_back();
            if (closers.empty()) return {JsonSpan::Complete, at + 1};
        }
    }
    return {JsonSpan::Incomplete};
}

nlohmann::json scan_parse_json(std::string_view text) {
    return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

// Arguments as the families write them: an object, or a string holding one; none at all is {}.
std::optional<std::string> scan_arguments(const nlohmann::json* arguments) {
    if (!arguments || arguments->is_null()) return std::string("{}");
    if (arguments->is_object()) return tool_json_text(*arguments);
    if (arguments->is_string()) {
        const nlohmann::json inner = scan_parse_json(arguments->get_ref<const std::string&>());
        if (inner.is_object()) return tool_json_text(inner);
    }
    return std::nullopt;
}

const nlohmann::json* scan_member(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

// {"name", "arguments" | "parameters", "id"?}, or OpenAI's {"type": "function", "function": {...}}.
std::optional<ToolCall> scan_call_object(const nlohmann::json& object) {
    if (!object.is_object()) return std::nullopt;
    const nlohmann::json* function = scan_member(object, "function");
    const nlohmann::json& body = function && function->is_object() ? *function : object;
    const nlohmann::json* name = scan_member(body, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
    const nlohmann::json* arguments = scan_member(body, "arguments");
    if (!arguments) arguments = scan_member(body, "parameters");
    std::optional<std::string> arguments_json = scan_arguments(arguments);
    if (!arguments_json) return std::nullopt;
    ToolCall call;
    call.name = name->get<std::string>();
    call.arguments_json = std::move(*arguments_json);
    if (const nlohmann::json* id = scan_member(object, "id"); id && id->is_string()) call.id = id->get<std::string>();
    return call;
}

// One call object, or a non-empty array of them (all well formed, or none is taken).
std::optional<std::vector<ToolCall>> scan_calls_json(std::string_view text) {
    const size_t first = scan_skip_space(text, 0);
    if (first == text.size() || (text[first] != '{' && text[first] != '[')) return std::nullopt;
    const JsonSpanEnd extent = scan_json_extent(text, first);
    if (extent.state != JsonSpan::Complete || scan_skip_space(text, extent.end) != text.size()) return std::nullopt;
    const nlohmann::json parsed = scan_parse_json(text.substr(first, extent.end - first));
    std::vector<ToolCall> calls;
    if (parsed.is_array()) {
        for (const nlohmann::json& item : parsed) {
            auto call = scan_call_object(item);
            if (!call) return std::nullopt;
            calls.push_back(std::move(*call));
        }
    } else if (auto call = scan_call_object(parsed)) {
        calls.push_back(std::move(*call));
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

bool scan_is_ident(char c, bool first) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (!first && c >= '0' && c <= '9');
}

// A Python literal as Llama 3.1 writes built-in tool arguments: a quoted string, a number, True,
// False or None. Advances `at` past it.
std::optional<nlohmann::json> scan_python_literal(std::string_view text, size_t& at) {
    if (at >= text.size()) return std::nullopt;
    const char quote = text[at];
    if (quote == '"' || quote == '\'') {
        std::string value;
        for (size_t i = at + 1; i < text.size(); ++i) {
            char c = text[i];
            if (c == quote) {
                at = i + 1;
                return nlohmann::json(std::move(value));
            }
            if (c == '\\' && i + 1 < text.size()) {
                c = text[++i];
                if (c == 'n') c = '\n';
                else if (c == 't') c = '\t';
            }
            value.push_back(c);
        }
        return std::nullopt;
    }
    size_t end = at;
    while (end < text.size() && text[end] != ',' && text[end] != ')' && !scan_is_space(text[end])) ++end;
    const std::string_view word = text.substr(at, end - at);
    nlohmann::json value;
    if (word == "True") value = true;
    else if (word == "False") value = false;
    else if (word == "None") value = nullptr;
    else {
        value = scan_parse_json(word);
        if (!value.is_number()) return std::nullopt;
    }
    at = end;
    return value;
}

// `name.call(key=value, ...)`: Llama 3.1's built-in tools (brave_search, wolfram_alpha).
std::optional<ToolCall> scan_python_call(std::string_view text) {
    size_t at = scan_skip_space(text, 0);
    const size_t name_begin = at;
    while (at < text.size() && scan_is_ident(text[at], at == name_begin)) ++at;
    if (at == name_begin || text.substr(at, 6) != ".call(") return std::nullopt;
    ToolCall call;
    call.name = std::string(text.substr(name_begin, at - name_begin));
    at += 6;
    nlohmann::json arguments = nlohmann::json::object();
    at = scan_skip_space(text, at);
    while (at < text.size() && text[at] != ')') {
        const size_t key_begin = at;
        while (at < text.size() && scan_is_ident(text[at], at == key_begin)) ++at;
        if (at == key_begin) return std::nullopt;
        const std::string key(text.substr(key_begin, at - key_begin));
        at = scan_skip_space(text, at);
        if (at >= text.size() || text[at] != '=') return std::nullopt;
        at = scan_skip_space(text, at + 1);
        auto value = scan_python_literal(text, at);
        if (!value) return std::nullopt;
        arguments[key] = std::move(*value);
        at = scan_skip_space(text, at);
        if (at < text.size() && text[at] == ',') at = scan_skip_space(text, at + 1);
    }
    if (at >= text.size() || scan_skip_space(text, at + 1) != text.size()) return std::nullopt;
    call.arguments_json = tool_json_text(arguments);
    return call;
}

// What one candidate marker turned out to be.
struct CallAttempt {
    enum class Kind : uint8_t { NeedMore, NotACall, Call } kind = Kind::NotACall;
    size_t end = 0;               // Call: one past the call's text
    std::vector<ToolCall> calls;  // Call
};

CallAttempt scan_need_more_or_not(bool at_end) {
    return CallAttempt{at_end ? CallAttempt::Kind::NotACall : CallAttempt::Kind::NeedMore};
}

CallAttempt scan_call_found(size_t end, std::vector<ToolCall> calls) {
    return CallAttempt{CallAttempt::Kind::Call, end, std::move(calls)};
}

// A JSON body that opens at `at` (after optional whitespace): its calls once it is complete.
// object_only: the body is the arguments object of a call named by `name`.
CallAttempt scan_json_body(std::string_view text, size_t at, bool at_end, const std::string* name) {
    at = scan_skip_space(text, at);
    if (at == text.size()) return scan_need_more_or_not(at_end);
    if (text[at] != '{' && (name || text[at] != '[')) return {};
    const JsonSpanEnd extent = scan_json_extent(text, at);
    if (extent.state == JsonSpan::Incomplete) return scan_need_more_or_not(at_end);
    if (extent.state == JsonSpan::Invalid) return {};
    const std::string_view body = text.substr(at, extent.end - at);
    if (name) {
        const nlohmann::json arguments = scan_parse_json(body);
        if (!arguments.is_object()) return {};
        return scan_call_found(extent.end, {ToolCall{{}, *name, tool_json_text(arguments)}});
    }
    auto calls = scan_calls_json(body);
    if (!calls) return {};
    return scan_call_found(extent.end, std::move(*calls));
}

// <tool_call>{...}</tool_call> (Hermes), <|tool_call|>[...]<|/tool_call|> (Phi-4): the body up to
// the closing marker, or to the end of a reply that stopped before writing it.
CallAttempt scan_tagged(std::string_view text, size_t body_begin, std::string_view close, bool at_end) {
    const size_t close_at = text.find(close, body_begin);
    if (close_at == std::string_view::npos && !at_end) return {CallAttempt::Kind::NeedMore};
    const size_t body_end = close_at == std::string_view::npos ? text.size() : close_at;
    auto calls = scan_calls_json(text.substr(body_begin, body_end - body_begin));
    if (!calls) return {};
    return scan_call_found(close_at == std::string_view::npos ? text.size() : close_at + close.size(), std::move(*calls));
}

// <|python_tag|> + a JSON call or `name.call(...)`, to the end of the reply.
CallAttempt scan_python_tag(std::string_view text, size_t body_begin, bool at_end) {
    if (!at_end) return {CallAttempt::Kind::NeedMore};
    const std::string_view body = text.substr(body_begin);
    if (auto calls = scan_calls_json(body)) return scan_call_found(text.size(), std::move(*calls));
    if (auto call = scan_python_call(body)) return scan_call_found(text.size(), {std::move(*call)});
    return {};
}

// Llama 3.1's bare call: the reply is one JSON object and nothing else.
CallAttempt scan_bare_json(std::string_view text, size_t begin, bool at_end) {
    const JsonSpanEnd extent = scan_json_extent(text, begin);
    if (extent.state == JsonSpan::Incomplete) return scan_need_more_or_not(at_end);
    if (extent.state == JsonSpan::Invalid || scan_skip_space(text, extent.end) != text.size()) return {};
    if (!at_end) return {CallAttempt::Kind::NeedMore};  // only the end of the reply decides
    auto calls = scan_calls_json(text.substr(begin, extent.end - begin));
    if (!calls || calls->size() != 1) return {};
    return scan_call_found(extent.end, std::move(*calls));
}

size_t scan_word_end(std::string_view text, size_t at, bool (*allowed)(char)) {
    while (at < text.size() && allowed(text[at])) ++at;
    return at;
}

bool scan_name_char(char c) { return scan_is_ident(c, false) || c == '-' || c == '.'; }

// What follows `at`: `marker` (true), a proper start of it that more text may finish (nullopt), or not it.
std::optional<bool> scan_expect(std::string_view text, size_t at, std::string_view marker, bool at_end) {
    const std::string_view rest = text.substr(std::min(at, text.size()));
    if (rest.starts_with(marker)) return true;
    if (!at_end && marker.starts_with(rest)) return std::nullopt;
    return false;
}

// [TOOL_CALLS][{...}, ...] (Mistral Nemo) or [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} (newer Mistral).
CallAttempt scan_mistral(std::string_view text, size_t body_begin, bool at_end) {
    size_t at = scan_skip_space(text, body_begin);
    if (at == text.size()) return scan_need_more_or_not(at_end);
    if (text[at] == '[') return scan_json_body(text, at, at_end, nullptr);
    const size_t name_end = scan_word_end(text, at, scan_name_char);
    if (name_end == at) return {};
    if (name_end == text.size()) return scan_need_more_or_not(at_end);
    const std::string name(text.substr(at, name_end - at));
    at = name_end;
    std::string id;
    const std::optional<bool> has_id = scan_expect(text, at, "[CALL_ID]", at_end);
    if (!has_id) return {CallAttempt::Kind::NeedMore};
    if (*has_id) {
        at += 9;
        const size_t id_end = scan_word_end(text, at, [](char c) { return scan_is_ident(c, false); });
        if (id_end == text.size()) return scan_need_more_or_not(at_end);
        id = std::string(text.substr(at, id_end - at));
        at = id_end;
    }
    const std::optional<bool> has_args = scan_expect(text, at, "[ARGS]", at_end);
    if (!has_args) return {CallAttempt::Kind::NeedMore};
    if (!*has_args) return {};
    CallAttempt attempt = scan_json_body(text, at + 6, at_end, &name);
    if (attempt.kind == CallAttempt::Kind::Call) attempt.calls.front().id = std::move(id);
    return attempt;
}

// A harmony message header ('<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json',
// or ' to=functions.f<|channel|>commentary json' as gpt-oss's template writes it) up to
// '<|message|>', then the arguments object.
CallAttempt scan_harmony(std::string_view text, size_t begin, bool at_end) {
    constexpr std::string_view kMessage = "<|message|>";
    constexpr std::string_view kRecipient = "to=functions.";
    const size_t header_end = text.find(kMessage, begin);
    if (header_end == std::string_view::npos || header_end - begin > kScanMaxHarmonyHeaderBytes) {
        const bool decided = at_end || text.size() - begin > kScanMaxHarmonyHeaderBytes;
        return decided ? CallAttempt{} : CallAttempt{CallAttempt::Kind::NeedMore};
    }
    const std::string_view header = text.substr(begin, header_end - begin);
    const size_t recipient = header.find(kRecipient);
    if (recipient == std::string_view::npos) return {};
    const size_t name_begin = recipient + kRecipient.size();
    const size_t name_end = scan_word_end(header, name_begin, scan_name_char);
    if (name_end == name_begin) return {};
    const std::string name(header.substr(name_begin, name_end - name_begin));
    return scan_json_body(text, header_end + kMessage.size(), at_end, &name);
}

CallAttempt scan_attempt(ToolCallFormat format, std::string_view text, size_t begin, std::string_view marker, bool at_end) {
    const size_t body = begin + marker.size();
    switch (format) {
    case ToolCallFormat::Hermes: return scan_tagged(text, body, "</tool_call>", at_end);
    case ToolCallFormat::Phi4: return scan_tagged(text, body, "<|/tool_call|>", at_end);
    case ToolCallFormat::Llama31:
        return marker == "{" ? scan_bare_json(text, begin, at_end) : scan_python_tag(text, body, at_end);
    case ToolCallFormat::Mistral: return scan_mistral(text, body, at_end);
    case ToolCallFormat::Harmony: return scan_harmony(text, begin, at_end);
    case ToolCallFormat::None: break;
    }
    return {};
}

uint64_t scan_next_random(uint64_t& state) {
    // splitmix64: a full-period sequence from any seed; ids only need to differ within a reply.
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::string scan_new_id(ToolCallScanState& state) {
    if (state.id_state == 0) {
        std::random_device device;
        state.id_state = (uint64_t(device()) << 32) ^ device() ^ 1;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = "call_";
    for (int word = 0; word < 2; ++word) {
        const uint64_t bits = scan_next_random(state.id_state);
        for (int nibble = 0; nibble < (word == 0 ? 16 : 8); ++nibble) id.push_back(kHex[(bits >> (4 * nibble)) & 15]);
    }
    return id;
}

void scan_assign_ids(ToolCallScanState& state, std::vector<ToolCall>& calls) {
    for (ToolCall& call : calls) {
        const auto used = [&](const std::string& id) { return std::find(state.ids.begin(), state.ids.end(), id) != state.ids.end(); };
        while (call.id.empty() || used(call.id)) call.id = scan_new_id(state);
        state.ids.push_back(call.id);
    }
}

void scan_release(ToolCallScanState& state, std::string& pending, size_t bytes, ParsedToolReply& out) {
    if (bytes == 0) return;
    if (state.content_released && state.after_call) out.content += "\n\n";  // the removed call set the two apart
    out.content.append(pending, 0, bytes);
    pending.erase(0, bytes);
    state.reply_start = false;
    state.after_call = false;
    state.content_released = true;
}

struct Candidate {
    size_t at = std::string_view::npos;
    std::string_view marker;  // whole: a marker is here; else a proper start of one ends the text
    bool whole = false;
};

Candidate scan_first_candidate(ToolCallFormat format, const ToolCallScanState& state, std::string_view text, bool at_end) {
    Candidate best;
    const auto consider = [&](size_t at, std::string_view marker, bool whole) {
        if (at < best.at) best = Candidate{at, marker, whole};
    };
    const std::span<const std::string_view> markers = scan_open_markers(format);
    for (std::string_view marker : markers) consider(text.find(marker), marker, true);
    const std::string_view start_marker = scan_reply_start_marker(format);
    const size_t first = scan_skip_space(text, 0);
    if (state.reply_start && !start_marker.empty() && first < text.size()) {
        const std::string_view rest = text.substr(first);
        if (rest.starts_with(start_marker)) consider(first, start_marker, true);
        else if (!at_end && start_marker.starts_with(rest)) consider(first, start_marker, false);
    }
    if (!at_end) {
        // A marker that the next piece may complete: the earliest suffix that starts one.
        size_t longest = 0;
        for (std::string_view marker : markers) longest = std::max(longest, marker.size());
        for (size_t at = text.size() > longest ? text.size() - longest : 0; at < text.size() && at < best.at; ++at)
            for (std::string_view marker : markers)
                if (marker.size() > text.size() - at && marker.starts_with(text.substr(at))) {
                    consider(at, marker, false);
                    break;
                }
    }
    return best;
}

} // namespace

std::string tool_json_text(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void scan_tool_calls(ToolCallFormat format, ToolCallScanState& state, std::string& pending, bool at_end, ParsedToolReply& out) {
    if (format == ToolCallFormat::None) {
        scan_release(state, pending, pending.size(), out);
        return;
    }
    for (;;) {
        if (state.after_call) {
            pending.erase(0, scan_skip_space(pending, 0));
            if (pending.empty()) return;  // more whitespace may follow, and it goes too
        }
        const Candidate candidate = scan_first_candidate(format, state, pending, at_end);
        if (candidate.at == std::string_view::npos) {
            // Whitespace at the end may turn out to stand before a call, which drops it.
            const size_t keep_from = at_end ? pending.size() : scan_space_run_start(pending, pending.size());
            scan_release(state, pending, keep_from, out);
            if (at_end) pending.clear();
            return;
        }
        const size_t space_before = scan_space_run_start(pending, candidate.at);
        if (!candidate.whole) {
            scan_release(state, pending, space_before, out);
            return;
        }
        CallAttempt attempt = scan_attempt(format, pending, candidate.at, candidate.marker, at_end);
        if (attempt.kind == CallAttempt::Kind::NeedMore) {
            scan_release(state, pending, space_before, out);
            return;
        }
        if (attempt.kind == CallAttempt::Kind::NotACall) {
            scan_release(state, pending, candidate.at + candidate.marker.size(), out);
            continue;
        }
        // A call: the content before it (less the space between them), then the call itself.
        scan_release(state, pending, space_before, out);
        scan_assign_ids(state, attempt.calls);
        for (ToolCall& call : attempt.calls) out.calls.push_back(std::move(call));
        pending.erase(0, attempt.end - space_before);
        state.reply_start = false;
        state.after_call = true;
    }
}

} // namespace cflow
