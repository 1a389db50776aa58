// Bounded-time robustness of the chat-template sandbox: thousands of mutated real templates
// (span deletion/insertion/duplication, Jinja fragments, random bytes and invalid UTF-8,
// truncation) must compile and render without crashing or hanging. Errors are expected and
// fine, but each must be a normal template error naming a line and column. Deterministic seed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/chat/chat_template.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;

// Used when ../shared is absent, so the test still exercises the parser and interpreter.
const char* const kBuiltinSeeds[] = {
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    "{%- set ns = namespace(sys='') -%}{%- for m in messages -%}{%- if m.role == 'system' -%}{%- set ns.sys = m.content -%}"
    "{%- else -%}{{ bos_token }}[{{ m.role | upper }}] {{ m.content | trim }}{{ eos_token }}{%- endif -%}{%- endfor -%}"
    "{%- if tools is defined and tools -%}{{ tools | tojson(indent=2) }}{%- endif -%}{{ ns.sys }}",
    "{% macro render(v) %}{% if v is mapping %}{% for k, x in v | dictsort %}{{ k }}={{ render(x) }};{% endfor %}"
    "{% elif v is string %}{{ v | e }}{% else %}{{ v | tojson }}{% endif %}{% endmacro %}"
    "{% for m in messages %}{% call(x) render(m) %}{{ x }}{% endcall %}{{ m | items | list | length }}{% endfor %}",
};

std::vector<std::string> load_seeds() {
    std::vector<std::string> seeds(std::begin(kBuiltinSeeds), std::end(kBuiltinSeeds));
    fs::path dir = cflow::test::shared_asset("assets/chat-templates/llama.cpp-models-templates");
    if (!dir.empty() && fs::exists(dir)) {
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.path().extension() == ".jinja") files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        for (const fs::path& file : files) {
            std::ifstream in(file, std::ios::binary);
            std::stringstream ss;
            ss << in.rdbuf();
            seeds.push_back(ss.str());
        }
    }
    return seeds;
}

const char* const kFragments[] = {
    "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "(", ")", "[", "]", "{", "}", "|", "'", "\"", "\\",
    ",", ":", ".", "~", "**", "//", " if ", " else ", " in ", " not ", " is ", " and ", " or ", "{% endfor %}",
    "{% endif %}", "{% else %}", "{% for x in messages %}", "{% if loop.last %}", "{% macro m(a, b=1) %}",
    "{% endmacro %}", "{% call m(1) %}", "{% endcall %}", "{% set ns.x = 1 %}", "{% set x = [x, x] %}", "{{ m(m(1)) }}",
    "{% raw %}", "{% endraw %}", "{% filter upper %}", "{% break %}", "{{ range(99999999) }}", "* 99999999",
    "| tojson(indent=99)", "| join(x)", ".pop()", ".append(x)", "namespace(", "raise_exception('boom')", "loop.cycle(",
    "caller()", "{{ x[::-1] }}", "'%s' % ", ".format(", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x98\x80", "\x00",
};

// Swapping one of these for another keeps most templates parseable, so the mutant reaches
// the interpreter with unexpected types and values.
const char* const kOperands[] = {
    "messages", "message", "loop", "ns", "tools", "tool", "content", "role", "none", "true", "false", "0", "1", "-1",
    "''", "[]", "{}", "range(5)", "add_generation_prompt", "bos_token", "index0", "length", "tojson", "trim",
    "string", "first", "last", "upper", "items", "tool_calls", "'x' * 70", "9223372036854775807", "1.5e300",
};

class Mutator {
public:
    explicit Mutator(uint32_t seed) : rng_(seed) {}

    std::string mutate(const std::vector<std::string>& seeds) {
        std::string s = seeds[pick(seeds.size())];
        int rounds = pick(10) < 6 ? 1 : 1 + static_cast<int>(pick(4));
        for (int r = 0; r < rounds; ++r) mutate_once(s, seeds);
        return s;
    }

    size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

private:
    std::mt19937 rng_;

