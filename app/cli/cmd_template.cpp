// cflow template: renders a chat template (a model's, or a .jinja file) over a messages JSON
// file and prints exactly the prompt the model would see, for checking templates by eye or
// against transformers' apply_chat_template.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/formats/json_depth.h"
#include "cflow/formats/whole_file.h"
#include "cflow/engine/chat/chat_template.h"
#include "commands.h"
#include "console.h"
#include "vocab_source.h"

namespace cflow::cli {
namespace {

// Reads a JSON file and checks its top-level kind; parse errors name the file, line and column.
Result<nlohmann::ordered_json> read_json_file(const std::string& path, bool want_array, const char* what) {
    auto text = read_whole_file(path, kMaxJsonConfigBytes, what);
    if (!text) return text.take_error();
    if (Status depth = check_json_depth(*text, path); !depth) return depth.take_error();
    try {
        auto value = nlohmann::ordered_json::parse(*text);
        if (want_array && !value.is_array()) return make_error(path + ": " + what + " must be a JSON array");
        return value;
    } catch (const nlohmann::json::exception& e) {
        return make_error(path + ": invalid JSON: " + e.what());
    }
}

// The fallback renderer takes role/content strings; non-string content (parts lists) is shown as its JSON.
Result<std::vector<ChatMessage>> to_chat_messages(const nlohmann::ordered_json& array, const std::string& path) {
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < array.size(); ++i) {
        const auto& m = array[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            return make_error(path + ": message " + std::to_string(i) + " needs a string \"role\"");
        ChatMessage message;
        message.role = m["role"].get<std::string>();
        if (m.contains("content")) {
            const auto& content = m["content"];
            message.content = content.is_string() ? content.get<std::string>() : content.is_null() ? "" : content.dump();
        }
        messages.push_back(std::move(message));
    }
    return messages;
}

} // namespace

int run_template(const TemplateArgs& args) {
    const auto& template_path = args.template_file;
    if (args.positionals.size() > 1 || (args.positionals.empty() == !template_path))
        return fail("template", "expected either MODEL or --template FILE.jinja (exactly one)");
    const auto& messages_path = args.messages;
    if (!messages_path) return fail("template", "missing --messages MESSAGES.json");
    set_binary_stdio();

    TemplateOptions options;
    options.add_generation_prompt = !args.no_generation_prompt;
    std::string source, source_label;
    bool has_template = true;
    if (template_path) {
        auto text = read_whole_file(*template_path, kMaxChatTemplateBytes, "a chat template");
        if (!text) return fail("template", text.error());
        source = std::move(text.value());
        source_label = *template_path;
    } else {
        source_label = args.positionals[0];
        auto vocab = load_vocab_source(source_label);
        if (!vocab) return fail("template", vocab.error());
        const Tokenizer& tokenizer = *vocab->tokenizer;
        if (tokenizer.bos_id() >= 0) options.bos_token = tokenizer.piece(tokenizer.bos_id());
        if (tokenizer.eos_id() >= 0) options.eos_token = tokenizer.piece(tokenizer.eos_id());
        auto model_template = vocab->metadata.get_string("tokenizer.chat_template");
        has_template = model_template && !model_template->empty();
        if (has_template) source = std::move(*model_template);
    }
    if (args.bos) options.bos_token = *args.bos;
    if (args.eos) options.eos_token = *args.eos;
    if (const auto& kwargs = args.kwargs) {
        if (Status depth = check_json_depth(*kwargs, "--kwargs"); !depth) return fail("template", depth.error());
        try {
            if (!nlohmann::json::parse(*kwargs).is_object()) return fail("template", "--kwargs must be a JSON object");
        } catch (const nlohmann::json::exception& e) {
            return fail("template", std::string("--kwargs: invalid JSON: ") + e.what());
        }
        options.extra_kwargs_json = *kwargs;
    }
    if (const auto& tools_path = args.tools) {
        auto tools = read_json_file(*tools_path, true, "tools");
        if (!tools) return fail("template", tools.error());
        options.tools_json = tools->dump();
    }
    auto messages = read_json_file(*messages_path, true, "messages");
    if (!messages) return fail("template", messages.error());

    std::string prompt;
    if (has_template) {
        auto compiled = ChatTemplate::compile(std::move(source));
        if (!compiled) return fail("template", one_line(source_label + ": " + compiled.error()));
        auto rendered = compiled->render(messages->dump(), options);
        if (!rendered) return fail("template", one_line(source_label + ": " + rendered.error()));
        prompt = std::move(rendered.value());
    } else {
        auto list = to_chat_messages(*messages, *messages_path);
        if (!list) return fail("template", list.error());
        std::fputs("cflow template: model has no chat template; using the plain 'role: content' fallback\n", stderr);
        prompt = render_fallback_chat(*list, options.add_generation_prompt);
    }
    if (!write_stdout(prompt)) return fail("template", "cannot write stdout");
    return 0;
}

} // namespace cflow::cli
