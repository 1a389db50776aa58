// InspectorDock on the offscreen platform: synthetic TokenTelemetry records go through the
// TelemetryRing into the dock, and the panels, tooltips, dense-model hints and exports are
// checked against the records; one test feeds the ring from a real generation on an engine thread.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <QAbstractButton>
#include <QApplication>
#include <QCoreApplication>
#include <QDir>
#include <QHelpEvent>
#include <QLabel>
#include <QScrollArea>
#include <QSettings>
#include <QScrollBar>
#include <QTest>
#include <QTabWidget>
#include <QToolTip>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/convert/conversion_preflight.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cflow/ui/default_model.h"
#include "cflow/ui/inspector/bandwidth_panel.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/inspector/read_bandwidth_probe.h"
#include "cflow/ui/inspector/routing_panel.h"
#include "cflow/ui/inspector/stall_panel.h"
#include "cflow/ui/telemetry_ring.h"
#include "synthetic_model.h"
#include "ui_test_models.h"
#include "test_support.h"

namespace {

using namespace cflow;
using namespace cflow::ui;

constexpr uint32_t kLayers = 3;
constexpr uint32_t kExperts = 4;

std::shared_ptr<const Model> make_model(bool moe, const std::string& name, bool delayed = true,
                                        const std::string& generalName = {}) {
    cflow::test::SyntheticSpec spec;
    spec.n_layers = kLayers;
    if (moe) {
        spec.n_experts = kExperts;
        spec.top_k = 2;
        spec.expert_d_ff = 32;
        if (delayed) {
            spec.combine_style = CombineStyle::DelayedSum;
            spec.dense_delay = 1;
            spec.expert_delay = 1;
        }
    }
    const std::string path = (cflow::test::temp_dir("inspector_" + name) / (name + ".cflow")).string();
    auto source = cflow::test::make_synthetic_model(spec);
    if (!generalName.empty()) source.metadata.set("general.name", generalName);
    auto converted = convert_to_cflow(source, path, {.weight_quant = DType::F32});
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    auto model = Model::load(path);
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    return model.ok() ? model.value() : nullptr;
}

// Record fields derive from (position, layer), so every charted number has a known source.
LayerRecord make_layer(uint32_t position, uint32_t layer) {
    LayerRecord r;
    r.position = position;
    r.layer = uint16_t(layer);
    r.routing_layer = uint16_t(layer == 0 ? 0 : layer - 1);
    r.bytesRead = {1024u * (layer + 1), 2048u, 4096u * (layer + 1), 128u, 0u};
    r.computeUs = 10.0f * float(layer + 1);
    r.expertWaitUs = 2.0f * float(layer);
    r.residualNorm = 1.5f;
    r.nSelected = 2;
    r.experts[0] = uint8_t((position + layer) % kExperts);
    r.experts[1] = uint8_t((position + layer + 1) % kExperts);
    r.expertWeights[0] = 0.7f;
    r.expertWeights[1] = 0.3f;
    r.injectionLayer = int16_t(std::min(layer + 1, kLayers - 1));
    return r;
}

TokenTelemetry make_token(uint32_t position) {
    TokenTelemetry t;
    t.position = position;
    t.token = int32_t(40 + position);
    t.vocabBytes = 8192;
    t.totalUs = 100.0f;
    for (uint32_t l = 0; l < kLayers; ++l) t.layers.push_back(make_layer(position, l));
    return t;
}

InspectorOptions test_options() {
    InspectorOptions o;
    o.measureBandwidthAtStart = false;  // the probe would read 256 MiB per pass
    return o;
}

class InspectorDockTest : public ::testing::Test {
protected:
    void SetUp() override {
        dock = std::make_unique<InspectorDock>(&ring, nullptr, test_options());
        dock->resize(900, 700);
        dock->show();
    }
    void feed(uint32_t first, uint32_t count) {
        for (uint32_t p = first; p < first + count; ++p) ASSERT_TRUE(ring.push(make_token(p)));
        dock->drainNow();
    }
    TelemetryRing ring;
    std::unique_ptr<InspectorDock> dock;
};

TEST_F(InspectorDockTest, BandwidthChartHasOneCategoryPerLayerAndTheStreamBytes) {
    auto model = make_model(true, "moe_bw");
    ASSERT_TRUE(model);
    dock->setModel(model);
    feed(0, 10);
    BandwidthPanel* bw = dock->bandwidthPanel();
    EXPECT_EQ(bw->layerCategoryCount(), int(kLayers));
    EXPECT_EQ(bw->streamSetLabels(), QStringList({"attention", "dense", "experts", "router", "vocab"}));
    ASSERT_EQ(bw->axisUnit(), QStringLiteral("KiB"));
    for (uint32_t l = 0; l < kLayers; ++l) {
        EXPECT_DOUBLE_EQ(bw->barValue(0, int(l)), double(l + 1));      // 1024 (l+1) bytes = l+1 KiB
        EXPECT_DOUBLE_EQ(bw->barValue(1, int(l)), 2.0);
        EXPECT_DOUBLE_EQ(bw->barValue(2, int(l)), 4.0 * (l + 1));
        EXPECT_DOUBLE_EQ(bw->barValue(3, int(l)), 0.125);
    }
    // analyze_file of a DelayedSum model with dd = de = 1: the analytic figures are shown.
    EXPECT_TRUE(bw->criticalPathText().contains("B_naive")) << bw->criticalPathText().toStdString();
    EXPECT_TRUE(bw->criticalPathText().contains("B_critical"));
    EXPECT_TRUE(bw->criticalPathText().contains("reduction"));
    EXPECT_TRUE(bw->summaryText().contains("Last 10 tokens")) << bw->summaryText().toStdString();

    bw->setReadBandwidth(12.5e9);
    EXPECT_DOUBLE_EQ(bw->speedOfLightGBps(), 12.5);
}

// Beside the chat the dock is a column (about 540 px at 1366x768, 470 px at 1200 px with a wide
// conversation list): everything fits its width, with no horizontal scroll bar hiding the Export
// button. The status line names the model and counts tokens: a long name must wrap.
TEST_F(InspectorDockTest, AColumnBesideTheChatNeedsNoHorizontalScrolling) {
    auto model = make_model(true, "moe_column", true, "cflow stories MoE - arch2_4_combined (trained)");
    ASSERT_TRUE(model);
    dock->setModel(model);
    feed(0, 130);
    dock->resize(400, 700);
    QTest::qWait(400);  // the status line is throttled: its text arrives on the next tick
    auto* scroll = qobject_cast<QScrollArea*>(dock->widget());
    ASSERT_NE(scroll, nullptr);
    EXPECT_EQ(scroll->horizontalScrollBar()->maximum(), 0)
        << "content " << scroll->widget()->minimumSizeHint().width() << " px in a " << scroll->viewport()->width()
        << " px column; status '" << dock->statusText().toStdString() << "'";
}

TEST_F(InspectorDockTest, HeatmapIsLayersByExpertsWithWindowCounts) {
    auto model = make_model(true, "moe_heat");
    ASSERT_TRUE(model);
    dock->setModel(model);
    dock->tabs()->setCurrentWidget(dock->routingPanel());
    feed(0, 8);
    RoutingPanel* routing = dock->routingPanel();
    EXPECT_FALSE(routing->showingHint());
    ExpertHeatmap* heat = routing->heatmap();
    EXPECT_EQ(heat->rows(), int(kLayers));
    EXPECT_EQ(heat->columns(), int(kExperts));
    // Token p at layer l chose experts (p + l) % 4 and (p + l + 1) % 4: over 8 tokens every
    // expert is chosen 4 times in every layer.
    for (int l = 0; l < heat->rows(); ++l)
        for (int e = 0; e < heat->columns(); ++e) EXPECT_EQ(heat->count(l, e), 4u) << l << "," << e;
    EXPECT_EQ(heat->cellToolTip(2, 1), QStringLiteral("Layer 2, expert 1: chosen for 4 of the last 8 tokens (50%)"));

    TokenStrip* strip = routing->strip();
    EXPECT_EQ(strip->rows(), int(kLayers));
    EXPECT_EQ(strip->columns(), 8);
    // The left band of column 5 (position 5), layer 1 holds the first expert: (5 + 1) % 4 = 2.
    const QRect cell = strip->cellRect(1, 5);
    const QPoint leftBand(cell.left() + cell.width() / 4, cell.center().y());
    const QString tip = strip->toolTipAt(leftBand);
    EXPECT_TRUE(tip.startsWith("token ")) << tip.toStdString();
    EXPECT_TRUE(tip.contains("(id 45) at position 5, layer 1: expert 2, routing weight 0.700 (added at layer 2)"))
        << tip.toStdString();
    const QPoint rightBand(cell.right() - cell.width() / 4, cell.center().y());
    EXPECT_TRUE(strip->toolTipAt(rightBand).contains("expert 3, routing weight 0.300")) << strip->toolTipAt(rightBand).toStdString();

    // The tooltip event shows the same text.
    QHelpEvent help(QEvent::ToolTip, leftBand, strip->mapToGlobal(leftBand));
    QApplication::sendEvent(strip, &help);
    EXPECT_EQ(QToolTip::text(), tip);
    QToolTip::hideText();

    // The window slides: after 70 more tokens only the last 64 count.
    feed(8, 70);
    EXPECT_EQ(strip->columns(), 64);
    uint32_t total = 0;
    for (int e = 0; e < heat->columns(); ++e) total += heat->count(0, e);
    EXPECT_EQ(total, 64u * 2);
}

TEST_F(InspectorDockTest, HighlightTokenMarksThatColumn) {
    auto model = make_model(true, "moe_hi");
    ASSERT_TRUE(model);
    dock->setModel(model);
    feed(100, 20);
    dock->highlightToken(107);
    EXPECT_EQ(dock->tabs()->currentWidget(), dock->routingPanel());
    EXPECT_EQ(dock->routingPanel()->strip()->highlightedColumn(), 7);
    EXPECT_FALSE(dock->routingPanel()->strip()->highlightToken(5));  // not in the strip
    EXPECT_EQ(dock->routingPanel()->strip()->highlightedColumn(), -1);
}

TEST_F(InspectorDockTest, StallPanelShowsLanesTotalsAndDelayMarkers) {
    auto model = make_model(true, "moe_stall");
    ASSERT_TRUE(model);
    dock->setModel(model);
    dock->tabs()->setCurrentWidget(dock->stallPanel());
    feed(0, 40);
    StallPanel* stalls = dock->stallPanel();
    EXPECT_FALSE(stalls->showingHint());
    EXPECT_EQ(stalls->timeline()->lanes(), int(kLayers));
    EXPECT_EQ(stalls->timeline()->tokenCount(), int(StallPanel::kTimelineTokens));
    EXPECT_EQ(stalls->timeline()->segments().size(), StallPanel::kTimelineTokens * kLayers);
    // Layers 0 and 1 inject into the next layer (layer 2 into itself): 2 arrows per token.
    EXPECT_EQ(stalls->timeline()->markers().size(), StallPanel::kTimelineTokens * 2);
    EXPECT_EQ(stalls->totalsBarCount(), int(StallPanel::kTotalsTokens));
    EXPECT_EQ(stalls->totalsTokenCount(), StallPanel::kTotalsTokens);
    // compute 10 + 20 + 30 = 60 us, wait 0 + 2 + 4 = 6 us per token.
    EXPECT_NEAR(stalls->totalsValue(0, 0), 0.060, 1e-9);
    EXPECT_NEAR(stalls->totalsValue(1, 0), 0.006, 1e-9);
    EXPECT_NEAR(stalls->totalsValue(1, int(StallPanel::kTotalsTokens) - 1), 0.006, 1e-9);

    // Fewer tokens than slots: the newest fill the right end, the rest stay empty.
    dock->clearTelemetry();
    feed(0, 2);
    EXPECT_EQ(stalls->totalsTokenCount(), 2u);
    EXPECT_EQ(stalls->totalsValue(0, 0), 0.0);
    EXPECT_NEAR(stalls->totalsValue(0, int(StallPanel::kTotalsTokens) - 1), 0.060, 1e-9);
    EXPECT_EQ(stalls->timeline()->tokenCount(), 2);
    EXPECT_TRUE(stalls->summaryText().contains("9.1% of layer time stalled")) << stalls->summaryText().toStdString();
}

// The three arms side by side: records tagged with the arm that made them add up per arm, the
// staged-vs-sync comparison and the paper's prediction follow from them, and the switch asks
// for an arm without changing the figures.
// Issue 37: on a model without an expert delay staged reads cannot overlap compute, and the
// summary said "hides -46.4% ... runs at 0.72x ... predicts 1.43x". It now says staged waits
// longer and why, and predicts nothing it cannot reach.
TEST_F(InspectorDockTest, StallPanelOnAModelWithoutAnExpertDelayPredictsNoOverlap) {
    auto model = make_model(true, "moe_no_delay", /*delayed=*/false);
    ASSERT_TRUE(model);
    dock->setModel(model);
    dock->tabs()->setCurrentWidget(dock->stallPanel());
    StallPanel* stalls = dock->stallPanel();
    auto push = [&](uint32_t first, ExpertFetch arm, float waitScale) {
        for (uint32_t p = first; p < first + 4; ++p) {
            TokenTelemetry t = make_token(p);
            t.expertFetch = uint8_t(arm);
            for (LayerRecord& r : t.layers) r.expertWaitUs *= waitScale;
            t.totalUs = 60.0f + 6.0f * waitScale + 10.0f;
            ASSERT_TRUE(ring.push(t));
        }
        dock->drainNow();
    };
    push(0, ExpertFetch::Mapped, 0.0f);
    push(4, ExpertFetch::Sync, 10.0f);
    push(8, ExpertFetch::Staged, 14.0f);  // waits 40% longer than sync
    const std::string text = stalls->armsText().toStdString();
    EXPECT_EQ(text.find("hides -"), std::string::npos) << text;
    EXPECT_NE(text.find("Staged waits 40.0% longer than sync for its experts"), std::string::npos) << text;
    EXPECT_NE(text.find("no expert delay"), std::string::npos) << text;
    EXPECT_EQ(text.find("predicts"), std::string::npos) << text;
}

TEST_F(InspectorDockTest, StallPanelComparesTheArmsAndSwitchesThem) {
    auto model = make_model(true, "moe_arms");
    ASSERT_TRUE(model);
    dock->setModel(model);
    dock->tabs()->setCurrentWidget(dock->stallPanel());
    StallPanel* stalls = dock->stallPanel();
    auto push = [&](uint32_t first, uint32_t count, ExpertFetch arm, float waitScale, uint32_t hits, uint32_t misses) {
        for (uint32_t p = first; p < first + count; ++p) {
            TokenTelemetry t = make_token(p);
            t.expertFetch = uint8_t(arm);
            for (LayerRecord& r : t.layers) r.expertWaitUs *= waitScale;
            t.totalUs = 60.0f + 6.0f * waitScale + 10.0f;  // the layers plus 10 us of LM head
            t.expertCacheHits = hits;
            t.expertCacheMisses = misses;
            ASSERT_TRUE(ring.push(t));
        }
        dock->drainNow();
    };
    push(0, 4, ExpertFetch::Mapped, 0.0f, 0, 0);
    EXPECT_TRUE(stalls->armsText().contains("Switch the arm")) << stalls->armsText().toStdString();
    push(4, 4, ExpertFetch::Sync, 10.0f, 0, 6);   // 60 us wait per token
    push(8, 4, ExpertFetch::Staged, 2.5f, 3, 3);  // 15 us: a quarter of sync's
    const TelemetryHistory& h = dock->history();
    EXPECT_EQ(h.armTotals(size_t(ExpertFetch::Sync)).tokens, 4u);
    EXPECT_NEAR(h.armTotals(size_t(ExpertFetch::Sync)).stallMsPerToken(), 0.060, 1e-9);
    EXPECT_NEAR(h.armTotals(size_t(ExpertFetch::Staged)).hitRate(), 0.5, 1e-12);
    const std::string text = stalls->armsText().toStdString();
    EXPECT_NE(text.find("mapped: 4 tokens, 0.07 ms/token"), std::string::npos) << text;
    EXPECT_NE(text.find("sync: 4 tokens, 0.13 ms/token (compute 0.06 ms, expert wait 0.06 ms), cache 0.0% hits"), std::string::npos) << text;
    EXPECT_NE(text.find("staged: 4 tokens, 0.09 ms/token (compute 0.06 ms, expert wait 0.0"), std::string::npos) << text;
    EXPECT_NE(text.find("ms), cache 50.0% hits"), std::string::npos) << text;
    EXPECT_NE(text.find("Staged hides 75.0% of sync's expert wait"), std::string::npos) << text;
    // sync 130 us, staged 85 us: 1.53x; C = 70 us, IO = 60 us: (70 + 60) / 70 = 1.86x predicted.
    EXPECT_NE(text.find("runs at 1.53"), std::string::npos) << text;
    EXPECT_NE(text.find("predicts 1.86"), std::string::npos) << text;
    // A prefill chunk (tokens > 1) is no token's time: it leaves the per-arm figures alone.
    TokenTelemetry chunk = make_token(12);
    chunk.tokens = 16;
    chunk.expertFetch = uint8_t(ExpertFetch::Staged);
    ASSERT_TRUE(ring.push(chunk));
    dock->drainNow();
    EXPECT_EQ(h.armTotals(size_t(ExpertFetch::Staged)).tokens, 4u);

    std::vector<ExpertFetch> requested;
    QObject::connect(stalls, &StallPanel::expertFetchRequested, [&](ExpertFetch f) { requested.push_back(f); });
    auto* stagedButton = stalls->findChild<QAbstractButton*>(QStringLiteral("armStaged"));
    ASSERT_NE(stagedButton, nullptr);
    stagedButton->click();
    ASSERT_EQ(requested.size(), 1u);
    EXPECT_EQ(requested[0], ExpertFetch::Staged);
    EXPECT_EQ(stalls->checkedExpertFetch(), ExpertFetch::Staged);
    stalls->setExpertFetch(ExpertFetch::Sync);  // the settings changed elsewhere: shown, not re-requested
    EXPECT_EQ(stalls->checkedExpertFetch(), ExpertFetch::Sync);
    EXPECT_EQ(requested.size(), 1u);

    dock->clearTelemetry();
    EXPECT_EQ(h.armTotals(size_t(ExpertFetch::Sync)).tokens, 0u) << "a new conversation starts the comparison afresh";
}

TEST_F(InspectorDockTest, DenseModelShowsHintsInsteadOfEmptyCharts) {
    auto model = make_model(false, "dense");
    ASSERT_TRUE(model);
    dock->setModel(model);
    EXPECT_TRUE(dock->inspectorGeometry().dense());
    EXPECT_TRUE(dock->routingPanel()->showingHint());
    EXPECT_TRUE(dock->stallPanel()->showingHint());
    EXPECT_TRUE(dock->routingPanel()->hintText().contains("dense model")) << dock->routingPanel()->hintText().toStdString();
    EXPECT_TRUE(dock->stallPanel()->hintText().contains("dense model"));
    // Bandwidth still applies to dense models.
    EXPECT_EQ(dock->bandwidthPanel()->layerCategoryCount(), int(kLayers));

    // Switching to a MoE model replaces the hints with the charts.
    dock->setModel(make_model(true, "moe_after_dense"));
    EXPECT_FALSE(dock->routingPanel()->showingHint());
    EXPECT_FALSE(dock->stallPanel()->showingHint());
}

TEST_F(InspectorDockTest, WithoutAModelTheGeometryComesFromTheRecords) {
    EXPECT_TRUE(dock->routingPanel()->showingHint());
    feed(0, 3);
    EXPECT_EQ(dock->inspectorGeometry().layers, kLayers);
    EXPECT_EQ(dock->inspectorGeometry().experts, kExperts);
    EXPECT_FALSE(dock->routingPanel()->showingHint());
    EXPECT_EQ(dock->routingPanel()->heatmap()->rows(), 0);  // hidden tab: redrawn when shown
    dock->tabs()->setCurrentWidget(dock->routingPanel());
    EXPECT_EQ(dock->routingPanel()->heatmap()->rows(), int(kLayers));
    EXPECT_EQ(dock->routingPanel()->heatmap()->columns(), int(kExperts));
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST_F(InspectorDockTest, ExportsCsvAndJsonl) {
    feed(0, 5);
    const auto dir = cflow::test::temp_dir("inspector_export");
    const auto csvPath = dir / "t.csv";
    const auto jsonlPath = dir / "t.jsonl";
    ASSERT_TRUE(dock->exportTelemetry(QString::fromStdString(csvPath.string()), TelemetryFormat::Csv).ok());
    ASSERT_TRUE(dock->exportTelemetry(QString::fromStdString(jsonlPath.string()), TelemetryFormat::Jsonl).ok());

    const auto csv = read_lines(csvPath);
    ASSERT_EQ(csv.size(), 1 + 5 * kLayers);
    EXPECT_EQ(csv[0],
              "position,token,layer,routing_layer,injection_layer,attention_bytes,dense_bytes,expert_bytes,router_bytes,"
              "vocab_bytes,compute_us,expert_wait_us,residual_norm,experts,expert_weights,token_vocab_bytes,token_total_us");
    // Position 3, layer 2: experts (3+2)%4 = 1 and 2, injected into itself (last layer).
    EXPECT_EQ(csv[1 + 3 * kLayers + 2], "3,43,2,1,2,3072,2048,12288,128,0,30,4,1.5,1;2,0.699999988;0.300000012,8192,100");

    const auto jsonl = read_lines(jsonlPath);
    ASSERT_EQ(jsonl.size(), 5u);
    const auto j = nlohmann::json::parse(jsonl[4]);
    EXPECT_EQ(j.at("position"), 4);
    EXPECT_EQ(j.at("token"), 44);
    EXPECT_EQ(j.at("vocabBytes"), 8192);
    ASSERT_EQ(j.at("layers").size(), kLayers);
    EXPECT_EQ(j.at("layers")[1].at("bytesRead").at("expertBytes"), 8192);
    EXPECT_EQ(j.at("layers")[1].at("experts"), nlohmann::json::array({1, 2}));

    // A path in a missing directory fails with a message naming it, and leaves nothing behind.
    const auto bad = dir / "missing" / "t.csv";
    const Status st = dock->exportTelemetry(QString::fromStdString(bad.string()), TelemetryFormat::Csv);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().find(bad.string()), std::string::npos) << st.error();
    EXPECT_FALSE(std::filesystem::exists(bad));

    dock->clearTelemetry();
    EXPECT_TRUE(dock->history().session().empty());
}

// The real producer: generate() on an engine thread pushes every step into the ring while the
// GUI thread drains it; everything the engine recorded reaches the dock.
TEST_F(InspectorDockTest, RecordsOfARealGenerationArriveComplete) {
    auto model = make_model(true, "moe_live");
    ASSERT_TRUE(model);
    dock->setModel(model);
    auto session = Session::create(model, {.threads = 1});
    ASSERT_TRUE(session.ok()) << session.error();
    GenerateRequest request;
    request.prompt = {1, 50, 60, 70};
    request.max_tokens = 24;
    request.sampling.temperature = 0;
    request.stop_at_end_of_generation = false;
    std::vector<uint32_t> pushedPositions;
    request.on_step = [&](const TokenTelemetry& t) {
        pushedPositions.push_back(t.position);
        ring.push(t);
    };
    Result<GenerateStats> stats = make_error("not run");
    std::atomic<bool> done{false};
    std::thread engine([&] {
        stats = generate(*session.value(), request, [](int32_t, std::string_view) { return true; });
        done = true;
    });
    while (!done) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        dock->drainNow();
    }
    engine.join();
    dock->drainNow();
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(ring.droppedTokens(), 0u);
    const auto& session_records = dock->history().session();
    ASSERT_EQ(session_records.size(), pushedPositions.size());
    for (size_t i = 0; i < session_records.size(); ++i) {
        EXPECT_EQ(session_records[i].position, pushedPositions[i]);
        EXPECT_EQ(session_records[i].layers.size(), kLayers);
        EXPECT_EQ(session_records[i].layers[0].nSelected, 2);
    }
    dock->tabs()->setCurrentWidget(dock->routingPanel());
    uint32_t chosen = 0;
    for (int e = 0; e < int(kExperts); ++e) chosen += dock->routingPanel()->heatmap()->count(0, e);
    EXPECT_EQ(chosen, 2u * std::min<uint32_t>(64, uint32_t(session_records.size())));
}

