#include "io/expert_cache.h"

#include <algorithm>
#include <vector>

namespace cflow {

ExpertCache::ExpertCache(uint64_t budgetBytes, uint64_t agingPeriodLookups)
    : budgetBytes_(budgetBytes), agingPeriodFixed_(agingPeriodLookups) {}

std::shared_ptr<const AlignedBytes> ExpertCache::find(uint32_t key) {
    std::lock_guard lock(mutex_);
    Use& use = uses_[key];
    ++use.count;
    use.lastUseTick = ++tick_;
    ++lookupsSinceAging_;
    const uint64_t period = agingPeriodFixed_ ? agingPeriodFixed_ : 8 * uint64_t(uses_.size());
    if (lookupsSinceAging_ >= period) age_locked();
    auto it = resident_.find(key);
    if (it == resident_.end()) {
        ++counters_.misses;
        return nullptr;
    }
    ++counters_.hits;
    return it->second;
}

void ExpertCache::age_locked() {
    lookupsSinceAging_ = 0;
    for (auto& [key, use] : uses_) use.count /= 2;
}

bool ExpertCache::insert(uint32_t key, std::shared_ptr<const AlignedBytes> bytes) {
    if (!bytes) return false;
    std::lock_guard lock(mutex_);
    if (resident_.count(key)) return true;  // already there (a duplicate read)
    const uint64_t size = bytes->size();
    if (size > budgetBytes_) {
        ++counters_.rejected;
        return false;
    }
    const Use mine = uses_[key];
    // Victims coldest first until the newcomer fits; all must rank below it, else nothing moves.
    std::vector<std::pair<Use, uint32_t>> candidates;  // [resident entries] (use, key)
    uint64_t freeBytes = budgetBytes_ - counters_.residentBytes;
    if (freeBytes < size) {
        candidates.reserve(resident_.size());
        for (const auto& [k, b] : resident_) candidates.emplace_back(uses_[k], k);
        std::sort(candidates.begin(), candidates.end(),
                  [](const auto& a, const auto& b) { return colder(a.first, b.first); });
    }
    size_t victims = 0;
    while (freeBytes < size) {
        if (victims == candidates.size() || !colder(candidates[victims].first, mine)) {
            ++counters_.rejected;
            return false;
        }
        freeBytes += resident_.at(candidates[victims].second)->size();
        ++victims;
    }
    for (size_t i = 0; i < victims; ++i) {
        auto it = resident_.find(candidates[i].second);
        counters_.residentBytes -= it->second->size();
        resident_.erase(it);
        ++counters_.evicted;
    }
    resident_.emplace(key, std::move(bytes));
    counters_.residentBytes += size;
    counters_.residentEntries = resident_.size();
    ++counters_.inserted;
    return true;
}

ExpertCache::Counters ExpertCache::counters() const {
    std::lock_guard lock(mutex_);
    Counters c = counters_;
    c.residentEntries = resident_.size();
    return c;
}

bool ExpertCache::contains(uint32_t key) const {
    std::lock_guard lock(mutex_);
    return resident_.count(key) != 0;
}

} // namespace cflow
