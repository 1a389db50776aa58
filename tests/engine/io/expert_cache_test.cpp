// ExpertCache: the budget is never exceeded, eviction follows counts (LFU) with LRU on ties and
// aging, hits and misses are counted per lookup, and an entry larger than the budget is not cached.
#include <random>

#include <gtest/gtest.h>

#include "io/expert_cache.h"

namespace cflow::test {
namespace {

constexpr uint64_t kCacheSector = 4096;

std::shared_ptr<const AlignedBytes> cache_bytes(uint64_t size, uint8_t fill = 0) {
    auto b = AlignedBytes::allocate(kCacheSector, size);  // [size] bytes, sector-aligned
    EXPECT_TRUE(b);
    if (b) std::fill(b->data(), b->data() + b->size(), fill);
    return b;
}

// A miss then an insert: how the fetcher fills the cache.
bool miss_and_insert(ExpertCache& cache, uint32_t key, uint64_t size) {
    EXPECT_EQ(cache.find(key), nullptr);
    return cache.insert(key, cache_bytes(size));
}

TEST(ExpertCache, BuffersAreSectorAligned) {
    auto b = AlignedBytes::allocate(kCacheSector, 3 * kCacheSector);
    ASSERT_TRUE(b);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kCacheSector, 0u);
    EXPECT_EQ(b->size(), 3 * kCacheSector);
}

TEST(ExpertCache, BudgetIsNeverExceeded) {
    const uint64_t budget = 5 * kCacheSector;
    ExpertCache cache(budget, 50);
    std::mt19937 rng(7);
    for (int i = 0; i < 5000; ++i) {
        const uint32_t key = expert_cache_key(rng() % 4, rng() % 8);
        if (!cache.find(key)) cache.insert(key, cache_bytes(kCacheSector * (1 + rng() % 3)));
        const auto c = cache.counters();
        ASSERT_LE(c.residentBytes, budget) << "after operation " << i;
    }
    const auto c = cache.counters();
    EXPECT_EQ(c.hits + c.misses, 5000u);
    EXPECT_GT(c.hits, 0u);
    EXPECT_GT(c.evicted, 0u);
}

TEST(ExpertCache, AnEntryLargerThanTheBudgetIsNotCached) {
    ExpertCache cache(2 * kCacheSector);
    EXPECT_FALSE(miss_and_insert(cache, 1, 3 * kCacheSector));
    EXPECT_FALSE(cache.contains(1));
    EXPECT_EQ(cache.counters().residentBytes, 0u);
    EXPECT_EQ(cache.counters().rejected, 1u);
    EXPECT_TRUE(miss_and_insert(cache, 2, 2 * kCacheSector));  // exactly the budget fits
}

TEST(ExpertCache, HitsAndMissesAreCountedPerLookup) {
    ExpertCache cache(4 * kCacheSector);
    EXPECT_EQ(cache.find(1), nullptr);
    ASSERT_TRUE(cache.insert(1, cache_bytes(kCacheSector, 0xab)));
    auto hit = cache.find(1);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->data()[kCacheSector - 1], 0xab);
    EXPECT_TRUE(cache.find(1));
    EXPECT_EQ(cache.find(2), nullptr);
    const auto c = cache.counters();
    EXPECT_EQ(c.hits, 2u);
    EXPECT_EQ(c.misses, 2u);
    EXPECT_EQ(c.residentEntries, 1u);
    EXPECT_EQ(c.residentBytes, kCacheSector);
}

