// CPUID + XCR0 feature detection for the run-time ISA dispatch.
#include "kernels/kernels_internal.h"

#if CFLOW_KERNELS_X86
#if defined(_MSC_VER)
#include <immintrin.h>
#include <intrin.h>
#else
#include <cpuid.h>
#include <immintrin.h>
#endif
#endif

namespace cflow::kernels {

#if CFLOW_KERNELS_X86
namespace {

struct CpuidRegs {
    uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Returns false when the leaf is above the CPU's maximum basic leaf.
bool cpuid(uint32_t leaf, uint32_t subleaf, CpuidRegs& r) {
#if defined(_MSC_VER)
    int info[4] = {};
    __cpuid(info, 0);
    if (static_cast<uint32_t>(info[0]) < leaf) return false;
    __cpuidex(info, static_cast<int>(leaf), static_cast<int>(subleaf));
    r = {static_cast<uint32_t>(info[0]), static_cast<uint32_t>(info[1]), static_cast<uint32_t>(info[2]),
         static_cast<uint32_t>(info[3])};
    return true;
#else
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(leaf, subleaf, &a, &b, &c, &d)) return false;
    r = {a, b, c, d};
    return true;
#endif
}

// XGETBV is only legal when CPUID says OSXSAVE; the caller checks that first.
#if defined(_MSC_VER)
uint64_t read_xcr0() { return _xgetbv(0); }
#else
__attribute__((target("xsave"))) uint64_t read_xcr0() { return _xgetbv(0); }
#endif

constexpr bool bit(uint32_t reg, unsigned n) { return ((reg >> n) & 1u) != 0; }

} // namespace

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
    CpuidRegs l1;
    if (!cpuid(1, 0, l1)) return f;
    const bool osxsave = bit(l1.ecx, 27);
    const bool avx = bit(l1.ecx, 28);
    f.fma = bit(l1.ecx, 12);
    f.f16c = bit(l1.ecx, 29);
    if (osxsave) {
        const uint64_t xcr0 = read_xcr0();
        f.os_ymm = avx && (xcr0 & 0x6) == 0x6;           // SSE (bit 1) + AVX (bit 2)
        f.os_zmm = f.os_ymm && (xcr0 & 0xE0) == 0xE0;    // opmask (5), ZMM_Hi256 (6), Hi16_ZMM (7)
        f.os_amx = (xcr0 & 0x60000) == 0x60000;          // XTILECFG (17), XTILEDATA (18)
    }
    CpuidRegs l7;
    if (cpuid(7, 0, l7)) {
        f.avx2 = bit(l7.ebx, 5);
        f.avx512f = bit(l7.ebx, 16);
        f.avx512dq = bit(l7.ebx, 17);
        f.avx512bw = bit(l7.ebx, 30);
        f.avx512vl = bit(l7.ebx, 31);
        f.avx512vnni = bit(l7.ecx, 11);
        f.amx_tile = bit(l7.edx, 24);
        f.amx_int8 = bit(l7.edx, 25);
        CpuidRegs l71;
        if (l7.eax >= 1 && cpuid(7, 1, l71)) f.avxvnni = bit(l71.eax, 4);
    }
    return f;
}

#else

CpuFeatures detect_cpu_features() { return {}; }

#endif

} // namespace cflow::kernels
