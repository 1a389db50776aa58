#pragma once
// The interactive loop of `cflow chat`, shared by the local engine (cmd_chat.cpp) and a remote
// endpoint (cmd_chat_remote.cpp): reads stdin line by line (a terminal or a pipe), handles /reset,
// /system TEXT, /help and /quit, and hands each message to a ChatReplier, which streams the reply
// to stdout and records both turns in the conversation.
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/engine/chat/chat_template.h"

namespace cflow::cli {

// The conversation as the template (or the endpoint) sees it: the system prompt (if any) and the
// turns so far.
struct Conversation {
    std::string system_prompt;
    std::vector<ChatMessage> turns;

    std::vector<ChatMessage> messages() const;
};

class ChatReplier {
public:
    virtual ~ChatReplier() = default;
    // One user message -> one streamed reply, both recorded in `conversation`. An error ends the
    // chat; a replier that can go on after a failure (a network error) says so on stderr and
    // returns success.
    virtual Status turn(Conversation& conversation, const std::string& user_text) = 0;
    // The conversation was reset: forget what the replier keeps of it (the KV cache).
    virtual void forget() {}
};

// Returns the process exit code when the conversation ends (EOF or /quit).
int run_chat_loop(ChatReplier& replier, Conversation& conversation);

} // namespace cflow::cli
