// The chat's tool-call card (issue 33): name and pretty-printed arguments, nothing runs before
// Approve, Approve runs the call through the conversation's registry (the real calculator) and
// shows the result or the error, Deny runs nothing and answers "denied"; keyboard reachable with
// accessible names.
#include <memory>

#include <QApplication>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/tool_call_card.h"
#include "cflow/ui/tools/calculator_tool.h"
#include "cflow/ui/tools/tool_registry.h"

namespace {

using cflow::ui::ToolCallCard;

// A provider that counts its calls, to prove a denied call never reaches it.
class CountingToolProvider : public cflow::ui::ToolProvider {
public:
    int calls = 0;
    QString name() const override { return QStringLiteral("Counting"); }
    QString summary() const override { return QStringLiteral("counts calls"); }
    std::vector<cflow::ToolDefinition> tools() const override { return {{"count_me", "", ""}}; }
    QCoro::Task<cflow::ui::ToolResult> call(cflow::ToolCall) override {
        ++calls;
        co_return cflow::ui::ToolResult{true, QStringLiteral("counted")};
    }
};

TEST(ToolCallCard, ApproveRunsTheCalculatorAndShowsItsResult) {
    cflow::ui::ToolRegistry registry;
    ASSERT_TRUE(registry.addProvider(std::make_unique<cflow::ui::CalculatorTool>()).ok());
    ToolCallCard card({"call_1", "calculator", R"({"expression":"(2+3)*4"})"}, &registry);
    card.show();
    EXPECT_EQ(card.state(), ToolCallCard::State::Waiting);
    EXPECT_FALSE(card.result().has_value());
    EXPECT_EQ(card.argumentsText(), QStringLiteral("{\n    \"expression\": \"(2+3)*4\"\n}"));
    EXPECT_EQ(card.accessibleName(), QStringLiteral("Tool call: calculator"));
    EXPECT_EQ(card.approveButton()->accessibleName(), QStringLiteral("Approve the calculator call"));
    EXPECT_EQ(card.denyButton()->accessibleName(), QStringLiteral("Deny the calculator call"));

    // Keyboard: Approve takes focus, Tab moves to Deny, Space on Approve runs the call.
    card.approveButton()->setFocus();
    QApplication::processEvents();
    EXPECT_TRUE(card.approveButton()->hasFocus());
    QTest::keyClick(card.approveButton(), Qt::Key_Tab);
    EXPECT_TRUE(card.denyButton()->hasFocus());
    card.approveButton()->setFocus();
    QSignalSpy resolved(&card, &ToolCallCard::resolved);
    QTest::keyClick(card.approveButton(), Qt::Key_Space);
    ASSERT_TRUE(QTest::qWaitFor([&] { return card.state() == ToolCallCard::State::Done; }, 5000));
    ASSERT_TRUE(card.result().has_value());
    EXPECT_TRUE(card.result()->ok) << card.result()->text.toStdString();
    EXPECT_EQ(card.result()->text, QStringLiteral("20"));
    EXPECT_TRUE(card.statusText().contains(QStringLiteral("20"))) << card.statusText().toStdString();
    EXPECT_EQ(resolved.count(), 1);
    EXPECT_FALSE(card.approveButton()->isEnabled());
    EXPECT_FALSE(card.denyButton()->isEnabled());
}

TEST(ToolCallCard, AFailingCallShowsTheError) {
    cflow::ui::ToolRegistry registry;
    ASSERT_TRUE(registry.addProvider(std::make_unique<cflow::ui::CalculatorTool>()).ok());
    ToolCallCard card({"call_2", "calculator", R"({"expression":"2+"})"}, &registry);
    card.approve();
    ASSERT_TRUE(QTest::qWaitFor([&] { return card.state() == ToolCallCard::State::Done; }, 5000));
    ASSERT_TRUE(card.result().has_value());
    EXPECT_FALSE(card.result()->ok);
    EXPECT_TRUE(card.statusText().startsWith(QStringLiteral("Error: "))) << card.statusText().toStdString();

    // A tool no enabled provider offers is an error too, not a crash.
    ToolCallCard unknown({"call_3", "no_such_tool", "{}"}, &registry);
    unknown.approve();
    ASSERT_TRUE(QTest::qWaitFor([&] { return unknown.state() == ToolCallCard::State::Done; }, 5000));
    EXPECT_FALSE(unknown.result()->ok);
}

TEST(ToolCallCard, DenyRunsNothingAndTellsTheModel) {
    cflow::ui::ToolRegistry registry;
    auto provider = std::make_unique<CountingToolProvider>();
    CountingToolProvider* counting = provider.get();
    ASSERT_TRUE(registry.addProvider(std::move(provider)).ok());
    ToolCallCard card({"call_4", "count_me", "not json"}, &registry);
    EXPECT_EQ(card.argumentsText(), QStringLiteral("not json")) << "shown as the model wrote it";
    QSignalSpy resolved(&card, &ToolCallCard::resolved);
    card.denyButton()->click();
    EXPECT_EQ(card.state(), ToolCallCard::State::Denied);
    ASSERT_TRUE(card.result().has_value());
    EXPECT_EQ(card.result()->text, cflow::ui::denied_tool_call_text());
    EXPECT_EQ(resolved.count(), 1);
    card.approve();  // a decision is final
    QApplication::processEvents();
    EXPECT_EQ(counting->calls, 0);
    EXPECT_EQ(card.state(), ToolCallCard::State::Denied);

    ToolCallCard approved({"call_5", "count_me", "{}"}, &registry);
    approved.approve();
    ASSERT_TRUE(QTest::qWaitFor([&] { return approved.state() == ToolCallCard::State::Done; }, 5000));
    EXPECT_EQ(counting->calls, 1);
}

} // namespace
