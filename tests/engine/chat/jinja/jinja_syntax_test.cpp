// Focused tests of the sandboxed Jinja interpreter behind cflow::ChatTemplate. Expected
// strings were produced by Python jinja2 3.1.6 configured like transformers (trim_blocks,
// lstrip_blocks, loopcontrols, transformers' tojson), except where a test says otherwise.
#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/chat/chat_template.h"

namespace {

using cflow::ChatTemplate;
using cflow::TemplateOptions;

cflow::Result<std::string> render(const std::string& source, const TemplateOptions& options = {},
                                  const std::string& messages = "[]") {
    auto tmpl = ChatTemplate::compile(source);
    if (!tmpl.ok()) return tmpl.take_error();
    return tmpl->render(messages, options);
}

std::string ok(const std::string& source, const TemplateOptions& options = {}) {
    auto out = render(source, options);
    EXPECT_TRUE(out.ok()) << source << "\n" << (out.ok() ? "" : out.error());
    return out.ok() ? *out : "<error>";
}

std::string error_of(const std::string& source, const TemplateOptions& options = {}) {
    auto out = render(source, options);
    EXPECT_FALSE(out.ok()) << source << " rendered '" << (out.ok() ? *out : "") << "'";
    return out.ok() ? "" : out.error();
}

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// A plain jinja2 Environment's rules: list.append, dict.update and the other methods that modify
// their object work (transformers' immutable sandbox, the default, refuses them).
TemplateOptions mutable_env() {
    TemplateOptions options;
    options.immutable_sandbox = false;
    return options;
}

TEST(JinjaSyntax, ArithmeticFollowsPython) {
    EXPECT_EQ(ok("{{ 7 // 2 }},{{ -7 // 2 }},{{ 7 % -3 }},{{ -7 % 3 }},{{ 7 / 2 }},{{ 2 ** 10 }},{{ 2 ** -1 }},{{ 10 / 4 * 2 }}"),
              "3,-4,-2,2,3.5,1024,0.5,5.0");
    EXPECT_EQ(ok("{{ 1.0 }},{{ 0.1 + 0.2 }},{{ 1e20 }},{{ 1.5e-7 }},{{ 123456789012345678.0 }},{{ -0.0 }},{{ 3.0 * 2 }}"),
              "1.0,0.30000000000000004,1e+20,1.5e-07,1.2345678901234568e+17,-0.0,6.0");
    EXPECT_EQ(ok("{{ 1 + True }},{{ True + True }},{{ 1 == 1.0 }},{{ 'a' < 'b' }},{{ [1, 2] < [1, 3] }},{{ 1 < 2 < 3 }},{{ 3 > 2 > 2 }}"),
              "2,2,True,True,True,True,False");
    EXPECT_EQ(ok("{{ 'a' ~ 1 ~ none ~ true }},{{ 'x' * 3 }},{{ 3 * [0] }},{{ (1, 2) + (3,) }},{{ (1,) }},{{ () }}"),
              "a1NoneTrue,xxx,[0, 0, 0],(1, 2, 3),(1,),()");
    // jinja2 binds unary minus tighter than ** and filters to the unary operand.
    EXPECT_EQ(ok("{{ 'yes' if 1 else 'no' }},{{ 'yes' if 0 }}|{{ 'a' if none else 'b' if false else 'c' }},{{ not 1 == 2 }},"
                 "{{ -2 ** 2 }},{{ (-2) ** 2 }},{{ - 3 | abs }}"),
              "yes,|c,True,4,4,3");
    EXPECT_EQ(ok("{{ '' or 'empty' }},{{ 0 and 1 }},{{ [] or {} }},{{ 'a' + [] | length | string + 'b' }}"), "empty,0,{},a0b");
    EXPECT_TRUE(contains(error_of("{{ 1 / 0 }}"), "division by zero"));
    EXPECT_TRUE(contains(error_of("{{ 'a' + 1 }}"), "unsupported operand type(s) for +: 'str' and 'int'"));
    EXPECT_TRUE(contains(error_of("{{ 9223372036854775807 + 1 }}"), "integer overflow"));
    EXPECT_TRUE(contains(error_of("{{ 1 < 'a' }}"), "'<' not supported between instances of 'int' and 'str'"));
}

TEST(JinjaSyntax, ReprAndStringLiterals) {
    EXPECT_EQ(ok(R"({{ "it's" }}|{{ ["it's", 'say "hi"', 'both \' "'] }}|{{ {'k': none, 1: true, 2.5: [1.0]} }})"),
              R"(it's|["it's", 'say "hi"', 'both \' "']|{'k': None, 1: True, 2.5: [1.0]})");
    EXPECT_EQ(ok(R"({{ "esc\ttab\\ \x41\u00e9\101" }})"), "esc\ttab\\ A\xc3\xa9" "A");
    EXPECT_EQ(ok("{{ 'adjacent' ' literals' }}"), "adjacent literals");
}

TEST(JinjaSyntax, SlicingAndUnicodeIndexing) {
    EXPECT_EQ(ok("{{ [1, 2, 3, 4, 5][1:4:2] }},{{ 'h\xc3\xa9llo w\xc3\xb6rld'[1:4] }},{{ 'h\xc3\xa9llo'[-1] }},"
                 "{{ 'h\xc3\xa9llo' | length }},{{ 'h\xc3\xa9llo'[::-1] }}"),
              "[2, 4],\xc3\xa9ll,o,5,oll\xc3\xa9h");
    EXPECT_EQ(ok("{% set x = [0, 1, 2, 3] %}{{ x[::-1] }}{{ x[-2::-2] }}{{ x[10:] }}{{ x[-10:2] }}"), "[3, 2, 1, 0][2, 0][][0, 1]");
    EXPECT_TRUE(contains(error_of("{{ [1][::0] }}"), "slice step cannot be zero"));
}

TEST(JinjaSyntax, StringMethods) {
    EXPECT_EQ(ok(R"({{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}{{ 'a b c'.rsplit(' ', 1) }}{{ 'a\nb\r\nc'.splitlines() }})"),
              "['a', 'b', '', 'c']['a', 'b']['a', 'b c']['a b', 'c']['a', 'b', 'c']");
    EXPECT_EQ(ok("{{ 'Hello World'.find('o') }},{{ 'Hello World'.rfind('o') }},{{ 'hello'.count('l') }},"
                 "{{ 'abc'.startswith(('x', 'a')) }},{{ 'abc'.endswith('bc', 0, 2) }}"),
              "4,7,2,True,False");
    EXPECT_EQ(ok("{{ 'hello world'.title() }},{{ \"they're bill's\" | title }},{{ \"they're bill's\".title() }},"
                 "{{ 'hELLO'.capitalize() }},{{ 'ab' | center(6) }}|{{ 'x'.center(4, '*') }}"),
              "Hello World,They're Bill's,They'Re Bill'S,Hello,  ab  |*x**");
    EXPECT_EQ(ok("{{ '{} and {}'.format(1, 'b') }},{{ '{0}{1}{0}'.format('a', 'b') }},{{ '{name}!'.format(name='Bob') }},"
                 "{{ '{:>5}|{:<5}|{:^5}|{:05d}|{:.2f}'.format('r', 'l', 'c', 42, 3.14159) }}"),
              "1 and b,aba,Bob!,    r|l    |  c  |00042|3.14");
    EXPECT_EQ(ok("{{ '%s is %d years, %.2f%%' % ('Al', 30, 99.5) }},{{ '%5s|%-5s|' % ('a', 'b') }},"
                 "{{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }},{{ \"%s\" | format('x') }}"),
              "Al is 30 years, 99.50%,    a|b    |,1-2,x");
    EXPECT_EQ(ok("{{ 'xxhixx'.strip('x') }}|{{ '  hi '.lstrip() }}|{{ 'hi\n'.rstrip() }}|{{ 'a-b-c'.replace('-', '+', 1) }}"),
              "hi|hi |hi|a+b-c");
    EXPECT_EQ(ok("{{ ', '.join(['a', 'b']) }}|{{ 'AbC'.lower() }}{{ 'AbC'.upper() }}"), "a, b|abcABC");
    EXPECT_TRUE(contains(error_of("{{ 'abc'.nosuchmethod() }}"), "has no attribute 'nosuchmethod'"));
}

TEST(JinjaSyntax, Filters) {
    EXPECT_EQ(ok("{{ [3, 1, 2] | sort }},{{ ['b', 'A', 'c'] | sort }},{{ ['b', 'A', 'c'] | sort(case_sensitive=true) }},"
                 "{{ [{'n': 2}, {'n': 1}] | sort(attribute='n') | map(attribute='n') | list }},{{ [3,1,2] | sort(reverse=true) }}"),
              "[1, 2, 3],['A', 'b', 'c'],['A', 'b', 'c'],[1, 2],[3, 2, 1]");
    EXPECT_EQ(ok("{{ {'b': 1, 'A': 2, 'c': 0} | dictsort }},{{ {'b': 1, 'a': 2} | dictsort(by='value') }},"
                 "{{ {'b': 1, 'a': 2} | dictsort(reverse=true) }}"),
              "[('A', 2), ('b', 1), ('c', 0)],[('b', 1), ('a', 2)],[('b', 1), ('a', 2)]");
    EXPECT_EQ(ok("{{ [1, 2, 3] | sum }},{{ [1.5, 2] | sum }},{{ [{'v': 2}, {'v': 3}] | sum(attribute='v') }},"
                 "{{ [3, 1, 2] | min }},{{ ['b', 'A'] | max }},{{ [] | max }}|"),
              "6,3.5,5,1,b,|");
    EXPECT_EQ(ok("{{ [1, 2, 3, 4, 5] | batch(2) | list }},{{ [1, 2, 3] | batch(2, 'x') | list }},"
                 "{{ 'one two  three' | wordcount }},{{ [1, 2] | reverse | list }},{{ 'abc' | reverse }}"),
              "[[1, 2], [3, 4], [5]],[[1, 2], [3, 'x']],3,[2, 1],cba");
    EXPECT_EQ(ok("{{ 'a&b<c>\"d\\'' | e }},{{ 'x' | escape }},{{ -3 | abs }},{{ 2.5 | round }},{{ 3.5 | round }},"
                 "{{ 2.675 | round(2) }},{{ 2.1 | round(0, 'ceil') }},{{ 5 | round }},{{ 2.7 | round(method='floor') }}"),
              "a&amp;b&lt;c&gt;&#34;d&#39;,x,3,2.0,4.0,2.67,3.0,5,2.0");
    EXPECT_EQ(ok("{{ '42' | int }},{{ '4.7' | int }},{{ 'x' | int(7) }},{{ 'ff' | int(base=16) }},{{ '3.5' | float }},"
                 "{{ 'x' | float }},{{ true | int }},{{ 7 | float }},{{ 7 | string }}"),
              "42,4,7,255,3.5,0.0,1,7.0,7");
    EXPECT_EQ(ok("{{ [1, none, 'a'] | select | list }},{{ [1, 2, 3, 4] | select('odd') | list }},{{ [1, 2, 3, 4] | reject('even') | list }},"
                 "{{ [1, 2, 3] | select('>', 1) | list }},{{ [1,2,3] | select('divisibleby', 3) | list }}"),
              "[1, 'a'],[1, 3],[1, 3],[2, 3],[3]");
    EXPECT_EQ(ok("{{ [{'a': 1, 'b': {'c': 5}}, {'a': 0}] | selectattr('a') | list }},{{ [{'b': {'c': 5}}, {'b': {'c': 6}}] | map(attribute='b.c') | list }},"
                 "{{ [{'x': 1}, {}] | map(attribute='x', default=9) | list }}"),
              "[{'a': 1, 'b': {'c': 5}}],[5, 6],[1, 9]");
    EXPECT_EQ(ok("{{ ['a', 'B'] | map('upper') | join('-') }},{{ [1, 2] | join }},{{ [{'n': 'a'}, {'n': 'b'}] | join(', ', attribute='n') }},"
                 "{{ ['x', 'X', 'y'] | unique | list }},{{ ['x', 'X'] | unique(case_sensitive=true) | list }}"),
              "A-B,12,a, b,['x', 'y'],['x', 'X']");
    EXPECT_EQ(ok("{{ 'abc' | first }},{{ [1, 2] | last }},{{ {'k': 1, 'j': 2} | first }},{{ [] | first is defined }},"
                 "{{ 'ab' | list }},{{ {'a': 1} | list }},{{ {'a': 1} | items | list }}"),
              "a,2,k,False,['a', 'b'],['a'],[('a', 1)]");
    EXPECT_EQ(ok("{% set t = 'a\\nb\\n' %}{{ t | indent(2) }}|{{ t | indent(2, first=true) }}|{{ '  x ' | trim }}|{{ 'x' | safe }}"),
              "a\n  b\n|  a\n  b\n|x|x");
    EXPECT_EQ(ok("{{ undefined_var | default('dflt') }},{{ none | default('dflt') }},{{ none | default('dflt', true) }},{{ none | d('d') }}"),
              "dflt,None,dflt,None");
    EXPECT_EQ(ok("{{ '[1, {\"a\": true}]' | from_json | tojson }}"), "[1, {\"a\": true}]");
    EXPECT_TRUE(contains(error_of("{{ 1 | items }}"), "Can only get item pairs from a mapping"));
}

TEST(JinjaSyntax, TojsonMatchesTransformers) {
    // json.dumps(ensure_ascii=False): insertion order kept, Python separators, no HTML escaping.
    EXPECT_EQ(ok("{{ {'z': [1, {'b': '\xc3\xa9\"\\n<>&'}], 'c': none, 'd': 1.0, 'e': false} | tojson }}"),
              "{\"z\": [1, {\"b\": \"\xc3\xa9\\\"\\n<>&\"}], \"c\": null, \"d\": 1.0, \"e\": false}");
    EXPECT_EQ(ok("{{ {'a': [1, {'b': 2}], 'c': []} | tojson(indent=2) }}"),
              "{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ],\n  \"c\": []\n}");
    EXPECT_EQ(ok("{{ {'a': 1, 'b': [1, 2]} | tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|"
                 "{{ '\xc3\xa9' | tojson(ensure_ascii=true) }}|{{ '\xf0\x9f\x98\x80' | tojson(ensure_ascii=true) }}"),
              "{\"a\":1,\"b\":[1,2]}|{\"a\": 2, \"b\": 1}|\"\\u00e9\"|\"\\ud83d\\ude00\"");
    EXPECT_EQ(ok("{{ {'a': 1} | tojson(indent='\\t') }}|{{ {1: 'x', none: 2} | tojson }}"), "{\n\t\"a\": 1\n}|{\"1\": \"x\", \"null\": 2}");
    EXPECT_TRUE(contains(error_of("{{ undefined_thing | tojson }}"), "not JSON serializable"));
}

TEST(JinjaSyntax, Tests) {
    EXPECT_EQ(ok("{{ 1 is odd }},{{ 2 is even }},{{ 9 is divisibleby 3 }},{{ 'a' is lower }},{{ 'A' is upper }},{{ none is none }},"
                 "{{ 1 is number }},{{ true is number }},{{ true is integer }},{{ 1.0 is float }},{{ 1 is integer }},"
                 "{{ 'x' is string }},{{ [] is sequence }},{{ {} is sequence }}"),
              "True,True,True,True,True,True,True,True,False,True,True,True,True,True");
    EXPECT_EQ(ok("{{ range is callable }},{{ 'a' is in 'abc' }},{{ 2 is in [1, 2] }},{{ 1 is eq 1 }},{{ 1 is ne 2 }},"
                 "{{ 1 is lt 2 }},{{ 2 is ge 2 }},{{ [] is sameas [] }},{{ none is sameas none }},{{ true is boolean }},{{ 0 is boolean }}"),
              "True,True,True,True,True,True,True,False,True,True,False");
    EXPECT_EQ(ok("{{ x is defined }},{{ x is undefined }},{{ {} is mapping }},{{ '' is mapping }},{{ 1 is not string }},"
                 "{{ [1] is iterable }},{{ 3 is equalto 3 }},{{ 2 is greaterthan 1 }}"),
              "False,True,True,False,True,True,True,True");
    EXPECT_TRUE(contains(error_of("{{ 1 is nosuchtest }}"), "No test named 'nosuchtest'"));
}

TEST(JinjaSyntax, DictAndListMethods) {
    EXPECT_EQ(ok("{% set d = {'a': 1} %}{{ d.a }},{{ d['a'] }},{{ d.get('a') }},{{ d.get('z', 5) }},{{ d.get('z') }},"
                 "{{ d.items() | list }},{{ d.keys() | list }},{{ d.values() | list }},{{ 'a' in d }},{{ d.z is defined }}"),
              "1,1,1,5,None,[('a', 1)],['a'],[1],True,False");
    EXPECT_EQ(ok("{% set l = [1, 2] %}{% set _ = l.append(3) %}{% set _ = l.insert(0, 0) %}{% set _ = l.extend([4, 5]) %}"
                 "{{ l }},{{ l.pop() }},{{ l.pop(0) }},{{ l }},{{ l.index(3) }},{{ l.count(2) }},{{ l | length }}",
                 mutable_env()),
              "[0, 1, 2, 3, 4, 5],5,0,[1, 2, 3, 4],2,1,4");
    EXPECT_EQ(ok("{% set d2 = {} %}{% set _ = d2.update({'x': 1}) %}{% set _ = d2.setdefault('y', 2) %}"
                 "{{ d2 }},{{ d2.pop('x') }},{{ d2 }},{{ d2.copy() }}",
                 mutable_env()),
              "{'x': 1, 'y': 2},1,{'y': 2},{'y': 2}");
    EXPECT_TRUE(contains(error_of("{% set _ = [].pop() %}", mutable_env()), "pop from empty list"));
}

TEST(JinjaSyntax, ForLoops) {
    EXPECT_EQ(ok("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], [3, 4]] %}"
                 "{{ a + b }},{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}"),
              "a=1;b=2;3,7,empty");
    EXPECT_EQ(ok("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
                 "{{ loop.last }}{{ loop.length }}{{ loop.cycle('a', 'b') }}|{% endfor %}"),
              "1032TrueFalse3a|2121FalseFalse3b|3210FalseTrue3a|");
    EXPECT_EQ(ok("{% for x in range(10) if x is odd %}{{ x }}{% if loop.last %}!{% endif %}{% endfor %},"
                 "{% for i in range(3) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}"),
              "13579!,121;122;123;");
    EXPECT_EQ(ok("{% for x in 'ab' %}{{ loop.previtem }}-{{ x }}-{{ loop.nextitem }};{% endfor %}"), "-a-b;a-b-;");
    EXPECT_EQ(ok("{% for i in range(10) %}{% if i == 4 %}{% break %}{% endif %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}"),
              "02");
    // Assignments inside a loop stay in the loop; namespace() carries state out of it.
    EXPECT_EQ(ok("{% set ns = namespace(c=0, items=[]) %}{% for i in range(4) %}{% set ns.c = ns.c + i %}"
                 "{% set _ = ns.items.append(i * 2) %}{% endfor %}{{ ns.c }},{{ ns.items }}",
                 mutable_env()),
              "6,[0, 2, 4, 6]");
    EXPECT_EQ(ok("{% set x = 1 %}{% for i in range(2) %}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}"
                 "{% if true %}{% set x = 5 %}{% endif %},{{ x }}"),
              "11,11,1,5");
    EXPECT_EQ(ok("{% for x in undefined_list %}never{% else %}empty{% endfor %}"), "empty");
    EXPECT_TRUE(contains(error_of("{% for x in 1 %}{% endfor %}"), "'int' object is not iterable"));
    EXPECT_TRUE(contains(error_of("{% for a, b in [[1, 2, 3]] %}{% endfor %}"), "too many values to unpack"));
}

TEST(JinjaSyntax, MacrosCallFilterRawWith) {
    EXPECT_EQ(ok("{% macro m(a, b=2, c='c') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }},{{ m(1, 3) }},{{ m(1, c='z') }},{{ m(a='q', b=none) }}"),
              "1-2-c,1-3-c,1-2-z,q-None-c");
    EXPECT_EQ(ok("{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, 2, k=3) }}"), "(1, 2){'k': 3}");
    EXPECT_EQ(ok("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold{% endcall %}"
                 "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(item) each([1, 2]) %}[{{ item }}]{% endcall %}"),
              "<b>bold</b>[1][2]");
    EXPECT_EQ(ok("{% filter upper %}shout {{ 'this' }}{% endfilter %},{% set blk | upper %}inner{% endset %}{{ blk }},"
                 "{% raw %}{{ not rendered }}{% endraw %}"),
              "SHOUT THIS,INNER,{{ not rendered }}");
    EXPECT_EQ(ok("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %},{{ dict(a=1, b='x') }},{{ namespace(x=1).x }},"
                 "{{ range(5, 0, -2) | list }},{{ range(0) | list }},{{ range(*[2, 4]) | list }}"),
              "3,{'a': 1, 'b': 'x'},1,[5, 3, 1],[],[2, 3]");
    EXPECT_EQ(ok("{% set j = joiner('|') %}{% for x in 'abc' %}{{ j() }}{{ x }}{% endfor %}"), "a|b|c");
    EXPECT_EQ(ok("{% generation %}kept{% endgeneration %}"), "kept");
    EXPECT_TRUE(contains(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), "takes not more than 1 argument"));
    EXPECT_TRUE(contains(error_of("{% macro m(a) %}{% endmacro %}{{ m(b=2) }}"), "no keyword argument 'b'"));
}

