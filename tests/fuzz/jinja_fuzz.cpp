// libFuzzer target: chat templates (engine/src/chat: the Jinja lexer, parser and interpreter).
// Any template text either compiles or fails with line and column; a compiled one renders a
// fixed conversation within its step and output limits or fails with a message. The input's
// first byte picks the conversation, so loops over messages, roles and tools are reached, and
// whether the list/dict methods that modify their object run (immutable_sandbox off).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cflow/engine/chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t pick = data[0];
    std::string source(reinterpret_cast<const char*>(data) + 1, size - 1);
    auto compiled = cflow::ChatTemplate::compile(std::move(source));
    if (!compiled) {
        if (compiled.error().empty()) std::abort();
        return 0;
    }
    std::vector<cflow::ChatMessage> messages = {{"system", "Be brief.", ""}, {"user", "Hi {{ there }}", ""}};
    if (pick & 1) messages.push_back({"assistant", "Hello.", "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"x\": 1}}]}"});
    if (pick & 2) messages.push_back({"user", std::string(64, 'x'), ""});
    cflow::TemplateOptions options;
    options.add_generation_prompt = (pick & 4) != 0;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    if (pick & 8) options.tools_json = "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]";
    options.immutable_sandbox = (pick & 16) == 0;
    options.max_steps = 200000;
    options.max_output_bytes = 1 << 20;
    auto rendered = compiled->render(messages, options);
    if (!rendered && rendered.error().empty()) std::abort();
    if (rendered && rendered->size() > options.max_output_bytes) std::abort();
    return 0;
}
