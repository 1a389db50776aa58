// `cflow chat --json-schema FILE` and `cflow generate --json-schema FILE` (issue 33): on a
// random-weight model every reply is one JSON document that satisfies the schema (required keys,
// types, enum, bounds checked here; tests/engine/schema-node validates a whole corpus with ajv),
// across turns and seeds; a schema the converter refuses, or a missing file, fails with one line
// naming the option, the file and the schema's JSON pointer.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr const char* kPersonSchema = R"({"type": "object",
  "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
                 "mood": {"enum": ["happy", "sad"]}, "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
  "required": ["name", "age", "mood"], "additionalProperties": false})";

std::string schema_cli_write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

std::string schema_cli_model(const std::filesystem::path& dir) {
    SyntheticSpec spec;
    spec.vocab = 320;  // every byte has a token: any JSON can be spelled
    spec.seed = 11;
    return write_synthetic_cflow(spec, dir / "random.cflow", DType::F32);
}

// The person schema's constraints, checked by hand on a parsed reply.
void expect_person(const std::string& text) {
    const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << "not JSON: " << text;
    ASSERT_TRUE(value.is_object()) << text;
    for (const auto& [key, v] : value.items()) EXPECT_TRUE(key == "name" || key == "age" || key == "mood" || key == "tags") << text;
    ASSERT_TRUE(value.contains("name") && value["name"].is_string()) << text;
    EXPECT_LE(value["name"].get<std::string>().size(), 8u * 6u) << text;  // 8 characters, escapes included
    ASSERT_TRUE(value.contains("age") && value["age"].is_number_integer()) << text;
    EXPECT_GE(value["age"].get<long long>(), 0);
    EXPECT_LE(value["age"].get<long long>(), 150);
    ASSERT_TRUE(value.contains("mood")) << text;
    EXPECT_TRUE(value["mood"] == "happy" || value["mood"] == "sad") << text;
    if (value.contains("tags")) {
        ASSERT_TRUE(value["tags"].is_array()) << text;
        EXPECT_LE(value["tags"].size(), 2u);
        for (const auto& tag : value["tags"]) EXPECT_TRUE(tag.is_boolean()) << text;
    }
}

TEST(JsonSchemaCli, EveryChatReplyIsJsonUnderTheSchema) {
    const auto dir = temp_dir("json_schema_cli_chat");
    const std::string model = schema_cli_model(dir);
    const std::string schema = schema_cli_write(dir / "person.json", kPersonSchema);
    for (const char* seed : {"1", "2", "3"}) {
        // Two turns with a /reset between them: a reply per line, each ending with the newline the CLI adds.
        const CommandResult r = run_cflow_with_input(
            {"chat", model, "--json-schema", schema, "--json-string-max-chars", "8", "--seed", seed, "--temp", "1.0",
             "-n", "400", "--threads", "1"},
            "describe someone\n/reset\nanother one\n");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.err.find("before its JSON was complete"), std::string::npos) << r.err;
        // The grammar allows newlines only as whitespace between tokens; a reply's own newlines sit
        // inside the value, so the replies are split by parsing, not by lines.
        const std::string out = r.out;
        size_t at = 0, replies = 0;
        while (at < out.size()) {
            size_t end = at;
            bool parsed = false;
            for (end = out.find('\n', end); end != std::string::npos; end = out.find('\n', end + 1)) {
                if (nlohmann::json::accept(out.substr(at, end - at))) {
                    parsed = true;
                    break;
                }
            }
            ASSERT_TRUE(parsed) << "seed " << seed << ": no JSON reply at byte " << at << " of:\n" << out;
            expect_person(out.substr(at, end - at));
            ++replies;
            at = end + 1;
        }
        EXPECT_EQ(replies, 2u) << out;
    }
}

TEST(JsonSchemaCli, GenerateWritesOneValueAfterThePrompt) {
    const auto dir = temp_dir("json_schema_cli_generate");
    const std::string model = schema_cli_model(dir);
    const std::string schema = schema_cli_write(dir / "list.json",
                                                R"({"type":"array","items":{"type":"integer","minimum":-5,"maximum":5},"minItems":1,"maxItems":4})");
    const CommandResult r = run_cflow({"generate", model, "-p", "Numbers:", "--json-schema", schema, "--seed", "5",
                                       "-n", "200", "--threads", "1", "--no-stats"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.out.rfind("Numbers:", 0), 0u) << r.out;
    std::string text = r.out.substr(std::string("Numbers:").size());
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(value.is_array()) << text;
    EXPECT_GE(value.size(), 1u);
    EXPECT_LE(value.size(), 4u);
    for (const auto& n : value) {
        ASSERT_TRUE(n.is_number_integer()) << text;
        EXPECT_LE(std::abs(n.get<long long>()), 5) << text;
    }
}

TEST(JsonSchemaCli, BadSchemasFailWithTheFileAndThePointer) {
    const auto dir = temp_dir("json_schema_cli_errors");
    const std::string model = schema_cli_model(dir);
    const std::string pattern = schema_cli_write(dir / "pattern.json", R"({"properties":{"code":{"type":"string","pattern":"^[A-Z]+$"}}})");
    CommandResult r = run_cflow_with_input({"chat", model, "--json-schema", pattern}, "hi\n");
    expect_one_line_failure(r, "--json-schema " + pattern + ": JSON schema #/properties/code/pattern:");
    r = run_cflow({"generate", model, "-p", "x", "--json-schema", pattern});
    expect_one_line_failure(r, "--json-schema " + pattern + ": JSON schema #/properties/code/pattern:");
    const std::string missing = (dir / "missing.json").string();
    r = run_cflow_with_input({"chat", model, "--json-schema", missing}, "hi\n");
    expect_one_line_failure(r, "--json-schema " + missing);
    const std::string not_json = schema_cli_write(dir / "broken.json", "{\"type\": ");
    r = run_cflow({"generate", model, "-p", "x", "--json-schema", not_json});
    expect_one_line_failure(r, "not valid JSON");
    const std::string grammar = schema_cli_write(dir / "g.gbnf", "root ::= \"a\"\n");
    const std::string fine = schema_cli_write(dir / "fine.json", R"({"type":"boolean"})");
    r = run_cflow({"generate", model, "-p", "x", "--grammar", grammar, "--json-schema", fine});
    expect_one_line_failure(r, "give one");
}

} // namespace
} // namespace cflow::test
