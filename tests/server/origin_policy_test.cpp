// Which Host names and browser origins the local server answers (issue 38: a `text/plain` POST
// from a foreign Origin, or with `Host: evil.example`, ran a generation).
#include <gtest/gtest.h>

#include "cflow/server/origin_policy.h"

namespace cflow::server {
namespace {

TEST(OriginPolicy, HostNamesMustBeAddressesLocalhostOrAllowed) {
    const OriginPolicy none;
    for (const char* host : {"127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST", "[::1]:8080", "192.168.1.20:8080",
                             "10.0.0.1", ""})
        EXPECT_FALSE(refuse_request(none, host, "")) << host;
    for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example:80",
                             "1.2.3", "300.1.1.1"}) {
        const auto refused = refuse_request(none, host, "");
        ASSERT_TRUE(refused) << host;
        EXPECT_NE(refused->find("--allowed-host"), std::string::npos) << *refused;
    }
    OriginPolicy lan;
    lan.allowed_hosts = {"MyBox.local"};
    EXPECT_FALSE(refuse_request(lan, "mybox.local:8080", ""));
    EXPECT_TRUE(refuse_request(lan, "otherbox.local:8080", ""));
}

TEST(OriginPolicy, OtherOriginsNeedCorsAndTheSameOriginPasses) {
    const OriginPolicy none;
    EXPECT_FALSE(refuse_request(none, "127.0.0.1:8080", "http://127.0.0.1:8080")) << "same origin";
    for (const char* origin : {"https://evil.example", "null", "http://127.0.0.1:3000", "http://localhost:8080"}) {
        const auto refused = refuse_request(none, "127.0.0.1:8080", origin);
        ASSERT_TRUE(refused) << origin;
        EXPECT_NE(refused->find("--cors"), std::string::npos) << *refused;
    }
    OriginPolicy app;
    app.cors_origins = {"http://localhost:3000"};
    EXPECT_FALSE(refuse_request(app, "127.0.0.1:8080", "http://LOCALHOST:3000"));
    EXPECT_EQ(allowed_cors_origin(app, "127.0.0.1:8080", "http://LOCALHOST:3000"), "http://LOCALHOST:3000");
    EXPECT_TRUE(refuse_request(app, "127.0.0.1:8080", "https://evil.example"));
    EXPECT_EQ(allowed_cors_origin(app, "127.0.0.1:8080", "http://127.0.0.1:8080"), "") << "same origin needs no header";
    OriginPolicy any;
    any.cors_origins = {"*"};
    EXPECT_FALSE(refuse_request(any, "127.0.0.1:8080", "https://whatever.example"));
    // The Host check still holds with any origin allowed.
    EXPECT_TRUE(refuse_request(any, "evil.example", "https://evil.example"));
}

} // namespace
} // namespace cflow::server
