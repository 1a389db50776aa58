#pragma once
// Tool calling: the tools a request offers a model, the calls its reply makes, and how each model
// family writes them. The model's own chat template renders the tools (its `tools` variable) and
// the earlier calls and results (assistant `tool_calls`, role `tool`); this file reads the calls
// back out of the reply text, whole or while it streams, and builds the grammar that forces a call
// when a request requires one.
//
// The families and what their replies look like:
//   Hermes   <tool_call>{"name": "f", "arguments": {...}}</tool_call>   (Hermes 2/3, Qwen 2.5/3, ChatML)
//   Llama31  {"name": "f", "parameters": {...}}  or  <|python_tag|>f.call(...)/{...}  (Llama 3.1-3.3)
//   Mistral  [TOOL_CALLS][{"name": "f", "arguments": {...}}]  (also [TOOL_CALLS]f[ARGS]{...})
//   Harmony  <|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}<|call|>  (gpt-oss)
//   Phi4     <|tool_call|>[{"name": "f", "arguments": {...}}]<|/tool_call|>  (Phi-4-mini)
//
// Nothing here throws; malformed calls stay in the content, as text the user can read.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/json_schema_grammar.h"

namespace cflow {

struct ToolDefinition {
    std::string name;             // 1-64 of [A-Za-z0-9_-] (as OpenAI and Anthropic require)
    std::string description;      // may be empty
    std::string parameters_json;  // a JSON Schema object, as text; "" = any JSON object
};

struct ToolCall {
    std::string id;               // unique within its reply ("call_" + 24 hex digits when the model gave none)
    std::string name;
    std::string arguments_json;   // a JSON object, as compact text
};

enum class ToolCallFormat : uint8_t { None, Hermes, Llama31, Mistral, Harmony, Phi4 };
std::string_view tool_call_format_name(ToolCallFormat format);  // "none", "hermes", "llama3.1", ...

// Which format a chat template writes calls in, read from the markers in its source. A template
// that renders `tools` but none of the known markers is Hermes (the most common fallback, as
// llama.cpp's generic handler does); one that never reads `tools` is None.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

// The `tools` template variable: [{"type": "function", "function": {name, description, parameters}}].
std::string tools_template_json(std::span<const ToolDefinition> tools);

// The `tool_calls` of an assistant message, as ChatMessage::extra_json: {"tool_calls": [{"id",
// "type": "function", "function": {"name", "arguments": <the object, not a string>}}]} — templates
// index the arguments as a mapping (Qwen's `tool_call.arguments | tojson`, Llama's items()).
std::string tool_calls_message_extra_json(std::span<const ToolCall> calls);

struct ParsedToolReply {
    std::string content;          // the reply without its calls (trimmed of the space around them)
    std::vector<ToolCall> calls;  // in the order the model wrote them
};
// Reads every well-formed call out of a whole reply.
ParsedToolReply parse_tool_calls(ToolCallFormat format, std::string_view reply_text);

// What the reader of a reply's calls remembers between pieces (tool_call_scan.h).
struct ToolCallScanState {
    bool reply_start = true;      // nothing decided yet: a Llama 3.1 bare JSON call or a harmony
                                  // 'to=' header may open the reply
    bool after_call = false;      // a call was just read: the whitespace after it is dropped
    bool content_released = false;// some content was given out (a later one is set apart after a call)
    uint64_t id_state = 0;        // the generator of "call_" ids (seeded per reply)
    std::vector<std::string> ids; // the ids given so far, kept unique within the reply
};

// The same, while the reply streams: feed() every piece as it arrives. Content is released as soon
// as it cannot be the start of a call marker (a possible marker, and the whitespace right before
// it, is held back until it is decided), and a call is reported whole once its closing marker (or
// the end) is seen. Exceptions that follow from the formats: a Llama 3.1 reply that opens with '{'
// is held until its object closes and the reply ends (the bare JSON call is the whole reply), and a
// harmony header ('<|channel|>...' up to '<|message|>', at most 256 bytes) is held until it shows
// whether it addresses a function. Feeding in any split gives exactly parse_tool_calls' result
// (the generated ids aside).
class ToolCallStreamParser {
public:
    explicit ToolCallStreamParser(ToolCallFormat format);
    struct Events {
        std::string content;            // text to show now
        std::vector<ToolCall> calls;    // calls completed by this piece
    };
    Events feed(std::string_view piece);
    Events finish();                    // the reply ended: flush what was held back
private:
    ToolCallFormat format_;
    std::string held_;            // the reply's undecided tail
    ToolCallScanState state_;
};

// tool_choice as both APIs spell it: auto (the model decides), none (tools are not offered),
// required / "any" (at least one call), or one named function.
struct ToolChoice {
    enum class Kind : uint8_t { Auto, None, Required, Named } kind = Kind::Auto;
    std::string name;             // Named
};

// The grammar of a reply that is one call (or, for Required, one or more calls) in `format` to
// one of `tools` (Named: that tool), its arguments constrained by each tool's parameters schema
// (json_schema_grammar.h) — for ToolChoice Required and Named. InvalidInput when the format is
// None, a named tool is not among `tools`, or a schema cannot be compiled (the message says which).
// Required allows up to 8 calls in the formats that write several per turn (Hermes, Mistral,
// Phi-4) and one in Llama 3.1's and harmony's; Named, one. `limits` go to each schema (e.g. the
// string and array caps a small model needs to ever close its arguments).
Result<std::shared_ptr<const Grammar>> tool_call_grammar(ToolCallFormat format, std::span<const ToolDefinition> tools,
                                                         const ToolChoice& choice, const JsonSchemaLimits& limits = {});

} // namespace cflow
