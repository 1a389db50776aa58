// Issue 37: the context "gauge" was a line of text, and Max tokens took 100000 on a 512-token
// model without a word. The gauge is a bar in three parts whose numbers are the engine's; Max
// tokens is capped at the context under Stop and explained under the shifting policies.
#include <QImage>
#include <QLabel>
#include <QSpinBox>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/context_gauge.h"
#include "cflow/ui/sampling_panel.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ContextGauge;
using cflow::ContextPolicy;

// The gauge's bar at x (fraction of its width), half way down.
QRgb gauge_pixel(const QImage& image, double fraction) {
    return image.pixel(std::clamp(int(fraction * image.width()), 2, image.width() - 3), image.height() / 2);
}

TEST(ContextGauge, TheBarIsSplitIntoPromptReplyAndFreeByTheEnginesCounts) {
    ContextGauge gauge;
    gauge.resize(400, gauge.sizeHint().height());
    gauge.setFont(QFont(gauge.font().family(), 1));  // the text must not cover the sampled pixels
    gauge.setUsage(256, 128, 512);
    EXPECT_EQ(gauge.text(), QStringLiteral("Context: 384 / 512 tokens"));
    const QImage image = gauge.grab().toImage();
    const QRgb prompt = gauge_pixel(image, 0.25), reply = gauge_pixel(image, 0.62), free = gauge_pixel(image, 0.9);
    EXPECT_NE(prompt, reply);
    EXPECT_NE(reply, free);
    EXPECT_NE(prompt, free);
    EXPECT_EQ(free, gauge.palette().base().color().rgb()) << "the last quarter is free";
    EXPECT_TRUE(gauge.toolTip().contains(QStringLiteral("Prompt 256 tokens"))) << gauge.toolTip().toStdString();
    EXPECT_TRUE(gauge.toolTip().contains(QStringLiteral("free 128 of 512")));
    EXPECT_TRUE(gauge.toolTip().contains(QStringLiteral("oldest turns are dropped"))) << "the default policy says what happens";

    // Full with the reply past the context (a shifted cache): the bar is full, never past its end.
    gauge.setUsage(100, 900, 512);
    const QImage full = gauge.grab().toImage();
    EXPECT_NE(gauge_pixel(full, 0.95), gauge.palette().base().color().rgb());

    gauge.setPolicy(ContextPolicy::Stop);
    EXPECT_TRUE(gauge.toolTip().contains(QStringLiteral("the reply stops")));
    gauge.setUsage(-1, 0, 512);
    EXPECT_TRUE(gauge.text().contains(QStringLiteral("measured when the other reply ends")));
    gauge.setUsage(0, 0, 0);
    EXPECT_EQ(gauge.text(), QStringLiteral("Context: no model"));
}

TEST(SamplingContextLimits, MaxTokensIsCappedUnderStopAndExplainedUnderTheShiftingPolicies) {
    cflow::ui::test::IsolatedSettings isolated("sampling_context_limits");
    cflow::ui::SamplingPanel panel;
    auto* maxTokens = panel.findChild<QSpinBox*>(QStringLiteral("maxTokens"));
    ASSERT_NE(maxTokens, nullptr);
    EXPECT_TRUE(panel.maxTokensNote().isEmpty()) << "no model: nothing to say";

    panel.setContextLimits(512, ContextPolicy::DropOldest);
    maxTokens->setValue(100000);
    EXPECT_EQ(panel.settings().maxTokens, 100000) << "a reply may run past the context when it shifts";
    EXPECT_TRUE(panel.maxTokensNote().contains(QStringLiteral("Longer than the 512-token context")))
        << panel.maxTokensNote().toStdString();
    EXPECT_TRUE(panel.maxTokensNote().contains(QStringLiteral("dropping the oldest turns")));

    panel.setContextLimits(512, ContextPolicy::SlidingWindow);
    EXPECT_TRUE(panel.maxTokensNote().contains(QStringLiteral("sliding the oldest tokens out")));

    panel.setContextLimits(512, ContextPolicy::Stop);
    EXPECT_EQ(panel.settings().maxTokens, 512) << "Stop ends every reply at the context";
    EXPECT_EQ(maxTokens->maximum(), 512);
    EXPECT_TRUE(panel.maxTokensNote().contains(QStringLiteral("At most 512 tokens")));

    panel.setContextLimits(512, ContextPolicy::DropOldest);
    maxTokens->setValue(100);
    EXPECT_TRUE(panel.maxTokensNote().contains(QStringLiteral("The context holds 512 tokens")));
}

} // namespace
