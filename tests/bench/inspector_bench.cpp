// cflow_bench_inspector: does watching the inference slow it down? Decodes N tokens on a
// synthetic MoE model with the inspector closed (no telemetry consumer) and open (on_step
// pushes into the TelemetryRing, the dock shown offscreen with its 30 Hz timer draining and
// redrawing, the visible panel switched every 250 ms so all three draw), alternating the two
// over several rounds in one run, and prints the ratio of the median decode rates.
//
//   cflow_bench_inspector [--tokens N] [--rounds R] [--threads T]
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
    int tokens = 1024;
    int rounds = 5;
    unsigned threads = 0;
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--tokens")) a.tokens = std::max(8, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--rounds")) a.rounds = std::max(1, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--threads")) a.threads = unsigned(std::max(0, std::atoi(argv[i + 1])));
    }
    return a;
}

// Generates on an engine thread while the GUI thread keeps its event loop running (as in the
// app), and returns the decode rate.
double decode_rate(const std::shared_ptr<const cflow::Model>& model, const Args& args, cflow::ui::TelemetryRing* ring) {
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
    std::thread engine([&] {
        auto stats = cflow::generate(*session.value(), request, [](int32_t, std::string_view) { return true; });
        if (!stats) std::fprintf(stderr, "generate: %s\n", stats.error().c_str());
        else rate = stats.value().decode_tokens_per_s();
        done = true;
        QMetaObject::invokeMethod(&loop, &QEventLoop::quit, Qt::QueuedConnection);
    });
    if (!done) loop.exec();
    engine.join();
    return rate;
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
    QTimer tabCycle;
    tabCycle.setInterval(250);
    QObject::connect(&tabCycle, &QTimer::timeout, &dock,
                     [&] { dock.tabs()->setCurrentIndex((dock.tabs()->currentIndex() + 1) % dock.tabs()->count()); });

    decode_rate(model.value(), args, nullptr);  // warm-up: page cache, expert views, clocks
    std::vector<double> closed, open;
    for (int r = 0; r < args.rounds; ++r) {
        // Alternate the order so drift (thermal, other load) does not favour one mode.
        for (int k = 0; k < 2; ++k) {
            const bool inspectorOpen = (r + k) % 2 == 1;
            if (inspectorOpen) {
                dock.show();
                dock.refreshTimer()->start();
                tabCycle.start();
                open.push_back(decode_rate(model.value(), args, &ring));
                tabCycle.stop();
                dock.drainNow();
                dock.hide();
                dock.refreshTimer()->stop();
            } else {
                closed.push_back(decode_rate(model.value(), args, nullptr));
            }
        }
        std::printf("round %d: closed %.1f tok/s, open %.1f tok/s\n", r + 1, closed.back(), open.back());
    }
    std::printf("panel redraws while open: %llu; tokens recorded %zu, dropped %llu\n",
                static_cast<unsigned long long>(dock.redraws()), dock.history().session().size(),
                static_cast<unsigned long long>(ring.droppedTokens()));
    // The GUI thread's cost per frame, measured directly (robust where the decode rates are
    // noisy, e.g. on a loaded machine): one new token per frame, drained, redrawn and painted.
    {
        dock.show();
        dock.refreshTimer()->stop();
        std::vector<cflow::TokenTelemetry> recorded(dock.history().session().end() - 64, dock.history().session().end());
        constexpr int kFrames = 150;
        for (int tab = 0; tab < dock.tabs()->count(); ++tab) {
            dock.tabs()->setCurrentIndex(tab);
            QCoreApplication::processEvents();
            QElapsedTimer clock;
            qint64 updateNs = 0, paintNs = 0;
            for (int f = 0; f < kFrames; ++f) {
                ring.push(recorded[size_t(f) % recorded.size()]);
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
    std::printf("ratio decode tok/s inspector-open/closed = %.2f (closed %.1f, open %.1f tok/s, median of %d)\n",
                median(open) / median(closed), median(closed), median(open), args.rounds);
    std::filesystem::remove_all(dir);
    return 0;
}
