#include "chat_loop.h"

#include <cstdio>

#include "cflow/formats/whole_file.h"

#include "commands.h"
#include "console.h"

namespace cflow::cli {
namespace {

constexpr const char* kChatHelp =
    "cflow chat: type a message and press Enter; /reset forgets the conversation, /system TEXT sets the system "
    "prompt (and resets), /quit exits; Ctrl-C stops a reply, Ctrl-D exits\n";

} // namespace

std::vector<ChatMessage> Conversation::messages() const {
    std::vector<ChatMessage> all;
    if (!system_prompt.empty()) all.push_back({"system", system_prompt, ""});
    all.insert(all.end(), turns.begin(), turns.end());
    return all;
}

int run_chat_loop(ChatReplier& replier, Conversation& conversation) {
    auto forget = [&] {
        conversation.turns.clear();
        replier.forget();
    };
    const bool interactive = stdin_is_terminal();
    if (interactive) std::fputs(kChatHelp, stderr);
    for (;;) {
        if (interactive) {
            std::fputs("> ", stdout);
            std::fflush(stdout);
        }
        auto next = read_stdin_line(kMaxInputLineBytes);
        if (!next) return fail("chat", next.error());
        if (!*next) {
            if (interactive) std::fputs("\n", stdout);
            return 0;
        }
        const std::string line = std::move(**next);
        if (line.empty()) continue;
        if (line == "/quit" || line == "/exit") return 0;
        if (line == "/help") {
            std::fputs(kChatHelp, stderr);
            continue;
        }
        if (line == "/reset") {
            forget();
            std::fputs("[cflow] conversation reset\n", stderr);
            continue;
        }
        if (line == "/system" || line.rfind("/system ", 0) == 0) {
            conversation.system_prompt = line.size() > 8 ? line.substr(8) : "";
            forget();
            std::fputs(conversation.system_prompt.empty() ? "[cflow] system prompt cleared; conversation reset\n"
                                                          : "[cflow] system prompt set; conversation reset\n",
                       stderr);
            continue;
        }
        if (line[0] == '/') {
            std::fprintf(stderr, "[cflow] unknown command '%s' (try /help)\n", line.c_str());
            continue;
        }
        if (Status s = replier.turn(conversation, line); !s) return fail("chat", one_line(s.error()));
    }
}

} // namespace cflow::cli