TEST(JinjaSyntax, WhitespaceControlAndTrimLstripBlocks) {
    const std::string source = "{%- for i in range(3) -%}\n  {{ i }}\n{%- endfor %}\n  {% if true %}\n    indented\n  {% endif %}\n"
                               "{# comment #}   after\n{{ 'multi'\n   ~ 'line' }}\n";
    TemplateOptions transformers;  // trim_blocks + lstrip_blocks
    EXPECT_EQ(ok(source, transformers), "012    indented\n   after\nmultiline");
    TemplateOptions plain;
    plain.trim_blocks = false;
    plain.lstrip_blocks = false;
    EXPECT_EQ(ok(source, plain), "012\n  \n    indented\n  \n   after\nmultiline");
    EXPECT_EQ(ok("a {{- ' b ' -}} c {#- x -#} d {%- if true +%}  e{% endif %}"), "a b cd  e");
    EXPECT_EQ(ok("  {%+ if true %}x{% endif %}"), "  x");
    EXPECT_EQ(ok("line\n"), "line");  // keep_trailing_newline = False
    EXPECT_EQ(ok("a\r\nb"), "a\nb");   // newlines normalized like jinja2
}

TEST(JinjaSyntax, UndefinedSemantics) {
    EXPECT_EQ(ok("[{{ missing }}]"), "[]");
    EXPECT_EQ(ok("{{ missing is defined }},{{ missing | length }},{{ missing | list }},{{ 'a' in missing }},{{ missing ~ 'x' }}"),
              "False,0,[],False,x");
    // Deliberately lenient like jinja2's ChainableUndefined (jinja2's default Undefined would raise).
    EXPECT_EQ(ok("{{ missing.attr is defined }},{{ missing['k'].x is defined }}"), "False,False");
    EXPECT_EQ(ok("{{ {'a': 1}.b is defined }},{{ [1][5] is defined }}"), "False,False");
    EXPECT_TRUE(contains(error_of("{{ missing() }}"), "'missing' is undefined"));
    EXPECT_TRUE(contains(error_of("{{ missing + 1 }}"), "'missing' is undefined"));
    EXPECT_TRUE(contains(error_of("{{ {'a': 1}.b + 1 }}"), "has no attribute 'b'"));
}

