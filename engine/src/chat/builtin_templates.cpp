#include "cflow/engine/chat/builtin_templates.h"

#include <array>

namespace cflow {
namespace {

// Written from each family's documented prompt format; the control tokens are the family's
// own, so a vocabulary that has them gets them as single tokens.
constexpr std::array<BuiltinTemplate, 5> kBuiltins = {{
    {"chatml", "ChatML (Qwen, SmolLM, Hermes)",
     "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
     "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
    {"llama2", "Llama 2 / Mistral ([INST])",
     "{% if messages and messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}"
     "{% set rest = messages[1:] %}{% else %}{% set system = '' %}{% set rest = messages %}{% endif %}"
     "{% for message in rest %}{% if message['role'] == 'user' %}"
     "{% if loop.first and system %}{{ bos_token + '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + "
     "message['content'] + ' [/INST]' }}{% else %}{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}"
     "{% endif %}{% else %}{{ ' ' + message['content'] + ' ' + eos_token }}{% endif %}{% endfor %}"},
    {"llama3", "Llama 3",
     "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
     "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
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
