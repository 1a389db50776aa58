// cflow_bench_inspector: does watching the inference slow it down? Decodes N tokens on a
// synthetic MoE model with the inspector closed (no telemetry consumer) and open (on_step
// pushes into the TelemetryRing, the dock shown offscreen with its 30 Hz timer draining and
// redrawing one panel: round r shows panel r mod 3, as a user watches one at a time),
// alternating the two over several rounds in one run. Prints the ratio of the median decode
// rates, the median of the per-round ratios (robust to drift across the run) and how busy the
// GUI thread was while open (thread CPU time / wall time).
//
//   cflow_bench_inspector [--tokens N] [--rounds R] [--threads T] [--frames F]
#include <algorithm>
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

#include "cflow/engine/generate.h"
#include "cflow/engine/model.h"
#include "cflow/engine/session.h"
#include "cflow/formats/converter.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/telemetry_ring.h"
#include "synthetic_model.h"

namespace {

struct Args {
    int tokens = 2048;
    int rounds = 6;
    unsigned threads = 0;
    int frames = 150;  // per tab, for the GUI cost per frame
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--tokens")) a.tokens = std::max(8, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--rounds")) a.rounds = std::max(1, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--threads")) a.threads = unsigned(std::max(0, std::atoi(argv[i + 1])));
        else if (!std::strcmp(argv[i], "--frames")) a.frames = std::max(1, std::atoi(argv[i + 1]));
    }
    return a;
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Run {
    double tokensPerSecond = 0;
    double guiBusy = 0;  // GUI thread CPU seconds per wall second during the run
};

// Generates on an engine thread while the GUI thread keeps its event loop running (as in the
// app), and returns the decode rate and how busy the GUI thread was meanwhile.
Run decode_rate(const std::shared_ptr<const cflow::Model>& model, const Args& args, cflow::ui::TelemetryRing* ring) {
    auto session = cflow::Session::create(model, {.threads = args.threads});
    if (!session) {
        std::fprintf(stderr, "session: %s\n", session.error().c_str());
        std::exit(1);
    }
    cflow::GenerateRequest request;
    request.prompt = {1, 72, 101, 108, 108, 111};
    request.max_tokens = args.tokens;
    request.sampling.temperature = 0;
    request.stop_at_end_of_generation = false;
    if (ring) request.on_step = [ring](const cflow::TokenTelemetry& t) { ring->push(t); };

    double rate = 0;
    std::atomic<bool> done{false};
    QEventLoop loop;
    QElapsedTimer wall;
    wall.start();
    const double guiCpuStart = thread_cpu_seconds();
    std::thread engine([&] {
        auto stats = cflow::generate(*session.value(), request, [](int32_t, std::string_view) { return true; });
        if (!stats) std::fprintf(stderr, "generate: %s\n", stats.error().c_str());
        else rate = stats.value().decode_tokens_per_s();
        done = true;
        QMetaObject::invokeMethod(&loop, &QEventLoop::quit, Qt::QueuedConnection);
    });
    if (!done) loop.exec();
    engine.join();
    const double wallSeconds = double(wall.nsecsElapsed()) * 1e-9;
    return {rate, wallSeconds > 0 ? (thread_cpu_seconds() - guiCpuStart) / wallSeconds : 0};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
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
    dock.resize(1000, 800);
    dock.setModel(model.value());
    decode_rate(model.value(), args, nullptr);  // warm-up: page cache, expert views, clocks
    std::vector<double> closed, open, paired, busy;
    for (int r = 0; r < args.rounds; ++r) {
        const int tab = r % dock.tabs()->count();
        double closedRate = 0, openRate = 0;
        // Alternate the order so drift (thermal, other load) does not favour one mode.
        for (int k = 0; k < 2; ++k) {
            const bool inspectorOpen = (r + k) % 2 == 1;
            if (inspectorOpen) {
                dock.tabs()->setCurrentIndex(tab);
                dock.show();
                dock.refreshTimer()->start();
                const Run run = decode_rate(model.value(), args, &ring);
                dock.drainNow();
                dock.hide();
                dock.refreshTimer()->stop();
                openRate = run.tokensPerSecond;
                busy.push_back(run.guiBusy);
            } else {
                closedRate = decode_rate(model.value(), args, nullptr).tokensPerSecond;
            }
        }
        closed.push_back(closedRate);
        open.push_back(openRate);
        paired.push_back(openRate / closedRate);
        std::printf("round %d (%s tab): closed %.1f tok/s, open %.1f tok/s, ratio %.3f, GUI thread busy %.1f%%\n", r + 1,
                    dock.tabs()->tabText(tab).toUtf8().constData(), closedRate, openRate, paired.back(),
                    100.0 * busy.back());
    }
    std::printf("panel redraws while open: %llu; tokens recorded %zu, dropped %llu\n",
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
    std::printf("GUI thread busy while open: median %.1f%% of one core = %.2f%% of this machine's %u cores\n",
                100.0 * median(busy), 100.0 * median(busy) / cores, cores);
    std::printf("ratio decode tok/s inspector-open/closed = %.3f (median of %d per-round ratios; ratio of medians %.3f: "
                "closed %.1f, open %.1f tok/s)\n",
                median(paired), args.rounds, median(open) / median(closed), median(closed), median(open));
    std::filesystem::remove_all(dir);
    return 0;
}
