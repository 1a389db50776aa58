// validate_conversion: the converted model against its source evaluated in F32 (a temporary
// F32 conversion of the source, read by the same engine), on one sample text.
#include "cflow/engine/convert/conversion_validation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/forward/load_check.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"

namespace cflow {

const char* const kDefaultValidationText =
    "Once upon a time, in a small village by the sea, there lived an old fisherman and his wife. "
    "Every morning he went out in his boat, and every evening he came home with fish for supper. "
    "One day the wind was strong and the waves were high, but he went out all the same. "
    "The water is cold in winter, so the people of the village light fires and tell stories.";

namespace {

struct Distribution {
    std::vector<double> log_p;  // [vocab] log softmax
    int32_t argmax = 0;
};

Distribution distribution(std::span<const float> logits /* [vocab] */) {
    Distribution d;
    d.argmax = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const double max_logit = logits[size_t(d.argmax)];
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max_logit);
    const double lse = max_logit + std::log(sum);
    d.log_p.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) d.log_p[i] = double(logits[i]) - lse;
    return d;
}

double kl_divergence(const Distribution& p, const Distribution& q) {
    double kl = 0;
    for (size_t i = 0; i < p.log_p.size(); ++i) kl += std::exp(p.log_p[i]) * (p.log_p[i] - q.log_p[i]);
    return std::max(0.0, kl);
}

bool all_f32(const Model& model) {
    const auto& h = model.header();
    if (static_cast<DType>(h.weight_quant) != DType::F32) return false;
    return model.token_embd().dtype == DType::F32 && model.lm_head().dtype == DType::F32;
}

std::string scratch_path(const ValidationRequest& r) {
    std::filesystem::path dir = r.scratch_dir.empty() ? path_from_utf8(r.converted_path).parent_path()
                                                      : path_from_utf8(r.scratch_dir);
    std::random_device rd;
    char name[64];
    std::snprintf(name, sizeof name, ".cflow-validate-f32-%08x.cflow", unsigned(rd()));
    return utf8_from_path(dir / name);
}

// Removes the reference file however validation ends.
struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove(path_from_utf8(path), ec);
    }
};

void check_tokenizer(const Model& converted, const Result<SourceModel>& source, const std::string& text,
                     ValidationReport& r) {
    const Tokenizer& tok = converted.tokenizer();
    const auto ids = tok.encode(text, /*add_special=*/false);
    const std::string back = tok.decode(ids);
    r.tokenizer_round_trip = back == text;
    if (!r.tokenizer_round_trip) {
        size_t at = 0;
        while (at < back.size() && at < text.size() && back[at] == text[at]) ++at;
        r.tokenizer_detail = "decode(encode(text)) differs from the text at byte " + std::to_string(at);
    } else {
        r.tokenizer_detail = std::to_string(ids.size()) + " tokens, decoded back byte for byte";
    }
    if (!source) {
        r.tokenizer_detail += "; the source's tokenizer could not be read again: " + source.error();
        return;
    }
    auto source_tok = Tokenizer::from_metadata(source->metadata);
    if (!source_tok) {
        r.tokenizer_detail += "; the source's tokenizer: " + source_tok.error();
        return;
    }
    r.tokenizer_matches_source = (*source_tok)->encode(text, true) == tok.encode(text, true);
    r.tokenizer_detail += r.tokenizer_matches_source ? "; the same ids as the source's tokenizer"
                                                     : "; ids differ from the source's tokenizer";
}

void check_template(const Model& converted, ValidationReport& r) {
    const std::vector<ChatMessage> messages = {{"system", "You are helpful.", ""}, {"user", "Hello!", ""}};
    if (converted.chat_template().empty()) {
        r.template_renders = !render_fallback_chat(messages, true).empty();
        r.template_detail = "no chat template: the plain fallback is used";
        return;
    }
    auto compiled = ChatTemplate::compile(converted.chat_template());
    if (!compiled) {
        r.template_detail = "the model's template does not compile: " + compiled.error();
        return;
    }
    const Tokenizer& tok = converted.tokenizer();
    TemplateOptions options;
    if (tok.bos_id() >= 0) options.bos_token = tok.piece(tok.bos_id());
    if (tok.eos_id() >= 0) options.eos_token = tok.piece(tok.eos_id());
    auto rendered = compiled->render(messages, options);
    r.template_renders = rendered.ok() && rendered->find("Hello!") != std::string::npos;
    r.template_detail = rendered ? "the model's template renders (" + std::to_string(rendered->size()) + " bytes)"
                                 : "the model's template fails: " + rendered.error();
}

