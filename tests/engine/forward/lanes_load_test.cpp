// LoadOptions::lanes: the model's matrices read from a rearranged copy (kernels/lanes_layout.h).
//  * On kernel paths without a lanes kernel the session unpacks each tile back to the file
//    layout, so logits are bit-identical to the model loaded without lanes (steps and prefill).
//  * On AVX-512 VNNI the lanes kernels sum each block in int32 per row and add the scaled blocks
//    in another order than the file-layout kernel: the same integer dots, so logits stay within a
//    few f32 roundings of the plain load, far below the int8 activation error; greedy tokens match.
//  * Dense and MoE (+ shared expert) models, Q4_0 and Q8_0, segments the layout cannot take
//    (rows off the 16-row lanes) left in the file layout, the tied LM head left alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

// |lanes - plain| <= kRelTol * max|plain logit| per position: f32 additions reordered in every
// matvec of every layer (each ~1e-7 relative) and carried through the next layers' int8
// roundings, which a 1e-7 change can flip (the same effect Prefill.MatchesStepsOnEveryPath bounds).
constexpr double kRelTol = 2e-2;

std::string convert_lanes(const test::SyntheticSpec& spec, DType quant, const std::string& name) {
    const auto out = (test::temp_dir("lanes_load_" + name) / (name + ".cflow")).string();
    ConvertOptions options;
    options.weight_quant = quant;
    auto r = convert_to_cflow(test::make_synthetic_model(spec), out, options);
    EXPECT_TRUE(r.ok()) << r.error();
    return out;
}

struct Logits {
    std::vector<std::vector<float>> logits;  // [positions][vocab]
};

Logits run_lanes(const std::shared_ptr<const Model>& model, Isa isa, bool prefill, const std::vector<int32_t>& ids) {
    SessionOptions o;
    o.isa = isa;
    o.threads = 2;
    auto s = Session::create(model, o);
    EXPECT_TRUE(s.ok()) << s.error();
    Logits out;
    if (!s.ok()) return out;
    if (prefill) {
        auto l = (*s)->prefill(ids);
        EXPECT_TRUE(l.ok()) << l.error();
        if (l.ok()) out.logits.emplace_back(l->begin(), l->end());
        return out;
    }
    for (int32_t id : ids) {
        auto l = (*s)->step(id);
        EXPECT_TRUE(l.ok()) << l.error();
        if (!l.ok()) break;
        out.logits.emplace_back(l->begin(), l->end());
    }
    return out;
}

struct LanesCase {
    const char* name;
    test::SyntheticSpec spec;
    DType quant;
};

std::vector<LanesCase> lanes_cases() {
    std::vector<LanesCase> out;
    test::SyntheticSpec dense;  // d 64, 4 heads of 16, d_ff 128, vocab 300 (LM head rows off 16: file layout)
    dense.vocab = 320;
    out.push_back({"dense_q4", dense, DType::Q4_0});
    out.push_back({"dense_q8", dense, DType::Q8_0});
    test::SyntheticSpec moe = dense;
    moe.d_ff = 0;
    moe.n_experts = 4;
    moe.top_k = 2;
    moe.expert_d_ff = 96;
    moe.shared_expert_d_ff = 64;
    out.push_back({"moe_q4", moe, DType::Q4_0});
    test::SyntheticSpec odd = dense;
    odd.vocab = 300;  // LM head of 300 rows: its last stripe is off the 16-row lanes
    odd.tied = true;
    out.push_back({"tied_odd_vocab_q8", odd, DType::Q8_0});
    return out;
}

TEST(LanesLoad, LogitsFollowThePlainLoadOnEveryPath) {
    const std::vector<int32_t> ids = {1, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 84, 104, 101, 121};
    for (const LanesCase& c : lanes_cases()) {
        const std::string path = convert_lanes(c.spec, c.quant, c.name);
        auto plain = Model::load(path);
        ASSERT_TRUE(plain.ok()) << plain.error();
        LoadOptions lanesLoad;
        lanesLoad.lanes = true;
        auto lanes = Model::load(path, lanesLoad);
        ASSERT_TRUE(lanes.ok()) << lanes.error();
        ASSERT_NE((*lanes)->lanes_base(), nullptr);
        EXPECT_EQ((*plain)->lanes_base(), nullptr);
        EXPECT_TRUE((*lanes)->in_lanes(*(*lanes)->layers()[0].qkv)) << c.name;
        if (c.spec.tied || c.spec.vocab % 16 != 0) {
            EXPECT_FALSE((*lanes)->in_lanes((*lanes)->lm_head())) << c.name;
        }
        if (c.spec.n_experts) {
            EXPECT_TRUE((*lanes)->expert_bank_in_lanes(0)) << c.name;
        }

        for (Isa isa : {Isa::Avx512Vnni, Isa::AvxVnni, Isa::Avx2Int8, Isa::Avx512, Isa::Avx2, Isa::Scalar}) {
            if (!isa_supported(isa)) continue;
            const bool hasLanesKernel = kernels_for(isa).tile_matvec_quantized_lanes != nullptr;
            for (bool prefill : {false, true}) {
                const Logits a = run_lanes(*plain, isa, prefill, ids), b = run_lanes(*lanes, isa, prefill, ids);
                ASSERT_EQ(a.logits.size(), b.logits.size());
                for (size_t p = 0; p < a.logits.size(); ++p) {
                    const std::string where = std::string(c.name) + " " + std::string(isa_name(isa)) +
                                              (prefill ? " prefill" : " step") + " position " + std::to_string(p);
                    if (!hasLanesKernel) {
                        ASSERT_EQ(a.logits[p], b.logits[p]) << where << ": unpacked tiles must give the plain load's logits";
                        continue;
                    }
                    double top = 0, diff = 0;
                    for (size_t v = 0; v < a.logits[p].size(); ++v) {
                        top = std::max(top, std::fabs(double(a.logits[p][v])));
                        diff = std::max(diff, std::fabs(double(a.logits[p][v]) - b.logits[p][v]));
                    }
                    EXPECT_LE(diff, kRelTol * top) << where;
                    const auto argmax = [](const std::vector<float>& l) { return std::max_element(l.begin(), l.end()) - l.begin(); };
                    EXPECT_EQ(argmax(a.logits[p]), argmax(b.logits[p])) << where;
                }
            }
        }
    }
}

TEST(LanesLoad, MissingFileIsAnErrorNotACrash) {
    LoadOptions lanesLoad;
    lanesLoad.lanes = true;
    auto m = Model::load((test::temp_dir("lanes_missing") / "nope.cflow").string(), lanesLoad);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().find("nope.cflow"), std::string::npos) << m.error();
}

} // namespace
} // namespace cflow
