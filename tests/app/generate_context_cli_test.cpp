// `cflow generate` past the context (issue 37): --context-policy sliding-window (or drop-oldest)
// shifts a full context and generates every token asked for; stop (the default) ends at the
// context with stop: context_full, as before.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

TEST(GenerateContextCli, ASlidingWindowKeepsGeneratingPastTheContext) {
    const auto dir = temp_dir("generate-context");
    const std::string model = (dir / "m.cflow").string();
    auto r = run_cflow({"synth", "--d", "128", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--d-ff", "256", "--vocab",
                        "300", "--quant", "q8_0", "-o", model});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> run = {"generate", model, "-p", "hello", "-n", "100", "--ctx", "32", "--temp", "0",
                                          "--ignore-eos", "--threads", "1"};

    auto stopped = run_cflow(run);
    ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
    EXPECT_NE(stopped.err.find("stop: context_full"), std::string::npos) << stopped.err;

    for (const char* policy : {"sliding-window", "drop-oldest"}) {
        std::vector<std::string> args = run;
        args.insert(args.end(), {"--context-policy", policy});
        auto shifted = run_cflow(args);
        ASSERT_EQ(shifted.exit_code, 0) << shifted.err;
        EXPECT_NE(shifted.err.find("generated 100 tokens"), std::string::npos) << shifted.err;
        EXPECT_NE(shifted.err.find("stop: max_tokens"), std::string::npos) << shifted.err;
        EXPECT_NE(shifted.err.find("context of 32 tokens full"), std::string::npos) << shifted.err;
        EXPECT_GT(shifted.out.size(), stopped.out.size()) << "the shifted run wrote no more than the stopped one";
    }
}

} // namespace
} // namespace cflow::test
