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

} // namespace
} // namespace cflow::test
