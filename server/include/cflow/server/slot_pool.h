#pragma once
// The server's generation slots: `slots` chat sessions on one shared model, each with its own
// KV cache. A request leases one for its whole generation; while every slot is busy, up to
// `max_waiting` requests wait their turn (in arrival order) and later ones are refused as busy.
// A free slot whose last conversation shares the longest start with the new one is preferred,
// so a client continuing a conversation reuses its KV cache (the chat core's prefix reuse).
//
// Thread safety: acquire(), shut_down() and the counters may be called from any thread; a
// Lease and its ChatSession belong to the thread holding it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/engine/chat/chat_session.h"

namespace cflow::server {

class SlotPool {
    struct Slot;

public:
    // Fails when a session cannot be created (the error of Session::create) or the template
    // choice does not compile.
    static Result<std::unique_ptr<SlotPool>> create(std::shared_ptr<const Model> model, const SessionOptions& options,
                                                    const TemplateChoice& template_choice, unsigned slots,
                                                    unsigned max_waiting);
    ~SlotPool();

    class Lease {
    public:
        Lease(Lease&& other) noexcept : pool_(other.pool_), index_(other.index_) { other.pool_ = nullptr; }
        Lease& operator=(Lease&&) = delete;
        ~Lease();
        ChatSession& chat();
        unsigned index() const { return index_; }
        // What the slot's cache holds after this request, for the next request's slot choice.
        void remember(std::string conversation_key);

    private:
        friend class SlotPool;
        Lease(SlotPool* pool, unsigned index) : pool_(pool), index_(index) {}
        SlotPool* pool_;
        unsigned index_;
    };

    enum class Refusal : uint8_t { Busy, TimedOut, ShuttingDown, ClientLeft };

    // `conversation_key`: the request's messages in a canonical text form (conversation_key()).
    // `client_left`, when given, is asked every 200 ms while the request waits: a client that
    // went away gives up its place at once instead of when its turn comes.
    std::variant<Lease, Refusal> acquire(const std::string& conversation_key, std::chrono::milliseconds max_wait,
                                         const std::function<bool()>& client_left = {});
    void shut_down();  // refuses new leases and wakes every waiting request

    unsigned size() const { return static_cast<unsigned>(slots_.size()); }
    uint32_t context_length() const { return context_length_; }  // of every slot's session
    unsigned busy() const;
    unsigned waiting() const;

private:
    explicit SlotPool(unsigned max_waiting);
    void release(unsigned index);
    void skip_abandoned_tickets();  // advances serving_ticket_ past requests that gave up (mutex held)

    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::vector<std::unique_ptr<Slot>> slots_;
    unsigned max_waiting_;
    uint32_t context_length_ = 0;
    unsigned waiting_ = 0;
    uint64_t next_ticket_ = 0;   // arrival order of waiting requests
    uint64_t serving_ticket_ = 0;
    std::vector<uint64_t> abandoned_tickets_;
    bool shutting_down_ = false;
};

// A canonical text of a conversation: role and content of each message, separated so no
// content can imitate a boundary. Its common prefix with a slot's key approximates the KV reuse.
std::string conversation_key(const std::vector<ChatMessage>& messages);

} // namespace cflow::server
