// `cflow generate --grammar FILE` (issue 33): the reply after the prompt is in the grammar's
// language and ends with stop: grammar_complete; a bad grammar fails naming FILE:LINE:COLUMN.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string grammar_cli_write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

TEST(GenerateGrammarCli, TheReplyMatchesTheGrammarAndStopsWhenComplete) {
    const auto dir = temp_dir("generate-grammar");
    const std::string grammar = grammar_cli_write(dir / "answer.gbnf", "# yes or no\nroot ::= \"yes\" | \"no\"\n");
    const std::string model = std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow";
    const std::string prompt = "Once upon a time";
    for (const char* seed : {"1", "2", "3"}) {
        auto r = run_cflow({"generate", model, "-p", prompt, "--grammar", grammar, "--temp", "1", "--top-k", "0", "--seed",
                            seed, "-n", "50", "--threads", "1"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(r.out == prompt + "yes" || r.out == prompt + "no") << "seed " << seed << ": " << r.out;
        EXPECT_NE(r.err.find("stop: grammar_complete"), std::string::npos) << r.err;
    }
}

TEST(GenerateGrammarCli, ABadGrammarNamesTheFileLineAndColumn) {
    const auto dir = temp_dir("generate-grammar-bad");
    const std::string grammar = grammar_cli_write(dir / "bad.gbnf", "root ::= answer\nanswer ::= \"yes\" | maybe\n");
    const std::string model = std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow";
    auto r = run_cflow({"generate", model, "-p", "x", "--grammar", grammar});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(grammar + ":2:20: undefined rule 'maybe'"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "nothing is generated before the grammar is read: " << r.out;

    auto missing = run_cflow({"generate", model, "-p", "x", "--grammar", (dir / "none.gbnf").string()});
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(missing.err.find("none.gbnf"), std::string::npos) << missing.err;
}

} // namespace
} // namespace cflow::test
