// https to a real `cflow serve` behind stunnel4, with a CA and a server certificate the test makes
// with the openssl CLI: trusted with --ca-file, refused without it, with another CA and for
// another host name, each with the TLS message. Skips, with the reason, without stunnel4/openssl.
#include <gtest/gtest.h>

#include <string>

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#include "serve_process.h"
#include "tls_fixture.h"

namespace cflow::remote {
namespace {

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
    if (!test::have_tls_tools(why))
        GTEST_SKIP() << "stunnel4 or openssl is missing (apt-get install stunnel4 openssl): " << why;
    test::TestCertificates certs;
    ASSERT_TRUE(certs.ok()) << certs.why();

    test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    test::Stunnel stunnel(certs, serve.port());
    ASSERT_TRUE(stunnel.up()) << "stunnel4 did not listen on " << stunnel.port();
    const int tls_port = stunnel.port();

    const std::string url = "https://localhost:" + std::to_string(tls_port) + "/v1";
    RemoteChatRequest request;
    request.messages = {{"user", "Hi"}};
    request.max_tokens = 8;
    request.sampling.seed = 3;
    auto trusted = tls_client(url, certs.ca()).stream_chat(request, {});
    ASSERT_TRUE(trusted) << trusted.error();
    EXPECT_TRUE(trusted->complete) << trusted->incomplete_reason;
    EXPECT_FALSE(trusted->text.empty());

    auto system_cas = tls_client(url, "").stream_chat(request, {});
    ASSERT_FALSE(system_cas);
    EXPECT_NE(system_cas.error().find("TLS: the server's certificate is not trusted (give its CA with --ca-file PEM)"),
              std::string::npos) << system_cas.error();

    auto other = tls_client(url, certs.other_ca()).stream_chat(request, {});
    ASSERT_FALSE(other);
    EXPECT_NE(other.error().find("TLS: the server's certificate is not trusted by the CA in"), std::string::npos)
        << other.error();

    auto wrong_name = tls_client("https://127.0.0.1:" + std::to_string(tls_port) + "/v1", certs.ca())
                          .stream_chat(request, {});
    ASSERT_FALSE(wrong_name);
    EXPECT_NE(wrong_name.error().find("TLS: the server's certificate is not for host '127.0.0.1'"), std::string::npos)
        << wrong_name.error();
}

} // namespace
} // namespace cflow::remote