TEST(DefaultModelPath, FindsTheModelBesideTheExecutableOrInShare) {
    const auto root = cflow::test::temp_dir("default_model_path");
    const auto bin = root / "bin";
    const auto share = root / "share" / "cflow-studio";
    std::filesystem::create_directories(bin);
    std::filesystem::create_directories(share);
    const QString binDir = QString::fromStdString(bin.string());
    EXPECT_TRUE(default_model_path(binDir).isNull());
    std::ofstream(share / kDefaultModelFileName) << "x";
    EXPECT_EQ(default_model_path(binDir), QDir::cleanPath(QString::fromStdString((share / kDefaultModelFileName).string())));
    std::ofstream(bin / kDefaultModelFileName) << "x";
    EXPECT_EQ(default_model_path(binDir), QDir::cleanPath(QString::fromStdString((bin / kDefaultModelFileName).string())));
}

// The shared read-bandwidth file of this test process: XDG_CACHE_HOME points at a fresh folder
// (ctest runs the suites in parallel processes, and the user's own figure stays untouched).
struct IsolatedProbeCache {
    explicit IsolatedProbeCache(const std::string& name)
        : hadPrevious(qEnvironmentVariableIsSet("XDG_CACHE_HOME")), previous(qgetenv("XDG_CACHE_HOME")) {
        qputenv("XDG_CACHE_HOME", QByteArray::fromStdString(cflow::test::temp_dir("probe_cache_" + name).string()));
    }
    ~IsolatedProbeCache() {
        if (hadPrevious) qputenv("XDG_CACHE_HOME", previous);
        else qunsetenv("XDG_CACHE_HOME");
    }
    bool hadPrevious;
    QByteArray previous;
};

