#pragma once
// https in front of a plain-http server for the TLS tests of each HttpTransport: a CA, a server
// certificate for DNS:localhost signed by it and another CA that signed nothing, made with the
// openssl CLI, and stunnel4 on a free loopback port forwarding to the server. Header-only so
// tests/remote (cpp-httplib) and tests/ui (Qt Network) share it.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "serve_process.h"
#include "test_support.h"

namespace cflow::test {

inline int free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
        port = ntohs(addr.sin_port);
    ::close(fd);
    return port;
}

inline bool accepts(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(uint16_t(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
}

// The openssl CLI and stunnel4 are there; else `why` says what is missing.
inline bool have_tls_tools(std::string& why) {
    return run_shell("command -v stunnel4 && command -v openssl", &why) == 0;
}

// The CA files in a fresh directory: ca.pem (signed server.pem for DNS:localhost), other-ca.pem.
class TestCertificates {
public:
    TestCertificates() : dir_(temp_dir(unique_name("tls"))) {
        const std::string d = "'" + dir_.string() + "'";
        const std::string make =
            "cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=cflow-test-ca"
            " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost"
            " && printf 'subjectAltName=DNS:localhost\\n' > ext.cnf"
            " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf"
            " && openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other-ca.pem -days 2 -subj /CN=another-ca";
        ok_ = run_shell(make, &why_) == 0;
    }
    bool ok() const { return ok_; }
    const std::string& why() const { return why_; }
    const std::filesystem::path& dir() const { return dir_; }
    std::string ca() const { return (dir_ / "ca.pem").string(); }
    std::string other_ca() const { return (dir_ / "other-ca.pem").string(); }

private:
    std::filesystem::path dir_;
    bool ok_ = false;
    std::string why_;
};

// stunnel4 in the foreground on a free loopback port, forwarding to backend_port; killed at the end.
class Stunnel {
public:
    Stunnel(const TestCertificates& certs, int backend_port) : port_(free_loopback_port()) {
        const std::filesystem::path config = certs.dir() / ("stunnel-" + std::to_string(port_) + ".conf");
        std::ofstream(config) << "foreground = yes\npid =\n[cflow]\naccept = 127.0.0.1:" << port_
                              << "\nconnect = 127.0.0.1:" << backend_port
                              << "\ncert = " << (certs.dir() / "server.pem").string()
                              << "\nkey = " << (certs.dir() / "server.key").string() << "\n";
        pid_ = ::fork();
        if (pid_ == 0) {
            const int null_fd = ::open("/dev/null", O_RDWR);
            ::dup2(null_fd, 0);
            ::dup2(null_fd, 1);
            ::dup2(null_fd, 2);  // its log of every connection is not the test's output
            ::execlp("stunnel4", "stunnel4", config.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        for (int i = 0; i < 100 && !up_; ++i) {
            up_ = port_ > 0 && accepts(port_);
            if (!up_) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ~Stunnel() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    Stunnel(const Stunnel&) = delete;
    Stunnel& operator=(const Stunnel&) = delete;

    bool up() const { return up_; }
    int port() const { return port_; }

private:
    int port_ = 0;
    pid_t pid_ = -1;
    bool up_ = false;
};

} // namespace cflow::test
