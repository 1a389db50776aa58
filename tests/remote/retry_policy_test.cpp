// Retry-After in seconds and as an HTTP-date, the doubling wait without it, and the cases that
// are never retried.
#include <gtest/gtest.h>

#include "cflow/remote/retry_policy.h"

namespace cflow::remote {
namespace {

using std::chrono::system_clock;

TEST(RetryPolicy, HttpDatesAreSecondsSinceTheEpoch) {
    EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
    EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    EXPECT_EQ(parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"), 1835438400);
    EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"));
    EXPECT_FALSE(parse_http_date("06 Nov 1994"));
}

TEST(RetryPolicy, RetryAfterIsSecondsOrADate) {
    const auto now = system_clock::time_point(std::chrono::seconds(784111770));
    EXPECT_EQ(parse_retry_after_ms("3", now), 3000u);
    EXPECT_EQ(parse_retry_after_ms(" 0 ", now), 0u);
    EXPECT_EQ(parse_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now), 7000u);
    EXPECT_EQ(parse_retry_after_ms("Sun, 06 Nov 1994 08:49:00 GMT", now), 0u) << "a date in the past: at once";
    EXPECT_FALSE(parse_retry_after_ms("soon", now));
    EXPECT_FALSE(parse_retry_after_ms("-1", now));
}

TEST(RetryPolicy, WaitsDoubleWithoutRetryAfterUpToTheCap) {
    RetryPolicy policy{6, 500, 1500, 60000};
    const auto now = system_clock::now();
    EXPECT_EQ(decide_retry(policy, 1, 503, "", false, now).wait_ms, 500u);
    EXPECT_EQ(decide_retry(policy, 2, 503, "", false, now).wait_ms, 1000u);
    EXPECT_EQ(decide_retry(policy, 3, 429, "", false, now).wait_ms, 1500u);
    EXPECT_EQ(decide_retry(policy, 4, 429, "", false, now).wait_ms, 1500u);
    EXPECT_EQ(decide_retry(policy, 1, 429, "2", false, now).wait_ms, 2000u);
}

TEST(RetryPolicy, SomeAnswersAreNeverRetried) {
    RetryPolicy policy{3, 500, 1500, 10000};
    const auto now = system_clock::now();
    EXPECT_FALSE(decide_retry(policy, 1, 500, "", false, now).retry);
    EXPECT_FALSE(decide_retry(policy, 1, 401, "", false, now).retry);
    const RetryDecision started = decide_retry(policy, 1, 503, "", true, now);
    EXPECT_FALSE(started.retry);
    EXPECT_NE(started.why_not.find("the reply had started"), std::string::npos);
    const RetryDecision last = decide_retry(policy, 3, 503, "", false, now);
    EXPECT_FALSE(last.retry);
    EXPECT_NE(last.why_not.find("gave up after 3 attempts"), std::string::npos);
    const RetryDecision long_wait = decide_retry(policy, 1, 429, "120", false, now);
    EXPECT_FALSE(long_wait.retry);
    EXPECT_NE(long_wait.why_not.find("wait 120 s"), std::string::npos) << long_wait.why_not;
}

} // namespace
} // namespace cflow::remote
