#pragma once
// One chat.completion.chunk of a streamed reply (the data of one SSE event), or the whole body of
// a non-streamed chat.completion: the text it adds, why the reply ended, the usage, and llama.cpp's
// `timings` where the server sends them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cflow/base/result.h"

namespace cflow::remote {

struct RemoteUsage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
};

// llama.cpp server's per-reply timings (absent elsewhere).
struct RemoteTimings {
    int64_t prompt_n = 0;
    double prompt_ms = 0;
    int64_t predicted_n = 0;
    double predicted_ms = 0;
    double predicted_per_second = 0;
};

struct StreamChunk {
    std::string content;                       // choices[0].delta.content (or message.content)
    std::optional<std::string> finish_reason;  // stop, length, ...
    std::optional<RemoteUsage> usage;
    std::optional<RemoteTimings> timings;
    std::optional<std::string> error;          // {"error": {...}} sent in the stream
};

// Reads one chunk. Errors say what is malformed: "chunk is not JSON: ...", "choices[0].delta.content
// is not a string".
Result<StreamChunk> read_stream_chunk(std::string_view json_text);

} // namespace cflow::remote
