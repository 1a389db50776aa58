// libFuzzer target: the server's request parser (server/src/openai_request.cpp) on any bytes,
// as the chat and the completion endpoint. Never crashes, never hangs, and every answer is
// either a request inside the documented bounds or a 400 with a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cflow/server/openai_request.h"

namespace {

void require(bool condition) {
    if (!condition) std::abort();  // libFuzzer reports the input that broke an invariant
}

void check(const cflow::server::ParsedRequest& parsed, const cflow::server::RequestLimits& limits) {
    if (!parsed.ok()) {
        require(parsed.error.status == 400 && !parsed.error.message.empty());
        return;
    }
    const cflow::server::GenerationRequest& r = *parsed.request;
    require(r.sampling.temperature >= 0 && r.sampling.temperature <= 2);
    require(r.sampling.top_p >= 0 && r.sampling.top_p <= 1);
    require(r.sampling.min_p >= 0 && r.sampling.min_p <= 1);
    require(r.sampling.top_k >= 0);
    require(!r.max_tokens || *r.max_tokens >= 1);
    require(r.stop.size() <= limits.max_stop_sequences);
    for (const auto& stop : r.stop) require(!stop.empty() && stop.size() <= limits.max_stop_bytes);
    if (r.kind == cflow::server::GenerationRequest::Kind::Chat) {
        require(!r.messages.empty() && r.messages.size() <= limits.max_messages);
        for (const auto& m : r.messages)
            require(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool");
    } else {
        require(!r.prompt_ids || !r.prompt_ids->empty());
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    const cflow::server::RequestLimits limits;
    check(cflow::server::parse_chat_completion_request(body, limits), limits);
    check(cflow::server::parse_completion_request(body, limits), limits);
    return 0;
}
