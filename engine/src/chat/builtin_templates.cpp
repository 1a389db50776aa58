#include "cflow/engine/chat/builtin_templates.h"

#include <array>

namespace cflow {
namespace {

// Written from each family's documented prompt format; the control tokens are the family's
// own, so a vocabulary that has them gets them as single tokens.
constexpr std::array<BuiltinTemplate, 5> kBuiltins = {{
    // With `tools`: Hermes' tool section in the system turn, calls as <tool_call> blocks and
    // results as <tool_response> in a user turn, as Qwen 2.5 and Hermes 3 write them.
    {"chatml", "ChatML (Qwen, SmolLM, Hermes)",
     "{% set system_first = messages and messages[0]['role'] == 'system' %}"
     "{% if tools %}{{ '<|im_start|>system\\n' }}{% if system_first %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}"
     "{{ '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with "
     "function signatures within <tools></tools> XML tags:\\n<tools>' }}{% for tool in tools %}{{ '\\n' + tool | tojson }}"
     "{% endfor %}{{ '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
     "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": "
     "<args-json-object>}\\n</tool_call><|im_end|>\\n' }}{% endif %}"
     "{% for message in messages %}{% if not (tools and loop.first and system_first) %}"
     "{% if message['role'] == 'tool' %}{{ '<|im_start|>user\\n<tool_response>\\n' + message['content'] + "
     "'\\n</tool_response><|im_end|>\\n' }}"
     "{% elif message['role'] == 'assistant' and message.tool_calls is defined and message.tool_calls %}"
     "{{ '<|im_start|>assistant' }}{% if message['content'] %}{{ '\\n' + message['content'] }}{% endif %}"
     "{% for call in message.tool_calls %}{% set f = call.function if call.function is defined else call %}"
     "{{ '\\n<tool_call>\\n{\"name\": \"' + f.name + '\", \"arguments\": ' }}"
     "{% if f.arguments is string %}{{ f.arguments }}{% else %}{{ f.arguments | tojson }}{% endif %}"
     "{{ '}\\n</tool_call>' }}{% endfor %}{{ '<|im_end|>\\n' }}"
     "{% else %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endif %}"
     "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
    {"llama2", "Llama 2 / Mistral ([INST])",
     "{% if messages and messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}"
     "{% set rest = messages[1:] %}{% else %}{% set system = '' %}{% set rest = messages %}{% endif %}"
     "{% for message in rest %}{% if message['role'] == 'user' %}"
     "{% if loop.first and system %}{{ bos_token + '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + "
     "message['content'] + ' [/INST]' }}{% else %}{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}"
     "{% endif %}{% else %}{{ ' ' + message['content'] + ' ' + eos_token }}{% endif %}{% endfor %}"},
    // With `tools`: Llama 3.1's JSON tool calling (tools in the system turn, a call is the reply's
    // one {"name", "parameters"} object, results in an ipython turn); each call of a message
    // that made several is its own assistant turn, as Llama 3.1 makes one call per turn.
    {"llama3", "Llama 3",
     "{{ bos_token }}{% set system_first = messages and messages[0]['role'] == 'system' %}"
     "{% if tools %}{{ '<|start_header_id|>system<|end_header_id|>\\n\\nEnvironment: ipython\\n\\n' }}"
     "{% if system_first %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}"
     "{{ 'You have access to the following functions. To call a function, respond with JSON for a function call in '"
     "'the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}. '"
     "'Do not use variables.\\n\\n' }}{% for tool in tools %}{{ tool | tojson + '\\n\\n' }}{% endfor %}"
     "{{ '<|eot_id|>' }}{% endif %}"
     "{% for message in messages %}{% if not (tools and loop.first and system_first) %}"
     "{% if message['role'] == 'assistant' and message.tool_calls is defined and message.tool_calls %}"
     "{% for call in message.tool_calls %}{% set f = call.function if call.function is defined else call %}"
     "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n{\"name\": \"' + f.name + '\", \"parameters\": ' }}"
     "{% if f.arguments is string %}{{ f.arguments }}{% else %}{{ f.arguments | tojson }}{% endif %}"
     "{{ '}<|eot_id|>' }}{% endfor %}"
     "{% else %}{% set role = 'ipython' if message['role'] == 'tool' else message['role'] %}"
     "{{ '<|start_header_id|>' + role + '<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endif %}"
     "{% endif %}{% endfor %}{% if add_generation_prompt %}"
     "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"},
    {"gemma", "Gemma",
     "{{ bos_token }}{% for message in messages %}{% if message['role'] != 'system' %}"
     "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
     "{{ '<start_of_turn>' + role + '\\n' }}{% if loop.index0 == 1 and messages[0]['role'] == 'system' %}"
     "{{ messages[0]['content'] + '\\n\\n' }}{% endif %}{{ message['content'] + '<end_of_turn>\\n' }}{% endif %}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"},
    {"plain", "Plain (role: content)",
     "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}"},
}};

} // namespace

std::span<const BuiltinTemplate> builtin_chat_templates() { return kBuiltins; }

const BuiltinTemplate* find_builtin_template(std::string_view name) {
    for (const BuiltinTemplate& t : kBuiltins)
        if (t.name == name) return &t;
    return nullptr;
}

} // namespace cflow
