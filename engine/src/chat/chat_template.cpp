// The chat-template layer: binds the transformers chat variables and globals
// (raise_exception, strftime_now) to the sandboxed Jinja interpreter and converts its internal
// errors into cflow::Error.
#include "cflow/engine/chat/chat_template.h"

#include "cflow/formats/json_depth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <new>

#include <nlohmann/json.hpp>

#include "chat/jinja/jinja_interpreter.h"
#include "chat/jinja/jinja_parser.h"

namespace cflow {

struct ChatTemplate::Compiled {
    std::string source;
    // Parsed with trim_blocks = lstrip_blocks = true (the transformers setup); other
    // whitespace options re-parse at render time because they change the token stream.
    std::unique_ptr<jinja::Program> program;
};

namespace {

using jinja::Value;

std::tm local_now() {
    // std::localtime shares a static buffer; serialize the call and copy the result out.
    static std::mutex mutex;
    std::time_t now = std::time(nullptr);
    std::tm local{};
    std::lock_guard<std::mutex> lock(mutex);
    const std::tm* tm = std::localtime(&now);
    if (tm) local = *tm;
    return local;
}

// The broken-down time of a fixed TemplateTime, weekday and day of the year included (%a, %A,
// %j, %U, %W read them).
std::tm fixed_tm(const TemplateTime& t) {
    using namespace std::chrono;
    const year_month_day date{year{t.year}, month{static_cast<unsigned>(t.month)}, day{static_cast<unsigned>(t.day)}};
    if (!date.ok() || t.hour < 0 || t.hour > 23 || t.minute < 0 || t.minute > 59 || t.second < 0 || t.second > 60)
        jinja::fail("TemplateOptions::now is not a valid date and time");
    const sys_days days{date};
    std::tm tm{};
    tm.tm_year = t.year - 1900;
    tm.tm_mon = t.month - 1;
    tm.tm_mday = t.day;
    tm.tm_hour = t.hour;
    tm.tm_min = t.minute;
    tm.tm_sec = t.second;
    tm.tm_wday = static_cast<int>(weekday{days}.c_encoding());
    tm.tm_yday = static_cast<int>((days - sys_days{date.year() / January / 1}).count());
    tm.tm_isdst = -1;
    return tm;
}

std::string format_time(const std::string& format, const std::tm& time) {
    if (format.empty()) return "";
    std::string buffer(256 + format.size() * 8, '\0');
    size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &time);
    buffer.resize(n);
    return buffer;
}

jinja::ScopePtr make_chat_globals(const std::optional<TemplateTime>& now) {
    jinja::ScopePtr globals = jinja::make_builtin_scope();
    globals->vars["raise_exception"] = Value::callable("raise_exception", [](jinja::Interpreter& in, jinja::CallArgs& args) -> Value {
        jinja::fail(args.positional.empty() ? std::string("raise_exception() called") : in.str(args.positional[0]));
    });
    const std::optional<std::tm> fixed = now ? std::optional<std::tm>(fixed_tm(*now)) : std::nullopt;
    globals->vars["strftime_now"] = Value::callable("strftime_now", [fixed](jinja::Interpreter&, jinja::CallArgs& args) {
        if (args.positional.empty() || !args.positional[0].is_string()) jinja::fail("strftime_now(format) needs a format string");
        return Value(format_time(args.positional[0].str(), fixed ? *fixed : local_now()));
    });
    return globals;
}

Value parse_json_argument(const std::string& text, const char* what) {
    try {
        return jinja::parse_json_value(text);
    } catch (jinja::JinjaError& e) {
        jinja::fail(std::string(what) + ": " + e.message);
    }
}

} // namespace

ChatTemplate::ChatTemplate(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}

const std::string& ChatTemplate::source() const { return compiled_->source; }

Result<ChatTemplate> ChatTemplate::compile(std::string source) {
    try {
        auto compiled = std::make_shared<Compiled>();
        compiled->program = jinja::parse_template(source, jinja::LexerOptions{true, true});
        compiled->source = std::move(source);
        return ChatTemplate(std::move(compiled));
    } catch (const jinja::JinjaError& e) {
        return make_error("chat template: " + e.message);
    } catch (const std::bad_alloc&) {
        return make_error("chat template: out of memory while compiling");
    } catch (const std::exception& e) {
        return make_error(std::string("chat template: internal error while compiling: ") + e.what());
    }
}

