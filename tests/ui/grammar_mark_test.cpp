// The inspector marks tokens sampled under a grammar (issue 33): the step's grammar counts cross
// the telemetry ring and the history, and the per-token bars carry a mark above each masked
// token (its own colour in the pixels) whose tooltip says how many tokens the grammar allowed.
#include <cstdint>
#include <vector>

#include <QApplication>
#include <QImage>

#include <gtest/gtest.h>

#include "cflow/ui/inspector/stall_totals_chart.h"
#include "cflow/ui/inspector/telemetry_history.h"
#include "cflow/ui/telemetry_ring.h"

namespace {

using namespace cflow;
using namespace cflow::ui;

const QRgb kGrammarMarkRgb = qRgb(0xb0, 0x7a, 0xa1);  // ui/charts/chart_colors.h kGrammar

TokenTelemetry grammar_step(uint32_t position, uint32_t allowed, uint32_t vocab) {
    TokenTelemetry t;
    t.position = position;
    t.token = 7;
    t.layers.resize(2);
    for (LayerRecord& r : t.layers) r.computeUs = 300;
    t.grammarAllowedTokens = allowed;
    t.grammarVocabTokens = vocab;
    return t;
}

TEST(GrammarMark, CountsCrossTheRingAndTheHistory) {
    TelemetryRing ring(64);
    ASSERT_TRUE(ring.push(grammar_step(10, 0, 0)));
    ASSERT_TRUE(ring.push(grammar_step(11, 37, 4096)));
    std::vector<TokenTelemetry> drained;
    ASSERT_EQ(ring.drain(drained), 2u);
    EXPECT_EQ(drained[1].grammarAllowedTokens, 37u);
    EXPECT_EQ(drained[1].grammarVocabTokens, 4096u);
    TelemetryHistory history;
    for (TokenTelemetry& t : drained) history.append(std::move(t));
    const std::vector<TokenStall> stalls = token_stalls(history, 8);
    ASSERT_EQ(stalls.size(), 2u);
    EXPECT_EQ(stalls[0].grammarVocabTokens, 0u);
    EXPECT_EQ(stalls[1].grammarAllowedTokens, 37u);
    EXPECT_EQ(stalls[1].grammarVocabTokens, 4096u);
}

TEST(GrammarMark, MaskedTokensHaveAMarkAndATooltipOthersNeither) {
    StallTotalsChart chart(8);
    chart.resize(480, 260);
    chart.show();
    std::vector<TokenStall> tokens;
    for (uint32_t i = 0; i < 8; ++i) {
        TokenStall s;
        s.position = 100 + i;
        s.computeUs = 400;
        s.expertWaitUs = 100;
        if (i % 2 == 1) {  // every other token under the grammar
            s.grammarAllowedTokens = 10 + i;
            s.grammarVocabTokens = 4096;
        }
        tokens.push_back(s);
    }
    chart.setTotals(tokens);
    QApplication::processEvents();
    const QImage image = chart.grab().toImage();
    for (int slot = 0; slot < 8; ++slot) {
        const bool masked = slot % 2 == 1;
        EXPECT_EQ(chart.grammarAllowed(slot), masked ? 10 + slot : -1) << "slot " << slot;
        EXPECT_EQ(chart.grammarVocab(slot), masked ? 4096 : -1) << "slot " << slot;
        const QRect mark = chart.grammarMarkRect(slot);
        EXPECT_EQ(mark.isEmpty(), !masked) << "slot " << slot;
        if (!masked) continue;
        EXPECT_EQ(image.pixel(mark.center()) | 0xff000000u, kGrammarMarkRgb) << "slot " << slot;
        const QString tip = chart.toolTipAt(mark.center());
        EXPECT_TRUE(tip.contains(QStringLiteral("grammar allowed %1 of 4096 tokens").arg(10 + slot))) << tip.toStdString();
    }
    // The unmasked neighbours: no grammar line in the tooltip and no mark colour at the mark's
    // height over their bars.
    const QRect mark1 = chart.grammarMarkRect(1);
    const QRect mark3 = chart.grammarMarkRect(3);
    const int slotWidth = (mark3.center().x() - mark1.center().x()) / 2;
    const QPoint overSlot2(mark1.center().x() + slotWidth, mark1.center().y());
    EXPECT_NE(image.pixel(overSlot2) | 0xff000000u, kGrammarMarkRgb);
    EXPECT_FALSE(chart.toolTipAt(overSlot2).contains(QStringLiteral("grammar"))) << chart.toolTipAt(overSlot2).toStdString();
    EXPECT_FALSE(chart.toolTipAt(overSlot2).isEmpty());

    // A reply without a grammar clears the marks.
    for (TokenStall& s : tokens) s.grammarAllowedTokens = s.grammarVocabTokens = 0;
    chart.setTotals(tokens);
    for (int slot = 0; slot < 8; ++slot) EXPECT_TRUE(chart.grammarMarkRect(slot).isEmpty()) << "slot " << slot;
}

} // namespace
