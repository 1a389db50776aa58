// cflow_bench_inspector: does watching the inference slow it down? One long generation per
// inspector panel on a synthetic MoE model; every --switch-ms the inspector is switched between
// open (its 30 Hz timer draining the TelemetryRing and redrawing the panel) and closed (timer
// stopped: a hidden dock does no work). Each token's decode time is attributed to the state it
// ran in. Decode slows as the context grows, so each open period's rate is compared with the
// mean of the closed periods just before and after it (linear drift cancels); the ratio is the
// mean over all open periods. A null run first alternates the same way with nothing opened: its
// ratio is the method's noise floor (comparing the two states' totals instead read 0.95 or 1.06
// on a null run, depending on which state came first).
// Also prints how busy the GUI thread was while open and the GUI cost of one frame per panel.
//
//   cflow_bench_inspector [--tokens N] [--threads T] [--switch-ms M] [--frames F] [--size WxH]
#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTabWidget>
#include <QTimer>

#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/telemetry_ring.h"
#include "synthetic_model.h"

namespace {

struct Args {
    int tokens = 3072;
    unsigned threads = 0;
    int switchMs = 100;  // open/closed alternation period
    int frames = 150;    // per tab, for the GUI cost per frame
    int width = 1200;    // the dock's size in the app's default layout: the bottom dock of the
    int height = 400;    // 1200 x 800 main window
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--tokens")) a.tokens = std::max(8, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--switch-ms")) a.switchMs = std::max(10, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--threads")) a.threads = unsigned(std::max(0, std::atoi(argv[i + 1])));
        else if (!std::strcmp(argv[i], "--frames")) a.frames = std::max(1, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--size")) std::sscanf(argv[i + 1], "%dx%d", &a.width, &a.height);
    }
    return a;
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Decode time in one open or closed period, over the tokens that ran entirely inside it.
struct Period {
    bool open = false;
    size_t tokens = 0;
    double seconds = 0;
    double rate() const { return seconds > 0 ? double(tokens) / seconds : 0; }
};

struct Split {
    std::vector<Period> periods;  // in time order, alternating
    double guiBusy = 0;           // GUI thread CPU seconds per wall second while open
    double redrawsPerSecond = 0;  // panel redraws per wall second while open
    double longestGapMs = 0;      // longest time between two redraws inside an open period
    // Each open period against the mean of its closed neighbours, averaged; -1 if none.
    double ratio() const {
        double sum = 0;
        int n = 0;
        for (size_t i = 1; i + 1 < periods.size(); ++i) {
            const Period &before = periods[i - 1], &p = periods[i], &after = periods[i + 1];
            if (!p.open || before.open || after.open || p.tokens < 4 || before.tokens < 4 || after.tokens < 4) continue;
            sum += p.rate() / ((before.rate() + after.rate()) / 2);
            ++n;
        }
        return n ? sum / n : -1;
    }
    size_t tokens(bool open) const {
        size_t n = 0;
        for (const Period& p : periods) n += p.open == open ? p.tokens : 0;
        return n;
    }
};

// One generation on an engine thread while the GUI thread runs its event loop (as in the app)
// and switches the inspector between open and closed every args.switchMs.
// A null run leaves the inspector closed in both states.
Split interleaved_run(const std::shared_ptr<const cflow::Model>& model, const Args& args, cflow::ui::TelemetryRing& ring,
                      cflow::ui::InspectorDock& dock, bool nullRun = false) {
    std::atomic<uint32_t> state{0};  // bit 0: open; upper bits count switches
    Split split;  // periods written by the engine thread only, read after it joined
    cflow::GenerateRequest request;
    request.prompt = {1, 72, 101, 108, 108, 111};
    request.max_tokens = args.tokens;
    request.sampling.temperature = 0;
    request.stop_at_end_of_generation = false;
    request.on_step = [&ring](const cflow::TokenTelemetry& t) { ring.push(t); };

    std::atomic<bool> done{false};
    QEventLoop loop;
    std::thread engine([&] {
        // The session (KV cache, buffers) is made on the engine thread, as in the app.
        auto session = cflow::Session::create(model, {.threads = args.threads});
        if (!session) {
            std::fprintf(stderr, "session: %s\n", session.error().c_str());
            std::exit(1);
        }
        auto last = std::chrono::steady_clock::now();
        uint32_t lastState = state.load();
        auto stats = cflow::generate(*session.value(), request, [&](int32_t, std::string_view) {
            const auto now = std::chrono::steady_clock::now();
            const uint32_t s = state.load();
            // A token during which the state switched belongs to neither.
            if (s == lastState) {
                const size_t period = s >> 1;
                while (split.periods.size() <= period) {
                    Period next;
                    next.open = split.periods.size() % 2 == 1;  // period 0 is closed
                    split.periods.push_back(next);
                }
                split.periods[period].seconds += std::chrono::duration<double>(now - last).count();
                ++split.periods[period].tokens;
            }
            last = now;
            lastState = s;
            return true;
        });
        if (!stats) std::fprintf(stderr, "generate: %s\n", stats.error().c_str());
        done = true;
        QMetaObject::invokeMethod(&loop, &QEventLoop::quit, Qt::QueuedConnection);
    });
    // Each switch is applied on the GUI thread, then published to the engine's clock.
    double openCpu = 0, openWall = 0, cpuMark = 0;
    uint64_t openRedraws = 0, redrawMark = 0;
    QElapsedTimer wallMark, sinceRedraw;
    // Every drained frame redraws the visible panel (tokens arrive faster than 30 Hz).
    const auto frames = QObject::connect(&dock, &cflow::ui::InspectorDock::tokensDrained, [&] {
        if (!(state.load() & 1u) || nullRun) return;
        if (sinceRedraw.isValid()) split.longestGapMs = std::max(split.longestGapMs, double(sinceRedraw.nsecsElapsed()) / 1e6);
        sinceRedraw.start();
    });
    QTimer switcher;
    switcher.setInterval(args.switchMs);
    QObject::connect(&switcher, &QTimer::timeout, [&] {
        const bool wasOpen = state.load() & 1u;
        if (nullRun) {
        } else if (wasOpen) {
            dock.refreshTimer()->stop();
            openCpu += thread_cpu_seconds() - cpuMark;
            openWall += double(wallMark.nsecsElapsed()) * 1e-9;
            openRedraws += dock.redraws() - redrawMark;
            sinceRedraw.invalidate();
        } else {
            dock.drainNow();  // what arrived while closed, as on opening the dock
            dock.refreshTimer()->start();
            cpuMark = thread_cpu_seconds();
            redrawMark = dock.redraws();
            wallMark.start();
            sinceRedraw.start();
        }
        state.store(((state.load() >> 1) + 1) << 1 | (wasOpen ? 0u : 1u));
    });
    dock.refreshTimer()->stop();
    switcher.start();
    if (!done) loop.exec();
    switcher.stop();
    engine.join();
    QObject::disconnect(frames);
    if ((state.load() & 1u) && !nullRun) {
        openCpu += thread_cpu_seconds() - cpuMark;
        openWall += double(wallMark.nsecsElapsed()) * 1e-9;
        openRedraws += dock.redraws() - redrawMark;
    }
    dock.refreshTimer()->stop();
    dock.drainNow();
    split.guiBusy = openWall > 0 ? openCpu / openWall : 0;
    split.redrawsPerSecond = openWall > 0 ? double(openRedraws) / openWall : 0;
    return split;
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("cflow"));
    QApplication::setApplicationName(QStringLiteral("cflow-bench-inspector"));
    const Args args = parse(argc, argv);

    // Paper-like MoE: 8 experts top-2 with delayed experts, so every panel has data.
    cflow::test::SyntheticSpec spec;
    spec.d_model = 256;
    spec.n_layers = 6;
    spec.n_heads = 8;
    spec.n_kv_heads = 4;
    spec.head_dim = 32;
    spec.d_ff = 512;
    spec.n_experts = 8;
    spec.top_k = 2;
    spec.expert_d_ff = 256;
    spec.combine_style = cflow::CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 2;
    spec.max_seq_len = uint32_t(args.tokens + 64);
    spec.dtype = cflow::DType::F32;
    const auto dir = std::filesystem::temp_directory_path() / "cflow_bench_inspector";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "moe.cflow").string();
    auto converted = cflow::convert_to_cflow(cflow::test::make_synthetic_model(spec), path,
                                             {.weight_quant = cflow::DType::Q8_0});
    if (!converted) {
        std::fprintf(stderr, "convert: %s\n", converted.error().c_str());
        return 1;
    }
    auto model = cflow::Model::load(path);
    if (!model) {
        std::fprintf(stderr, "load: %s\n", model.error().c_str());
        return 1;
    }

    cflow::ui::TelemetryRing ring;
    cflow::ui::InspectorOptions options;
    options.measureBandwidthAtStart = false;  // the probe would compete for memory bandwidth
    cflow::ui::InspectorDock dock(&ring, nullptr, options);
    dock.resize(std::max(300, args.width), std::max(200, args.height));
    dock.setModel(model.value());
    dock.show();
    {
        Args warmup = args;
        warmup.tokens = std::min(args.tokens, 256);
        interleaved_run(model.value(), warmup, ring, dock);  // page cache, expert views, clocks
    }
    const double nullRatio = interleaved_run(model.value(), args, ring, dock, /*nullRun=*/true).ratio();
    std::printf("null run (inspector closed in both states): ratio %.3f\n", nullRatio);
    std::vector<double> ratios;
    double busiest = 0;
    for (int tab = 0; tab < dock.tabs()->count(); ++tab) {
        dock.tabs()->setCurrentIndex(tab);
        QCoreApplication::processEvents();
        const Split split = interleaved_run(model.value(), args, ring, dock);
        ratios.push_back(split.ratio());
        busiest = std::max(busiest, split.guiBusy);
        std::printf("%s tab: ratio %.3f over %zu open / %zu closed tokens; while open: GUI thread busy %.1f%% of one "
                    "core, %.1f redraws/s, longest gap between redraws %.0f ms\n",
                    dock.tabs()->tabText(tab).toUtf8().constData(), ratios.back(), split.tokens(true), split.tokens(false),
                    100.0 * split.guiBusy, split.redrawsPerSecond, split.longestGapMs);
    }
    std::printf("panel redraws: %llu; tokens recorded %zu, dropped %llu\n",
                static_cast<unsigned long long>(dock.redraws()), dock.history().session().size(),
                static_cast<unsigned long long>(ring.droppedTokens()));
    // The GUI thread's cost per frame, measured directly (robust where the decode rates are
    // noisy, e.g. on a loaded machine): one new token per frame, drained, redrawn and painted.
    {
        dock.show();
        dock.refreshTimer()->stop();
        const auto& session = dock.history().session();
        const size_t replay = std::min<size_t>(64, session.size());
        std::vector<cflow::TokenTelemetry> recorded(session.end() - std::ptrdiff_t(replay), session.end());
        const int kFrames = args.frames;
        for (int tab = 0; tab < dock.tabs()->count(); ++tab) {
            dock.tabs()->setCurrentIndex(tab);
            QCoreApplication::processEvents();
            QElapsedTimer clock;
            qint64 updateNs = 0, paintNs = 0;
            for (int f = 0; f < kFrames; ++f) {
                // Timings vary from frame to frame as in a real run, so every chart has something to redraw.
                cflow::TokenTelemetry t = recorded[size_t(f) % recorded.size()];
                const float jitter = 1.0f + 0.03f * float(f % 7);
                t.totalUs *= jitter;
                for (cflow::LayerRecord& l : t.layers) {
                    l.computeUs *= jitter;
                    l.expertWaitUs *= jitter;
                }
                ring.push(t);
                clock.start();
                dock.drainNow();
                updateNs += clock.nsecsElapsed();
                clock.start();
                QCoreApplication::processEvents();  // paints the updated panel (offscreen backing store)
                paintNs += clock.nsecsElapsed();
            }
            const double updateMs = double(updateNs) / 1e6 / kFrames, paintMs = double(paintNs) / 1e6 / kFrames;
            std::printf("GUI cost per frame, %s tab: %.2f ms update + %.2f ms paint (at 30 Hz: %.1f%% of one core)\n",
                        dock.tabs()->tabText(tab).toUtf8().constData(), updateMs, paintMs, (updateMs + paintMs) * 30 / 10);
        }
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::printf("GUI thread busy while open: at most %.1f%% of one core = %.2f%% of this machine's %u cores\n",
                100.0 * busiest, 100.0 * busiest / cores, cores);
    double mean = 0;
    for (double r : ratios) mean += r / double(ratios.size());
    std::printf("ratio decode tok/s inspector-open/closed = %.3f (mean of the panels; worst panel %.3f; engine threads %u, "
                "switching every %d ms, dock %dx%d; null run %.3f)\n",
                mean, *std::min_element(ratios.begin(), ratios.end()), args.threads ? args.threads : cores, args.switchMs,
                dock.width(), dock.height(), nullRatio);
    std::filesystem::remove_all(dir);
    return 0;
}
