// An MCP server's tool through the chat's tool-call card (issue 33): a server written with the
// official @modelcontextprotocol/sdk npm package (tests/ui/mcp-node), over stdio, registered in a
// conversation's ToolRegistry as the Tools panel does. Its tools are offered to the model; a call
// reaches the server only after Approve; Deny never reaches it; a tool that hangs or crashes ends
// the card with a clear error in bounded time and the chat can go on.
#include <filesystem>
#include <memory>

#include <QApplication>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/tool_call_card.h"
#include "cflow/ui/tools/mcp_client.h"
#include "cflow/ui/tools/tool_registry.h"

#include "mcp_test_server.h"

namespace cflow::ui {
namespace {

using namespace std::chrono_literals;

// A registry holding the started test server, as a conversation's toolbox holds it.
struct McpCardFixture {
    ToolRegistry registry;
    McpClient* client = nullptr;  // owned by the registry

    explicit McpCardFixture(std::chrono::milliseconds timeout) {
        auto owned = std::make_unique<McpClient>(test::mcp_test_server_config(), timeout);
        client = owned.get();
        const Status started = QCoro::waitFor(client->start());
        EXPECT_TRUE(started.ok()) << started.error();
        const Status added = registry.addProvider(std::move(owned));
        EXPECT_TRUE(added.ok()) << added.error();
    }
};

// Clicks the card's button and waits until it is resolved (false when it is not within the limit).
bool decide(ToolCallCard& card, QPushButton* button, int limitMs = 15000) {
    QTest::mouseClick(button, Qt::LeftButton);
    return QTest::qWaitFor([&] { return card.state() == ToolCallCard::State::Done || card.state() == ToolCallCard::State::Denied; },
                           limitMs);
}

TEST(McpToolCallCard, TheServersToolsAreOfferedAndACallRunsOnlyAfterApprove) {
    SKIP_WITHOUT_MCP_SDK();
    McpCardFixture fixture(20s);
    ASSERT_EQ(fixture.client->state(), McpClient::State::Ready) << fixture.client->lastError().toStdString();
    std::vector<std::string> offered;
    for (const cflow::ToolDefinition& tool : fixture.registry.enabledTools()) offered.push_back(tool.name);
    EXPECT_EQ(offered, (std::vector<std::string>{"add", "echo", "fail", "hang", "crash", "garble", "env"}));
    EXPECT_EQ(fixture.registry.providerOf("add"), fixture.client);

    ToolCallCard card({"call_add", "add", R"({"a": 2, "b": 40})"}, &fixture.registry);
    card.show();
    QSignalSpy resolved(&card, &ToolCallCard::resolved);
    // Nothing reaches the server while the card waits.
    QTest::qWait(200);
    EXPECT_EQ(card.state(), ToolCallCard::State::Waiting);
    EXPECT_EQ(resolved.count(), 0);
    ASSERT_TRUE(decide(card, card.approveButton()));
    ASSERT_TRUE(card.result().has_value());
    EXPECT_TRUE(card.result()->ok) << card.result()->text.toStdString();
    EXPECT_EQ(card.result()->text, QStringLiteral("42"));
    EXPECT_TRUE(card.statusText().contains(QStringLiteral("42"))) << card.statusText().toStdString();
    EXPECT_EQ(resolved.count(), 1);
    EXPECT_FALSE(card.approveButton()->isEnabled());

    // Deny: the model is told, and the server's env tool (which would answer) is never asked.
    ToolCallCard denied({"call_env", "env", R"({"name": "HOME"})"}, &fixture.registry);
    denied.show();
    ASSERT_TRUE(decide(denied, denied.denyButton()));
    EXPECT_EQ(denied.state(), ToolCallCard::State::Denied);
    ASSERT_TRUE(denied.result().has_value());
    EXPECT_EQ(denied.result()->text, denied_tool_call_text());
}

TEST(McpToolCallCard, AHangingOrCrashingToolEndsTheCardWithAClearError) {
    SKIP_WITHOUT_MCP_SDK();
    McpCardFixture fixture(1500ms);
    ASSERT_EQ(fixture.client->state(), McpClient::State::Ready) << fixture.client->lastError().toStdString();

    ToolCallCard hung({"call_hang", "hang", "{}"}, &fixture.registry);
    hung.show();
    ASSERT_TRUE(decide(hung, hung.approveButton(), 10000)) << "the request timeout ends the card";
    ASSERT_TRUE(hung.result().has_value());
    EXPECT_FALSE(hung.result()->ok);
    EXPECT_EQ(hung.result()->text, QStringLiteral("MCP server test did not answer tools/call within 1.5 s"));
    EXPECT_TRUE(hung.statusText().contains(QStringLiteral("did not answer"))) << hung.statusText().toStdString();

    ToolCallCard crashed({"call_crash", "crash", "{}"}, &fixture.registry);
    crashed.show();
    ASSERT_TRUE(decide(crashed, crashed.approveButton(), 10000));
    ASSERT_TRUE(crashed.result().has_value());
    EXPECT_FALSE(crashed.result()->ok);
    EXPECT_TRUE(crashed.result()->text.startsWith(QStringLiteral("MCP server test exited with code 3")))
        << crashed.result()->text.toStdString();
    // The crashed server's tools are gone from what the next request offers.
    EXPECT_EQ(fixture.registry.providerOf("add"), nullptr);
}

} // namespace
} // namespace cflow::ui