Status smoke(const std::shared_ptr<const Model>& model, const ValidationRequest& request, const std::string& text,
             ValidationReport& r, const CancelToken* cancel) {
    SessionOptions options;
    options.threads = request.threads;
    auto session = Session::create(model, options);
    if (!session) return session.take_error();
    const size_t cut = text.find(". ");
    r.smoke_prompt = text.substr(0, cut == std::string::npos ? std::min<size_t>(text.size(), 60) : cut + 1);
    GenerateRequest g;
    g.prompt = model->tokenizer().encode(r.smoke_prompt, true);
    g.max_tokens = int32_t(request.smoke_tokens);
    g.sampling.temperature = 0;
    std::string out;
    auto stats = generate(**session, g, [&](int32_t, std::string_view piece) {
        out += piece;
        return true;
    }, cancel);
    if (!stats) {
        if (stats.kind() == ErrorKind::Cancelled) return stats.take_error();
        r.smoke_text = "generation failed: " + stats.error();
        return {};
    }
    r.smoke_text = out;
    r.smoke_ok = stats->generated_tokens > 0;
    r.smoke_tokens_per_second = stats->decode_tokens_per_s();
    return {};
}

void decide(ValidationReport& r) {
    std::vector<std::string> failed;
    if (!r.tokenizer_round_trip) failed.push_back("the tokenizer does not round-trip the sample");
    if (!r.template_renders) failed.push_back("the chat template does not render");
    if (!r.smoke_ok) failed.push_back("the smoke generation produced nothing");
    if (r.positions == 0) failed.push_back("no position was compared");
    char figures[160];
    std::snprintf(figures, sizeof figures, "top-1 agreement %.1f%% (pass >= %.0f%%), mean KL %.4f nats (pass <= %.2f)",
                  100 * r.top1_agreement, 100 * kPassMinTop1Agreement, r.mean_kl_nats, kPassMaxMeanKlNats);
    if (!failed.empty()) {
        r.verdict = "fail";
        r.verdict_reason.clear();
        for (const auto& f : failed) r.verdict_reason += (r.verdict_reason.empty() ? "" : "; ") + f;
    } else if (r.top1_agreement >= kPassMinTop1Agreement && r.mean_kl_nats <= kPassMaxMeanKlNats) {
        r.verdict = "pass";
        r.verdict_reason = figures;
    } else if (r.top1_agreement >= kWarnMinTop1Agreement) {
        r.verdict = "warn";
        r.verdict_reason = std::string(figures) + ": usable, but the quantisation moves the predictions; a larger type "
                                                  "(q8_0) for the attention or output tensors may help";
    } else {
        r.verdict = "fail";
        r.verdict_reason = std::string(figures) + ": below " + std::to_string(int(100 * kWarnMinTop1Agreement)) +
                           "%, the converted model predicts differently from its source";
    }
    if (!r.tokenizer_matches_source && r.verdict == "pass") {
        r.verdict = "warn";
        r.verdict_reason += "; the tokenizer's ids differ from the source tokenizer's";
    }
}

} // namespace

