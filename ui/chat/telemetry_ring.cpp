#include "cflow/ui/telemetry_ring.h"

#include <bit>

namespace cflow::ui {

TelemetryRing::TelemetryRing(size_t capacity) {
    // One token can need up to 65535 records (uint16 layer indices); keep at least 1 slot.
    const size_t rounded = std::bit_ceil(capacity < 1 ? size_t(1) : capacity);
    slots_.resize(rounded);
    mask_ = rounded - 1;
}

bool TelemetryRing::push(const TokenTelemetry& t) {
    // A token without layer records still takes one slot so its header reaches the GUI.
    const size_t needed = t.layers.empty() ? 1 : t.layers.size();
    const uint64_t head = head_.load(std::memory_order_relaxed);  // only this thread writes head
    const uint64_t tail = tail_.load(std::memory_order_acquire);  // slots before tail are free again
    const uint64_t used = head - tail;
    if (needed > 0xFFFF || needed > slots_.size() || used > slots_.size() - needed) {
        droppedTokens_.fetch_add(1, std::memory_order_relaxed);
        droppedRecords_.fetch_add(t.layers.size(), std::memory_order_relaxed);
        return false;
    }
    for (size_t i = 0; i < needed; ++i) {
        TelemetrySlot& slot = slots_[(head + i) & mask_];
        slot.layer = t.layers.empty() ? LayerRecord{} : t.layers[i];
        slot.position = t.position;
        slot.token = t.token;
        slot.vocabBytes = t.vocabBytes;
        slot.totalUs = t.totalUs;
        slot.tokens = t.tokens;
        slot.expertCacheHits = t.expertCacheHits;
        slot.expertCacheMisses = t.expertCacheMisses;
        slot.expertBytesSaved = t.expertBytesSaved;
        slot.expertBytesFromDisk = t.expertBytesFromDisk;
        slot.expertFetch = t.expertFetch;
        slot.grammarAllowedTokens = t.grammarAllowedTokens;
        slot.grammarVocabTokens = t.grammarVocabTokens;
        slot.layerIndex = static_cast<uint16_t>(i);
        slot.layerCount = static_cast<uint16_t>(t.layers.size());
    }
    head_.store(head + needed, std::memory_order_release);  // publishes the slot contents
    pushedTokens_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

size_t TelemetryRing::drain(std::vector<TokenTelemetry>& out) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);       // only this thread writes tail
    const uint64_t head = head_.load(std::memory_order_acquire);  // sees the slots written before it
    size_t tokens = 0;
    while (tail < head) {
        const TelemetrySlot& first = slots_[tail & mask_];
        TokenTelemetry t;
        t.position = first.position;
        t.token = first.token;
        t.vocabBytes = first.vocabBytes;
        t.totalUs = first.totalUs;
        t.tokens = first.tokens;
        t.expertCacheHits = first.expertCacheHits;
        t.expertCacheMisses = first.expertCacheMisses;
        t.expertBytesSaved = first.expertBytesSaved;
        t.expertBytesFromDisk = first.expertBytesFromDisk;
        t.expertFetch = first.expertFetch;
        t.grammarAllowedTokens = first.grammarAllowedTokens;
        t.grammarVocabTokens = first.grammarVocabTokens;
        t.layers.reserve(first.layerCount);
        for (size_t i = 0; i < first.layerCount; ++i) t.layers.push_back(slots_[(tail + i) & mask_].layer);
        // Tokens are published whole, so [tail, tail + records) is complete below head.
        tail += first.layerCount == 0 ? 1 : first.layerCount;
        out.push_back(std::move(t));
        ++tokens;
    }
    tail_.store(tail, std::memory_order_release);  // hands the slots back to the producer
    return tokens;
}

size_t TelemetryRing::pending() const {
    const uint64_t head = head_.load(std::memory_order_acquire);
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    return static_cast<size_t>(head - tail);
}

} // namespace cflow::ui