    void mutate_once(std::string& s, const std::vector<std::string>& seeds) {
        size_t pos = pick(s.size() + 1);
        size_t len = 1 + pick(64);
        switch (pick(9)) {
        case 0: s.erase(pos, len); break;  // delete a span
        case 1: {                          // insert a span from some template
            const std::string& donor = seeds[pick(seeds.size())];
            size_t from = pick(donor.size() + 1);
            s.insert(pos, donor.substr(from, len));
            break;
        }
        case 2: s.insert(pos, s.substr(pos, len)); break;  // duplicate a span
        case 3: s.insert(pos, kFragments[pick(std::size(kFragments))]); break;
        case 4:  // random bytes, including invalid UTF-8 and NUL
            for (size_t i = 0; i < std::min<size_t>(len, 8) && !s.empty(); ++i) s[pick(s.size())] = static_cast<char>(pick(256));
            break;
        case 5: s.resize(pos); break;  // truncate
        case 6:
        case 7: {  // replace one operand word by another, keeping the syntax mostly intact
            const std::string from = kOperands[pick(std::size(kOperands))];
            size_t at = s.find(from, pick(s.size() + 1));
            if (at == std::string::npos) at = s.find(from);
            if (at != std::string::npos) s.replace(at, from.size(), kOperands[pick(std::size(kOperands))]);
            break;
        }
        default: {  // swap two spans
            size_t other = pick(s.size() + 1);
            std::string a = s.substr(pos, len);
            s.erase(pos, len);
            other = std::min(other, s.size());
            s.insert(other, a);
            break;
        }
        }
    }
};

TEST(JinjaFuzz, MutatedTemplatesNeverCrashOrHang) {
    const std::vector<std::string> seeds = load_seeds();
    const std::string messages = R"([
        {"role": "system", "content": "sys \u00e9"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "abc123def", "type": "function",
          "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}]},
        {"role": "tool", "content": "{\"temp\": 20}", "tool_call_id": "abc123def"},
        {"role": "user", "content": [{"type": "text", "text": "multi"}]}])";
    cflow::TemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    options.tools_json = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";
    options.max_steps = 20000;
    options.max_output_bytes = 256 << 10;

    const int kMutants = 6000;
    const double kBudgetSeconds = 15.0;  // the whole test must stay well under 20 s
    Mutator mutator(0xC0FFEEu);
    int compiled = 0, rendered = 0, compile_errors = 0, render_errors = 0, ran = 0;
    auto start = std::chrono::steady_clock::now();
    auto check_error = [](const std::string& source, const std::string& error) {
        EXPECT_EQ(error.find("internal error"), std::string::npos) << error << "\nsource:\n" << source;
        EXPECT_NE(error.find("line "), std::string::npos) << error << "\nsource:\n" << source;
    };
    for (int i = 0; i < kMutants; ++i) {
        std::string source = mutator.mutate(seeds);
        if (i % 10 == 9) {  // now and then pure garbage
            source.resize(mutator.pick(200));
            for (char& c : source) c = static_cast<char>(mutator.pick(256));
        }
        ++ran;
        auto tmpl = cflow::ChatTemplate::compile(source);
        if (!tmpl.ok()) {
            ++compile_errors;
            check_error(source, tmpl.error());
        } else {
            ++compiled;
            options.add_generation_prompt = (i & 1) == 0;
            options.immutable_sandbox = (i & 2) == 0;  // both: the mutating methods run in half the renders
            auto out = tmpl->render(messages, options);
            if (out.ok()) {
                ++rendered;
                EXPECT_LE(out->size(), options.max_output_bytes);
            } else {
                ++render_errors;
                check_error(source, out.error());
            }
        }
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kBudgetSeconds) break;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ jinja fuzz ] %d mutants in %.1f s: %d compiled (%d rendered, %d render errors), %d compile errors\n",
                ran, seconds, compiled, rendered, render_errors, compile_errors);
    EXPECT_GE(ran, 2000) << "too slow: the time budget ran out early";
    EXPECT_GT(rendered, 0);
    EXPECT_GT(compile_errors, 0);
}

TEST(JinjaFuzz, HostileValidTemplatesHitLimits) {
    // Each of these is syntactically valid and would run unbounded without the sandbox.
    const char* const hostile[] = {
        "{% for i in range(999999999) %}x{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "{% set ns = namespace(l=[0]) %}{% for i in range(100) %}{% set ns.l = ns.l * 2 %}{% endfor %}",
        "{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(0) }}",
        "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}",
        "{{ 'ab' * 999999999 }}",
        "{% set l = [1] %}{% for i in range(100000) %}{% set _ = l.append(l) %}{% endfor %}{{ l | tojson }}",
        "{% set d = {} %}{% set _ = d.update({'self': d}) %}{{ d }}",
    };
    cflow::TemplateOptions options;
    options.max_steps = 200000;
    options.max_output_bytes = 1 << 20;
    options.immutable_sandbox = false;  // the self-containing list and dict need append/update
    for (const char* source : hostile) {
        auto start = std::chrono::steady_clock::now();
        auto tmpl = cflow::ChatTemplate::compile(source);
        ASSERT_TRUE(tmpl.ok()) << source << ": " << tmpl.error();
        auto out = tmpl->render("[]", options);
        EXPECT_FALSE(out.ok()) << source;
        if (!out.ok()) {
            EXPECT_NE(out.error().find("line "), std::string::npos) << out.error();
        }
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0) << source;
    }
}

} // namespace
