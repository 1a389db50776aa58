// libFuzzer target: the SSE framing (server/src/sse.cpp). Any payload framed by sse_event()
// reads back as exactly one event with that payload (payloads without CR, which SSE treats as
// a line break), and the reader survives any stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cflow/server/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    (void)cflow::server::parse_sse_events(bytes);
    if (bytes.find('\r') == std::string::npos) {
        const auto events = cflow::server::parse_sse_events(cflow::server::sse_event(bytes));
        if (events.size() != 1 || events[0] != bytes) std::abort();
    }
    return 0;
}
