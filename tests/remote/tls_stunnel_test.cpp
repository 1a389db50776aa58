// https to a real `cflow serve` behind stunnel4, with a CA and a server certificate the test makes
// with the openssl CLI: trusted with --ca-file, refused without it, with another CA and for
// another host name, each with the TLS message. Skips, with the reason, without stunnel4/openssl.
#include <gtest/gtest.h>

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

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#include "serve_process.h"
#include "test_support.h"

namespace cflow::remote {
namespace {

using test::run_shell;
namespace fs = std::filesystem;

int free_loopback_port() {
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

bool accepts(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(uint16_t(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
}

// stunnel in the foreground, killed at the end.
class Stunnel {
public:
    explicit Stunnel(const fs::path& config) {
        pid_ = ::fork();
        if (pid_ == 0) {
            const int null_fd = ::open("/dev/null", O_RDWR);
            ::dup2(null_fd, 0);
            ::dup2(null_fd, 1);
            ::dup2(null_fd, 2);  // its log of every connection is not the test's output
            ::execlp("stunnel4", "stunnel4", config.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    ~Stunnel() {
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }

private:
    pid_t pid_ = -1;
};

RemoteClient tls_client(const std::string& base_url, const std::string& ca_file) {
    EndpointConfig config;
    config.base_url = base_url;
    config.ca_file = ca_file;
    config.connect_timeout_ms = 5'000;
    config.read_timeout_ms = 30'000;
    return RemoteClient(config, std::shared_ptr<HttpTransport>(make_httplib_transport()));
}

TEST(RemoteTls, StunnelInFrontOfServeTrustsOnlyItsCa) {
    std::string why;
    if (run_shell("command -v stunnel4 && command -v openssl", &why) != 0)
        GTEST_SKIP() << "stunnel4 or openssl is missing (apt-get install stunnel4 openssl): " << why;
    const fs::path dir = test::temp_dir(test::unique_name("tls"));
    const std::string d = "'" + dir.string() + "'";
    // A CA, a server certificate for DNS:localhost signed by it, and another CA that signed nothing.
    const std::string make =
        "cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=cflow-test-ca"
        " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost"
        " && printf 'subjectAltName=DNS:localhost\\n' > ext.cnf"
        " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf"
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other-ca.pem -days 2 -subj /CN=another-ca";
    ASSERT_EQ(run_shell(make, &why), 0) << why;

    test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    const int tls_port = free_loopback_port();
    ASSERT_GT(tls_port, 0);
    std::ofstream(dir / "stunnel.conf") << "foreground = yes\npid =\n[cflow]\naccept = 127.0.0.1:" << tls_port
                                        << "\nconnect = 127.0.0.1:" << serve.port() << "\ncert = " << (dir / "server.pem").string()
                                        << "\nkey = " << (dir / "server.key").string() << "\n";
    Stunnel stunnel(dir / "stunnel.conf");
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i) {
        up = accepts(tls_port);
        if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(up) << "stunnel4 did not listen on " << tls_port;

    const std::string url = "https://localhost:" + std::to_string(tls_port) + "/v1";
    RemoteChatRequest request;
    request.messages = {{"user", "Hi"}};
    request.max_tokens = 8;
    request.sampling.seed = 3;
    auto trusted = tls_client(url, (dir / "ca.pem").string()).stream_chat(request, {});
    ASSERT_TRUE(trusted) << trusted.error();
    EXPECT_TRUE(trusted->complete) << trusted->incomplete_reason;
    EXPECT_FALSE(trusted->text.empty());

    auto system_cas = tls_client(url, "").stream_chat(request, {});
    ASSERT_FALSE(system_cas);
    EXPECT_NE(system_cas.error().find("TLS: the server's certificate is not trusted (give its CA with --ca-file PEM)"),
              std::string::npos) << system_cas.error();

    auto other = tls_client(url, (dir / "other-ca.pem").string()).stream_chat(request, {});
    ASSERT_FALSE(other);
    EXPECT_NE(other.error().find("TLS: the server's certificate is not trusted by the CA in"), std::string::npos)
        << other.error();

    auto wrong_name = tls_client("https://127.0.0.1:" + std::to_string(tls_port) + "/v1", (dir / "ca.pem").string())
                          .stream_chat(request, {});
    ASSERT_FALSE(wrong_name);
    EXPECT_NE(wrong_name.error().find("TLS: the server's certificate is not for host '127.0.0.1'"), std::string::npos)
        << wrong_name.error();
}

} // namespace
} // namespace cflow::remote