int64_t probe_test_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A fresh record from this machine for all its hardware threads (what the inspector and the
// conversion wizard probe with), holding a figure no measurement gives exactly.
StoredBandwidthProbe store_probe_record(double bytesPerSecond) {
    StoredBandwidthProbe p;
    p.result.bytesPerSecond = bytesPerSecond;
    p.result.bufferBytes = 256ull << 20;
    p.result.threads = bandwidth_probe_threads(0);
    p.passes = 5;
    p.method = kBandwidthProbeMethod;
    p.cpuModel = this_cpu_model();
    p.logicalCpus = bandwidth_probe_threads(0);
    p.measuredAtUnixSeconds = probe_test_now() - 120;
    const Status stored = store_shared_bandwidth_probe(default_bandwidth_probe_path(), p);
    EXPECT_TRUE(stored.ok()) << (stored.ok() ? "" : stored.error());
    return p;
}

bool wait_for_probe(const ReadBandwidthProbe* probe) {
    return QTest::qWaitFor([probe] { return !probe->running(); }, 60000);
}

TEST(ReadBandwidthProbe, TheInspectorAndThePreflightShowOneStoredFigure) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    cflow::ui::test::IsolatedSettings settings("probe_one_figure");
    IsolatedProbeCache cache("one_figure");
    const StoredBandwidthProbe stored = store_probe_record(23.456e9);
    const std::string line = shared_probe_text(stored);  // "23.5 GB/s with N threads (shared probe, measured ...)"

    TelemetryRing ring;
    InspectorOptions options;
    options.measureBandwidthAtStart = true;
    InspectorDock dock(&ring, nullptr, options);
    dock.setModel(make_model(false, "probe_one_figure"));  // where a missing figure would be measured
    EXPECT_FALSE(dock.readBandwidthProbe()->running()) << "a fresh stored figure is not measured again";
    EXPECT_DOUBLE_EQ(dock.bandwidthPanel()->speedOfLightGBps(), 23.456);
    EXPECT_TRUE(dock.bandwidthPanel()->readBandwidthText().contains(QString::fromStdString(line)))
        << dock.bandwidthPanel()->readBandwidthText().toStdString();

    PreflightRequest request;  // as the conversion wizard asks: all threads, the default file
    request.source_path = gguf.string();
    auto report = run_preflight(request);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_DOUBLE_EQ(report->read_bandwidth_bytes_per_second, 23.456e9);
    const std::string text = preflight_text(*report);
    EXPECT_NE(text.find("read bandwidth: " + line), std::string::npos) << text;
    EXPECT_EQ(text.find("read bandwidth measured now"), std::string::npos) << text;
}

