#pragma once
// One chat.completion.chunk of a streamed reply (the data of one SSE event), or the whole body of
// a non-streamed chat.completion: the text it adds, why the reply ended, the usage, and llama.cpp's
// `timings` where the server sends them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// One entry of choices[0].logprobs.content (OpenAI's chat shape, as cflow serve, llama.cpp and
// vLLM send it).
struct RemoteLogprobCandidate {
    std::string token;       // the token's text as the server wrote it
    std::string bytes;       // its raw bytes: `bytes` when sent, else the token's UTF-8
    bool bytes_sent = false; // the server sent `bytes` (a token ending inside a character is exact only then)
    double logprob = 0;      // natural log
};
struct RemoteTokenLogprob {
    RemoteLogprobCandidate chosen;
    std::vector<RemoteLogprobCandidate> top;  // top_logprobs in the server's order
};

struct StreamChunk {
    std::string content;                       // choices[0].delta.content (or message.content)
    std::optional<std::string> finish_reason;  // stop, length, ...
    std::optional<RemoteUsage> usage;
    std::optional<RemoteTimings> timings;
    std::optional<std::string> error;          // {"error": {...}} sent in the stream
    // choices[0].logprobs.content: the tokens this chunk adds; nullopt when logprobs is null or
    // absent (a server that does not report them, or a chunk without tokens).
    std::optional<std::vector<RemoteTokenLogprob>> logprobs;
};

// Reads one chunk. Errors say what is malformed: "chunk is not JSON: ...", "choices[0].delta.content
// is not a string", "choices[0].logprobs.content[2].logprob is not a number".
Result<StreamChunk> read_stream_chunk(std::string_view json_text);

} // namespace cflow::remote