Result<std::string> ChatTemplate::render(const std::string& messages_json, const TemplateOptions& options) const {
    jinja::ContainerRegistry registry;  // declared first: outlives every Value of this render
    try {
        const jinja::Program* program = compiled_->program.get();
        std::unique_ptr<jinja::Program> reparsed;
        if (!options.trim_blocks || !options.lstrip_blocks) {
            reparsed = jinja::parse_template(compiled_->source, jinja::LexerOptions{options.trim_blocks, options.lstrip_blocks});
            program = reparsed.get();
        }
        Value messages = parse_json_argument(messages_json, "messages_json");
        if (!messages.is_array()) jinja::fail("messages_json must be a JSON array, got " + jinja::type_name(messages));

        jinja::ScopePtr globals = make_chat_globals(options.now);
        globals->vars["messages"] = messages;
        globals->vars["add_generation_prompt"] = Value(options.add_generation_prompt);
        globals->vars["bos_token"] = Value(options.bos_token);
        globals->vars["eos_token"] = Value(options.eos_token);
        if (!options.tools_json.empty()) globals->vars["tools"] = parse_json_argument(options.tools_json, "tools_json");
        if (!options.extra_kwargs_json.empty()) {
            Value extra = parse_json_argument(options.extra_kwargs_json, "extra_kwargs_json");
            if (!extra.is_object()) jinja::fail("extra_kwargs_json must be a JSON object");
            for (const auto& [key, value] : extra.obj().entries()) globals->vars[key.str()] = value;
        }

        jinja::Limits limits;
        limits.max_steps = options.max_steps;
        limits.immutable = options.immutable_sandbox;
        limits.max_output_bytes = static_cast<size_t>(std::min<uint64_t>(options.max_output_bytes, SIZE_MAX / 4));
        limits.max_allocated_bytes = options.max_allocated_bytes;
        limits.max_wall_ms = options.time_limit_ms;
        jinja::Interpreter interpreter(limits);
        return interpreter.render(*program, globals);
    } catch (const jinja::JinjaError& e) {
        return make_error(e.over_budget ? ErrorKind::OverBudget : ErrorKind::InvalidInput, "chat template: " + e.message);
    } catch (const std::bad_alloc&) {
        return make_error("chat template: out of memory while rendering");
    } catch (const std::length_error&) {
        return make_error("chat template: value too large while rendering");
    } catch (const std::exception& e) {
        // A bug in the interpreter, not in the template; reported rather than thrown across the API.
        return make_error(std::string("chat template: internal error while rendering: ") + e.what());
    }
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages, const TemplateOptions& options) const {
    using json = nlohmann::ordered_json;
    json array = json::array();
    try {
        for (size_t i = 0; i < messages.size(); ++i) {
            json m = json::object();
            m["role"] = messages[i].role;
            m["content"] = messages[i].content;
            if (!messages[i].extra_json.empty()) {
                if (Status depth = check_json_depth(messages[i].extra_json, "chat template: message " + std::to_string(i));
                    !depth)
                    return depth.take_error();
                json extra = json::parse(messages[i].extra_json);
                if (!extra.is_object())
                    return make_error("chat template: message " + std::to_string(i) + " extra_json must be a JSON object");
                for (auto it = extra.begin(); it != extra.end(); ++it) m[it.key()] = it.value();
            }
            array.push_back(std::move(m));
        }
        // Invalid UTF-8 in a content becomes U+FFFD instead of failing the whole render.
        return render(array.dump(-1, ' ', false, json::error_handler_t::replace), options);
    } catch (const json::exception& e) {
        return make_error(std::string("chat template: message extra_json: ") + e.what());
    } catch (const std::bad_alloc&) {
        return make_error("chat template: out of memory while preparing messages");
    }
}

std::string render_fallback_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    std::string out;
    for (const ChatMessage& m : messages) {
        out += m.role;
        out += ": ";
        out += m.content;
        out += '\n';
    }
    if (add_generation_prompt) out += "assistant: ";
    return out;
}

const std::vector<std::vector<ChatMessage>>& chat_template_probes() {
    static const std::vector<std::vector<ChatMessage>> probes = {
        {{"system", "s", ""}, {"user", "u", ""}, {"assistant", "a", ""}, {"user", "v", ""}},
        {{"user", "u", ""}, {"assistant", "a", ""}, {"user", "v", ""}},
    };
    return probes;
}

Status probe_chat_template(const ChatTemplate& chat_template, TemplateOptions options) {
    options.time_limit_ms =
        options.time_limit_ms == 0 ? kTemplateProbeTimeLimitMs : std::min(options.time_limit_ms, kTemplateProbeTimeLimitMs);
    options.max_allocated_bytes = std::min(options.max_allocated_bytes, kTemplateProbeMaxAllocatedBytes);
    for (bool add_generation_prompt : {true, false}) {
        options.add_generation_prompt = add_generation_prompt;
        for (const auto& probe : chat_template_probes()) {
            auto rendered = chat_template.render(probe, options);
            if (!rendered && rendered.kind() == ErrorKind::OverBudget)
                return make_error(ErrorKind::OverBudget, rendered.error() + " while rendering a " +
                                                             std::to_string(probe.size()) + "-message test conversation");
        }
    }
    return {};
}

} // namespace cflow