TEST(ReadBandwidthProbe, TheOldSettingsFigureIsRemovedNotShown) {
    cflow::ui::test::IsolatedSettings settings("probe_legacy_key");
    IsolatedProbeCache cache("legacy_key");
    QSettings().setValue(QString::fromLatin1(ReadBandwidthProbe::kLegacySettingsKey), 17.9e9);
    ReadBandwidthProbe probe;
    EXPECT_DOUBLE_EQ(probe.bytesPerSecond(), 0.0) << "a figure without machine, method or date is not the shared one";
    EXPECT_TRUE(probe.sourceText().isEmpty());
    EXPECT_FALSE(QSettings().contains(QString::fromLatin1(ReadBandwidthProbe::kLegacySettingsKey)));
}

// At the app's start the model loads right after the window is built; a probe running beside
// that load measured the load's leftovers (and the old inspector kept that figure for good).
TEST(ReadBandwidthProbe, AMissingFigureIsMeasuredAfterTheFirstModelLoadsAndStoredForEveryone) {
    cflow::ui::test::IsolatedSettings settings("probe_after_load");
    IsolatedProbeCache cache("after_load");
    TelemetryRing ring;
    InspectorOptions options;
    options.measureBandwidthAtStart = true;
    InspectorDock dock(&ring, nullptr, options);
    ReadBandwidthProbe* probe = dock.readBandwidthProbe();
    EXPECT_FALSE(probe->running()) << "nothing is measured before a model has loaded";
    EXPECT_DOUBLE_EQ(dock.bandwidthPanel()->speedOfLightGBps(), 0.0);
    dock.setModel(make_model(false, "probe_after_load"));
    ASSERT_TRUE(wait_for_probe(probe));
    QCoreApplication::processEvents();  // the watcher's finished signal
    EXPECT_NE(probe->lastRemeasureReason().toStdString().find("no shared probe"), std::string::npos)
        << probe->lastRemeasureReason().toStdString();
    ASSERT_GT(dock.bandwidthPanel()->speedOfLightGBps(), 0.1);
    EXPECT_TRUE(dock.bandwidthPanel()->readBandwidthText().contains(QStringLiteral("shared probe, measured")))
        << dock.bandwidthPanel()->readBandwidthText().toStdString();
    auto stored = load_shared_bandwidth_probe(default_bandwidth_probe_path(), 0, probe_test_now(), 3600);
    ASSERT_TRUE(stored.ok()) << stored.error();
    EXPECT_DOUBLE_EQ(stored->result.bytesPerSecond, dock.bandwidthPanel()->speedOfLightGBps() * 1e9);
}

