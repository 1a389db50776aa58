// Test helper for the crash-safety test: writes six complete messages and then streams an
// assistant reply into the store forever, printing after each commit, until it is killed.
#include <cstdio>
#include <thread>

#include <QCoreApplication>

#include "cflow/ui/conversation_store.h"

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: cflow_ui_db_writer DB_PATH\n");
        return 2;
    }
    auto store = cflow::ui::ConversationStore::open(QString::fromLocal8Bit(argv[1]));
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().c_str());
        return 1;
    }
    auto conversation = (*store)->createConversation(QStringLiteral("crash test"));
    if (!conversation) return 1;
    for (int i = 0; i < 6; ++i) {
        auto id = (*store)->addMessage(*conversation, i % 2 ? QStringLiteral("assistant") : QStringLiteral("user"),
                                       QStringLiteral("message %1").arg(i));
        if (!id) return 1;
        std::printf("committed %d\n", i + 1);
        std::fflush(stdout);
    }
    auto reply = (*store)->addMessage(*conversation, QStringLiteral("assistant"), QString(), false);
    if (!reply) return 1;
    QString content;
    for (int i = 0;; ++i) {
        content += QStringLiteral("tok%1 ").arg(i);
        if (cflow::Status s = (*store)->updateMessage(*reply, content, false); !s) {
            std::fprintf(stderr, "%s\n", s.error().c_str());
            return 1;
        }
        std::printf("streamed %d\n", i);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}
