#pragma once
// A RAM cache of whole experts for the direct-I/O expert fetch (ExpertFetch::Staged and Sync):
// each entry holds exactly the sector-aligned bytes the direct reader fetched for one
// (layer, expert), so a hit serves the expert from RAM instead of storage. The mapped arm needs
// none: the OS page cache plays this role there.
//
// Budget: the bytes of resident entries never exceed budgetBytes; an entry larger than the whole
// budget is never cached. Entries are shared_ptr'd: an entry evicted while a staging slot still
// computes from it stays alive until that slot lets go (the budget counts what the cache holds).
//
// Eviction by measured benefit, LFU with aging, ties broken LRU. Why not plain LRU: a router's
// choices are skewed but not recent-biased; with top-k routing over a bank larger than the cache
// every layer's experts come round once per token, a cyclic scan on which LRU evicts exactly the
// entry needed next and hits almost never, while counts single out the hot experts. Every expert of
// a model has the same size, so the benefit of keeping one (bytes not read per future use) is
// proportional to how often it is used: its count. Why aging: counts are halved every agingPeriod
// lookups, so a shift in routing (a new topic, a new prompt) overtakes old favourites within a few
// periods instead of never, and counts stay bounded. Why LRU on ties: with equal counts the
// most recently used is the likelier to recur (and uniform routing then degrades to LRU).
// Admission: a newcomer evicts only entries whose (count, last use) rank below its own; the
// counts of non-resident keys are kept too (bounded by layers x experts), so an expert that keeps
// missing gains the count to displace a colder resident one, and a one-off does not flush the cache.
//
// Thread safety: every member may be called from any thread (one mutex; the fetcher calls find()
// when it issues a read and insert() when the slot is released, both from the forward thread).
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "io/aligned_bytes.h"

namespace cflow {

// (layer, expert) packed: layer in the high bits, expert (< 256) in the low 8.
constexpr uint32_t expert_cache_key(uint32_t layer, uint32_t expert) { return (layer << 8) | (expert & 0xffu); }

class ExpertCache {
public:
    // agingPeriodLookups 0 = 8 lookups per key seen so far (each key's count moves by about 8
    // between halvings under uniform routing).
    explicit ExpertCache(uint64_t budgetBytes, uint64_t agingPeriodLookups = 0);

    // The cached bytes of `key` (the aligned range the direct reader would fetch), or nullptr.
    // Counts a hit or a miss and one use of the key.
    std::shared_ptr<const AlignedBytes> find(uint32_t key);
    // Offers the bytes fetched for `key` (after a miss). Returns true when they are now resident;
    // false when they exceed the budget or every entry that would have to go is worth more.
    bool insert(uint32_t key, std::shared_ptr<const AlignedBytes> bytes);

    struct Counters {
        uint64_t hits = 0;
        uint64_t misses = 0;
        uint64_t inserted = 0;
        uint64_t evicted = 0;
        uint64_t rejected = 0;       // insert() refused (too large, or colder than every victim)
        uint64_t residentBytes = 0;  // <= budgetBytes
        uint64_t residentEntries = 0;
    };
    Counters counters() const;
    bool contains(uint32_t key) const;  // resident now (no use counted)
    uint64_t budget_bytes() const { return budgetBytes_; }

private:
    struct Use {
        uint32_t count = 0;       // uses since the last halving, plus half the older ones
        uint64_t lastUseTick = 0; // lookup clock at the last use (LRU tie-break)
    };
    // True when `a` is worth less than `b` (evicted first).
    static bool colder(const Use& a, const Use& b) {
        return a.count < b.count || (a.count == b.count && a.lastUseTick < b.lastUseTick);
    }
    void age_locked();

    const uint64_t budgetBytes_;
    const uint64_t agingPeriodFixed_;  // 0: derived from the keys seen
    mutable std::mutex mutex_;
    std::unordered_map<uint32_t, Use> uses_;  // every key looked up: layers x experts at most
    std::unordered_map<uint32_t, std::shared_ptr<const AlignedBytes>> resident_;
    uint64_t tick_ = 0;              // lookups so far
    uint64_t lookupsSinceAging_ = 0;
    Counters counters_;
};

} // namespace cflow
