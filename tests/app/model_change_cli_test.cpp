// The model file truncated under `cflow generate` and `cflow chat` while they run (issue 38):
// both died of SIGBUS (exit 135) without a word. Now each ends with exit 1 and one line naming the
// file and what happened. (`cflow serve` has its own test in tests/server: the request fails, the
// server lives.) The file is cut only once the command has shown it is running, so the
// truncation always lands while the model is in use.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

std::string synthetic_model(const fs::path& dir) {
    SyntheticSpec spec;
    spec.seed = 3;
    spec.max_seq_len = 128;
    const SourceModel source = make_synthetic_model(spec);
    const std::string path = (dir / "model.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    const auto converted = convert_to_cflow(source, path, options);
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    return path;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Outcome {
    int exit_code = -1;  // 128 + signal when killed
    std::string err;
};

// Runs `script` with bash: $1 the cflow executable, $2 the model, $3 a scratch folder; the script
// leaves the command's exit status in $3/status and its stderr in $3/err.
Outcome run_script(const std::string& script, const std::string& model, const fs::path& dir) {
    const fs::path script_path = dir / "run.sh";
    std::ofstream(script_path) << script;
    const std::string cmd = "bash '" + script_path.string() + "' '" + CFLOW_CLI_PATH + "' '" + model + "' '" + dir.string() + "'";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the script itself failed: " << cmd;
    Outcome o;
    o.exit_code = std::atoi(slurp(dir / "status").c_str());
    o.err = slurp(dir / "err");
    return o;
}

void expect_clear_failure(const Outcome& o, const std::string& model) {
    EXPECT_EQ(o.exit_code, 1) << "135 is SIGBUS; stderr: " << o.err;
    EXPECT_NE(o.err.find(model + " changed on disk while in use"), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find("Bus error"), std::string::npos) << o.err;
}

TEST(ModelChangeCli, GenerateEndsWithTheReasonWhenItsModelIsTruncated) {
    const fs::path dir = temp_dir("model-change-generate");
    const std::string model = synthetic_model(dir);
    // A million tokens with a sliding window: minutes of work, cut after the first output.
    const Outcome o = run_script(R"(
"$1" generate "$2" -p "abc" -n 1000000 --ignore-eos --context-policy sliding-window --load map --threads 1 \
    > "$3/out" 2> "$3/err" &
pid=$!
for i in $(seq 600); do [ -s "$3/out" ] && break; sleep 0.05; done
truncate -s 4096 "$2"
wait $pid; echo $? > "$3/status"
)",
                                 model, dir);
    expect_clear_failure(o, model);
}

TEST(ModelChangeCli, ChatEndsWithTheReasonWhenItsModelIsTruncatedBetweenTurns) {
    const fs::path dir = temp_dir("model-change-chat");
    const std::string model = synthetic_model(dir);
    const Outcome o = run_script(R"(
mkfifo "$3/in"
"$1" chat "$2" --load map -n 8 --threads 1 < "$3/in" > "$3/out" 2> "$3/err" &
pid=$!
exec 3> "$3/in"
echo hello >&3
for i in $(seq 600); do [ -s "$3/out" ] && break; sleep 0.05; done
truncate -s 4096 "$2"
echo again >&3
exec 3>&-
wait $pid; echo $? > "$3/status"
)",
                                 model, dir);
    expect_clear_failure(o, model);
}

} // namespace
} // namespace cflow::test
