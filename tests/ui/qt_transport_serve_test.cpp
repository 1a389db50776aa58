// The Qt Network transport against a real `cflow serve` (the bundled model) on loopback: the same
// seed streams the same text as through cpp-httplib, a server killed mid-stream leaves a marked
// partial reply, and https through stunnel4 (tests/remote's CA and stunnel fixture) is trusted
// only with its CA and only for the certificate's name. Runs on a worker QThread, as the desktop.
#include <gtest/gtest.h>

#include <string>

#include "qt_transport_test_support.h"
#include "serve_process.h"
#include "tls_fixture.h"

namespace cflow::ui {
namespace {

using namespace cflow::qt_transport_test;

remote::RemoteChatRequest story(uint64_t seed, int32_t max_tokens) {
    remote::RemoteChatRequest request;
    request.messages = {{"user", "Tell me a story about a cat."}};
    request.sampling.temperature = 0.8f;
    request.sampling.seed = seed;
    request.max_tokens = max_tokens;
    return request;
}

TEST(QtTransportServe, BothTransportsStreamTheSameTextForOneSeed) {
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    std::string texts[2];
    size_t pieces[2] = {0, 0};
    for (Transport t : {Transport::Qt, Transport::Httplib}) {
        SCOPED_TRACE(transport_name(t));
        const int i = t == Transport::Qt ? 0 : 1;
        auto run = on_worker_thread([&] {
            return client_on(t, serve.base_url(), 60'000).stream_chat(story(42, 40), [&](std::string_view piece) {
                texts[i] += piece;
                ++pieces[i];
            });
        });
        EXPECT_TRUE(run.ran_off_gui_thread);
        auto& reply = *run.value;
        ASSERT_TRUE(reply) << reply.error();
        EXPECT_TRUE(reply->complete) << reply->incomplete_reason;
        EXPECT_EQ(reply->text, texts[i]);
        EXPECT_GT(pieces[i], 3u) << "the reply came in pieces as it was generated";
    }
    EXPECT_FALSE(texts[0].empty());
    EXPECT_EQ(texts[0], texts[1]) << "the same seed through either transport";
}

TEST(QtTransportServe, AServerKilledMidStreamLeavesAMarkedPartialReply) {
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    remote::RemoteChatRequest request = story(1, 100000);  // longer than the context: the kill comes first
    size_t pieces = 0;
    auto run = on_worker_thread([&] {
        return client_on(Transport::Qt, serve.base_url(), 60'000).stream_chat(request, [&](std::string_view) {
            if (++pieces == 5) serve.kill_now();
        });
    });
    auto& reply = *run.value;
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_FALSE(reply->complete);
    EXPECT_FALSE(reply->text.empty());
    EXPECT_NE(reply->incomplete_reason.find("closed the connection in the middle of the reply"), std::string::npos)
        << reply->incomplete_reason;
}

TEST(QtTransportServe, HttpsThroughStunnelTrustsOnlyItsCaAndName) {
    std::string why;
    if (!cflow::test::have_tls_tools(why))
        GTEST_SKIP() << "stunnel4 or openssl is missing (apt-get install stunnel4 openssl): " << why;
    cflow::test::TestCertificates certs;
    ASSERT_TRUE(certs.ok()) << certs.why();
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    cflow::test::Stunnel stunnel(certs, serve.port());
    ASSERT_TRUE(stunnel.up()) << "stunnel4 did not listen on " << stunnel.port();
    const std::string url = "https://localhost:" + std::to_string(stunnel.port()) + "/v1";
    const remote::RemoteChatRequest request = story(3, 8);

    auto trusted = on_worker_thread([&] { return client_on(Transport::Qt, url, 30'000, certs.ca()).stream_chat(request, {}); });
    ASSERT_TRUE(*trusted.value) << trusted.value->error();
    EXPECT_TRUE((*trusted.value)->complete) << (*trusted.value)->incomplete_reason;
    EXPECT_FALSE((*trusted.value)->text.empty());

    auto system_cas = client_on(Transport::Qt, url, 30'000).stream_chat(request, {});
    ASSERT_FALSE(system_cas);
    EXPECT_NE(system_cas.error().find("TLS: the server's certificate is not trusted (give its CA with --ca-file PEM)"),
              std::string::npos) << system_cas.error();

    auto other = client_on(Transport::Qt, url, 30'000, certs.other_ca()).stream_chat(request, {});
    ASSERT_FALSE(other);
    EXPECT_NE(other.error().find("TLS: the server's certificate is not trusted by the CA in"), std::string::npos)
        << other.error();

    auto wrong_name = client_on(Transport::Qt, "https://127.0.0.1:" + std::to_string(stunnel.port()) + "/v1", 30'000, certs.ca())
                          .stream_chat(request, {});
    ASSERT_FALSE(wrong_name);
    EXPECT_NE(wrong_name.error().find("TLS: the server's certificate is not for host '127.0.0.1'"), std::string::npos)
        << wrong_name.error();
}

} // namespace
} // namespace cflow::ui
