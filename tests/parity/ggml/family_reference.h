#pragma once
// What the architecture tests of tests/parity/ggml/ share: a fixture's reference.json (tokens,
// float64 logits at every position, a greedy continuation; make_ggml_fixtures.py), an F32
// conversion of a source, and the check of a converted model against the reference: logits
// within 1e-4 relative L2 at every position on the scalar f32 path, the greedy continuation
// token for token.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"
#include "ggml_fixtures.h"

namespace cflow::test {

inline constexpr double kFamilyLogitRelTolerance = 1e-4;  // as tests/parity/reference_parity_test.cpp

struct FamilyReference {
    std::vector<int32_t> tokens;
    std::vector<std::vector<double>> logits;  // [positions x vocab]
    std::vector<int32_t> greedy_prompt;
    std::vector<int32_t> greedy;
    nlohmann::json json;  // the whole file, for fixture-specific fields
};

inline FamilyReference load_family_reference(const std::string& relative) {
    std::ifstream in(ggml_fixtures_dir() / relative);
    FamilyReference r;
    r.json = nlohmann::json::parse(in);
    r.tokens = r.json.at("tokens").get<std::vector<int32_t>>();
    r.logits = r.json.at("logits").get<std::vector<std::vector<double>>>();
    r.greedy_prompt = r.json.at("greedy_prompt").get<std::vector<int32_t>>();
    r.greedy = r.json.at("greedy").get<std::vector<int32_t>>();
    return r;
}

inline double family_rel_l2(std::span<const float> got, const std::vector<double>& want) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return std::sqrt(err) / std::sqrt(ref);
}

inline Result<std::shared_ptr<const Model>> convert_f32_and_load(const SourceModel& source,
                                                                 const std::filesystem::path& out) {
    ConvertOptions options;
    options.weight_quant = DType::F32;
    options.embedding_quant = DType::F32;
    options.threads = 2;
    auto report = convert_to_cflow(source, out.string(), options);
    if (!report) return report.take_error();
    return Model::load(out.string());
}

inline std::unique_ptr<Session> scalar_f32_session(std::shared_ptr<const Model> model,
                                                   ExpertFetch fetch = ExpertFetch::Mapped, uint32_t context_length = 0) {
    SessionOptions options;
    options.context_length = context_length;  // 0: the model's
    options.threads = 2;
    options.isa = Isa::Scalar;  // the f32 reference path (no int8 activations)
    options.expert_fetch = fetch;
    auto session = Session::create(std::move(model), options);
    if (!session) {
        ADD_FAILURE() << session.error();
        return nullptr;
    }
    return std::move(session.value());
}

// Greedy decoding of max_tokens after prompt (prefill, then decode steps), end-of-generation ignored.
inline Result<std::vector<int32_t>> greedy_continuation(Session& session, const std::vector<int32_t>& prompt,
                                                        uint32_t max_tokens) {
    GenerateRequest request;
    request.prompt = prompt;
    request.sampling.temperature = 0.0f;
    request.max_tokens = max_tokens;
    request.stop_at_end_of_generation = false;
    std::vector<int32_t> generated;
    auto stats = generate(session, request, [&](int32_t token, std::string_view) {
        if (token >= 0) generated.push_back(token);
        return true;
    });
    if (!stats) return stats.take_error();
    return generated;
}

// The same tokens decoded one at a time and prefilled at once (batched, in chunks) on the
// machine's best kernels with an f32 KV cache: the last position's logits of the decode and the
// relative L2 distance of the prefill's from them (rows-in-lanes matmat kernels may reorder a
// row's f32 additions, nothing else differs). -1 after a failure, which is reported.
inline double prefill_vs_decode_rel_l2(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens,
                                       std::vector<float>& decoded_last) {
    SessionOptions options;
    options.threads = 2;
    options.kv_cache = KvCacheType::F32;
    auto decode = Session::create(model, options);
    auto prefill = Session::create(model, options);
    if (!decode.ok() || !prefill.ok()) {
        ADD_FAILURE() << (decode.ok() ? prefill.error() : decode.error());
        return -1;
    }
    for (int32_t t : tokens) {
        auto logits = (*decode)->step(t);
        if (!logits.ok()) {
            ADD_FAILURE() << logits.error();
            return -1;
        }
        decoded_last.assign(logits->begin(), logits->end());
    }
    auto batched = (*prefill)->prefill(tokens, true);
    if (!batched.ok() || batched->size() != decoded_last.size()) {
        ADD_FAILURE() << (batched.ok() ? "prefill gave another vocabulary size" : batched.error());
        return -1;
    }
    double err = 0, norm = 0;
    for (size_t i = 0; i < decoded_last.size(); ++i) {
        err += double(batched.value()[i] - decoded_last[i]) * double(batched.value()[i] - decoded_last[i]);
        norm += double(decoded_last[i]) * decoded_last[i];
    }
    return std::sqrt(err / norm);
}

// Teacher-forced logits at every position (decode steps) and the greedy continuation (prefill of
// the prompt, then decode), both against the reference.
inline void expect_family_reference(const std::shared_ptr<const Model>& model, const FamilyReference& ref,
                                    const std::string& label, ExpertFetch fetch = ExpertFetch::Mapped,
                                    uint32_t context_length = 0) {
    auto session = scalar_f32_session(model, fetch, context_length);
    ASSERT_NE(session, nullptr);
    double max_err = 0;
    for (size_t p = 0; p < ref.tokens.size(); ++p) {
        auto logits = session->step(ref.tokens[p]);
        ASSERT_TRUE(logits.ok()) << label << " position " << p << ": " << logits.error();
        ASSERT_EQ(logits->size(), ref.logits[p].size());
        const double err = family_rel_l2(*logits, ref.logits[p]);
        max_err = std::max(max_err, err);
        EXPECT_LE(err, kFamilyLogitRelTolerance) << label << ": logits at position " << p;
    }
    std::printf("[%s] logits rel L2 max over %zu positions %.2e\n", label.c_str(), ref.tokens.size(), max_err);

    auto fresh = scalar_f32_session(model, fetch, context_length);
    ASSERT_NE(fresh, nullptr);
    auto generated = greedy_continuation(*fresh, ref.greedy_prompt, uint32_t(ref.greedy.size()));
    ASSERT_TRUE(generated.ok()) << generated.error();
    EXPECT_EQ(*generated, ref.greedy) << label << ": greedy continuation of the " << ref.greedy_prompt.size()
                                     << "-token prompt";
}

} // namespace cflow::test
