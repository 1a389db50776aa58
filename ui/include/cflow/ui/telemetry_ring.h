#pragma once
// A lock-free single-producer / single-consumer ring carrying engine telemetry from the
// engine thread (producer, inside GenerateRequest::on_step) to the GUI (consumer, a timer
// that drains it). The producer never blocks and never allocates: a token whose layers do
// not fit in the free slots is dropped whole and counted, so the consumer only ever sees
// complete tokens. One slot holds one LayerRecord plus its token's header fields.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cflow/engine/forward/telemetry.h"

namespace cflow::ui {

struct TelemetrySlot {
    LayerRecord layer;
    uint32_t position = 0;    // token position (same for every slot of one token)
    int32_t token = -1;
    uint64_t vocabBytes = 0;
    float totalUs = 0;
    // The token's header (TokenTelemetry), repeated in each of its slots like position.
    uint32_t tokens = 1;      // a prefill chunk covers several
    uint32_t expertCacheHits = 0;
    uint32_t expertCacheMisses = 0;
    uint64_t expertBytesSaved = 0;
    uint64_t expertBytesFromDisk = 0;
    uint8_t expertFetch = 0;
    uint32_t grammarAllowedTokens = 0;  // 0 / 0: no grammar masked this token's sampling
    uint32_t grammarVocabTokens = 0;
    uint16_t layerIndex = 0;  // index of this record within its token
    uint16_t layerCount = 0;  // records the token has (0: a token without layer records)
};

class TelemetryRing {
public:
    static constexpr size_t kDefaultCapacity = 4096;  // layer records

    // capacity is rounded up to a power of two (index masking instead of modulo).
    explicit TelemetryRing(size_t capacity = kDefaultCapacity);
    TelemetryRing(const TelemetryRing&) = delete;
    TelemetryRing& operator=(const TelemetryRing&) = delete;

    size_t capacity() const { return slots_.size(); }

    // Producer thread only. Publishes all layers of t at once, or drops the whole token
    // when it does not fit (returns false and counts it). Wait-free.
    bool push(const TokenTelemetry& t);

    // Consumer thread only. Appends every complete token published so far to out, oldest
    // first; returns how many tokens were appended. Allocates only for out's growth.
    size_t drain(std::vector<TokenTelemetry>& out);

    // Layer records currently waiting (approximate while the producer runs).
    size_t pending() const;
    uint64_t droppedTokens() const { return droppedTokens_.load(std::memory_order_relaxed); }
    uint64_t droppedRecords() const { return droppedRecords_.load(std::memory_order_relaxed); }
    uint64_t pushedTokens() const { return pushedTokens_.load(std::memory_order_relaxed); }

private:
    std::vector<TelemetrySlot> slots_;  // [capacity] written by the producer between tail and head
    size_t mask_ = 0;
    // Monotonic counters (never wrap in practice: 2^64 records); separate cache lines so the
    // producer's and the consumer's stores do not false-share.
    alignas(64) std::atomic<uint64_t> head_{0};  // next slot the producer writes
    alignas(64) std::atomic<uint64_t> tail_{0};  // next slot the consumer reads
    alignas(64) std::atomic<uint64_t> droppedTokens_{0};
    std::atomic<uint64_t> droppedRecords_{0};
    std::atomic<uint64_t> pushedTokens_{0};
};

// Several producers for one ring (the chat's engine thread and the local server's request
// threads): pushes are serialized by a mutex, so the ring still sees one producer at a time.
// The lock is uncontended except while the chat and the server generate at once.
class SharedRingProducer {
public:
    explicit SharedRingProducer(TelemetryRing& ring) : ring_(ring) {}
    bool push(const TokenTelemetry& t) {
        std::lock_guard lock(mutex_);
        return ring_.push(t);
    }

private:
    std::mutex mutex_;
    TelemetryRing& ring_;
};

} // namespace cflow::ui