TEST(ReadBandwidthProbe, MeasureAgainReplacesTheStoredFigure) {
    cflow::ui::test::IsolatedSettings settings("probe_again");
    IsolatedProbeCache cache("again");
    store_probe_record(23.456e9);
    TelemetryRing ring;
    InspectorDock dock(&ring, nullptr, test_options());
    ASSERT_DOUBLE_EQ(dock.bandwidthPanel()->speedOfLightGBps(), 23.456);
    emit dock.bandwidthPanel()->remeasureRequested();  // the "Measure read bandwidth again" button
    ASSERT_TRUE(wait_for_probe(dock.readBandwidthProbe()));
    QCoreApplication::processEvents();
    EXPECT_EQ(dock.readBandwidthProbe()->lastRemeasureReason(), QStringLiteral("asked to measure again"));
    EXPECT_NE(dock.bandwidthPanel()->speedOfLightGBps(), 23.456);
    auto stored = load_shared_bandwidth_probe(default_bandwidth_probe_path(), 0, probe_test_now(), 3600);
    ASSERT_TRUE(stored.ok()) << stored.error();
    EXPECT_NE(stored->result.bytesPerSecond, 23.456e9) << "the file holds the new figure for the preflight and bench";
}

// The explanation of an empty panel is read from its top: in a short dock (the panel's charts
// keep their minimum height and the dock scrolls) a centred one sat below the visible part.
TEST_F(InspectorDockTest, EmptyPanelsExplainThemselvesAtTheTopOfAShortPane) {
    dock->setModel(make_model(false, "dense_short_pane"));
    auto* scroll = qobject_cast<QScrollArea*>(dock->widget());
    ASSERT_NE(scroll, nullptr);
    for (int height : {200, 260, 700}) {
        dock->resize(400, height);
        for (QWidget* panel : {static_cast<QWidget*>(dock->routingPanel()), static_cast<QWidget*>(dock->stallPanel())}) {
            dock->tabs()->setCurrentWidget(panel);
            QApplication::processEvents();
            auto* hint = panel->findChild<QLabel*>(QStringLiteral("panelHint"));
            ASSERT_NE(hint, nullptr);
            ASSERT_TRUE(hint->isVisible());
            const int m = hint->margin();
            const QRect text = hint->fontMetrics().boundingRect(hint->contentsRect().adjusted(m, m, -m, -m),
                                                                int(hint->alignment()) | Qt::TextWordWrap, hint->text());
            const QRect shown(hint->mapTo(scroll->viewport(), text.topLeft()), text.size());
            EXPECT_GE(scroll->viewport()->height(), 120) << "dock height " << height;
            EXPECT_TRUE(scroll->viewport()->rect().contains(shown))
                << "dock height " << height << ": the hint's text at y " << shown.top() << ".." << shown.bottom()
                << ", the pane shows 0.." << scroll->viewport()->height() - 1;
        }
    }
}

