#include "chat_args.h"

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/formats/whole_file.h"

namespace cflow::cli {

Result<TemplateChoice> parse_template_arg(const Args& args) {
    const auto value = args.value(kTemplateOption);
    if (!value || *value == "model") return TemplateChoice{};
    if (find_builtin_template(*value)) return TemplateChoice{TemplateChoice::Kind::Builtin, *value};
    auto source = read_whole_file(*value, kMaxChatTemplateBytes, "chat template");
    if (!source) {
        std::string names = "model";
        for (const BuiltinTemplate& t : builtin_chat_templates()) names += ", " + std::string(t.name);
        return make_error(ErrorKind::InvalidInput, std::string(kTemplateOption) + " " + *value +
                                                       ": neither a built-in template (" + names + ") nor a readable file: " +
                                                       source.error());
    }
    return TemplateChoice{TemplateChoice::Kind::Custom, std::move(source).value()};
}

Result<ContextPolicy> parse_context_policy_arg(const Args& args, ContextPolicy fallback) {
    const auto value = args.value(kContextPolicyOption);
    if (!value) return fallback;
    if (*value == "stop") return ContextPolicy::Stop;
    if (*value == "drop-oldest") return ContextPolicy::DropOldest;
    if (*value == "sliding-window") return ContextPolicy::SlidingWindow;
    return make_error(ErrorKind::InvalidInput, std::string(kContextPolicyOption) + " '" + *value +
                                                   "': expected stop, drop-oldest or sliding-window");
}

Result<std::optional<bool>> parse_thinking_arg(const Args& args) {
    const auto value = args.value(kThinkingOption);
    if (!value) return std::optional<bool>{};
    if (*value == "on") return std::optional<bool>{true};
    if (*value == "off") return std::optional<bool>{false};
    return make_error(ErrorKind::InvalidInput, std::string(kThinkingOption) + " '" + *value + "': expected on or off");
}

} // namespace cflow::cli
