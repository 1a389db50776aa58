// The slot pool: a free slot whose cache holds the start of the conversation is preferred,
// waiting requests are bounded and served in arrival order, and shutting down wakes them all.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cflow/formats/converter.h"
#include "cflow/server/slot_pool.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::server {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const Model> tiny_model() {
    static std::shared_ptr<const Model> model = [] {
        test::SyntheticSpec spec;
        spec.seed = 11;
        const auto path = test::temp_dir("slot_pool") / "model.cflow";
        ConvertOptions options;
        options.weight_quant = DType::F32;
        EXPECT_TRUE(convert_to_cflow(test::make_synthetic_model(spec), path.string(), options).ok());
        auto loaded = Model::load(path.string());
        EXPECT_TRUE(loaded.ok());
        return loaded.ok() ? loaded.value() : nullptr;
    }();
    return model;
}

std::unique_ptr<SlotPool> pool_of(unsigned slots, unsigned max_waiting) {
    SessionOptions options;
    options.threads = 1;
    auto pool = SlotPool::create(tiny_model(), options, {}, slots, max_waiting);
    EXPECT_TRUE(pool.ok()) << (pool.ok() ? "" : pool.error());
    return pool.ok() ? std::move(pool).value() : nullptr;
}

TEST(SlotPool, AFreeSlotHoldingTheConversationsStartIsPreferred) {
    auto pool = pool_of(3, 4);
    ASSERT_TRUE(pool);
    const std::string a = conversation_key({{"user", "about cats", ""}});
    const std::string b = conversation_key({{"user", "about dogs", ""}});
    {
        auto first = pool->acquire(a, 1s);
        auto second = pool->acquire(b, 1s);
        ASSERT_TRUE(std::holds_alternative<SlotPool::Lease>(first) && std::holds_alternative<SlotPool::Lease>(second));
        EXPECT_NE(std::get<SlotPool::Lease>(first).index(), std::get<SlotPool::Lease>(second).index());
        std::get<SlotPool::Lease>(first).remember(a + conversation_key({{"assistant", "meow", ""}}));
        std::get<SlotPool::Lease>(second).remember(b);
        EXPECT_EQ(pool->busy(), 2u);
    }
    EXPECT_EQ(pool->busy(), 0u) << "a lease frees its slot when it ends";
    const std::string continued = a + conversation_key({{"assistant", "meow", ""}, {"user", "more", ""}});
    for (int round = 0; round < 3; ++round) {
        auto again = pool->acquire(continued, 1s);
        ASSERT_TRUE(std::holds_alternative<SlotPool::Lease>(again));
        EXPECT_EQ(std::get<SlotPool::Lease>(again).index(), 0u) << "the slot that answered about cats";
        std::get<SlotPool::Lease>(again).remember(a + conversation_key({{"assistant", "meow", ""}}));
    }
    auto dogs = pool->acquire(conversation_key({{"user", "about dogs", ""}, {"assistant", "woof", ""}}), 1s);
    ASSERT_TRUE(std::holds_alternative<SlotPool::Lease>(dogs));
    EXPECT_EQ(std::get<SlotPool::Lease>(dogs).index(), 1u);
}

TEST(SlotPool, WaitingIsBoundedOrderedAndEndsOnShutdown) {
    auto pool = pool_of(1, 2);
    ASSERT_TRUE(pool);
    auto held = pool->acquire("x", 1s);
    ASSERT_TRUE(std::holds_alternative<SlotPool::Lease>(held));

    auto timed_out = pool->acquire("y", 30ms);
    ASSERT_TRUE(std::holds_alternative<SlotPool::Refusal>(timed_out));
    EXPECT_EQ(std::get<SlotPool::Refusal>(timed_out), SlotPool::Refusal::TimedOut);

    std::vector<int> order;
    std::mutex order_mutex;
    std::vector<std::thread> waiters;
    for (int i = 0; i < 2; ++i) {
        waiters.emplace_back([&, i] {
            auto lease = pool->acquire("w", 10s);
            ASSERT_TRUE(std::holds_alternative<SlotPool::Lease>(lease));
            std::lock_guard lock(order_mutex);
            order.push_back(i);
        });
        while (pool->waiting() < unsigned(i + 1)) std::this_thread::sleep_for(1ms);  // arrival order 0, 1
    }
    auto refused = pool->acquire("z", 10s);
    ASSERT_TRUE(std::holds_alternative<SlotPool::Refusal>(refused));
    EXPECT_EQ(std::get<SlotPool::Refusal>(refused), SlotPool::Refusal::Busy) << "two are already waiting";

    held = SlotPool::Refusal::Busy;  // ends the lease: the waiters go in turn
    for (auto& t : waiters) t.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1}));

    auto holder = pool->acquire("x", 1s);
    std::thread stuck([&] {
        auto lease = pool->acquire("y", 60s);
        ASSERT_TRUE(std::holds_alternative<SlotPool::Refusal>(lease));
        EXPECT_EQ(std::get<SlotPool::Refusal>(lease), SlotPool::Refusal::ShuttingDown);
    });
    while (pool->waiting() < 1) std::this_thread::sleep_for(1ms);
    pool->shut_down();
    stuck.join();
    auto after = pool->acquire("x", 1s);
    EXPECT_TRUE(std::holds_alternative<SlotPool::Refusal>(after));
}

} // namespace
} // namespace cflow::server