// A mixture-of-experts model before its first token: the routing and stall panels say so in
// their first line, not under charts a short pane scrolls away.
TEST_F(InspectorDockTest, BeforeTheFirstTokenTheExpertPanelsSayWhatWillAppearAtTheirTop) {
    dock->setModel(make_model(true, "moe_no_tokens"));
    dock->resize(400, 200);
    auto* scroll = qobject_cast<QScrollArea*>(dock->widget());
    ASSERT_NE(scroll, nullptr);
    const struct {
        QWidget* panel;
        const char* label;
        const char* text;
    } panels[] = {{dock->routingPanel(), "routingCaption", "No tokens yet"},
                  {dock->stallPanel(), "stallSummary", "Generate text to see where each token's time goes"}};
    for (const auto& p : panels) {
        dock->tabs()->setCurrentWidget(p.panel);
        QApplication::processEvents();
        auto* label = p.panel->findChild<QLabel*>(QString::fromLatin1(p.label));
        ASSERT_NE(label, nullptr) << p.label;
        EXPECT_TRUE(label->text().contains(QString::fromLatin1(p.text))) << label->text().toStdString();
        const QRect shown(label->mapTo(scroll->viewport(), QPoint(0, 0)), label->size());
        EXPECT_TRUE(scroll->viewport()->rect().contains(shown))
            << p.label << " at y " << shown.top() << ".." << shown.bottom() << ", the pane shows 0.." << scroll->viewport()->height() - 1;
    }
    feed(0, 3);
    dock->tabs()->setCurrentWidget(dock->routingPanel());
    QApplication::processEvents();
    EXPECT_TRUE(dock->routingPanel()->findChild<QLabel*>(QStringLiteral("routingCaption"))->text().startsWith(QStringLiteral("Top-2")));
}

} // namespace
