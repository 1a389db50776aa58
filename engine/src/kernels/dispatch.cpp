// Run-time ISA selection: which kernel table the engine uses, decided once per process.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/kernels_internal.h"

namespace cflow {

namespace {

constexpr std::string_view kIsaNames[] = {"scalar", "avx2", "avx512", "avx512vnni", "avx2int8", "avxvnni"};
constexpr Isa kPreference[] = {Isa::Avx512Vnni, Isa::AvxVnni, Isa::Avx2Int8, Isa::Avx512, Isa::Avx2, Isa::Scalar};

const kernels::CpuFeatures& cpu() {
    static const kernels::CpuFeatures features = kernels::detect_cpu_features();  // thread-safe static init
    return features;
}

// The next path down; every path's requirements include those of the one below it.
Isa step_down(Isa isa) {
    switch (isa) {
    case Isa::Avx512Vnni: return Isa::Avx512;
    case Isa::Avx512: return Isa::Avx2;
    case Isa::AvxVnni: return Isa::Avx2Int8;
    case Isa::Avx2Int8: return Isa::Avx2;
    default: return Isa::Scalar;
    }
}

Isa decide_isa() {
    const Isa best = detect_best_isa();
    const char* requested = std::getenv("CFLOW_ISA");
    if (requested == nullptr || *requested == '\0') return best;
    const std::optional<Isa> parsed = parse_isa(requested);
    if (!parsed) {
        std::fprintf(stderr, "cflow: warning: CFLOW_ISA='%s' is not one of scalar|avx2|avx512|avx512vnni|avx2int8|avxvnni; using %s\n",
                     requested, std::string(isa_name(best)).c_str());
        return best;
    }
    if (!isa_supported(*parsed)) {
        std::fprintf(stderr, "cflow: warning: CFLOW_ISA=%s is not supported by this CPU/OS; using %s\n",
                     std::string(isa_name(*parsed)).c_str(), std::string(isa_name(best)).c_str());
        return best;
    }
    return *parsed;
}

} // namespace

std::string_view isa_name(Isa isa) {
    const auto i = static_cast<size_t>(isa);
    return i < std::size(kIsaNames) ? kIsaNames[i] : std::string_view("unknown");
}

std::optional<Isa> parse_isa(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (size_t i = 0; i < std::size(kIsaNames); ++i)
        if (lower == kIsaNames[i]) return static_cast<Isa>(i);
    return std::nullopt;
}

bool isa_supported(Isa isa) {
    const kernels::CpuFeatures& f = cpu();
    const bool avx2 = f.avx2 && f.fma && f.f16c && f.os_ymm;
    const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.os_zmm;
    switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return CFLOW_KERNELS_X86 && avx2;
    case Isa::Avx512: return CFLOW_KERNELS_X86 && avx512;
    case Isa::Avx512Vnni: return CFLOW_KERNELS_X86 && avx512 && f.avx512vnni;
    case Isa::Avx2Int8: return CFLOW_KERNELS_X86 && avx2;
    case Isa::AvxVnni: return CFLOW_KERNELS_X86 && avx2 && f.avxvnni;
    }
    return false;
}

Isa detect_best_isa() {
    for (Isa isa : kPreference)
        if (isa_supported(isa)) return isa;
    return Isa::Scalar;
}

bool isa_quantizes_activations(Isa isa) { return isa == Isa::Avx2Int8 || isa == Isa::AvxVnni || isa == Isa::Avx512Vnni; }

Isa selected_isa() {
    static const Isa isa = decide_isa();  // thread-safe static init: decided once, warning printed once
    return isa;
}

// An unsupported request (a contract violation) degrades to the best path below it rather
// than handing out code that would fault; the returned table's isa says which one it is.
const Kernels& kernels_for(Isa isa) {
    while (!isa_supported(isa)) isa = step_down(isa);
    switch (isa) {
#if CFLOW_KERNELS_X86
    case Isa::Avx512Vnni: return kernels::avx512vnni_table();
    case Isa::Avx512: return kernels::avx512_table();
    case Isa::Avx2: return kernels::avx2_table();
    case Isa::Avx2Int8: return kernels::avx2int8_table();
    case Isa::AvxVnni: return kernels::avxvnni_table();
#endif
    default: return kernels::scalar_table();
    }
}

namespace kernels {
std::atomic<bool> g_explicit_prefetch{true};
std::atomic<bool> g_amx_enabled{true};

bool amx_int8_usable() {
    static const bool usable = [] {
        const CpuFeatures f = detect_cpu_features();
        return f.amx_tile && f.amx_int8 && f.os_amx && f.os_zmm && f.avx512vnni && request_amx_tile_permission();
    }();
    return usable;
}

bool amx_active() { return g_amx_enabled.load(std::memory_order_relaxed) && amx_int8_usable(); }
} // namespace kernels

bool amx_available() { return kernels::amx_int8_usable(); }
void set_amx_enabled(bool enabled) { kernels::g_amx_enabled.store(enabled, std::memory_order_relaxed); }
bool amx_enabled() { return kernels::amx_active(); }

bool isa_issues_explicit_prefetch(Isa isa) { return isa_quantizes_activations(isa); }
void set_explicit_prefetch(bool enabled) { kernels::g_explicit_prefetch.store(enabled, std::memory_order_relaxed); }
bool explicit_prefetch_enabled() { return kernels::g_explicit_prefetch.load(std::memory_order_relaxed); }

const Kernels& active_kernels() { return kernels_for(selected_isa()); }

} // namespace cflow
