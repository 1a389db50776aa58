// TelemetryRing: the SPSC hand-off from the engine thread to the GUI. A producer thread and a
// consumer thread run concurrently; below capacity nothing may be lost, reordered or torn.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/ui/telemetry_ring.h"

namespace {

using cflow::LayerRecord;
using cflow::TokenTelemetry;
using cflow::ui::TelemetryRing;

// Every field derives from (position, layer) so the consumer can check each record it gets.
TokenTelemetry make_ring_token(uint32_t position, uint32_t layers) {
    TokenTelemetry t;
    t.position = position;
    t.token = int32_t(position * 7 + 1);
    t.vocabBytes = 1000 + position;
    t.totalUs = float(position % 1000) + 0.5f;
    t.tokens = 1 + position % 3;
    t.expertCacheHits = position % 5;
    t.expertCacheMisses = 2 + position % 7;
    t.expertBytesSaved = uint64_t(position) * 4096;
    t.expertBytesFromDisk = uint64_t(position) * 8192 + 1;
    t.expertFetch = uint8_t(position % 3);
    for (uint32_t l = 0; l < layers; ++l) {
        LayerRecord r;
        r.position = position;
        r.layer = uint16_t(l);
        r.bytesRead[0] = uint64_t(position) * 100 + l;
        r.computeUs = float(l) + 0.25f;
        r.nSelected = 2;
        r.experts[0] = uint8_t((position + l) % 8);
        r.experts[1] = uint8_t((position + l + 1) % 8);
        r.expertWeights[0] = 0.75f;
        r.expertWeights[1] = 0.25f;
        t.layers.push_back(r);
    }
    return t;
}

void expect_token(const TokenTelemetry& t, uint32_t position, uint32_t layers) {
    ASSERT_EQ(t.position, position);
    ASSERT_EQ(t.token, int32_t(position * 7 + 1));
    ASSERT_EQ(t.vocabBytes, 1000u + position);
    // The header fields the inspector's expert-cache and per-arm figures need.
    ASSERT_EQ(t.tokens, 1 + position % 3);
    ASSERT_EQ(t.expertCacheHits, position % 5);
    ASSERT_EQ(t.expertCacheMisses, 2 + position % 7);
    ASSERT_EQ(t.expertBytesSaved, uint64_t(position) * 4096);
    ASSERT_EQ(t.expertBytesFromDisk, uint64_t(position) * 8192 + 1);
    ASSERT_EQ(t.expertFetch, uint8_t(position % 3));
    ASSERT_EQ(t.layers.size(), layers);
    for (uint32_t l = 0; l < layers; ++l) {
        ASSERT_EQ(t.layers[l].position, position);
        ASSERT_EQ(t.layers[l].layer, l);
        ASSERT_EQ(t.layers[l].bytesRead[0], uint64_t(position) * 100 + l);
        ASSERT_EQ(t.layers[l].experts[1], uint8_t((position + l + 1) % 8));
    }
}

TEST(TelemetryRing, CapacityIsRoundedToAPowerOfTwo) {
    EXPECT_EQ(TelemetryRing(4096).capacity(), 4096u);
    EXPECT_EQ(TelemetryRing(100).capacity(), 128u);
    EXPECT_EQ(TelemetryRing(0).capacity(), 1u);
}

TEST(TelemetryRing, ConcurrentProducerAndConsumerLoseNothingBelowCapacity) {
    constexpr uint32_t kTokens = 50000;
    constexpr uint32_t kLayers = 6;
    TelemetryRing ring(256);  // small, so the indices wrap around many times
    std::atomic<bool> producerDone{false};
    std::atomic<uint32_t> failedPushes{0};

    std::thread producer([&] {
        for (uint32_t p = 0; p < kTokens; ++p) {
            // Stay below capacity (what the test is about); the ring itself never blocks.
            while (ring.pending() + kLayers > ring.capacity()) std::this_thread::yield();
            if (!ring.push(make_ring_token(p, kLayers))) failedPushes.fetch_add(1);
        }
        producerDone.store(true, std::memory_order_release);
    });

    std::vector<TokenTelemetry> received;
    received.reserve(kTokens);
    std::vector<TokenTelemetry> batch;
    while (received.size() < kTokens) {
        batch.clear();
        ring.drain(batch);
        for (TokenTelemetry& t : batch) received.push_back(std::move(t));
        if (batch.empty()) {
            if (producerDone.load(std::memory_order_acquire) && ring.pending() == 0) break;
            std::this_thread::yield();
        }
    }
    producer.join();

    EXPECT_EQ(failedPushes.load(), 0u);
    EXPECT_EQ(ring.droppedTokens(), 0u);
    EXPECT_EQ(ring.droppedRecords(), 0u);
    EXPECT_EQ(ring.pushedTokens(), kTokens);
    ASSERT_EQ(received.size(), kTokens);
    for (uint32_t p = 0; p < kTokens; ++p) expect_token(received[p], p, kLayers);
}

TEST(TelemetryRing, AFullRingDropsWholeTokensAndCountsThem) {
    TelemetryRing ring(16);
    EXPECT_TRUE(ring.push(make_ring_token(0, 6)));
    EXPECT_TRUE(ring.push(make_ring_token(1, 6)));
    EXPECT_FALSE(ring.push(make_ring_token(2, 6)));  // 12 used, 6 more do not fit in 16
    EXPECT_TRUE(ring.push(make_ring_token(3, 4)));   // exactly fills the ring
    EXPECT_FALSE(ring.push(make_ring_token(4, 1)));
    EXPECT_EQ(ring.droppedTokens(), 2u);
    EXPECT_EQ(ring.droppedRecords(), 7u);
    EXPECT_EQ(ring.pending(), 16u);

    std::vector<TokenTelemetry> out;
    EXPECT_EQ(ring.drain(out), 3u);
    ASSERT_EQ(out.size(), 3u);
    expect_token(out[0], 0, 6);
    expect_token(out[1], 1, 6);
    expect_token(out[2], 3, 4);
    EXPECT_EQ(ring.pending(), 0u);
    EXPECT_TRUE(ring.push(make_ring_token(5, 6)));  // room again after the drain
    EXPECT_FALSE(ring.push(make_ring_token(6, 17)));  // larger than the ring: never fits
}

TEST(TelemetryRing, ATokenWithoutLayerRecordsStillArrives) {
    TelemetryRing ring(8);
    EXPECT_TRUE(ring.push(make_ring_token(9, 0)));
    std::vector<TokenTelemetry> out;
    ASSERT_EQ(ring.drain(out), 1u);
    EXPECT_EQ(out[0].position, 9u);
    EXPECT_TRUE(out[0].layers.empty());
    EXPECT_EQ(ring.pending(), 0u);
}

} // namespace
