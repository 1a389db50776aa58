// The desktop's chat tools (issue 33) end to end on the offscreen platform: the Tools panel lists
// the built-in tools and an MCP server added through its dialog (an MCP server written with the
// official @modelcontextprotocol/sdk, tests/ui/mcp-node), the setup is saved with the
// conversation and comes back with it, and goes when the conversation is deleted; Tools > Chat
// tools… opens the panel on the main window's conversation.
#include <filesystem>
#include <fstream>

#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QTest>
#include <QTreeWidget>

#include <gtest/gtest.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/tools/conversation_toolbox.h"
#include "cflow/ui/tools/mcp_client.h"
#include "cflow/ui/tools/mcp_server_dialog.h"
#include "cflow/ui/tools/picked_files_tool.h"
#include "cflow/ui/tools/tools_panel.h"
#include "test_support.h"
#include "ui_test_models.h"

#ifndef CFLOW_NODE_PATH
#define CFLOW_NODE_PATH ""
#endif

namespace cflow::ui {
namespace {

const std::filesystem::path kPanelMcpDir = CFLOW_MCP_NODE_DIR;

bool panel_mcp_sdk_present() {
    return !std::string(CFLOW_NODE_PATH).empty() &&
           std::filesystem::exists(kPanelMcpDir / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json");
}

QTreeWidgetItem* provider_row(QTreeWidget* tree, const QString& name) {
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        if (tree->topLevelItem(i)->text(0) == name) return tree->topLevelItem(i);
    return nullptr;
}

QStringList child_names(QTreeWidgetItem* row) {
    QStringList names;
    for (int i = 0; row && i < row->childCount(); ++i) names << row->child(i)->text(0);
    return names;
}

TEST(ToolsPanel, ListsAnMcpServerAddedInItsDialogAndSavesTheSetupWithTheConversation) {
    if (!panel_mcp_sdk_present())
        GTEST_SKIP() << "node or @modelcontextprotocol/sdk is missing (packaging/install-deps.sh --tests installs "
                     << (kPanelMcpDir / "node_modules").string() << ")";
    const auto dir = cflow::test::temp_dir("tools_panel_setup");
    const QString dbPath = QString::fromStdString((dir / "studio.sqlite").string());
    std::ofstream(dir / "notes.txt") << "the notes";
    auto store = ConversationStore::open(dbPath);
    ASSERT_TRUE(store) << store.error();
    auto conversation = (*store)->createConversation(QStringLiteral("tools"));
    ASSERT_TRUE(conversation);

    qint64 id = *conversation;
    {
        ConversationToolbox toolbox(dbPath);
        toolbox.openConversation(id);
        ToolsPanel panel(&toolbox);
        // The built-ins: calculator and date on, read_file waiting for a pick.
        ASSERT_NE(provider_row(panel.tree(), "Calculator"), nullptr);
        EXPECT_EQ(child_names(provider_row(panel.tree(), "Calculator")), QStringList{"calculator"});
        EXPECT_EQ(child_names(provider_row(panel.tree(), "Date and time")), QStringList{"current_datetime"});

        // Add the MCP server through the dialog's fields, as a user does.
        McpServerDialog* dialog = panel.addServer();
        dialog->findChild<QLineEdit*>("mcpNameEdit")->setText("notes server");
        dialog->findChild<QLineEdit*>("mcpCommandEdit")->setText(CFLOW_NODE_PATH);
        dialog->findChild<QLineEdit*>("mcpArgumentsEdit")
            ->setText(McpServerDialog::joinArguments({QString::fromStdString((kPanelMcpDir / "mcp_test_server.mjs").string())}));
        dialog->findChild<QPlainTextEdit*>("mcpEnvironmentEdit")->setPlainText("CFLOW_MCP_TEST_VALUE=saved");
        dialog->accept();
        ASSERT_TRUE(QTest::qWaitFor([&] { return child_names(provider_row(panel.tree(), "notes server")).size() == 7; }, 20000))
            << "the server's tools never showed: " << toolbox.mcpClient("notes server")->summary().toStdString();
        EXPECT_EQ(child_names(provider_row(panel.tree(), "notes server")),
                  (QStringList{"add", "echo", "fail", "hang", "crash", "garble", "env"}));
        EXPECT_EQ(provider_row(panel.tree(), "notes server")->text(1), "7 tools, protocol 2025-06-18");
        // The model is offered its tools and a call runs on the server.
        EXPECT_EQ(QCoro::waitFor(toolbox.registry()->call({"c", "env", R"({"name": "CFLOW_MCP_TEST_VALUE"})"})).text, "saved");

        panel.pickFiles({QString::fromStdString((dir / "notes.txt").string())});
        EXPECT_EQ(child_names(provider_row(panel.tree(), "Picked files")), QStringList{"notes.txt"});
        // Unticking a provider disables it and is saved.
        provider_row(panel.tree(), "Calculator")->setCheckState(0, Qt::Unchecked);
        EXPECT_TRUE(QTest::qWaitFor([&] { return !toolbox.registry()->isEnabled("Calculator"); }, 5000));
        EXPECT_EQ(provider_row(panel.tree(), "Calculator")->checkState(0), Qt::Unchecked);
        EXPECT_EQ(toolbox.registry()->providerOf("calculator"), nullptr);
    }
    {
        // Reopened: the server, the pick and the unticked calculator come back.
        ConversationToolbox toolbox(dbPath);
        toolbox.openConversation(id);
        EXPECT_EQ(toolbox.setup().mcpServers.size(), 1);
        EXPECT_EQ(toolbox.setup().mcpServers[0].environment, QStringList{"CFLOW_MCP_TEST_VALUE=saved"});
        EXPECT_FALSE(toolbox.registry()->isEnabled("Calculator"));
        EXPECT_TRUE(toolbox.registry()->isEnabled("Date and time"));
        ASSERT_NE(toolbox.pickedFiles(), nullptr);
        EXPECT_EQ(toolbox.pickedFiles()->paths().size(), 1);
        ASSERT_TRUE(QTest::qWaitFor([&] { return toolbox.mcpClient("notes server")->state() == McpClient::State::Ready; }, 20000));
        EXPECT_EQ(QCoro::waitFor(toolbox.registry()->call({"r", "read_file", R"({"name": "notes.txt"})"})).text, "the notes");
        // Another conversation has its own (default) tools.
        auto other = (*store)->createConversation(QStringLiteral("other"));
        ASSERT_TRUE(other);
        toolbox.openConversation(*other);
        EXPECT_TRUE(toolbox.setup().mcpServers.isEmpty());
        EXPECT_TRUE(toolbox.registry()->isEnabled("Calculator"));
    }
    // Deleting the conversation deletes its tools setup.
    ASSERT_TRUE((*store)->deleteConversation(id));
    auto tools = ConversationToolsStore::open(dbPath);
    ASSERT_TRUE(tools);
    auto row = (*tools)->load(id);
    ASSERT_TRUE(row);
    EXPECT_FALSE(row->found);
}

TEST(ConversationToolbox, ANewConversationKeepsTheSetupMadeBeforeItExisted) {
    const auto dir = cflow::test::temp_dir("toolbox_new_conversation");
    const QString dbPath = QString::fromStdString((dir / "studio.sqlite").string());
    std::ofstream(dir / "a.txt") << "a";
    auto store = ConversationStore::open(dbPath);
    ASSERT_TRUE(store) << store.error();
    // An older conversation (it has messages) that never had tools saved.
    auto older = (*store)->createConversation(QStringLiteral("older"));
    ASSERT_TRUE(older);
    ASSERT_TRUE((*store)->addMessage(*older, QStringLiteral("user"), QStringLiteral("hi")));

    ConversationToolbox toolbox(dbPath);
    toolbox.openConversation(0);  // a new chat, not created yet
    toolbox.pickFiles({QString::fromStdString((dir / "a.txt").string())});
    ASSERT_TRUE(toolbox.setProviderEnabled("Date and time", false));
    // The chat creates the conversation on its first message: it keeps the setup, saved.
    auto created = (*store)->createConversation(QStringLiteral("new"));
    ASSERT_TRUE(created);
    toolbox.openConversation(*created);
    EXPECT_EQ(toolbox.setup().pickedFiles.size(), 1);
    EXPECT_FALSE(toolbox.registry()->isEnabled("Date and time"));
    auto saved = ConversationToolsStore::open(dbPath);
    ASSERT_TRUE(saved);
    auto row = (*saved)->load(*created);
    ASSERT_TRUE(row);
    EXPECT_TRUE(row->found);
    EXPECT_EQ(row->setup.disabledProviders, QStringList{"Date and time"});

    // From a fresh unsaved chat to the older conversation: its own (default) tools, not these.
    toolbox.openConversation(0);
    toolbox.pickFiles({QString::fromStdString((dir / "a.txt").string())});
    toolbox.openConversation(*older);
    EXPECT_TRUE(toolbox.setup().pickedFiles.isEmpty());
    EXPECT_TRUE(toolbox.registry()->isEnabled("Date and time"));
}

TEST(ToolsPanel, TheDialogRefusesAnUnusableServerAndRoundTripsQuotedArguments) {
    McpServerDialog dialog;
    dialog.findChild<QLineEdit*>("mcpNameEdit")->setText("x");
    dialog.findChild<QPlainTextEdit*>("mcpEnvironmentEdit")->setPlainText("NOEQUALS");
    dialog.findChild<QLineEdit*>("mcpCommandEdit")->setText("npx");
    dialog.accept();
    EXPECT_EQ(dialog.result(), QDialog::Rejected);
    EXPECT_EQ(dialog.findChild<QLabel*>("mcpProblemLabel")->text(),
              "Cannot save: the environment entry \"NOEQUALS\" is not NAME=value.");
    const QStringList arguments{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/My notes", "say \"hi\""};
    EXPECT_EQ(McpServerDialog::splitArguments(McpServerDialog::joinArguments(arguments)), arguments);
}

TEST(ToolsPanel, TheMainWindowOpensItOnItsConversation) {
    test::ScopedDb db("tools_panel_main_window");
    test::IsolatedSettings isolated("tools_panel_main_window");
    MainWindow window;
    QAction* action = nullptr;
    for (QAction* top : window.menuBar()->actions())
        if (top->menu() && top->menu()->objectName() == "toolsMenu")
            for (QAction* a : top->menu()->actions())
                if (a->objectName() == "chatToolsAction") action = a;
    ASSERT_NE(action, nullptr);
    action->trigger();
    auto* panel = window.findChild<ToolsPanel*>("toolsPanel");
    ASSERT_NE(panel, nullptr);
    ASSERT_NE(window.toolbox(), nullptr);
    EXPECT_EQ(window.toolbox()->conversationId(), window.controller()->conversationId());
    EXPECT_NE(provider_row(panel->tree(), "Calculator"), nullptr);
    EXPECT_EQ(window.toolbox()->registry()->enabledTools().size(), 2u);  // calculator, date (no file picked)
}

} // namespace
} // namespace cflow::ui
