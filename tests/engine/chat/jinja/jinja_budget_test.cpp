// The sandbox's budget beyond steps: what a render allocates (string copies, dict and list
// copies) and how long it runs. Each hostile template here hung or took gigabytes before the
// budget counted copies (issue 38): `dict(ns.d, **{...})` in a 100k loop never ended, a list of
// 4 MB strings reached 3.1 GB at 400 items. Every failure is ErrorKind::OverBudget with a
// message naming the limit; a template's own errors stay InvalidInput.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "cflow/engine/chat/chat_template.h"

namespace cflow {
namespace {

// The default budget without its clock: which limit a test meets must not depend on how fast
// the machine (or a sanitized build) is; the time limit has its own test.
TemplateOptions without_clock() {
    TemplateOptions options;
    options.time_limit_ms = 0;
    return options;
}

Result<std::string> render(const std::string& source, const TemplateOptions& options = without_clock(),
                           const std::string& messages = "[]") {
    auto tmpl = ChatTemplate::compile(source);
    if (!tmpl.ok()) return tmpl.take_error();
    return tmpl->render(messages, options);
}

void expect_over_budget(const Result<std::string>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << "rendered " << r->size() << " bytes";
    EXPECT_EQ(r.kind(), ErrorKind::OverBudget) << r.error();
    EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
}

const char* kQuadraticDict =
    "{%- set ns = namespace(d={}) -%}"
    "{%- for i in range(100000) -%}{%- set ns.d = dict(ns.d, **{('k' ~ i): i}) -%}{%- endfor -%}"
    "{{ ns.d | length }}";

TEST(JinjaBudget, QuadraticDictCopiesRunOutOfTheAllocationBudget) {
    // 100000 iterations are 2e5 steps, far inside the step budget; the copies are 5e9 entries.
    expect_over_budget(render(kQuadraticDict), "built or copied more than 256 MiB of strings, lists and dicts");
    // The same loop, short, renders: the budget counts copies, it does not forbid them.
    std::string small = kQuadraticDict;
    small.replace(small.find("100000"), 6, "300");
    auto r = render(small);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(*r, "300");
}

TEST(JinjaBudget, AListOfLargeStringsIsBoundedByWhatItCopies) {
    // Each `s` is a 4 MB copy, each `ns.l + [s]` copies every string again.
    expect_over_budget(render("{%- set s = 'x' * 4000000 -%}{%- set ns = namespace(l=[]) -%}"
                              "{%- for i in range(400) -%}{%- set ns.l = ns.l + [s] -%}{%- endfor -%}{{ ns.l | length }}"),
                       "more than 256 MiB");
    // Repetition is counted before the copies are made (1000 x 4 MB would be 4 GB).
    expect_over_budget(render("{%- set s = 'x' * 4000000 -%}{{ ([s] * 1000) | length }}"), "more than 256 MiB");
    // Copies through filters and methods are counted too.
    expect_over_budget(render("{%- set s = 'x' * 4000000 -%}{%- set l = [s, s, s, s] -%}"
                              "{%- for i in range(100) -%}{%- set c = l | list -%}{%- endfor -%}"),
                       "more than 256 MiB");
    expect_over_budget(render("{%- set d = {'a': 'x' * 4000000} -%}"
                              "{%- for i in range(100) -%}{%- set c = d.items() | list -%}{%- endfor -%}"),
                       "more than 256 MiB");
    // A smaller budget is the caller's to choose.
    TemplateOptions small = without_clock();
    small.max_allocated_bytes = 1 << 20;
    expect_over_budget(render("{%- set s = 'x' * 100000 -%}{% for i in range(20) %}{% set t = s %}{% endfor %}", small),
                       "more than 1 MiB");
}

TEST(JinjaBudget, ATimeLimitStopsWorkTheOtherBudgetsAllow) {
    // 9e6 loop iterations with the step and allocation budgets lifted: seconds of work.
    TemplateOptions slow;
    slow.max_steps = UINT64_MAX / 2;
    slow.max_allocated_bytes = UINT64_MAX / 2;
    slow.time_limit_ms = 50;
    expect_over_budget(render("{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}", slow),
                       "template ran longer than 50 ms");
}

TEST(JinjaBudget, EveryLimitIsOverBudgetAndTheTemplatesOwnErrorsAreNot) {
    expect_over_budget(render("{% for i in range(100000000) %}{% endfor %}"), "steps");
    expect_over_budget(render("{{ 'x' * 100000000 }}"), "output larger than");
    expect_over_budget(render("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}"), "deeper than");
    auto raised = render("{{ raise_exception('no system role') }}");
    ASSERT_FALSE(raised.ok());
    EXPECT_EQ(raised.kind(), ErrorKind::InvalidInput) << raised.error();
    auto division = render("{{ 1 // 0 }}");
    ASSERT_FALSE(division.ok());
    EXPECT_EQ(division.kind(), ErrorKind::InvalidInput) << division.error();
}

TEST(JinjaBudget, ALongConversationStaysFarInsideTheBudget) {
    // 400 messages of 10 KB (4 MB, the output cap), rendered by a template that reads the first
    // message in every iteration, as several real ones do.
    std::string messages = "[";
    for (int i = 0; i < 400; ++i)
        messages += std::string(i ? "," : "") + R"({"role":")" + (i % 2 ? "assistant" : "user") + R"(","content":")" +
                    std::string(10000 - 100, 'a' + char(i % 26)) + "\"}";
    messages += "]";
    const std::string chatml =
        "{% for m in messages %}{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% endif %}"
        "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}";
    auto r = render(chatml, TemplateOptions{}, messages);  // with the clock: a real render fits it
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_GT(r->size(), 3'900'000u);
}

TEST(JinjaBudget, TheLoadProbeRefusesAHostileTemplateAndPassesARealOne) {
    auto hostile = ChatTemplate::compile(kQuadraticDict);
    ASSERT_TRUE(hostile.ok()) << hostile.error();
    const Status refused = probe_chat_template(*hostile, TemplateOptions{});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.kind(), ErrorKind::OverBudget);
    EXPECT_NE(refused.error().find("test conversation"), std::string::npos) << refused.error();
    // The probe tightens the caller's limits to the load-time budget, never loosens them.
    EXPECT_TRUE(refused.error().find("more than 64 MiB") != std::string::npos ||
                refused.error().find("ran longer than 2000 ms") != std::string::npos)
        << refused.error();

    // A template that refuses a system message on purpose is not over budget.
    auto picky = ChatTemplate::compile(
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
        "{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}");
    ASSERT_TRUE(picky.ok());
    EXPECT_TRUE(probe_chat_template(*picky, TemplateOptions{}).ok());
}

} // namespace
} // namespace cflow
