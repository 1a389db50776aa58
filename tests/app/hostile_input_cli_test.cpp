// Hostile inputs to the text commands end in one stderr line and a non-zero exit, within
// seconds: endless stdin (/dev/zero) is capped instead of growing until bad_alloc, and a
// device, directory or FIFO given as an input file is refused before it is read (a FIFO used
// to block in open() forever).
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <functional>
#include <algorithm>
#include <fstream>
#include <iterator>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string default_model() { return std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow"; }

// Runs a command and checks it failed cleanly, naming `needle`, in well under the test timeout
// (the uncapped reads took ~2 GB and tens of seconds before aborting).
void expect_quick_failure(const std::function<CommandResult()>& command, const std::string& needle) {
    const auto t0 = std::chrono::steady_clock::now();
    const CommandResult r = command();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_one_line_failure(r, needle);
    EXPECT_LT(r.exit_code, 128) << "ended by a signal: " << r.err;
    EXPECT_LT(seconds, 30.0) << r.err;
}

std::string write_hostile_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

std::string make_fifo(const std::filesystem::path& path) {
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    return path.string();
}

TEST(HostileInputCli, TokenizeAndDetokenizeCapEndlessStdin) {
    expect_quick_failure([] { return run_cflow_with_stdin_from({"tokenize", default_model()}, "/dev/zero"); },
                         "stdin: more than 256 MiB");
    expect_quick_failure([] { return run_cflow_with_stdin_from({"detokenize", default_model()}, "/dev/zero"); },
                         "stdin: more than 256 MiB");
}

TEST(HostileInputCli, ChatCapsALineWithoutNewline) {
    expect_quick_failure([] { return run_cflow_with_stdin_from({"chat", default_model(), "-n", "1"}, "/dev/zero"); },
                         "a line longer than 4 MiB");
}

TEST(HostileInputCli, ChatStillReadsOrdinaryLines) {
    // The capped line reader keeps the old behaviour: a last line without '\n' is a message too.
    const auto r = run_cflow_with_input({"chat", default_model(), "-n", "2", "--temp", "0"}, "/help\r\n/reset");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("conversation reset"), std::string::npos) << r.err;
}

TEST(HostileInputCli, TemplateRefusesDevicesAsMessagesToolsAndTemplate) {
    const auto dir = temp_dir("template");
    const std::string jinja = write_hostile_file(dir / "t.jinja", "{{ messages[0]['content'] }}");
    const std::string messages = write_hostile_file(dir / "m.json", R"([{"role": "user", "content": "hi"}])");
    expect_quick_failure([&] { return run_cflow({"template", "--template", jinja, "--messages", "/dev/zero"}); },
                         "/dev/zero: is a character device, not a regular file");
    expect_quick_failure(
        [&] { return run_cflow({"template", "--template", jinja, "--messages", messages, "--tools", "/dev/zero"}); },
        "/dev/zero: is a character device");
    expect_quick_failure([&] { return run_cflow({"template", "--template", "/dev/zero", "--messages", messages}); },
                         "/dev/zero: is a character device");
    expect_quick_failure([&] { return run_cflow({"template", "--template", jinja, "--messages", dir.string()}); },
                         "is a directory, not a regular file");
    const std::string fifo = make_fifo(dir / "fifo.json");
    expect_quick_failure([&] { return run_cflow({"template", "--template", jinja, "--messages", fifo}); },
                         "is a FIFO, not a regular file");
    // The ordinary files still render.
    const auto ok = run_cflow({"template", "--template", jinja, "--messages", messages});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_EQ(ok.out, "hi");
}

TEST(HostileInputCli, DeeplyNestedToolsEndWithOneLine) {
    // --tools was dumped back to text for the renderer: a recursive dump at ~60k levels.
    const auto dir = temp_dir("deep-tools");
    const std::string jinja = write_hostile_file(dir / "t.jinja", "{{ tools | length }}");
    const std::string messages = write_hostile_file(dir / "m.json", R"([{"role": "user", "content": "hi"}])");
    const std::string tools = write_hostile_file(dir / "tools.json", "[" + std::string(100000, '{') + std::string(100000, '}') + "]");
    expect_quick_failure(
        [&] { return run_cflow({"template", "--template", jinja, "--messages", messages, "--tools", tools}); },
        "tools.json: JSON nested 100001 levels deep; at most 256");
}