TEST(ExpertCache, EvictsTheLeastFrequentlyUsed) {
    ExpertCache cache(3 * kCacheSector, 1000);  // no aging within the test
    ASSERT_TRUE(miss_and_insert(cache, 10, kCacheSector));
    ASSERT_TRUE(miss_and_insert(cache, 11, kCacheSector));
    ASSERT_TRUE(miss_and_insert(cache, 12, kCacheSector));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(cache.find(10));  // 10: 4 uses
    EXPECT_TRUE(cache.find(12));                              // 12: 2 uses, 11: 1 use (the oldest single)
    ASSERT_TRUE(miss_and_insert(cache, 13, kCacheSector));          // 13: 1 use, newer than 11
    EXPECT_TRUE(cache.contains(10));
    EXPECT_FALSE(cache.contains(11));
    EXPECT_TRUE(cache.contains(12));
    EXPECT_TRUE(cache.contains(13));
    EXPECT_EQ(cache.counters().evicted, 1u);
}

TEST(ExpertCache, EqualCountsEvictTheLeastRecentlyUsed) {
    ExpertCache cache(2 * kCacheSector, 1000);
    ASSERT_TRUE(miss_and_insert(cache, 1, kCacheSector));
    ASSERT_TRUE(miss_and_insert(cache, 2, kCacheSector));
    EXPECT_TRUE(cache.find(1));  // 1 and 2 both at 2 uses; 2 was used least recently
    EXPECT_TRUE(cache.find(2));
    EXPECT_TRUE(cache.find(1));
    EXPECT_EQ(cache.find(3), nullptr);
    EXPECT_EQ(cache.find(3), nullptr);
    EXPECT_EQ(cache.find(3), nullptr);  // 3 at 3 uses: beats 2 (2 uses)
    ASSERT_TRUE(cache.insert(3, cache_bytes(kCacheSector)));
    EXPECT_TRUE(cache.contains(1));
    EXPECT_FALSE(cache.contains(2));
    EXPECT_TRUE(cache.contains(3));
}

TEST(ExpertCache, AColderNewcomerDoesNotDisplaceHotEntries) {
    ExpertCache cache(2 * kCacheSector, 1000);
    ASSERT_TRUE(miss_and_insert(cache, 1, kCacheSector));
    ASSERT_TRUE(miss_and_insert(cache, 2, kCacheSector));
    for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(cache.find(1));
        EXPECT_TRUE(cache.find(2));
    }
    EXPECT_FALSE(miss_and_insert(cache, 3, kCacheSector));  // 1 use against 5 each
    EXPECT_TRUE(cache.contains(1));
    EXPECT_TRUE(cache.contains(2));
    EXPECT_FALSE(cache.contains(3));
    EXPECT_EQ(cache.counters().rejected, 1u);
}

TEST(ExpertCache, AgingLetsANewFavouriteOvertakeAnOldOne) {
    ExpertCache cache(kCacheSector, 8);  // counts halve every 8 lookups
    ASSERT_TRUE(miss_and_insert(cache, 1, kCacheSector));
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(cache.find(1));  // 7 lookups of 1
    // Key 2 now used steadily: after the halvings its count passes key 1's decayed one.
    bool admitted = false;
    for (int i = 0; i < 40 && !admitted; ++i) {
        if (cache.find(2)) break;
        admitted = cache.insert(2, cache_bytes(kCacheSector));
    }
    EXPECT_TRUE(admitted);
    EXPECT_TRUE(cache.contains(2));
    EXPECT_FALSE(cache.contains(1));
}

TEST(ExpertCache, AnEvictedEntryStaysValidWhileShared) {
    ExpertCache cache(kCacheSector, 1000);
    ASSERT_TRUE(miss_and_insert(cache, 1, kCacheSector));
    auto held = cache.find(1);  // a staging slot computing from it
    ASSERT_TRUE(held);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(cache.find(2), nullptr);
    ASSERT_TRUE(cache.insert(2, cache_bytes(kCacheSector, 7)));
    EXPECT_FALSE(cache.contains(1));
    EXPECT_EQ(held->size(), kCacheSector);  // still readable (ASan would flag a use after free)
    EXPECT_EQ(held->data()[0], 0);
    EXPECT_LE(cache.counters().residentBytes, kCacheSector);
}

} // namespace
} // namespace cflow::test