TEST(JinjaSyntax, ErrorsNameLineAndColumn) {
    // Syntax error: the unknown filter sits on line 3, column 10.
    auto syntax = ChatTemplate::compile("first line\n{{ 'ok' }}\n{{ 1 | nosuch }}");
    ASSERT_FALSE(syntax.ok());
    EXPECT_TRUE(contains(syntax.error(), "line 3, column 8")) << syntax.error();
    EXPECT_TRUE(contains(syntax.error(), "No filter named 'nosuch'")) << syntax.error();

    auto unterminated = ChatTemplate::compile("x\n  {% if true %}\n");
    ASSERT_FALSE(unterminated.ok());
    EXPECT_TRUE(contains(unterminated.error(), "line 2, column 3")) << unterminated.error();
    EXPECT_TRUE(contains(unterminated.error(), "Unterminated if")) << unterminated.error();

    auto bad_token = ChatTemplate::compile("{{ a ? b }}");
    ASSERT_FALSE(bad_token.ok());
    EXPECT_TRUE(contains(bad_token.error(), "line 1, column 6")) << bad_token.error();

    // Runtime errors point at the failing expression.
    std::string runtime = error_of("{% for m in [1] %}\n  {{ m.x.y() }}\n{% endfor %}");
    EXPECT_TRUE(contains(runtime, "line 2, column")) << runtime;

    std::string raised = error_of("\n\n   {{ raise_exception('Roles must alternate') }}");
    EXPECT_TRUE(contains(raised, "line 3, column")) << raised;
    EXPECT_TRUE(contains(raised, "Roles must alternate")) << raised;

    EXPECT_TRUE(contains(error_of("{% break %}"), "break outside of a loop"));
    EXPECT_TRUE(contains(error_of("{% endif %}"), "Unexpected endif"));
    EXPECT_TRUE(contains(error_of("{% include 'x' %}"), "not supported"));
}

