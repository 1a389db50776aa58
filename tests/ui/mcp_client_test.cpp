// The desktop's MCP client (issue 33) against a real MCP server written with the official
// @modelcontextprotocol/sdk npm package, over stdio (tests/ui/mcp-node/mcp_test_server.mjs):
// the handshake and a paginated tools/list, calls, isError, a hang that times out with a clear
// error in bounded time, a crash with its exit code and stderr, malformed JSON, a missing
// program, and closing while a call waits.
#include <filesystem>
#include <memory>

#include <QElapsedTimer>
#include <QPointer>

#include <gtest/gtest.h>

#include "cflow/ui/tools/mcp_client.h"
#include "cflow/ui/tools/tool_registry.h"

#include "mcp_test_server.h"

namespace cflow::ui {
namespace {

using namespace std::chrono_literals;
using test::mcp_test_server_config;

ToolResult call_tool(McpClient& client, const std::string& name, const std::string& arguments = "{}") {
    return QCoro::waitFor(client.call({"call_" + name, name, arguments}));
}

TEST(McpClient, ListsEveryPageAndCallsTools) {
    SKIP_WITHOUT_MCP_SDK();
    McpClient client(mcp_test_server_config(), 20s);
    const Status started = QCoro::waitFor(client.start());
    ASSERT_TRUE(started.ok()) << started.error();
    EXPECT_EQ(client.state(), McpClient::State::Ready);
    EXPECT_EQ(client.serverProtocolVersion(), "2025-06-18");
    std::vector<std::string> names;
    for (const cflow::ToolDefinition& t : client.tools()) names.push_back(t.name);
    // Four pages of two: every page was followed.
    EXPECT_EQ(names, (std::vector<std::string>{"add", "echo", "fail", "hang", "crash", "garble", "env"}));
    EXPECT_EQ(client.tools()[0].description, "Adds two numbers");
    EXPECT_NE(client.tools()[0].parameters_json.find(R"("required":["a","b"])"), std::string::npos);

    const ToolResult sum = call_tool(client, "add", R"({"a": 2, "b": 40})");
    EXPECT_TRUE(sum.ok);
    EXPECT_EQ(sum.text, "42");
    const ToolResult echoed = call_tool(client, "echo", R"({"text": "hi there"})");
    EXPECT_TRUE(echoed.ok);
    EXPECT_EQ(echoed.text, "echo:\nhi there");  // two text blocks, joined
    const ToolResult failed = call_tool(client, "fail");
    EXPECT_FALSE(failed.ok);  // isError
    EXPECT_EQ(failed.text, "the fail tool always fails");
    EXPECT_EQ(call_tool(client, "env", R"({"name": "CFLOW_MCP_TEST_VALUE"})").text, "from the dialog");
    const ToolResult badArguments = call_tool(client, "add", "[1, 2]");
    EXPECT_FALSE(badArguments.ok);
    EXPECT_EQ(badArguments.text, "the arguments are not a JSON object");
}

TEST(McpClient, AHungToolTimesOutWithAClearErrorAndTheServerStaysUsable) {
    SKIP_WITHOUT_MCP_SDK();
    McpClient client(mcp_test_server_config(), 1500ms);
    ASSERT_TRUE(QCoro::waitFor(client.start()).ok()) << client.lastError().toStdString();
    QElapsedTimer clock;
    clock.start();
    const ToolResult hung = call_tool(client, "hang");
    const qint64 waitedMs = clock.elapsed();
    EXPECT_FALSE(hung.ok);
    EXPECT_EQ(hung.text, "MCP server test did not answer tools/call within 1.5 s");
    EXPECT_GE(waitedMs, 1400);
    EXPECT_LT(waitedMs, 5000);
    // The request was cancelled, not the server: the next call is answered.
    EXPECT_EQ(call_tool(client, "add", R"({"a": 1, "b": 1})").text, "2");
}

TEST(McpClient, ACrashGivesItsExitCodeAndStderr) {
    SKIP_WITHOUT_MCP_SDK();
    McpClient client(mcp_test_server_config(), 20s);
    ASSERT_TRUE(QCoro::waitFor(client.start()).ok()) << client.lastError().toStdString();
    QElapsedTimer clock;
    clock.start();
    const ToolResult crashed = call_tool(client, "crash");
    EXPECT_LT(clock.elapsed(), 10000);
    EXPECT_FALSE(crashed.ok);
    EXPECT_TRUE(crashed.text.startsWith("MCP server test exited with code 3 while answering tools/call; its stderr ended with:"))
        << crashed.text.toStdString();
    EXPECT_TRUE(crashed.text.endsWith("crash tool: about to exit\ncrash tool: exit code 3")) << crashed.text.toStdString();
    EXPECT_EQ(client.state(), McpClient::State::Failed);
    EXPECT_TRUE(client.tools().empty());
    const ToolResult after = call_tool(client, "add", R"({"a": 1, "b": 1})");
    EXPECT_FALSE(after.ok);
    EXPECT_TRUE(after.text.startsWith("MCP server test is not running: MCP server test exited with code 3"))
        << after.text.toStdString();
    // Start again: a fresh process.
    ASSERT_TRUE(QCoro::waitFor(client.start()).ok()) << client.lastError().toStdString();
    EXPECT_EQ(call_tool(client, "add", R"({"a": 1, "b": 2})").text, "3");
}

TEST(McpClient, MalformedJsonIsAnError) {
    SKIP_WITHOUT_MCP_SDK();
    McpClient client(mcp_test_server_config(), 20s);
    ASSERT_TRUE(QCoro::waitFor(client.start()).ok()) << client.lastError().toStdString();
    const ToolResult garbled = call_tool(client, "garble");
    EXPECT_FALSE(garbled.ok);
    EXPECT_TRUE(garbled.text.startsWith("MCP server test wrote malformed JSON (")) << garbled.text.toStdString();
    EXPECT_TRUE(garbled.text.endsWith("): this is not JSON (tools/call was waiting)")) << garbled.text.toStdString();
}

TEST(McpClient, AMissingProgramFailsToStartWithItsName) {
    McpServerConfig config;
    config.name = QStringLiteral("ghost");
    config.command = QStringLiteral("/nonexistent/cflow-mcp-server");
    McpClient client(config, 5s);
    const Status started = QCoro::waitFor(client.start());
    EXPECT_FALSE(started.ok());
    EXPECT_TRUE(QString::fromStdString(started.error()).startsWith("MCP server ghost could not start /nonexistent/cflow-mcp-server"))
        << started.error();
    EXPECT_EQ(client.state(), McpClient::State::Failed);
    EXPECT_TRUE(client.summary().startsWith("Failed: MCP server ghost could not start")) << client.summary().toStdString();

    config.command.clear();
    McpClient empty(config, 5s);
    EXPECT_EQ(QCoro::waitFor(empty.start()).error(), "MCP server ghost cannot start: the command is empty");
}

TEST(McpClient, ClosingWhileACallWaitsResolvesTheCall) {
    SKIP_WITHOUT_MCP_SDK();
    auto client = std::make_unique<McpClient>(mcp_test_server_config(), 60s);
    ASSERT_TRUE(QCoro::waitFor(client->start()).ok()) << client->lastError().toStdString();
    QCoro::Task<ToolResult> pending = client->call({"h", "hang", "{}"});
    QElapsedTimer clock;
    clock.start();
    client.reset();  // kills the server while tools/call waits
    const ToolResult closed = QCoro::waitFor(std::move(pending));
    EXPECT_LT(clock.elapsed(), 5000);
    EXPECT_FALSE(closed.ok);
    EXPECT_EQ(closed.text, "MCP server test was closed before it answered tools/call");
}

TEST(McpClient, ARegistryOffersAndCallsTheServersTools) {
    SKIP_WITHOUT_MCP_SDK();
    ToolRegistry registry;
    auto owned = std::make_unique<McpClient>(mcp_test_server_config(), 20s);
    QPointer<McpClient> client = owned.get();
    ASSERT_TRUE(registry.addProvider(std::move(owned)));
    EXPECT_TRUE(registry.enabledTools().empty());  // not started yet
    ASSERT_TRUE(QCoro::waitFor(client->start()).ok());
    EXPECT_EQ(registry.enabledTools().size(), 7u);
    EXPECT_EQ(QCoro::waitFor(registry.call({"c", "add", R"({"a": 20, "b": 22})"})).text, "42");
}

} // namespace
} // namespace cflow::ui
