// Child process of the reply crash test: the desktop's chat controller, with its store, sends one
// message to an endpoint and lets the reply stream in until the test SIGKILLs it. Nothing here
// writes the store itself: what survives the kill is what ChatController persisted on its own.
#include <cstdio>

#include <QApplication>
#include <QTimer>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/remote/endpoint_profile.h"

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc != 3) {
        std::fprintf(stderr, "usage: cflow_ui_reply_writer DB_PATH ENDPOINT_BASE_URL\n");
        return 2;
    }
    auto store = cflow::ui::ConversationStore::open(QString::fromLocal8Bit(argv[1]));
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().c_str());
        return 1;
    }
    cflow::ui::EngineThread engine;
    cflow::ui::ChatController controller(engine.worker(), store->get());
    cflow::ui::GenerationSettings settings;
    settings.sampling.temperature = 0;
    controller.setSettingsSource([settings] { return settings; });
    cflow::ui::EndpointProfile profile;
    profile.id = QStringLiteral("crash-test");
    profile.baseUrl = QString::fromLocal8Bit(argv[2]);
    profile.readTimeoutS = 60;
    bool sent = false;
    QObject::connect(&controller, &cflow::ui::ChatController::replyStreamed, &app, [] {
        std::printf("streamed\n");
        std::fflush(stdout);
    });
    // Send once the endpoint is the chat's model.
    QTimer poll;
    QObject::connect(&poll, &QTimer::timeout, &app, [&] {
        if (sent || !controller.modelReady() || !controller.onEndpoint()) return;
        sent = controller.send(QStringLiteral("Tell me a long story."));
        std::printf(sent ? "sent\n" : "refused\n");
        std::fflush(stdout);
        if (!sent) app.exit(1);
    });
    poll.start(10);
    controller.connectEndpoint(profile, QString());
    return app.exec();
}