TEST(JinjaSyntax, StepLimitStopsHugeLoops) {
    auto start = std::chrono::steady_clock::now();
    std::string e = error_of("{% for i in range(100000000) %}{{ i }}{% endfor %}");
    EXPECT_TRUE(contains(e, "template exceeded 5000000 steps")) << e;
    EXPECT_TRUE(contains(e, "line 1, column")) << e;
    // A loop that does not allocate up front also hits the budget.
    TemplateOptions small;
    small.max_steps = 10000;
    e = error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", small);
    EXPECT_TRUE(contains(e, "template exceeded 10000 steps")) << e;
    // Exponential list growth is charged per element.
    e = error_of("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}");
    EXPECT_TRUE(contains(e, "steps")) << e;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

TEST(JinjaSyntax, OutputLimitStopsExponentialStrings) {
    std::string e = error_of("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}");
    EXPECT_TRUE(contains(e, "output larger than 4194304 bytes")) << e;
    e = error_of("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}");
    EXPECT_TRUE(contains(e, "output larger than")) << e;
    e = error_of("{{ 'x' * 100000000 }}");
    EXPECT_TRUE(contains(e, "output larger than")) << e;
    TemplateOptions small;
    small.max_output_bytes = 1000;
    e = error_of("{% for i in range(200) %}0123456789{% endfor %}", small);
    EXPECT_TRUE(contains(e, "output larger than 1000 bytes")) << e;
    EXPECT_EQ(ok("{% for i in range(99) %}0123456789{% endfor %}", small).size(), 990u);
}

TEST(JinjaSyntax, RecursionAndNestingAreBounded) {
    std::string e = error_of("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}");
    EXPECT_TRUE(contains(e, "deeper than")) << e;
    e = error_of("{% set l = [] %}{% set _ = l.append(l) %}{{ l }}", mutable_env());
    EXPECT_TRUE(contains(e, "nesting deeper than")) << e;
    std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
    e = error_of(deep);
    EXPECT_TRUE(contains(e, "nested too deeply")) << e;
    // A list nested 200000 levels deep is built and released without exhausting the stack.
    EXPECT_EQ(ok("{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}done"), "done");
}

// transformers renders in jinja2's ImmutableSandboxedEnvironment; expectations from jinja2 3.1.6
// (3.1.5 added list.pop and list.clear to the refused methods).
TEST(JinjaSyntax, ImmutableSandboxLikeTransformers) {
    EXPECT_EQ(ok("{% set x = [1, 2] %}{{ x.append is defined }},{{ x.pop is defined }},{{ x.clear is defined }},"
                 "{{ x['sort'] is defined }},{{ x.count(1) }},{{ x.index(2) }},{{ x.copy() }},{{ x }},[{{ x.append }}]"),
              "False,False,False,False,1,1,[1, 2],[1, 2],[]");
    EXPECT_EQ(ok("{% set d = {'a': 1, 'pop': 2} %}{{ d.pop is defined }},{{ d['pop'] }},{{ d.get('a') }},{{ d.keys() | list }},"
                 "{{ d.copy() }},{{ d.update is defined }},{{ d.setdefault is defined }},{{ d.clear is defined }}"),
              "False,2,1,['a', 'pop'],{'a': 1, 'pop': 2},False,False,False");
    std::string e = error_of("{% set x = [] %}{% set _ = x.append(1) %}");
    EXPECT_TRUE(contains(e, "access to attribute 'append' of 'list' object is unsafe.")) << e;
    EXPECT_TRUE(contains(e, "line 1, column")) << e;
    e = error_of("{% set d = {} %}{{ d.update({'a': 1}) }}");
    EXPECT_TRUE(contains(e, "access to attribute 'update' of 'dict' object is unsafe.")) << e;
    e = error_of("{% set ns = namespace(ids=[1]) %}{{ ns.ids.pop(0) }}");
    EXPECT_TRUE(contains(e, "access to attribute 'pop' of 'list' object is unsafe.")) << e;
    // A namespace's own attributes are still set with {% set ns.x = ... %}.
    EXPECT_EQ(ok("{% set ns = namespace(ids=[]) %}{% for i in range(3) %}{% set ns.ids = ns.ids + [i] %}{% endfor %}{{ ns.ids }}"),
              "[0, 1, 2]");
    // The same append works with a plain environment's rules.
    EXPECT_EQ(ok("{% set x = [] %}{% set _ = x.append(1) %}{{ x }}", mutable_env()), "[1]");
}

// Python's str.strip()/split()/splitlines()/isspace() and jinja2's trim treat Unicode whitespace
// (U+00A0, U+2000-U+200A, U+3000, ...) as whitespace, and U+0085/U+2028 as line boundaries;
// U+200B (a format character) is neither. Expectations from jinja2 3.1.2 and 3.1.6.
TEST(JinjaSyntax, PythonWhitespaceIsUnicode) {
    const std::string messages = R"([{"role": "user", "content": "\u00a0\u2003 a\u3000b\u2028c\u0085d\u200be \u202f"},
                                     {"role": "user", "content": "\u00a0\u1680\u2000\u200a\u205f\t\u001c"}])";
    auto out = render("{% set s = messages[0].content %}"
                      "{{ [s | trim, s.strip(), s.lstrip(), s.rstrip()] | tojson(ensure_ascii=True) }}|"
                      "{{ s.split() | tojson(ensure_ascii=True) }}|{{ s.split(none, 1) | tojson(ensure_ascii=True) }}|"
                      "{{ s.rsplit(none, 1) | tojson(ensure_ascii=True) }}|{{ s.splitlines() | tojson(ensure_ascii=True) }}|"
                      "{{ messages[1].content.isspace() }}|{{ s.isspace() }}",
                      {}, messages);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(*out,
              R"(["a\u3000b\u2028c\u0085d\u200be", "a\u3000b\u2028c\u0085d\u200be", "a\u3000b\u2028c\u0085d\u200be \u202f", )"
              R"("\u00a0\u2003 a\u3000b\u2028c\u0085d\u200be"]|["a", "b", "c", "d\u200be"]|)"
              R"(["a", "b\u2028c\u0085d\u200be \u202f"]|["\u00a0\u2003 a\u3000b\u2028c", "d\u200be"]|)"
              R"(["\u00a0\u2003 a\u3000b", "c", "d\u200be \u202f"]|True|False)");
    // Past maxsplit, the rest keeps its outer whitespace (Python 3.11).
    EXPECT_EQ(ok("{{ ' a b c '.split(none, 1) }}|{{ ' a b c '.rsplit(none, 1) }}|{{ ' a '.split(none, 0) }}|"
                 "{{ ' a  '.split(none, 1) }}|{{ '  a'.rsplit(none, 0) }}|{{ ' a b '.split(none, 5) }}"),
              "['a', 'b c ']|[' a b', 'c']|['a ']|['a']|['  a']|['a', 'b']");
}

