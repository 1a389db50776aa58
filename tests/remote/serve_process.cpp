#include "serve_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "test_support.h"

namespace cflow::test {

ServeProcess::ServeProcess(const std::vector<std::string>& prefix, const std::string& host,
                           const std::vector<std::string>& extra) {
    log_path_ = temp_dir(unique_name("serve-log")) / "serve.err";
    std::vector<std::string> argv = prefix;
    for (const std::string& a : {std::string(CFLOW_CLI_PATH), std::string("serve"), std::string("--host"), host,
                                 std::string("--port"), std::string("0")})
        argv.push_back(a);
    argv.insert(argv.end(), extra.begin(), extra.end());
    // Everything the child needs is made before fork(): after it, only async-signal-safe calls.
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
        const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ::dup2(fd, 2);
            ::close(fd);
        }
        const int null_fd = ::open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
            ::dup2(null_fd, 0);
            ::dup2(null_fd, 1);
            ::close(null_fd);
        }
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    const std::regex url(R"((http://\S+):(\d+)/v1)");
    for (int i = 0; i < 600; ++i) {
        std::smatch m;
        const std::string text = log();
        if (std::regex_search(text, m, url)) {
            port_ = std::stoi(m[2].str());
            base_url_ = m[1].str() + ":" + m[2].str() + "/v1";
            return;
        }
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

ServeProcess::~ServeProcess() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (::waitpid(pid_, &status, WNOHANG) == 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
        }
    }
}

void ServeProcess::kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

std::string ServeProcess::log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

int run_shell(const std::string& command, std::string* output) {
    const std::string full = "(" + command + ") 2>&1";
    FILE* pipe = ::popen(full.c_str(), "r");
    if (!pipe) return -1;
    std::string text;
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, n);
    const int status = ::pclose(pipe);
    if (output) *output = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string unique_name(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return prefix + std::to_string(::getpid()) + "x" + std::to_string(counter++);
}

} // namespace cflow::test
