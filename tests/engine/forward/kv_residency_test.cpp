// The KV cache is allocated for the whole context but becomes resident only as positions are
// written (ZeroedFloats): a session with a 64 MiB cache costs a few MiB of resident memory
// until a conversation fills it. Linux only (resident size from /proc/self/statm).
#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

#if defined(__linux__)
double resident_mib() {
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

TEST(KvResidency, UnusedContextIsNotResident) {
    test::SyntheticSpec spec;  // 2 layers, 4 KV heads of 16: 1 KiB of K and V per position
    const auto path = (test::temp_dir("kv_residency") / "m.cflow").string();
    ConvertOptions convert;
    convert.weight_quant = DType::Q8_0;
    ASSERT_TRUE(convert_to_cflow(test::make_synthetic_model(spec), path, convert).ok());
    auto model = Model::load(path);
    ASSERT_TRUE(model.ok()) << model.error();
    SessionOptions options;
    options.threads = 1;
    options.context_length = 65536;  // [2 layers x 65536 x 64] f32, K and V: 64 MiB
    const double before = resident_mib();
    auto session = Session::create(*model, options);
    ASSERT_TRUE(session.ok()) << session.error();
    for (int32_t t = 0; t < 64; ++t) ASSERT_TRUE((*session)->step(3 + t % 200, t == 63).ok());
    const double grown = resident_mib() - before;
    EXPECT_LT(grown, 16.0) << "a 64 MiB KV cache with 64 positions used made " << grown << " MiB resident";
}
#endif

} // namespace
} // namespace cflow
