// The shared read-bandwidth figure: read, check and write read-bandwidth.json. Nothing here
// throws: the JSON is parsed without exceptions and every field is type-checked before use.
#include "cflow/engine/io/bandwidth_probe_cache.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/forward/thread_pool.h"
#include "cflow/formats/mapped_file.h"
#include "io/json_file.h"

namespace cflow {
namespace {

constexpr int kProbeFileFormat = 1;
constexpr uint64_t kProbeFileMaxBytes = 1 << 20;  // a few records; anything bigger is not ours
constexpr int64_t kProbeClockSkewSeconds = 24 * 3600;  // a record this far in the future is not trusted

int64_t probe_now_unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string probe_days_text(int64_t seconds) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f days", double(seconds) / 86400.0);
    return buf;
}

nlohmann::json probe_record_json(const StoredBandwidthProbe& p) {
    return {{"threads", p.result.threads},
            {"bytes_per_second", p.result.bytesPerSecond},
            {"buffer_bytes", p.result.bufferBytes},
            {"passes", p.passes},
            {"method", p.method},
            {"cpu_model", p.cpuModel},
            {"logical_cpus", p.logicalCpus},
            {"measured_at_unix", p.measuredAtUnixSeconds},
            {"measured_at", utc_time_text(p.measuredAtUnixSeconds)}};
}

// A record with every field of the right type, else nullopt-like false.
bool probe_record_from_json(const nlohmann::json& j, StoredBandwidthProbe& out) {
    if (!j.is_object()) return false;
    auto number = [&](const char* key) { return j.contains(key) && j[key].is_number(); };
    auto text = [&](const char* key) { return j.contains(key) && j[key].is_string(); };
    if (!number("threads") || !number("bytes_per_second") || !number("buffer_bytes") || !number("passes") ||
        !text("method") || !text("cpu_model") || !number("logical_cpus") || !number("measured_at_unix"))
        return false;
    if (!j["threads"].is_number_unsigned() || !j["buffer_bytes"].is_number_unsigned() || !j["logical_cpus"].is_number_unsigned())
        return false;
    out.result.threads = j["threads"].get<unsigned>();
    out.result.bytesPerSecond = j["bytes_per_second"].get<double>();
    out.result.bufferBytes = j["buffer_bytes"].get<uint64_t>();
    out.passes = j["passes"].get<int>();
    out.method = j["method"].get<std::string>();
    out.cpuModel = j["cpu_model"].get<std::string>();
    out.logicalCpus = j["logical_cpus"].get<unsigned>();
    out.measuredAtUnixSeconds = j["measured_at_unix"].get<int64_t>();
    return true;
}

// The file's records, or an error naming the path and what is wrong with it.
Result<nlohmann::json> read_probe_file(const std::string& path) {
    std::error_code ec;
    const std::filesystem::path file = path_from_utf8(path);
    if (!std::filesystem::exists(file, ec)) return make_error(ErrorKind::Io, "no shared probe at " + path);
    const auto bytes = std::filesystem::file_size(file, ec);
    if (ec) return make_error(ErrorKind::Io, path + ": " + ec.message());
    if (bytes > kProbeFileMaxBytes) return make_error(path + " is " + std::to_string(bytes) + " bytes, not a probe record");
    std::ifstream in(file, std::ios::binary);
    if (!in) return make_error(ErrorKind::Io, path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return make_error(path + " is not valid JSON (damaged or cut short)");
    if (!j.contains("format") || !j["format"].is_number_integer() || j["format"].get<int>() != kProbeFileFormat ||
        !j.contains("probes") || !j["probes"].is_array())
        return make_error(path + " is not a format-" + std::to_string(kProbeFileFormat) + " probe record");
    return j;
}

} // namespace

unsigned bandwidth_probe_threads(unsigned threads) {
    return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

Result<StoredBandwidthProbe> load_shared_bandwidth_probe(const std::string& path, unsigned threads, int64_t nowUnixSeconds,
                                                         int64_t maxAgeSeconds) {
    if (path.empty()) return make_error(ErrorKind::Unsupported, "no cache folder for a shared probe on this system");
    auto file = read_probe_file(path);
    if (!file) return file.take_error();
    threads = bandwidth_probe_threads(threads);
    const std::string cpu = this_cpu_model();
    const unsigned cpus = bandwidth_probe_threads(0);
    for (const nlohmann::json& record : (*file)["probes"]) {
        StoredBandwidthProbe p;
        if (!probe_record_from_json(record, p)) return make_error(path + " holds a damaged record");
        if (p.result.threads != threads) continue;
        if (p.cpuModel != cpu || p.logicalCpus != cpus)
            return make_error(path + " was measured on another machine (" + p.cpuModel + ", " + std::to_string(p.logicalCpus) +
                              " hardware threads; this one: " + cpu + ", " + std::to_string(cpus) + ")");
        if (p.method != kBandwidthProbeMethod) return make_error(path + " was measured another way (" + p.method + ")");
        if (!(p.result.bytesPerSecond > 0) || p.result.bufferBytes == 0)
            return make_error(path + " holds no positive figure for " + std::to_string(threads) + " threads");
        const int64_t age = nowUnixSeconds - p.measuredAtUnixSeconds;
        if (age < -kProbeClockSkewSeconds) return make_error(path + " was measured in the future (the clock moved)");
        if (age > maxAgeSeconds)
            return make_error(path + " is " + probe_days_text(age) + " old (older than " + probe_days_text(maxAgeSeconds) + ")");
        return p;
    }
    return make_error(path + " has no figure for " + std::to_string(threads) + " threads yet");
}

Status store_shared_bandwidth_probe(const std::string& path, const StoredBandwidthProbe& probe) {
    if (path.empty()) return make_error(ErrorKind::Unsupported, "no cache folder for a shared probe on this system");
    nlohmann::json kept = nlohmann::json::array();
    if (auto file = read_probe_file(path)) {
        for (const nlohmann::json& record : (*file)["probes"]) {
            StoredBandwidthProbe p;
            // Records of other thread counts on the same machine stay; anything else is replaced.
            if (probe_record_from_json(record, p) && p.result.threads != probe.result.threads &&
                p.cpuModel == probe.cpuModel && p.logicalCpus == probe.logicalCpus)
                kept.push_back(record);
        }
    }
    kept.push_back(probe_record_json(probe));
    const nlohmann::json j{{"format", kProbeFileFormat}, {"probes", kept}};
    return write_json_file(path, j);
}

SharedBandwidthProbe shared_read_bandwidth(ThreadPool& pool, const SharedProbeOptions& options) {
    SharedBandwidthProbe out;
    out.path = options.path.empty() ? default_bandwidth_probe_path() : options.path;
    const int64_t now = probe_now_unix_seconds();
    if (options.measureAgain) {
        out.remeasureReason = "asked to measure again";
    } else {
        auto stored = load_shared_bandwidth_probe(out.path, unsigned(pool.size()), now, options.maxAgeSeconds);
        if (stored) {
            out.probe = *stored;
            out.reused = true;
            return out;
        }
        out.remeasureReason = stored.error();
    }
    StoredBandwidthProbe& p = out.probe;
    p.result = probe_read_bandwidth(pool, options.bufferBytes, options.passes);
    p.passes = options.passes;
    p.method = kBandwidthProbeMethod;
    p.cpuModel = this_cpu_model();
    p.logicalCpus = bandwidth_probe_threads(0);
    p.measuredAtUnixSeconds = now;
    if (Status s = store_shared_bandwidth_probe(out.path, p); !s) out.storeError = s.error();
    return out;
}

std::string utc_time_text(int64_t unixSeconds) {
    using namespace std::chrono;
    const sys_seconds t{seconds{unixSeconds}};
    const sys_days day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss<seconds> hms{t - day};
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02d:%02d UTC", int(ymd.year()), unsigned(ymd.month()), unsigned(ymd.day()),
                  int(hms.hours().count()), int(hms.minutes().count()));
    return buf;
}

std::string shared_probe_text(const StoredBandwidthProbe& probe) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f GB/s with %u threads", probe.result.bytesPerSecond / 1e9, probe.result.threads);
    return std::string(buf) + " (shared probe, measured " + utc_time_text(probe.measuredAtUnixSeconds) + ")";
}

} // namespace cflow