// Python's repr() (what `| string` shows for the strings inside a list or dict) escapes the
// characters that are not printable: \xNN up to U+00FF, \uNNNN, \UNNNNNNNN. SmolLM3's template
// writes its tools with `tool | string`.
TEST(JinjaSyntax, ReprEscapesUnprintableCharacters) {
    const std::string messages =
        R"([{"role": "user", "content": "a\u00a0b\u200bc\u0085d\u2028e\ud83d\ude00f\ue000g\u007fh'\"i\u00e9\u0301"}])";
    auto out = render("{{ [messages[0].content] | string }}", {}, messages);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(*out, "['a\\xa0b\\u200bc\\x85d\\u2028e\U0001F600f\\ue000g\\x7fh\\'\"i\u00e9\u0301']");
}

TEST(JinjaSyntax, ChatVariablesAndMessages) {
    auto tmpl = ChatTemplate::compile(
        "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m['content'] }}{% if m.tool_calls %}"
        "{{ m.tool_calls | tojson }}{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
        "{{ eos_token }}|{{ tools | length if tools is defined else 'no tools' }}|{{ enable_thinking }}");
    ASSERT_TRUE(tmpl.ok()) << tmpl.error();
    TemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    options.extra_kwargs_json = R"({"enable_thinking": false})";
    auto out = tmpl->render(R"([{"role": "user", "content": "hi"}])", options);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(*out, "<s><user>hi<assistant></s>|no tools|False");

    std::vector<cflow::ChatMessage> messages = {
        {"user", "weather?", ""},
        {"assistant", "", R"({"tool_calls": [{"name": "get", "arguments": {"city": "Paris", "days": 2}}]})"}};
    options.add_generation_prompt = false;
    options.tools_json = R"([{"name": "get"}])";
    out = tmpl->render(messages, options);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(*out, "<s><user>weather?<assistant>[{\"name\": \"get\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}]</s>|1|False");

    auto bad = tmpl->render("{not json", options);
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(contains(bad.error(), "messages_json")) << bad.error();
    auto not_array = tmpl->render(R"({"role": "user"})", options);
    ASSERT_FALSE(not_array.ok());
    EXPECT_TRUE(contains(not_array.error(), "must be a JSON array")) << not_array.error();
    EXPECT_EQ(tmpl->source().substr(0, 15), "{{ bos_token }}");
}

