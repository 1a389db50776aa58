// `cflow serve`'s start-up refusals (issue 38), each before a port is bound: the API key from
// one source only, an empty key file, and more request threads than the OS gives, which used to
// end in an uncaught std::system_error (SIGABRT, exit 134).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string default_model() { return std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow"; }

struct ScopedEnv {
    std::string name;
    explicit ScopedEnv(std::string variable, const std::string& value) : name(std::move(variable)) {
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

TEST(ServeCli, TheApiKeyComesFromOneSourceAndAKeyFileMustHoldOne) {
    {
        ScopedEnv key("CFLOW_API_KEY", "from-the-environment");
        expect_one_line_failure(run_cflow({"serve", default_model(), "--api-key", "on-the-command-line", "--port", "0"}),
                                "give the API key one way: --api-key-file, --api-key or CFLOW_API_KEY");
    }
    const auto dir = temp_dir("serve-key-file");
    const std::string empty = (dir / "empty.key").string();
    std::ofstream(empty) << "  \n";
    expect_one_line_failure(run_cflow({"serve", default_model(), "--api-key-file", empty, "--port", "0"}),
                            "empty.key: the first line holds no key");
    expect_one_line_failure(run_cflow({"serve", default_model(), "--api-key-file", (dir / "missing.key").string(), "--port", "0"}),
                            "missing.key");
}

TEST(ServeCli, MoreRequestThreadsThanTheOsGivesIsAClearError) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "sanitizer runtimes reserve terabytes of address space: ulimit -v cannot apply";
#else
    // 64 + 4096 + 4 threads of 8 MiB stacks do not fit 4 GB of address space.
    const auto dir = temp_dir("serve-threads");
    const std::string cmd = "ulimit -v 4000000; timeout 60 '" + std::string(CFLOW_CLI_PATH) + "' serve '" + default_model() +
                            "' --parallel 64 --queue 4096 --port 0 > '" + (dir / "out").string() + "' 2> '" +
                            (dir / "err").string() + "'";
    const int status = std::system(("bash -c \"" + cmd + "\"").c_str());
    std::ifstream in(dir / "err");
    const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status << ": " << err;
    EXPECT_NE(err.find("cannot start 4164 request threads"), std::string::npos) << err;
    EXPECT_NE(err.find("lower --parallel or --queue"), std::string::npos) << err;
    EXPECT_EQ(err.find("terminate called"), std::string::npos) << err;
#endif
}

// Issue 38: 60 requests of 7 MB left `cflow serve` at 1.03 GB resident while idle (glibc keeps
// freed heap); now it gives it back once each such connection is done (60 requests: 929 MB ->
// 13 MB; 8: 452 MB -> under 40 MB).
TEST(ServeCli, MemoryFromLargeRequestsIsReturned) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "a sanitizer's allocator keeps freed memory in quarantine on purpose";
#else
    const auto dir = temp_dir("serve-memory");
    {
        std::ofstream body(dir / "big.json");
        body << R"({"messages":[{"role":"user","content":")";
        for (int i = 0; i < 1'400'000; ++i) body << "word ";
        body << R"("}],"max_tokens":1})";
    }
    const std::string script = R"(
"$1" serve "$2" --port 0 2> "$3/err" &
pid=$!
for i in $(seq 200); do grep -q 'http://' "$3/err" && break; sleep 0.05; done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$3/err" | head -1)
bytes=$(stat -c %s "$3/big.json")
for i in $(seq 8); do  # bash's /dev/tcp: no HTTP client needs installing
  exec 5<>"/dev/tcp/127.0.0.1/$port"
  printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' "$bytes" >&5
  cat "$3/big.json" >&5
  cat <&5 > "$3/answer"
  exec 5<&-
done
sleep 0.5
grep VmRSS /proc/$pid/status | tr -dc 0-9 > "$3/rss_kib"
kill $pid; wait $pid
exit 0
)";
    std::ofstream(dir / "run.sh") << script;
    const std::string cmd = "bash '" + (dir / "run.sh").string() + "' '" + CFLOW_CLI_PATH + "' '" + default_model() + "' '" +
                            dir.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(dir / "rss_kib");
    long rss_kib = 0;
    in >> rss_kib;
    ASSERT_GT(rss_kib, 0) << "the server did not run";
    std::ifstream answer_file(dir / "answer");
    const std::string answer((std::istreambuf_iterator<char>(answer_file)), std::istreambuf_iterator<char>());
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << "the body was read and answered (its prompt does not fit): "
                                                   << answer.substr(0, 300);
    EXPECT_LT(rss_kib, 150 * 1024) << "resident after 8 requests of 7 MB (452 MB before the heap was returned)";
#endif
}

} // namespace
} // namespace cflow::test
