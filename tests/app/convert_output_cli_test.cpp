// `cflow convert` output hazards: the source itself, a directory or a FIFO as -o are refused
// with the target untouched; an existing target keeps its mode; a file the engine would refuse
// never replaces the output (the written file is loaded as `generate` loads it before the
// rename); SIGTERM and SIGHUP remove the temporary file as SIGINT does.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "cli_runner.h"
#include "test_support.h"

extern char** environ;

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

std::string slurp_output(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> temp_files_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().filename().string().find(".tmp-") != std::string::npos) names.push_back(entry.path().string());
    return names;
}

// A small random-weight llama GGUF from `cflow synth`.
std::string synth_gguf(const fs::path& dir, const std::vector<std::string>& geometry = {"--d", "256", "--layers", "2",
                                                                                        "--heads", "4", "--d-ff", "512",
                                                                                        "--vocab", "512"}) {
    std::vector<std::string> args{"synth"};
    args.insert(args.end(), geometry.begin(), geometry.end());
    const std::string gguf = (dir / "src.gguf").string();
    args.insert(args.end(), {"--quant", "q8_0", "-o", (dir / "synth.cflow").string(), "--gguf", gguf});
    const auto r = run_cflow(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return gguf;
}

TEST(ConvertOutputCli, TheSourceADirectoryOrAFifoAsOutputAreRefused) {
    const fs::path dir = temp_dir("convert_targets");
    const std::string gguf = synth_gguf(dir);
    const std::string before = slurp_output(gguf);
    expect_one_line_failure(run_cflow({"convert", gguf, "-o", gguf, "--quiet"}), "the output is the source itself");
    EXPECT_EQ(slurp_output(gguf), before) << "convert X -o X replaced its own source";

    const fs::path folder = dir / "folder.cflow";
    fs::create_directory(folder);
    expect_one_line_failure(run_cflow({"convert", gguf, "-o", folder.string(), "--quiet"}),
                            "the output is a directory, not a regular file");
    const fs::path fifo = dir / "fifo.cflow";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_one_line_failure(run_cflow({"convert", gguf, "-o", fifo.string(), "--quiet"}), "the output is a FIFO");
    EXPECT_TRUE(fs::is_fifo(fifo));
    EXPECT_TRUE(temp_files_in(dir).empty());
}

// No input is ever an output (issue 38): the tokenizer of a llama2.c checkpoint, the model of
// `generate --telemetry-file` and of `logits --out`, each named by another path too (a hard link).
TEST(ConvertOutputCli, NoInputIsEverAnOutput) {
    const fs::path dir = temp_dir("inputs_as_outputs");
    const std::string gguf = synth_gguf(dir);
    const std::string model = (dir / "synth.cflow").string();
    const std::string model_before = slurp_output(model);
    expect_one_line_failure(run_cflow({"generate", model, "-p", "hi", "-n", "2", "--telemetry-file", model}),
                            "--telemetry-file names the model itself");
    const fs::path link = dir / "same-model.cflow";
    fs::create_hard_link(model, link);
    expect_one_line_failure(run_cflow({"logits", model, "-p", "hi", "--out", link.string()}), "--out names the model itself");
    EXPECT_EQ(slurp_output(model), model_before) << "an output replaced the model";

    const fs::path assets = shared_asset("assets/models/llama2c-stories260K");
    if (assets.empty()) GTEST_SKIP() << "the llama2.c tokenizer case needs ../shared (absent)";
    const fs::path tokenizer = dir / "tok512.bin";
    fs::copy_file(assets / "tok512.bin", tokenizer, fs::copy_options::overwrite_existing);
    const std::string tokenizer_before = slurp_output(tokenizer);
    expect_one_line_failure(run_cflow({"convert", (assets / "stories260K.bin").string(), "--tokenizer", tokenizer.string(),
                                       "-o", tokenizer.string(), "--quiet"}),
                            "the output is the source's input");
    EXPECT_EQ(slurp_output(tokenizer), tokenizer_before) << "convert wrote over its tokenizer";
    EXPECT_TRUE(temp_files_in(dir).empty());
}

TEST(ConvertOutputCli, AnExistingTargetKeepsItsMode) {
    const fs::path dir = temp_dir("convert_mode");
    const std::string gguf = synth_gguf(dir);
    const fs::path out = dir / "private.cflow";
    std::ofstream(out) << "old";
    fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    const auto r = run_cflow({"convert", gguf, "-o", out.string(), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    const auto generated = run_cflow({"generate", out.string(), "-p", "hi", "-n", "2", "--temp", "0"});
    EXPECT_EQ(generated.exit_code, 0) << generated.err;
}

// Rewrites the GGUF's tokenizer.ggml.model value "llama" as "LLAMA": a tokenizer family the
// converter carries through untouched and the engine refuses.
void break_tokenizer_model(const std::string& gguf) {
    std::string bytes = slurp_output(gguf);
    const std::string key = "tokenizer.ggml.model";
    const size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    const size_t value = at + key.size() + 4 + 8;  // u32 type, u64 length
    ASSERT_EQ(bytes.compare(value, 5, "llama"), 0);
    bytes.replace(value, 5, "LLAMA");
    std::ofstream(gguf, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(ConvertOutputCli, AFileTheEngineRefusesNeverReplacesTheOutput) {
    const fs::path dir = temp_dir("convert_verify");
    const std::string gguf = synth_gguf(dir);
    break_tokenizer_model(gguf);
    const fs::path out = dir / "out.cflow";
    const auto r = run_cflow({"convert", gguf, "-o", out.string(), "--quiet"});
    expect_one_line_failure(r, "the converted file does not load");
    EXPECT_NE(r.err.find("'LLAMA' is not supported"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(out.string()), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(".tmp-"), std::string::npos) << "the message names the output, not the temp file: " << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_TRUE(temp_files_in(dir).empty());
}

// Starts `cflow convert`, waits until its temporary file exists, sends `sig`, and returns how
// the process ended; nothing may be left in the folder but the source and what synth wrote.
void expect_signal_cleans_up(int sig) {
    const fs::path dir = temp_dir("convert_signal");
    // Large enough that a single-threaded Q8_0 -> Q4_0 re-quantisation runs for a while.
    const std::string gguf = synth_gguf(dir, {"--d", "1024", "--layers", "8", "--heads", "8", "--d-ff", "2816", "--vocab",
                                              "8000"});
    const fs::path out = dir / "out.cflow";
    const std::string err_path = (dir / "err").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> args{CFLOW_CLI_PATH, "convert", gguf, "-o", out.string(), "--quant", "q4_0", "--threads", "1",
                                  "--quiet"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, CFLOW_CLI_PATH, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool started = false;
    int status = 0;
    while (!started && std::chrono::steady_clock::now() < deadline) {
        started = !temp_files_in(dir).empty();
        if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (started) ::kill(pid, sig);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(started) << "the conversion never created its temporary file";
    const std::string err = slurp_output(err_path);
    EXPECT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ": " << err;
    EXPECT_NE(WEXITSTATUS(status), 0) << "the signal arrived after the conversion ended: make the model bigger";
    EXPECT_NE(err.find("cancel"), std::string::npos) << err;
    EXPECT_TRUE(temp_files_in(dir).empty()) << "temporary file left behind after signal " << sig;
    EXPECT_FALSE(fs::exists(out));
}

TEST(ConvertOutputCli, SigtermRemovesTheTemporaryFile) { expect_signal_cleans_up(SIGTERM); }

TEST(ConvertOutputCli, SighupRemovesTheTemporaryFile) { expect_signal_cleans_up(SIGHUP); }

} // namespace
} // namespace cflow::test
