// The conversation's tool registry (issue 33): lookup by tool name, enabling, and name clashes
// refused with a message.
#include <memory>

#include <QSignalSpy>

#include <gtest/gtest.h>

#include "cflow/ui/tools/tool_registry.h"

namespace cflow::ui {
namespace {

// A provider whose tools the test sets; a call answers "<provider>:<tool>".
class RegistryTestProvider : public ToolProvider {
public:
    RegistryTestProvider(QString name, std::vector<std::string> toolNames) : name_(std::move(name)) { setTools(toolNames); }
    QString name() const override { return name_; }
    QString summary() const override { return QStringLiteral("test tools"); }
    std::vector<cflow::ToolDefinition> tools() const override { return tools_; }
    QCoro::Task<ToolResult> call(cflow::ToolCall call) override {
        co_return ToolResult{true, name_ + QLatin1Char(':') + QString::fromStdString(call.name)};
    }
    void setTools(const std::vector<std::string>& toolNames) {
        tools_.clear();
        for (const std::string& n : toolNames) tools_.push_back({n, "", ""});
        emit toolsChanged();
    }

private:
    QString name_;
    std::vector<cflow::ToolDefinition> tools_;
};

TEST(ToolRegistry, CallsGoToTheEnabledProviderOfTheTool) {
    ToolRegistry registry;
    ASSERT_TRUE(registry.addProvider(std::make_unique<RegistryTestProvider>("A", std::vector<std::string>{"add", "echo"})));
    ASSERT_TRUE(registry.addProvider(std::make_unique<RegistryTestProvider>("B", std::vector<std::string>{"now"})));
    EXPECT_EQ(registry.enabledTools().size(), 3u);
    EXPECT_EQ(registry.providerOf("now"), registry.provider("B"));

    auto answered = QCoro::waitFor(registry.call({"call_1", "echo", "{}"}));
    EXPECT_TRUE(answered.ok);
    EXPECT_EQ(answered.text, "A:echo");

    ASSERT_TRUE(registry.setEnabled("B", false));
    EXPECT_EQ(registry.enabledTools().size(), 2u);
    auto refused = QCoro::waitFor(registry.call({"call_2", "now", "{}"}));
    EXPECT_FALSE(refused.ok);
    EXPECT_EQ(refused.text, "no enabled tool is named now");
}

TEST(ToolRegistry, RefusesSameProviderNameAndClashingTools) {
    ToolRegistry registry;
    ASSERT_TRUE(registry.addProvider(std::make_unique<RegistryTestProvider>("A", std::vector<std::string>{"add"})));
    const Status twice = registry.addProvider(std::make_unique<RegistryTestProvider>("A", std::vector<std::string>{"x"}));
    EXPECT_FALSE(twice.ok());
    EXPECT_EQ(twice.error(), "a tool provider named A is here already");

    // Added, but kept disabled: it offers "add" as A does.
    const Status clash = registry.addProvider(std::make_unique<RegistryTestProvider>("C", std::vector<std::string>{"add"}));
    EXPECT_FALSE(clash.ok());
    EXPECT_EQ(clash.error(), "C offers a tool named add, as A does; only one of them can be enabled");
    EXPECT_FALSE(registry.isEnabled("C"));
    EXPECT_EQ(registry.providers().size(), 2u);

    // With A disabled, C may be enabled, and calls of "add" go to C.
    ASSERT_TRUE(registry.setEnabled("A", false));
    ASSERT_TRUE(registry.setEnabled("C", true));
    EXPECT_EQ(QCoro::waitFor(registry.call({"c", "add", "{}"})).text, "C:add");
}

TEST(ToolRegistry, AProviderWhoseToolsGrowIntoAClashIsDisabled) {
    ToolRegistry registry;
    ASSERT_TRUE(registry.addProvider(std::make_unique<RegistryTestProvider>("A", std::vector<std::string>{"add"})));
    ASSERT_TRUE(registry.addProvider(std::make_unique<RegistryTestProvider>("M", std::vector<std::string>{})));
    QSignalSpy changed(&registry, &ToolRegistry::changed);
    static_cast<RegistryTestProvider*>(registry.provider("M"))->setTools({"echo", "add"});
    EXPECT_FALSE(registry.isEnabled("M"));
    EXPECT_TRUE(registry.isEnabled("A"));
    EXPECT_EQ(registry.notice(), "M was disabled: M offers a tool named add, as A does; only one of them can be enabled");
    EXPECT_GE(changed.count(), 1);
    ASSERT_TRUE(registry.removeProvider("M"));
    EXPECT_EQ(registry.provider("M"), nullptr);
}

} // namespace
} // namespace cflow::ui
