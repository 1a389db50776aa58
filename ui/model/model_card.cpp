#include "cflow/ui/model_card.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLocale>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/model_features.h"
#include "cflow/ui/conversation_title.h"
#include "metadata_text.h"

namespace cflow::ui {
namespace {

constexpr int kPurposeChars = 400;

QString read_small_text(const QString& path) {
    QFile file(path);
    if (file.size() > kMaxCardBytes || !file.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(file.read(kMaxCardBytes));
}

// The first paragraph that is prose: not a heading, a table, a code block or a list.
QString first_paragraph(const QString& markdown) {
    QStringList paragraph;
    bool inFence = false;
    for (const QString& raw : markdown.split(u'\n')) {
        const QString line = raw.trimmed();
        if (line.startsWith(QLatin1String("```"))) {
            inFence = !inFence;
            continue;
        }
        if (inFence) continue;
        const bool prose = !line.isEmpty() && !line.startsWith(u'#') && !line.startsWith(u'|') &&
                           !line.startsWith(QLatin1String("- ")) && !line.startsWith(QLatin1String("* ")) &&
                           !raw.startsWith(QLatin1String("    "));
        if (prose) paragraph << line;
        else if (!paragraph.isEmpty()) break;
    }
    return plain_title(paragraph.join(u' '), kPurposeChars);
}

} // namespace

uint64_t estimate_parameters(const GlobalHeader& h, const ModelParams& p) {
    const uint64_t d = h.d_model;
    const uint64_t q = uint64_t{h.n_heads} * h.head_dim;
    const uint64_t kv = uint64_t{h.n_kv_heads} * h.head_dim;
    uint64_t perLayer = d * q + 2 * d * kv + q * d + 2 * d;  // QKV, O, two norms
    if (h.feature_flags & kFeatureQkvBias) perLayer += q + 2 * kv;
    if (h.feature_flags & kFeatureQkNorm) perLayer += 2 * uint64_t{h.head_dim};
    perLayer += 3 * d * h.d_ff;                                // gate, up, down
    if (h.n_experts > 0) {
        perLayer += uint64_t{h.n_experts} * (3 * d * h.expert_d_ff + d);  // experts + router row
        perLayer += 3 * d * p.shared_expert_d_ff;
    }
    uint64_t total = perLayer * h.n_layers + d;                // + final norm
    total += uint64_t{h.vocab_size} * d;                       // embedding
    if (!(h.feature_flags & kFeatureTiedEmbeddings)) total += uint64_t{h.vocab_size} * d;
    return total;
}

QString human_count(uint64_t n) {
    if (n >= 1000000000ull) return QString::number(double(n) / 1e9, 'f', 2) + QStringLiteral(" B");
    if (n >= 1000000ull) return QString::number(double(n) / 1e6, 'f', 2) + QStringLiteral(" M");
    if (n >= 1000ull) return QString::number(double(n) / 1e3, 'f', 1) + QStringLiteral(" K");
    return QString::number(n);
}

ModelCard read_model_card(const CflowFile& file, const QString& modelPath) {
    ModelCard card;
    const QFileInfo info(modelPath);
    card.name = metadata_text(file, "general.name");
    if (card.name.isEmpty()) card.name = info.fileName();

    card.markdown = metadata_text(file, "general.description");
    if (card.markdown.isEmpty()) {
        for (const QString& candidate : {info.dir().filePath(info.completeBaseName() + QStringLiteral(".md")),
                                         info.dir().filePath(QStringLiteral("MODEL_CARD.md"))}) {
            card.markdown = read_small_text(candidate);
            if (!card.markdown.isEmpty()) {
                card.cardPath = candidate;
                break;
            }
        }
    }
    card.purpose = first_paragraph(card.markdown);

    const GlobalHeader& h = file.header();
    const QLocale locale;
    if (h.n_experts > 0)
        card.capabilities << QObject::tr("Mixture of experts: %1 experts per layer, %2 used per token")
                                 .arg(h.n_experts)
                                 .arg(h.top_k);
    else
        card.capabilities << QObject::tr("Dense transformer");
    card.capabilities << QObject::tr("%1 parameters in %2 layers (d_model %3)")
                             .arg(human_count(estimate_parameters(h, file.params())))
                             .arg(h.n_layers)
                             .arg(h.d_model);
    card.capabilities << QObject::tr("Context: %1 tokens").arg(h.max_seq_len);
    const QString architecture = metadata_text(file, "general.architecture");
    QStringList features;
    for (const ModelFeature& feature : describe_features(file))
        features << QString::fromStdString(feature.name) + QStringLiteral(" (") + QString::fromStdString(feature.detail) + u')';
    if (!architecture.isEmpty() || !features.isEmpty())
        card.capabilities << QObject::tr("Architecture: %1%2")
                                 .arg(architecture.isEmpty() ? QObject::tr("unnamed") : architecture,
                                      features.isEmpty() ? QString() : QStringLiteral("; ") + features.join(QStringLiteral("; ")));
    card.capabilities << QObject::tr("Weights: %1, file %2")
                             .arg(QString::fromLatin1(dtype_name(static_cast<DType>(h.weight_quant))).toUpper(),
                                  locale.formattedDataSize(static_cast<qint64>(file.file_bytes())));
    const bool hasTemplate = !metadata_text(file, "tokenizer.chat_template").isEmpty();
    card.capabilities << (hasTemplate ? QObject::tr("Chat template: yes")
                                      : QObject::tr("No chat template: a base model, it continues text"));
    return card;
}

} // namespace cflow::ui
