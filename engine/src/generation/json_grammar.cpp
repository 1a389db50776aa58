#include "cflow/engine/generation/json_grammar.h"

namespace cflow {

// Written from RFC 8259's grammar: strings exclude the control characters, '"' and '\' unless
// escaped; numbers have no leading zeros; ws is bounded (kJsonGrammarMaxWhitespace). The reply
// starts with the object's brace: a model's habit of opening with newlines costs no tokens.
std::string_view json_object_grammar_source() {
    return R"(root   ::= object
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex    ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]{0,20}
)";
}

Result<std::shared_ptr<const Grammar>> json_object_grammar() {
    auto parsed = parse_grammar(json_object_grammar_source());
    if (!parsed) return make_error(parsed.kind(), "the JSON object grammar: " + parsed.error());
    return std::shared_ptr<const Grammar>(std::make_shared<Grammar>(std::move(parsed).value()));
}

} // namespace cflow