TEST(HostileInputCli, PerplexityRefusesADeviceAsText) {
    expect_quick_failure([] { return run_cflow({"perplexity", default_model(), "-f", "/dev/zero"}); },
                         "/dev/zero: is a character device, not a regular file");
}

TEST(HostileInputCli, AFifoAsVocabularyOrModelIsRefusedNotWaitedOn) {
    const auto dir = temp_dir("fifo-vocab");
    const std::string fifo = make_fifo(dir / "vocab");
    expect_quick_failure([&] { return run_cflow_with_input({"tokenize", fifo}, "hello"); }, "vocab: is not a regular file");
    const std::string fifo_model = make_fifo(dir / "model.cflow");
    expect_quick_failure([&] { return run_cflow({"generate", fifo_model, "-p", "x", "-n", "1"}); }, "is not a regular file");
}

// Issue 38: a tokenizer.json holding an array was read as a .cflow ("GlobalHeader at offset 0:
// file is 6 bytes"), and `convert -o ""` converted the whole model before failing at the rename.
TEST(HostileInputCli, JsonThatIsNotATokenizerAndAnEmptyOutputAreNamedAtOnce) {
    const auto dir = temp_dir("hostile-json-vocab");
    std::filesystem::create_directories(dir / "arr");
    const std::string array = write_hostile_file(dir / "arr" / "tokenizer.json", "[1, 2]");
    expect_quick_failure([&] { return run_cflow_with_input({"tokenize", array}, "hello"); },
                         "a tokenizer.json must hold a JSON object (with \"model\"); this file holds an array");
    const std::string text = write_hostile_file(dir / "vocab.json", "  \"a string\"");
    expect_quick_failure([&] { return run_cflow_with_input({"tokenize", text}, "hello"); }, "this file holds a string");
    expect_quick_failure([&] { return run_cflow({"convert", default_model(), "-o", ""}); }, "-o: the output path is empty");
}

TEST(HostileInputCli, GenerateUnderAnyAddressSpaceLimitEndsInOneLine) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "sanitizer runtimes reserve terabytes of address space: ulimit -v cannot apply";
#else
    // Somewhere in this sweep every allocation site fails once (the mapping, the tokenizer's
    // tables, the engine threads' stacks, the KV cache, a step's scratch): each must come back
    // as a one-line error, never as bad_alloc's abort.
    const auto dir = temp_dir("ulimit");
    int failures = 0;
    for (int limit_kb = 8000; limit_kb <= 64000; limit_kb += 2000) {
        const std::string err = (dir / "err").string();
        // Right above the dynamic loader's needs, the heap cannot grow at all: main's first
        // allocation (its argument vector) fails and libstdc++ has no emergency pool left to throw
        // bad_alloc with, so it aborts before any cflow code runs. A level where the same command on
        // a missing model cannot print its one-line error is too tight for any program, not a finding.
        const std::string probe = "ulimit -v " + std::to_string(limit_kb) + " && exec '" + CFLOW_CLI_PATH +
                                  "' generate /nonexistent.cflow -p 'Once upon' -n 16 --temp 0 --ctx 2048 >/dev/null 2>&1";
        const int probe_status = std::system(probe.c_str());
        if (!WIFEXITED(probe_status) || WEXITSTATUS(probe_status) != 1) continue;
        const std::string command = "ulimit -v " + std::to_string(limit_kb) + " && exec '" + CFLOW_CLI_PATH +
                                    "' generate '" + default_model() + "' -p 'Once upon' -n 16 --temp 0 --ctx 2048 >/dev/null 2>'" +
                                    err + "'";
        const int status = std::system(command.c_str());
        ASSERT_TRUE(WIFEXITED(status)) << limit_kb << " KB";
        const int code = WEXITSTATUS(status);
        std::ifstream in(err);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (code == 127 && text.find("error while loading shared libraries") != std::string::npos)
            continue;  // too tight for the dynamic loader: cflow itself never ran
        EXPECT_TRUE(code == 0 || code == 1) << limit_kb << " KB: exit " << code << ": " << text;
        if (code != 0) {
            ++failures;
            EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << limit_kb << " KB: " << text;
            EXPECT_EQ(text.rfind("cflow generate: ", 0), 0u) << limit_kb << " KB: " << text;
        }
    }
    EXPECT_GT(failures, 0) << "no limit in the sweep was tight enough to fail: the sweep tests nothing";
#endif
}

} // namespace
} // namespace cflow::test
