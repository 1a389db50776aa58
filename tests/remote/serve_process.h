#pragma once
// A `cflow serve` (the built CLI, the bundled default model) started by a test, optionally through
// a prefix such as `ip netns exec NS`; its URL read from the line it prints, killed at the end.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace cflow::test {

class ServeProcess {
public:
    // Starts `prefix... cflow serve --host HOST --port 0 extra...` and waits (at most 60 s) for its URL.
    ServeProcess(const std::vector<std::string>& prefix, const std::string& host, const std::vector<std::string>& extra = {});
    ~ServeProcess();
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    bool started() const { return !base_url_.empty(); }
    const std::string& base_url() const { return base_url_; }  // http://HOST:PORT/v1
    int port() const { return port_; }
    std::string log() const;  // its stderr so far
    void kill_now();          // SIGKILL, as a crash would

private:
    pid_t pid_ = -1;
    std::filesystem::path log_path_;
    std::string base_url_;
    int port_ = 0;
};

// Runs a shell command; its exit status (0: success) and, in `output`, its stdout and stderr.
int run_shell(const std::string& command, std::string* output = nullptr);

// A name no other run of the tests uses at the same time: prefix + pid + a counter.
std::string unique_name(const std::string& prefix);

} // namespace cflow::test
