#pragma once
// The MCP server the UI tests start over stdio: tests/ui/mcp-node/mcp_test_server.mjs, written
// with the official @modelcontextprotocol/sdk npm package (tools add, echo, fail, hang, crash,
// garble, env). Tests skip, naming what to install, where node or the SDK is absent.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cflow/ui/tools/mcp_server_config.h"

#ifndef CFLOW_NODE_PATH
#define CFLOW_NODE_PATH ""
#endif

namespace cflow::ui::test {

inline const std::filesystem::path kMcpNodeDir = CFLOW_MCP_NODE_DIR;

// name "test", the test server's command line, and one environment variable its env tool reads.
inline McpServerConfig mcp_test_server_config() {
    McpServerConfig config;
    config.name = QStringLiteral("test");
    config.command = QStringLiteral(CFLOW_NODE_PATH);
    config.arguments = {QString::fromStdString((kMcpNodeDir / "mcp_test_server.mjs").string())};
    config.environment = {QStringLiteral("CFLOW_MCP_TEST_VALUE=from the dialog")};
    return config;
}

} // namespace cflow::ui::test

#define SKIP_WITHOUT_MCP_SDK()                                                                                   \
    do {                                                                                                          \
        if (std::string(CFLOW_NODE_PATH).empty())                                                                 \
            GTEST_SKIP() << "node was not found at configure time (apt-get install nodejs; "                      \
                            "packaging/install-deps.sh --tests)";                                                 \
        if (!std::filesystem::exists(::cflow::ui::test::kMcpNodeDir / "node_modules" / "@modelcontextprotocol" /  \
                                     "sdk" / "package.json"))                                                     \
            GTEST_SKIP() << "@modelcontextprotocol/sdk is not installed in "                                      \
                         << ::cflow::ui::test::kMcpNodeDir.string()                                               \
                         << " (packaging/install-deps.sh --tests, or npm ci --prefix "                           \
                         << ::cflow::ui::test::kMcpNodeDir.string() << ")";                                       \
    } while (0)
