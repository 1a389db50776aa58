#include "cflow/server/slot_pool.h"

#include <algorithm>

namespace cflow::server {

struct SlotPool::Slot {
    std::unique_ptr<ChatSession> chat;
    bool busy = false;
    std::string key;  // conversation_key of what the cache holds
};

Result<std::unique_ptr<SlotPool>> SlotPool::create(std::shared_ptr<const Model> model, const SessionOptions& options,
                                                   const TemplateChoice& template_choice, unsigned slots,
                                                   unsigned max_waiting) {
    std::unique_ptr<SlotPool> pool(new SlotPool(max_waiting));
    for (unsigned i = 0; i < std::max(1u, slots); ++i) {
        auto session = Session::create(model, options);
        if (!session) return session.take_error();
        auto slot = std::make_unique<Slot>();
        slot->chat = std::make_unique<ChatSession>(model, std::move(session).value());
        if (Status chosen = slot->chat->set_template(template_choice); !chosen) return chosen.take_error();
        pool->context_length_ = slot->chat->session().context_length();
        pool->slots_.push_back(std::move(slot));
    }
    return pool;
}

SlotPool::SlotPool(unsigned max_waiting) : max_waiting_(max_waiting) {}
SlotPool::~SlotPool() = default;

SlotPool::Lease::~Lease() {
    if (pool_) pool_->release(index_);
}

ChatSession& SlotPool::Lease::chat() { return *pool_->slots_[index_]->chat; }

void SlotPool::Lease::remember(std::string key) {
    std::lock_guard lock(pool_->mutex_);
    pool_->slots_[index_]->key = std::move(key);
}

std::variant<SlotPool::Lease, SlotPool::Refusal> SlotPool::acquire(const std::string& key,
                                                                   std::chrono::milliseconds max_wait,
                                                                   const std::function<bool()>& client_left) {
    std::unique_lock lock(mutex_);
    if (shutting_down_) return Refusal::ShuttingDown;
    const auto has_free = [&] {
        return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->busy; });
    };
    // Waiting requests are served in arrival order: a new one never overtakes them.
    if (!has_free() || waiting_ > 0) {
        if (waiting_ >= max_waiting_) return Refusal::Busy;
        const uint64_t ticket = next_ticket_++;
        ++waiting_;
        const auto turn_came = [&] { return shutting_down_ || (ticket == serving_ticket_ && has_free()); };
        const auto deadline = std::chrono::steady_clock::now() + max_wait;
        constexpr std::chrono::milliseconds kClientCheck{200};
        bool served = false, left = false;
        for (;;) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline) {
                served = turn_came();
                break;
            }
            const auto until = client_left ? std::min(deadline, now + kClientCheck) : deadline;
            if (freed_.wait_until(lock, until, turn_came)) {
                served = true;
                break;
            }
            if (client_left) {
                lock.unlock();  // the check is a socket call: not under the pool's lock
                left = client_left();
                lock.lock();
                if (left && !turn_came()) break;
                left = false;
            }
        }
        --waiting_;
        if (shutting_down_ || !served) {
            // Give up the turn: the next ticket may go.
            abandoned_tickets_.push_back(ticket);
            skip_abandoned_tickets();
            freed_.notify_all();
            return shutting_down_ ? Refusal::ShuttingDown : left ? Refusal::ClientLeft : Refusal::TimedOut;
        }
        ++serving_ticket_;
        skip_abandoned_tickets();
        freed_.notify_all();
    }
    // The free slot whose cache shares the longest start with this conversation.
    unsigned best = 0;
    size_t best_shared = 0;
    bool found = false;
    for (unsigned i = 0; i < slots_.size(); ++i) {
        if (slots_[i]->busy) continue;
        const std::string& held = slots_[i]->key;
        const size_t limit = std::min(held.size(), key.size());
        const size_t shared = size_t(std::mismatch(held.begin(), held.begin() + std::ptrdiff_t(limit), key.begin()).first -
                                     held.begin());
        if (!found || shared > best_shared) {
            best = i;
            best_shared = shared;
            found = true;
        }
    }
    slots_[best]->busy = true;
    return Lease(this, best);
}

void SlotPool::skip_abandoned_tickets() {
    for (bool skipped = true; skipped;) {
        skipped = false;
        const auto it = std::find(abandoned_tickets_.begin(), abandoned_tickets_.end(), serving_ticket_);
        if (it != abandoned_tickets_.end()) {
            abandoned_tickets_.erase(it);
            ++serving_ticket_;
            skipped = true;
        }
    }
}

void SlotPool::release(unsigned index) {
    {
        std::lock_guard lock(mutex_);
        slots_[index]->busy = false;
    }
    freed_.notify_all();
}

void SlotPool::shut_down() {
    {
        std::lock_guard lock(mutex_);
        shutting_down_ = true;
    }
    freed_.notify_all();
}

unsigned SlotPool::busy() const {
    std::lock_guard lock(mutex_);
    return static_cast<unsigned>(std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; }));
}

unsigned SlotPool::waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_;
}

std::string conversation_key(const std::vector<ChatMessage>& messages) {
    std::string key;
    for (const ChatMessage& m : messages) {
        key += m.role;
        key += '\x1f';
        key += std::to_string(m.content.size());  // a length prefix: content cannot fake a boundary
        key += '\x1f';
        key += m.content;
        key += '\x1e';
    }
    return key;
}

} // namespace cflow::server