Result<ValidationReport> validate_conversion(const ValidationRequest& request, const ValidationProgressFn& progress,
                                             const CancelToken* cancel) {
    auto report_stage = [&](const char* name, double fraction) {
        if (progress) progress({name, fraction});
    };
    auto cancelled = [&] { return cancel && cancel->is_cancelled(); };
    ValidationReport r;
    r.converted_path = request.converted_path;
    const std::string text = request.sample_text.empty() ? kDefaultValidationText : request.sample_text;

    auto converted = Model::load(request.converted_path);
    if (!converted) return converted.take_error();
    // Opened once: its tokenizer is compared here and its weights make the F32 reference below.
    const auto source = open_source_model(request.source_path, request.tokenizer_path);
    report_stage("tokenizer", 0);
    check_tokenizer(**converted, source, text, r);
    report_stage("template", 0);
    check_template(**converted, r);
    report_stage("smoke", 0);
    if (Status s = smoke(*converted, request, text, r, cancel); !s) return s.take_error();
    if (cancelled()) return cancelled_error("validation");

    // The reference: the source through the same converter at F32 (weights dequantised exactly).
    std::shared_ptr<const Model> reference = *converted;
    RemoveOnExit scratch;
    r.reference_is_self = all_f32(**converted);
    if (!r.reference_is_self) {
        report_stage("reference", 0);
        if (!source) return make_error(source.kind(), "validation: " + source.error());
        ConvertOptions f32;
        f32.weight_quant = DType::F32;
        for (TensorClass c : kTensorClasses) set_quant_for(f32, c, DType::F32);
        f32.threads = request.threads;
        f32.format = ContainerFormat::Cflow;
        scratch.path = scratch_path(request);
        auto written = convert_to_cflow(*source, scratch.path, f32, [&](const ConvertProgress& p) {
            if (p.tensors_total) report_stage("reference", double(p.tensors_done) / double(p.tensors_total));
        }, cancel);
        if (!written) return make_error(written.kind(), "validation: the F32 reference of the source: " + written.error());
        auto loaded = Model::load(scratch.path);
        if (!loaded) return make_error(loaded.kind(), "validation: the F32 reference of the source: " + loaded.error());
        reference = *loaded;
    }

    SessionOptions options;
    options.threads = request.threads;
    auto ref_session = Session::create(reference, options);
    if (!ref_session) return ref_session.take_error();
    auto conv_session = Session::create(*converted, options);
    if (!conv_session) return conv_session.take_error();
    auto ids = (*converted)->tokenizer().encode(text, true);
    const size_t limit = std::min<size_t>({ids.size(), request.max_positions, (*ref_session)->context_length(),
                                           (*conv_session)->context_length()});
    ids.resize(limit);
    r.sample_tokens = uint32_t(limit);
    double kl_sum = 0;
    uint32_t agree = 0;
    for (size_t p = 0; p < ids.size(); ++p) {
        if (cancelled()) return cancelled_error("validation");
        auto ref_logits = (*ref_session)->step(ids[p]);
        if (!ref_logits) return ref_logits.take_error();
        const Distribution ref = distribution(*ref_logits);
        auto conv_logits = (*conv_session)->step(ids[p]);
        if (!conv_logits) return conv_logits.take_error();
        const Distribution conv = distribution(*conv_logits);
        const double kl = kl_divergence(ref, conv);
        kl_sum += kl;
        r.max_kl_nats = std::max(r.max_kl_nats, kl);
        agree += ref.argmax == conv.argmax;
        ++r.positions;
        report_stage("agreement", double(p + 1) / double(ids.size()));
    }
    if (r.positions) {
        r.top1_agreement = double(agree) / r.positions;
        r.mean_kl_nats = kl_sum / r.positions;
    }
    decide(r);
    return r;
}

std::string validation_text(const ValidationReport& r) {
    std::string s;
    auto line = [&](const std::string& key, const std::string& value) { s += key + ": " + value + "\n"; };
    line("tokenizer", std::string(r.tokenizer_round_trip ? "ok" : "FAILED") + " (" + r.tokenizer_detail + ")");
    line("chat template", std::string(r.template_renders ? "ok" : "FAILED") + " (" + r.template_detail + ")");
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s, %.1f tok/s", r.smoke_ok ? "ok" : "FAILED", r.smoke_tokens_per_second);
    std::string smoke_text;  // one line: the report's tables and the wizard's labels are line-based
    for (char c : r.smoke_text) smoke_text += c == '\n' ? std::string("\\n") : c == '\r' ? std::string() : std::string(1, c);
    line("smoke generation", std::string(buf) + ": \"" + r.smoke_prompt + "\" -> \"" + smoke_text + "\"");
    std::snprintf(buf, sizeof buf, "%.2f%% top-1 agreement, KL mean %.5f / max %.5f nats over %u positions%s",
                  100 * r.top1_agreement, r.mean_kl_nats, r.max_kl_nats, r.positions,
                  r.reference_is_self ? " (the output is F32: compared with itself)" : " against the source in F32");
    line("agreement", buf);
    line("verdict", r.verdict + " (" + r.verdict_reason + ")");
    return s;
}

std::string validation_json(const ValidationReport& r) {
    nlohmann::json j{{"converted", r.converted_path},
                     {"sample_tokens", r.sample_tokens},
                     {"tokenizer_round_trip", r.tokenizer_round_trip},
                     {"tokenizer_matches_source", r.tokenizer_matches_source},
                     {"tokenizer_detail", r.tokenizer_detail},
                     {"template_renders", r.template_renders},
                     {"template_detail", r.template_detail},
                     {"smoke_ok", r.smoke_ok},
                     {"smoke_prompt", r.smoke_prompt},
                     {"smoke_text", r.smoke_text},
                     {"smoke_tokens_per_second", r.smoke_tokens_per_second},
                     {"reference_is_self", r.reference_is_self},
                     {"positions", r.positions},
                     {"top1_agreement", r.top1_agreement},
                     {"mean_kl_nats", r.mean_kl_nats},
                     {"max_kl_nats", r.max_kl_nats},
                     {"thresholds", {{"pass_min_top1", kPassMinTop1Agreement},
                                     {"pass_max_mean_kl", kPassMaxMeanKlNats},
                                     {"warn_min_top1", kWarnMinTop1Agreement}}},
                     {"verdict", r.verdict},
                     {"verdict_reason", r.verdict_reason}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace cflow
