#include "connection_gate.h"

#include <algorithm>

namespace cflow::server {

ConnectionGate::ConnectionGate(unsigned max_per_client, unsigned max_total, std::chrono::milliseconds evictable_after)
    : max_per_client_(std::max(1u, max_per_client)), max_total_(std::max(1u, max_total)), evictable_after_(evictable_after) {}

ConnectionGate::Admission ConnectionGate::admit(const std::string& client, uint64_t& id) {
    std::lock_guard lock(mutex_);
    if (shutting_down_) return Admission::ShuttingDown;
    if (entries_.size() >= max_total_) return Admission::ServerFull;
    unsigned& from_client = per_client_[client];
    if (from_client >= max_per_client_) {
        if (from_client == 0) per_client_.erase(client);
        return Admission::ClientOverLimit;
    }
    ++from_client;
    id = next_id_++;
    entries_.emplace(id, Entry{client, Clock::now()});
    return Admission::Admitted;
}

void ConnectionGate::head_arrived(uint64_t id) {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(id); it != entries_.end()) it->second.head_arriving = false;
}

bool ConnectionGate::asked_to_leave(uint64_t id) const {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(id);
    return it == entries_.end() || it->second.asked_to_leave;
}

void ConnectionGate::release(uint64_t id) {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;
    if (it->second.asked_to_leave) --leaving_;
    if (auto client = per_client_.find(it->second.client); client != per_client_.end() && --client->second == 0)
        per_client_.erase(client);
    entries_.erase(it);
}

void ConnectionGate::set_waiting_for_thread(size_t count) {
    std::lock_guard lock(mutex_);
    waiting_for_thread_ = count;
}

unsigned ConnectionGate::make_room() {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    unsigned asked = 0;
    for (auto& [id, entry] : entries_) {  // oldest first
        if (leaving_ >= waiting_for_thread_) break;
        if (!entry.head_arriving || entry.asked_to_leave) continue;
        if (now - entry.admitted < evictable_after_) break;  // the rest are younger
        entry.asked_to_leave = true;
        ++leaving_;
        ++evicted_;
        ++asked;
    }
    return asked;
}

void ConnectionGate::shut_down() {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
    for (auto& [id, entry] : entries_)
        if (entry.head_arriving && !entry.asked_to_leave) {
            entry.asked_to_leave = true;
            ++leaving_;
        }
}

unsigned ConnectionGate::open_connections() const {
    std::lock_guard lock(mutex_);
    return unsigned(entries_.size());
}

unsigned ConnectionGate::heads_arriving() const {
    std::lock_guard lock(mutex_);
    return unsigned(std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return e.second.head_arriving; }));
}

uint64_t ConnectionGate::evicted_total() const {
    std::lock_guard lock(mutex_);
    return evicted_;
}

} // namespace cflow::server