TEST(JinjaSyntax, StrftimeNowUsesTheLocalClock) {
    std::time_t now = std::time(nullptr);
    std::tm local = *std::localtime(&now);
    std::string year = std::to_string(local.tm_year + 1900);
    std::string out = ok("{{ strftime_now('%Y') }}");
    // Tolerate a render that straddles New Year.
    EXPECT_TRUE(out == year || out == std::to_string(local.tm_year + 1901)) << out;
}

// TemplateOptions::now fixes strftime_now()'s clock (expectations from Python's
// datetime(2025, 3, 7, 14, 5, 9).strftime and datetime(2024, 12, 31, 23, 59, 59).strftime).
TEST(JinjaSyntax, StrftimeNowReadsAFixedClock) {
#ifdef _WIN32
    // The C runtime's strftime (msvcrt) lacks %e and renders nothing for the whole format.
    GTEST_SKIP() << "strftime_now's POSIX format codes (%e) are not in the Windows C runtime";
#endif
    TemplateOptions options;
    options.now = cflow::TemplateTime{2025, 3, 7, 14, 5, 9};
    EXPECT_EQ(ok("{{ strftime_now('%Y-%m-%d %H:%M:%S %a %A %b %B %j %d %e %I %p %U %W %w %y') }}", options),
              "2025-03-07 14:05:09 Fri Friday Mar March 066 07  7 02 PM 09 09 5 25");
    options.now = cflow::TemplateTime{2024, 12, 31, 23, 59, 59};
    EXPECT_EQ(ok("{{ strftime_now('%a %j %U %W') }}", options), "Tue 366 52 53");
    options.now = cflow::TemplateTime{2024, 2, 29, 0, 0, 0};
    EXPECT_EQ(ok("{{ strftime_now('%d %b %Y') }}", options), "29 Feb 2024");
    options.now = cflow::TemplateTime{2025, 2, 29, 0, 0, 0};
    std::string e = error_of("{{ strftime_now('%Y') }}", options);
    EXPECT_TRUE(contains(e, "not a valid date")) << e;
    options.now = cflow::TemplateTime{2025, 1, 1, 24, 0, 0};
    EXPECT_TRUE(contains(error_of("{{ 'x' }}", options), "not a valid date"));
}

TEST(JinjaSyntax, FallbackChatIsExplicit) {
    std::vector<cflow::ChatMessage> messages = {{"system", "Be brief.", ""}, {"user", "Hi", ""}};
    EXPECT_EQ(cflow::render_fallback_chat(messages, true), "system: Be brief.\nuser: Hi\nassistant: ");
    EXPECT_EQ(cflow::render_fallback_chat(messages, false), "system: Be brief.\nuser: Hi\n");
}

} // namespace
