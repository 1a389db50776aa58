// A real `cflow serve` as the remote host, in a network namespace of the test's own reached over a
// veth pair: the client crosses a real network stack (two interfaces, routing, ARP), not loopback.
// Needs CAP_NET_ADMIN and `ip netns` (CI runs as root); skips with the reason otherwise.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#include "serve_process.h"

namespace cflow::remote {
namespace {

using test::run_shell;

// The namespace, the veth pair and a /30 of 10.201.0.0/16 picked from the pid.
class NetworkNamespace {
public:
    NetworkNamespace() {
        // Another /30 per namespace of this process too: a deleted namespace's veth goes away asynchronously.
        static int made = 0;
        const int id = int(::getpid()) + 256 * made++;
        ns_ = test::unique_name("cflowns");
        host_if_ = test::unique_name("vc");
        ns_if_ = test::unique_name("vs");
        const std::string net = "10.201." + std::to_string(id % 256) + ".";
        const int base = (id / 256 % 64) * 4;
        host_address_ = net + std::to_string(base + 1);
        ns_address_ = net + std::to_string(base + 2);
        const std::string in_ns = "ip netns exec " + ns_ + " ";
        const std::string script = "ip netns add " + ns_ + " && ip link add " + host_if_ + " type veth peer name " + ns_if_ +
                                   " && ip link set " + ns_if_ + " netns " + ns_ + " && ip addr add " + host_address_ +
                                   "/30 dev " + host_if_ + " && ip link set " + host_if_ + " up && " + in_ns + "ip addr add " +
                                   ns_address_ + "/30 dev " + ns_if_ + " && " + in_ns + "ip link set " + ns_if_ + " up && " +
                                   in_ns + "ip link set lo up";
        ok_ = run_shell(script, &why_) == 0;
    }
    ~NetworkNamespace() {
        run_shell("ip netns del " + ns_ + "; ip link del " + host_if_);  // either may be gone already
    }
    bool ok() const { return ok_; }
    const std::string& why() const { return why_; }
    const std::string& name() const { return ns_; }
    const std::string& ns_address() const { return ns_address_; }

private:
    std::string ns_, host_if_, ns_if_, host_address_, ns_address_, why_;
    bool ok_ = false;
};

RemoteClient netns_client(const std::string& base_url) {
    EndpointConfig config;
    config.base_url = base_url;
    config.connect_timeout_ms = 5'000;
    config.read_timeout_ms = 60'000;
    return RemoteClient(config, std::shared_ptr<HttpTransport>(make_httplib_transport()));
}

TEST(RemoteNetns, AStreamedChatAcrossANamespaceEqualsTheWholeReply) {
    NetworkNamespace ns;
    if (!ns.ok()) GTEST_SKIP() << "cannot make a network namespace (needs CAP_NET_ADMIN and iproute2): " << ns.why();
    test::ServeProcess serve({"ip", "netns", "exec", ns.name()}, ns.ns_address());
    ASSERT_TRUE(serve.started()) << serve.log();
    EXPECT_NE(serve.base_url().find(ns.ns_address()), std::string::npos) << serve.base_url();
    RemoteClient client = netns_client(serve.base_url());

    auto models = client.list_models();
    ASSERT_TRUE(models) << models.error();
    ASSERT_FALSE(models->empty());

    RemoteChatRequest request;
    request.model = models->front();
    request.messages = {{"user", "Tell me a story about a cat."}};
    request.sampling.temperature = 0.8f;
    request.sampling.seed = 42;
    request.max_tokens = 40;
    std::string streamed;
    size_t pieces = 0;
    auto stream = client.stream_chat(request, [&](std::string_view t) {
        streamed += t;
        ++pieces;
    });
    ASSERT_TRUE(stream) << stream.error();
    ASSERT_TRUE(stream->complete) << stream->incomplete_reason;
    auto whole = client.complete_chat(request);
    ASSERT_TRUE(whole) << whole.error();
    EXPECT_FALSE(whole->text.empty());
    EXPECT_EQ(stream->text, whole->text) << "the same seed gives the same reply, streamed or not";
    EXPECT_EQ(streamed, stream->text);
    EXPECT_GT(pieces, 3u) << "the reply came in pieces as it was generated";
    ASSERT_TRUE(stream->usage);
    EXPECT_EQ(stream->usage->completion_tokens, whole->usage ? whole->usage->completion_tokens : -1);
    EXPECT_GE(stream->first_token_ms, 0.0);
}

TEST(RemoteNetns, AServerKilledMidStreamLeavesAMarkedPartialReply) {
    NetworkNamespace ns;
    if (!ns.ok()) GTEST_SKIP() << "cannot make a network namespace (needs CAP_NET_ADMIN and iproute2): " << ns.why();
    test::ServeProcess serve({"ip", "netns", "exec", ns.name()}, ns.ns_address());
    ASSERT_TRUE(serve.started()) << serve.log();
    RemoteClient client = netns_client(serve.base_url());
    RemoteChatRequest request;
    request.messages = {{"user", "Tell me a long story."}};
    request.max_tokens = 100000;  // longer than the context: the kill comes first
    request.sampling.seed = 1;
    size_t pieces = 0;
    auto reply = client.stream_chat(request, [&](std::string_view) {
        if (++pieces == 5) serve.kill_now();
    });
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_FALSE(reply->complete);
    EXPECT_FALSE(reply->text.empty());
    EXPECT_NE(reply->incomplete_reason.find("closed the connection in the middle of the reply"), std::string::npos)
        << reply->incomplete_reason;
}

} // namespace
} // namespace cflow::remote
