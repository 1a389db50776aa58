#pragma once
// Jinja lexer: splits a template into text and tag tokens, applying whitespace control the way
// jinja2's lexer does ({%- -%} stripping, trim_blocks, lstrip_blocks, `+` opt-outs, the
// dropped final newline), and tokenizes the expressions inside tags.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cflow::jinja {

struct SourcePos {
    uint32_t line = 1;
    uint32_t column = 1;
};

// "line L, column C: message"
std::string located(SourcePos pos, std::string_view message);

enum class TokenType : uint8_t {
    Text,
    VariableBegin,  // {{
    VariableEnd,    // }}
    BlockBegin,     // {%
    BlockEnd,       // %}
    Name,
    String,
    Integer,
    Float,
    Operator,  // text holds the operator: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    End,
};

struct Token {
    TokenType type = TokenType::End;
    std::string text;  // Text content, name, decoded string literal, operator
    int64_t int_value = 0;
    double float_value = 0.0;
    SourcePos pos;
};

struct LexerOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

// Throws JinjaError (located) on unterminated tags/comments/strings and unknown characters.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

} // namespace cflow::jinja
