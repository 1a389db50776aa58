#pragma once
// Who may hold a request thread: every connection is admitted here (per-client and total caps),
// and while its request head is still arriving it may be asked to leave when a newer connection
// waits for a thread. Without that, 37 slowloris connections (one header line every 2 s) held
// every thread and locked every other client out; now each waiting newcomer pushes out the
// oldest head that has been arriving for longer than `evictable_after`.
//
// Thread safety: every member may be called from any thread.
#include <chrono>
#include <cstdint>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace cflow::server {

class ConnectionGate {
public:
    using Clock = std::chrono::steady_clock;

    ConnectionGate(unsigned max_per_client, unsigned max_total, std::chrono::milliseconds evictable_after);

    enum class Admission : uint8_t { Admitted, ClientOverLimit, ServerFull, ShuttingDown };
    // Counts the connection from `client` (its address) when the caps allow; `id` names it after.
    Admission admit(const std::string& client, uint64_t& id);
    void head_arrived(uint64_t id);  // its head is complete: it is no longer asked to leave
    bool asked_to_leave(uint64_t id) const;
    void release(uint64_t id);       // the connection is closed

    // How many accepted connections wait for a request thread (RequestThreads reports it).
    void set_waiting_for_thread(size_t count);
    // While connections wait for a thread and fewer are already leaving, the oldest heads still
    // arriving (for evictable_after or more) are asked to leave. Returns how many were.
    unsigned make_room();
    void shut_down();  // every connection still waiting for its head is asked to leave; no more admitted

    unsigned open_connections() const;
    unsigned heads_arriving() const;
    uint64_t evicted_total() const;

private:
    struct Entry {
        std::string client;
        Clock::time_point admitted;
        bool head_arriving = true;
        bool asked_to_leave = false;
    };
    const unsigned max_per_client_;
    const unsigned max_total_;
    const std::chrono::milliseconds evictable_after_;
    mutable std::mutex mutex_;
    std::map<uint64_t, Entry> entries_;        // by id: admission order
    std::map<std::string, unsigned> per_client_;
    uint64_t next_id_ = 1;
    size_t waiting_for_thread_ = 0;
    unsigned leaving_ = 0;                       // asked to leave, not yet released
    uint64_t evicted_ = 0;
    bool shutting_down_ = false;
};

} // namespace cflow::server
