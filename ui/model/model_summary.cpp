// Turns the validated .cflow structures into name/value rows. Every number shown comes
// straight from the file; nothing here re-derives geometry.
#include "cflow/ui/model_summary.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <variant>

#include <QLocale>
#include <QStringList>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/dtype.h"
#include "cflow/formats/metadata.h"

namespace cflow::ui {
namespace {

constexpr int kMaxArrayItemsShown = 6;

QString shorten(QString text) {
    // Chat templates and token texts carry control characters; show them escaped on one line.
    text.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    text.replace(QLatin1Char('\r'), QStringLiteral("\\r"));
    text.replace(QLatin1Char('\t'), QStringLiteral("\\t"));
    if (text.size() > kMaxValueChars) text = text.left(kMaxValueChars - 1) + QChar(0x2026);
    return text;
}

QString bytes_text(uint64_t bytes) {
    const QString exact = QLocale::c().toString(static_cast<qulonglong>(bytes)) + QStringLiteral(" B");
    if (bytes < 1024) return exact;
    return exact + QStringLiteral(" (") + QLocale::c().formattedDataSize(static_cast<qint64>(bytes), 2) +
           QStringLiteral(")");
}

QString number(uint64_t v) { return QString::number(static_cast<qulonglong>(v)); }
QString real(double v) { return QString::number(v, 'g', 7); }

QString combine_style_name(uint8_t style) {
    switch (static_cast<CombineStyle>(style)) {
    case CombineStyle::ParallelSqrt2: return QStringLiteral("parallel_sqrt2");
    case CombineStyle::DelayedSum: return QStringLiteral("delayed_sum");
    case CombineStyle::AsyncExperts: return QStringLiteral("async_experts");
    case CombineStyle::Sequential: return QStringLiteral("sequential");
    case CombineStyle::DecoupledStreams: return QStringLiteral("decoupled_streams");
    case CombineStyle::PipelineRegisters: return QStringLiteral("pipeline_registers");
    case CombineStyle::FixedPoint: return QStringLiteral("fixed_point");
    }
    return QStringLiteral("unknown (%1)").arg(style);
}

QString activation_name(uint8_t activation) {
    switch (static_cast<FfnActivation>(activation)) {
    case FfnActivation::SwiGLU: return QStringLiteral("swiglu");
    case FfnActivation::GeGLUTanh: return QStringLiteral("geglu_tanh");
    case FfnActivation::ClampedSwiGLU: return QStringLiteral("clamped_swiglu");
    }
    return QStringLiteral("unknown (%1)").arg(activation);
}

QString router_mode_name(uint8_t mode) {
    switch (static_cast<RouterMode>(mode)) {
    case RouterMode::SoftmaxTopK: return QStringLiteral("softmax_topk");
    case RouterMode::SoftmaxAllNoRenorm: return QStringLiteral("softmax_all_no_renorm");
    }
    return QStringLiteral("unknown (%1)").arg(mode);
}

QString dtype_text(uint8_t dtype) {
    const std::string_view name = dtype_name(static_cast<DType>(dtype));
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QString feature_flags_text(uint8_t flags) {
    static constexpr struct {
        uint8_t bit;
        const char* name;
    } kFlags[] = {
        {kFeatureEmbedScaleSqrtD, "embed_scale_sqrt_d"},
        {kFeatureVNorm, "v_norm"},
        {kFeatureTiedEmbeddings, "tied_embeddings"},
        {kFeatureQkvBias, "qkv_bias"},
        {kFeatureQkNorm, "qk_norm"},
        {kFeatureRopeFreqFactors, "rope_freq_factors"},
        {kFeatureRopeSkipLayers, "rope_skip_layers"},
        {kFeatureExtended, "extended"},
    };
    QStringList names;
    uint8_t known = 0;
    for (const auto& flag : kFlags) {
        known |= flag.bit;
        if (flags & flag.bit) names << QString::fromLatin1(flag.name);
    }
    if (flags & ~known) names << QStringLiteral("0x%1").arg(flags & ~known, 2, 16, QLatin1Char('0'));
    const QString hex = QStringLiteral("0x%1").arg(flags, 2, 16, QLatin1Char('0'));
    return names.isEmpty() ? hex + QStringLiteral(" (none)") : hex + QStringLiteral(" (") + names.join(u", ") + u')';
}

template <class T>
QString array_text(const std::vector<T>& items, const char* kind) {
    QStringList shown;
    for (size_t i = 0; i < items.size() && i < static_cast<size_t>(kMaxArrayItemsShown); ++i) {
        if constexpr (std::is_same_v<T, std::string>)
            shown << QString::fromUtf8(items[i].data(), static_cast<qsizetype>(items[i].size()));
        else if constexpr (std::is_floating_point_v<T>)
            shown << real(items[i]);
        else
            shown << QString::number(items[i]);
    }
    if (items.size() > static_cast<size_t>(kMaxArrayItemsShown)) shown << QString(QChar(0x2026));
    return shorten(QStringLiteral("%1 %2: [").arg(number(items.size()), QString::fromLatin1(kind)) + shown.join(u", ") +
                   u']');
}

QString meta_value_text(const MetaValue& value) {
    return std::visit(
        [](const auto& v) -> QString {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::string>)
                return shorten(QString::fromUtf8(v.data(), static_cast<qsizetype>(v.size())));
            else if constexpr (std::is_same_v<V, bool>)
                return v ? QStringLiteral("true") : QStringLiteral("false");
            else if constexpr (std::is_same_v<V, int64_t>)
                return QString::number(static_cast<qlonglong>(v));
            else if constexpr (std::is_same_v<V, double>)
                return real(v);
            else if constexpr (std::is_same_v<V, std::vector<std::string>>)
                return array_text(v, "strings");
            else if constexpr (std::is_same_v<V, std::vector<float>>)
                return array_text(v, "floats");
            else
                return array_text(v, "ints");
        },
        value);
}

SummarySection file_section(const CflowFile& file) {
    SummarySection s{QStringLiteral("File"), {}};
    s.fields.push_back({QStringLiteral("path"), QString::fromUtf8(file.path().c_str())});
    s.fields.push_back({QStringLiteral("size"), bytes_text(file.file_bytes())});
    s.fields.push_back({QStringLiteral("load mode"), file.file().mode() == LoadMode::Map
                                                         ? QStringLiteral("mapped")
                                                         : QStringLiteral("read into memory")});
    return s;
}

SummarySection header_section(const GlobalHeader& h) {
    // magic is 8 bytes, NUL-padded and not NUL-terminated when full.
    const QString magic = QString::fromLatin1(h.magic, static_cast<qsizetype>(strnlen(h.magic, sizeof(h.magic))));
    return {QStringLiteral("Global header"),
            {
                {QStringLiteral("magic"), magic},
                {QStringLiteral("version"), number(h.version)},
                {QStringLiteral("d_model"), number(h.d_model)},
                {QStringLiteral("n_layers"), number(h.n_layers)},
                {QStringLiteral("n_heads"), number(h.n_heads)},
                {QStringLiteral("n_kv_heads"), number(h.n_kv_heads)},
                {QStringLiteral("head_dim"), number(h.head_dim)},
                {QStringLiteral("n_experts"), number(h.n_experts)},
                {QStringLiteral("top_k"), number(h.top_k)},
                {QStringLiteral("weight_quant"), dtype_text(h.weight_quant)},
                {QStringLiteral("d_ff"), number(h.d_ff)},
                {QStringLiteral("expert_d_ff"), number(h.expert_d_ff)},
                {QStringLiteral("vocab_size"), number(h.vocab_size)},
                {QStringLiteral("max_seq_len"), number(h.max_seq_len)},
                {QStringLiteral("tile"), QStringLiteral("%1 x %2").arg(h.tile_rows).arg(h.tile_cols)},
                {QStringLiteral("sliding_window"), number(h.sliding_window)},
                {QStringLiteral("layer_table_offset"), number(h.layer_table_offset)},
                {QStringLiteral("params_offset"), number(h.params_offset)},
                {QStringLiteral("file_bytes"), bytes_text(h.file_bytes)},
                {QStringLiteral("dense_delay"), number(h.dense_delay)},
                {QStringLiteral("expert_delay"), number(h.expert_delay)},
                {QStringLiteral("combine_style"), combine_style_name(h.combine_style)},
                {QStringLiteral("feature_flags"), feature_flags_text(h.feature_flags)},
                {QStringLiteral("final_logit_softcap"), real(h.final_logit_softcap)},
            }};
}

SummarySection params_section(const ModelParams& p) {
    return {QStringLiteral("Model parameters"),
            {
                {QStringLiteral("params_bytes"), number(p.params_bytes)},
                {QStringLiteral("norm_eps"), real(p.norm_eps)},
                {QStringLiteral("rope_theta"), real(p.rope_theta)},
                {QStringLiteral("rope_fraction"), real(p.rope_fraction)},
                {QStringLiteral("ffn_activation"), activation_name(p.ffn_activation)},
                {QStringLiteral("router_mode"), router_mode_name(p.router_mode)},
                {QStringLiteral("merge_interval"), number(p.merge_interval)},
                {QStringLiteral("n_blocks"), number(p.n_blocks)},
                {QStringLiteral("n_iter"), number(p.n_iter)},
                {QStringLiteral("attn_logit_softcap"), real(p.attn_logit_softcap)},
                {QStringLiteral("embedding_scale"), real(p.embedding_scale)},
                {QStringLiteral("metadata_offset"), number(p.metadata_offset)},
                {QStringLiteral("metadata_bytes"), bytes_text(p.metadata_bytes)},
                {QStringLiteral("shared_expert_d_ff"), number(p.shared_expert_d_ff)},
                {QStringLiteral("extended_features"), QStringLiteral("0x%1").arg(p.extended_features, 0, 16)},
                {QStringLiteral("query_scale"), real(p.query_scale)},
                {QStringLiteral("rope_local_theta"), real(p.rope_local_theta)},
                {QStringLiteral("rope_original_context"), number(p.rope_original_context)},
                {QStringLiteral("rope_attn_factor"), real(p.rope_attn_factor)},
            }};
}

SummaryField region_field(const QString& name, const RegionView& region) {
    return {name, QStringLiteral("%1, %2 segments @ %3")
                      .arg(bytes_text(region.bytes), number(region.segments.size()), number(region.offset))};
}

SummarySection regions_section(const CflowFile& file) {
    SummarySection s{QStringLiteral("Regions"), {}};
    for (const RegionView& layer : file.layers())
        s.fields.push_back(region_field(QStringLiteral("layer %1").arg(layer.index), layer));
    s.fields.push_back(region_field(QStringLiteral("vocabulary"), file.vocab()));
    return s;
}

SummarySection metadata_section(const Metadata& metadata) {
    SummarySection s{QStringLiteral("Metadata"), {}};
    for (const auto& [key, value] : metadata.entries())
        s.fields.push_back({QString::fromUtf8(key.data(), static_cast<qsizetype>(key.size())), meta_value_text(value)});
    return s;
}

} // namespace

ModelSummary summarize_model(const CflowFile& file) {
    return {file_section(file), header_section(file.header()), params_section(file.params()), regions_section(file),
            metadata_section(file.metadata())};
}

} // namespace cflow::ui
