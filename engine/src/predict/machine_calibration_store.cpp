// machine-calibration.json: read, check and write. Nothing here throws: the JSON is parsed
// without exceptions and every field is type-checked before use.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/predict/machine_calibration.h"
#include "io/json_file.h"
#include "cflow/formats/mapped_file.h"

namespace cflow {
namespace {

constexpr uint64_t kCalibrationFileMaxBytes = 1 << 20;  // a few records; anything bigger is not ours

nlohmann::json calibration_kernel_json(const KernelCost& k) {
    return {{"dtype", std::string(dtype_name(k.dtype))},
            {"decode_weights_per_second", k.decodeWeightsPerSecond},
            {"decode_pass_seconds", k.decodePassSeconds},
            {"decode_attn_seconds_per_elem", k.decodeAttnSecondsPerElem},
            {"prefill_weights_per_second", k.prefillWeightsPerSecond},
            {"prefill_pass_seconds", k.prefillPassSeconds},
            {"prefill_attn_seconds_per_elem", k.prefillAttnSecondsPerElem},
            {"decode_moe_pass_seconds", k.decodeMoePassSeconds},
            {"prefill_moe_pass_seconds", k.prefillMoePassSeconds}};
}

bool calibration_number(const nlohmann::json& j, const char* key, double& out) {
    if (!j.contains(key) || !j[key].is_number()) return false;
    out = j[key].get<double>();
    return out >= 0;
}

bool calibration_kernel_from_json(const nlohmann::json& j, KernelCost& k) {
    if (!j.is_object() || !j.contains("dtype") || !j["dtype"].is_string()) return false;
    const auto dtype = parse_dtype(j["dtype"].get<std::string>());
    if (!dtype) return false;
    k.dtype = *dtype;
    return calibration_number(j, "decode_weights_per_second", k.decodeWeightsPerSecond) &&
           calibration_number(j, "decode_pass_seconds", k.decodePassSeconds) &&
           calibration_number(j, "decode_attn_seconds_per_elem", k.decodeAttnSecondsPerElem) &&
           calibration_number(j, "prefill_weights_per_second", k.prefillWeightsPerSecond) &&
           calibration_number(j, "prefill_pass_seconds", k.prefillPassSeconds) &&
           calibration_number(j, "prefill_attn_seconds_per_elem", k.prefillAttnSecondsPerElem) &&
           calibration_number(j, "decode_moe_pass_seconds", k.decodeMoePassSeconds) &&
           calibration_number(j, "prefill_moe_pass_seconds", k.prefillMoePassSeconds);
}

} // namespace

const ThreadCalibration* MachineCalibration::at(unsigned count) const {
    const ThreadCalibration* best = nullptr;
    for (const ThreadCalibration& t : threads) {
        const auto distance = [count](unsigned n) { return n > count ? n - count : count - n; };
        if (!best || distance(t.threads) < distance(best->threads)) best = &t;
    }
    return best;
}

std::string default_machine_calibration_path() {
    const std::string probe = default_bandwidth_probe_path();
    if (probe.empty()) return "";
    return utf8_from_path(path_from_utf8(probe).parent_path() / "machine-calibration.json");
}

std::string calibration_age_text(int64_t measuredAt, int64_t now) {
    const double seconds = double(std::max<int64_t>(0, now - measuredAt));
    char buf[48];
    if (seconds < 3600) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
    else if (seconds < 2 * 86400) std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
    else std::snprintf(buf, sizeof buf, "%.0f days", seconds / 86400);
    return buf;
}

Result<MachineCalibration> load_machine_calibration(const std::string& path, const std::string& cpuModel) {
    if (path.empty()) return make_error(ErrorKind::Unsupported, "no cache folder for a machine calibration on this system");
    std::error_code ec;
    const std::filesystem::path file = path_from_utf8(path);
    if (!std::filesystem::exists(file, ec)) return make_error(ErrorKind::Io, "no machine calibration at " + path);
    const auto bytes = std::filesystem::file_size(file, ec);
    if (ec) return make_error(ErrorKind::Io, path + ": " + ec.message());
    if (bytes > kCalibrationFileMaxBytes)
        return make_error(path + " is " + std::to_string(bytes) + " bytes, not a machine calibration");
    std::ifstream in(file, std::ios::binary);
    if (!in) return make_error(ErrorKind::Io, path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return make_error(path + " is not valid JSON (damaged or cut short)");
    if (!j.contains("format") || !j["format"].is_number_integer() || j["format"].get<int>() != kMachineCalibrationFormat)
        return make_error(path + " is not a format-" + std::to_string(kMachineCalibrationFormat) + " machine calibration");
    MachineCalibration c;
    auto text_field = [&](const char* key, std::string& out) {
        if (!j.contains(key) || !j[key].is_string()) return false;
        out = j[key].get<std::string>();
        return true;
    };
    if (!text_field("method", c.method) || !text_field("cpu_model", c.cpuModel) || !text_field("isa", c.isa) ||
        !j.contains("logical_cpus") || !j["logical_cpus"].is_number_unsigned() || !j.contains("measured_at_unix") ||
        !j["measured_at_unix"].is_number_integer() || !calibration_number(j, "disk_bytes_per_second", c.diskBytesPerSecond) ||
        !j.contains("disk_direct") || !j["disk_direct"].is_boolean() || !j.contains("process_base_bytes") ||
        !j["process_base_bytes"].is_number_unsigned() || !j.contains("threads") || !j["threads"].is_array())
        return make_error(path + " holds a damaged machine calibration (a field is missing or of the wrong type)");
    c.logicalCpus = j["logical_cpus"].get<unsigned>();
    c.measuredAtUnixSeconds = j["measured_at_unix"].get<int64_t>();
    c.diskDirect = j["disk_direct"].get<bool>();
    c.processBaseBytes = j["process_base_bytes"].get<uint64_t>();
    for (const nlohmann::json& record : j["threads"]) {
        ThreadCalibration t;
        if (!record.is_object() || !record.contains("threads") || !record["threads"].is_number_unsigned() ||
            !calibration_number(record, "bandwidth_bytes_per_second", t.bandwidthBytesPerSecond) ||
            !record.contains("kernels") || !record["kernels"].is_array())
            return make_error(path + " holds a damaged thread record");
        t.threads = record["threads"].get<unsigned>();
        for (const nlohmann::json& k : record["kernels"]) {
            KernelCost cost;
            if (!calibration_kernel_from_json(k, cost)) return make_error(path + " holds a damaged kernel record");
            t.kernels.push_back(cost);
        }
        c.threads.push_back(std::move(t));
    }
    if (c.method != kMachineCalibrationMethod) return make_error(path + " was measured another way (" + c.method + ")");
    if (c.cpuModel != cpuModel)
        return make_error(path + " was measured on another CPU (" + c.cpuModel + "; this one: " + cpuModel + ")");
    if (c.threads.empty()) return make_error(path + " holds no thread records");
    return c;
}

Status store_machine_calibration(const std::string& path, const MachineCalibration& c) {
    if (path.empty()) return make_error(ErrorKind::Unsupported, "no cache folder for a machine calibration on this system");
    nlohmann::json threads = nlohmann::json::array();
    for (const ThreadCalibration& t : c.threads) {
        nlohmann::json kernels = nlohmann::json::array();
        for (const KernelCost& k : t.kernels) kernels.push_back(calibration_kernel_json(k));
        threads.push_back({{"threads", t.threads}, {"bandwidth_bytes_per_second", t.bandwidthBytesPerSecond}, {"kernels", kernels}});
    }
    const nlohmann::json j{{"format", kMachineCalibrationFormat},
                           {"method", c.method},
                           {"cpu_model", c.cpuModel},
                           {"logical_cpus", c.logicalCpus},
                           {"isa", c.isa},
                           {"measured_at_unix", c.measuredAtUnixSeconds},
                           {"measured_at", utc_time_text(c.measuredAtUnixSeconds)},
                           {"disk_bytes_per_second", c.diskBytesPerSecond},
                           {"disk_direct", c.diskDirect},
                           {"process_base_bytes", c.processBaseBytes},
                           {"threads", threads}};
    return write_json_file(path, j);
}

} // namespace cflow
