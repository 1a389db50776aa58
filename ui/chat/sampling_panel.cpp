#include "cflow/ui/sampling_panel.h"
#include "labelled_button.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QComboBox>
#include <QLabel>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>

#include "cflow/ui/sampling_presets.h"

namespace cflow::ui {
namespace {

constexpr int kMaxTokensLimit = 1 << 20;  // what the field takes when the context does not cap it

QDoubleSpinBox* real_box(double lo, double hi, double step, int decimals, QWidget* parent) {
    auto* box = new QDoubleSpinBox(parent);
    box->setRange(lo, hi);
    box->setSingleStep(step);
    box->setDecimals(decimals);
    return box;
}

QSpinBox* int_box(int lo, int hi, QWidget* parent) {
    auto* box = new QSpinBox(parent);
    box->setRange(lo, hi);
    return box;
}


} // namespace

QString settings_to_json(const GenerationSettings& s) {
    const QJsonObject o{{QStringLiteral("temperature"), double(s.sampling.temperature)},
                        {QStringLiteral("top_k"), s.sampling.top_k},
                        {QStringLiteral("top_p"), double(s.sampling.top_p)},
                        {QStringLiteral("min_p"), double(s.sampling.min_p)},
                        {QStringLiteral("repeat_penalty"), double(s.sampling.repeat_penalty)},
                        {QStringLiteral("seed"), QString::number(s.sampling.seed)},  // 64-bit: as text
                        {QStringLiteral("max_tokens"), s.maxTokens},
                        {QStringLiteral("threads"), static_cast<int>(s.threads)},
                        {QStringLiteral("kv_cache"), s.kvCache == KvCacheType::F16 ? QStringLiteral("f16") : QStringLiteral("f32")},
                        {QStringLiteral("expert_fetch"), QString::fromLatin1(expert_fetch_name(s.expertFetch).data())},
                        {QStringLiteral("expert_cache_mib"), s.expertCacheMiB}};
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

GenerationSettings settings_from_json(const QString& json, const GenerationSettings& base) {
    GenerationSettings s = base;
    const QJsonObject o = QJsonDocument::fromJson(json.toUtf8()).object();
    auto real = [&](const char* key, float& out) {
        if (o.contains(QLatin1String(key))) out = static_cast<float>(o.value(QLatin1String(key)).toDouble(out));
    };
    real("temperature", s.sampling.temperature);
    real("top_p", s.sampling.top_p);
    real("min_p", s.sampling.min_p);
    real("repeat_penalty", s.sampling.repeat_penalty);
    if (o.contains(QLatin1String("top_k"))) s.sampling.top_k = o.value(QLatin1String("top_k")).toInt(s.sampling.top_k);
    if (o.contains(QLatin1String("seed"))) {
        bool ok = false;
        const qulonglong seed = o.value(QLatin1String("seed")).toString().toULongLong(&ok);
        if (ok) s.sampling.seed = seed;
    }
    if (o.contains(QLatin1String("max_tokens"))) s.maxTokens = o.value(QLatin1String("max_tokens")).toInt(s.maxTokens);
    if (o.contains(QLatin1String("kv_cache")))
        s.kvCache = o.value(QLatin1String("kv_cache")).toString() == QLatin1String("f16") ? KvCacheType::F16 : KvCacheType::F32;
    if (o.contains(QLatin1String("expert_fetch")))
        s.expertFetch = parse_expert_fetch(o.value(QLatin1String("expert_fetch")).toString().toStdString()).value_or(s.expertFetch);
    if (o.contains(QLatin1String("expert_cache_mib")))
        s.expertCacheMiB = std::max(kExpertCacheFit, o.value(QLatin1String("expert_cache_mib")).toInt(s.expertCacheMiB));
    if (o.contains(QLatin1String("threads")))
        s.threads = static_cast<unsigned>(std::max(0, o.value(QLatin1String("threads")).toInt(int(s.threads))));
    return s;
}

SamplingPanel::SamplingPanel(QWidget* parent) : QWidget(parent) {
    // The form scrolls inside the dock: the panel's own minimum height stays small, so the
    // main window fits 800 x 600 with the dock open.
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("samplingScroll"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    outer->addWidget(scroll);
    auto* content = new QWidget(scroll);
    scroll->setWidget(content);
    auto* form = new QFormLayout(content);

    presets_ = new QComboBox(content);
    presets_->setObjectName(QStringLiteral("presets"));
    presets_->setAccessibleName(tr("Sampling preset"));
    presets_->setPlaceholderText(tr("Choose a preset"));
    auto* savePresetButton = labelled_button(tr("Save as…"), QStringLiteral("savePreset"),
                                             tr("Save the current values as a preset under a name"), content);
    presetModified_ = new QLabel(tr("(modified)"), content);
    presetModified_->setObjectName(QStringLiteral("presetModified"));
    presetModified_->setAccessibleName(tr("The values differ from the preset"));
    presetModified_->setVisible(false);
    deletePreset_ = labelled_button(tr("Delete"), QStringLiteral("deletePreset"), tr("Delete the chosen preset"), content);
    auto* resetPresetsButton = labelled_button(tr("Reset presets"), QStringLiteral("resetPresets"),
                                             tr("Restore the built-in presets Precise, Balanced and Creative"), content);
    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(presets_, 1);
    presetRow->addWidget(presetModified_);
    presetRow->addWidget(savePresetButton);
    auto* presetActions = new QHBoxLayout;
    presetActions->addWidget(deletePreset_);
    presetActions->addWidget(resetPresetsButton);
    presetActions->addStretch();
    form->addRow(tr("Preset"), presetRow);
    form->addRow(QString(), presetActions);

    temperature_ = real_box(0, 5, 0.05, 2, content);
    topK_ = int_box(0, 1000, content);
    topP_ = real_box(0, 1, 0.01, 2, content);
    minP_ = real_box(0, 1, 0.01, 2, content);
    repeatPenalty_ = real_box(0.5, 3, 0.01, 2, content);
    seed_ = int_box(0, std::numeric_limits<int>::max(), content);  // the UI offers 31-bit seeds
    maxTokens_ = int_box(0, kMaxTokensLimit, content);
    maxTokens_->setObjectName(QStringLiteral("maxTokens"));
    maxTokens_->setSpecialValueText(tr("auto (¼ of context)"));  // 0: the engine resolves it
    threads_ = int_box(0, 1024, content);
    threads_->setSpecialValueText(tr("auto (%1)").arg(QThread::idealThreadCount()));
    // Every setting says what it does where the user points at it (issue 37).
    temperature_->setToolTip(tr("How adventurous the choice of each token is: 0 always takes the most likely token "
                                "(the same reply every time), higher values spread the choice wider."));
    topK_->setToolTip(tr("Choose only among the K most likely tokens (0: no limit)."));
    topP_->setToolTip(tr("Choose only among the most likely tokens that together reach this probability "
                         "(nucleus sampling; 1: no limit)."));
    minP_->setToolTip(tr("Drop tokens less likely than this fraction of the most likely one (0: keep all)."));
    repeatPenalty_->setToolTip(tr("Make tokens already in the recent text less likely, against loops (1: off)."));
    seed_->setToolTip(tr("The random seed: the same seed, prompt and settings give the same reply."));
    maxTokens_->setToolTip(tr("The longest reply in tokens. Past the context length the reply goes on only under "
                              "the Prompt tab's 'drop oldest turns' or 'sliding window' policy; 'auto' is a quarter "
                              "of the context."));
    threads_->setToolTip(tr("CPU threads that compute each token ('auto': one per core)."));
    form->addRow(tr("Temperature"), temperature_);
    form->addRow(tr("Top-k"), topK_);
    form->addRow(tr("Top-p"), topP_);
    form->addRow(tr("Min-p"), minP_);
    form->addRow(tr("Repeat penalty"), repeatPenalty_);
    form->addRow(tr("Seed"), seed_);
    form->addRow(tr("Max tokens"), maxTokens_);
    maxTokensNote_ = new QLabel(content);
    maxTokensNote_->setObjectName(QStringLiteral("maxTokensNote"));
    maxTokensNote_->setWordWrap(true);
    maxTokensNote_->setStyleSheet(QStringLiteral("color: palette(mid);"));
    maxTokensNote_->hide();
    form->addRow(QString(), maxTokensNote_);
    form->addRow(tr("Threads"), threads_);
    kvCache_ = new QComboBox(content);
    kvCache_->setObjectName(QStringLiteral("kvCache"));
    kvCache_->addItem(tr("f32 (exact)"), int(KvCacheType::F32));
    kvCache_->addItem(tr("f16 (half the memory)"), int(KvCacheType::F16));
    kvCache_->setToolTip(tr("How the KV cache stores keys and values. f16 halves its memory for long contexts; "
                            "changing it starts the next reply with an empty cache."));
    form->addRow(tr("KV cache"), kvCache_);
    connect(kvCache_, &QComboBox::currentIndexChanged, this, &SamplingPanel::settingsChanged);
    expertFetch_ = new QComboBox(content);
    expertFetch_->setObjectName(QStringLiteral("expertFetch"));
    expertFetch_->setAccessibleName(tr("Expert reads"));
    expertFetch_->addItem(tr("mapped (page cache)"), int(ExpertFetch::Mapped));
    expertFetch_->addItem(tr("staged (direct I/O, overlapped)"), int(ExpertFetch::Staged));
    expertFetch_->addItem(tr("sync (direct I/O, waited for)"), int(ExpertFetch::Sync));
    expertFetch_->setToolTip(tr("Mixture-of-experts models: read the chosen experts through the page cache, or from "
                                "the disk with direct I/O issued at the routing layer, either overlapping the layers "
                                "until the experts are needed (staged) or waiting at once (sync: the stall to compare "
                                "with). Same output every way; the inspector's stall chart shows the difference."));
    form->addRow(tr("Expert reads"), expertFetch_);
    connect(expertFetch_, &QComboBox::currentIndexChanged, this, &SamplingPanel::settingsChanged);
    expertCache_ = int_box(kExpertCacheFit, 1 << 20, content);
    expertCache_->setObjectName(QStringLiteral("expertCache"));
    expertCache_->setAccessibleName(tr("Expert cache"));
    expertCache_->setSuffix(tr(" MiB"));
    expertCache_->setSpecialValueText(tr("fit to free memory"));  // the minimum, kExpertCacheFit
    expertCache_->setToolTip(tr("Direct-I/O expert reads (staged or sync): keep recently routed experts in RAM so they "
                                "are not read again. 0 MiB: no cache; the lowest value sizes it to half the free memory "
                                "when the reply starts. The inspector's stall view shows the hit rate. Mapped reads use "
                                "the system's page cache instead."));
    form->addRow(tr("Expert cache"), expertCache_);
    // Only the direct-I/O arms have this cache: greyed out for mapped, so nobody tunes a setting that does nothing.
    auto syncCacheEnabled = [this] {
        expertCache_->setEnabled(static_cast<ExpertFetch>(expertFetch_->currentData().toInt()) != ExpertFetch::Mapped);
    };
    connect(expertFetch_, &QComboBox::currentIndexChanged, this, syncCacheEnabled);
    connect(expertCache_, &QSpinBox::valueChanged, this, &SamplingPanel::settingsChanged);
    setSettings(GenerationSettings{});

    for (QDoubleSpinBox* box : {temperature_, topP_, minP_, repeatPenalty_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &SamplingPanel::settingsChanged);
    for (QSpinBox* box : {topK_, seed_, maxTokens_, threads_})
        connect(box, &QSpinBox::valueChanged, this, &SamplingPanel::settingsChanged);
    connect(maxTokens_, &QSpinBox::valueChanged, this, &SamplingPanel::updateMaxTokensNote);
    connect(savePresetButton, &QPushButton::clicked, this, [this] {
        bool ok = false;
        const QString name = QInputDialog::getText(this, tr("Save preset"), tr("Preset name:"), QLineEdit::Normal,
                                                   presets_->currentText(), &ok);
        if (ok && !name.trimmed().isEmpty()) savePreset(name.trimmed());
    });
    connect(presets_, &QComboBox::textActivated, this, [this](const QString& name) { loadPreset(name); });
    connect(presets_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
        deletePreset_->setEnabled(!name.isEmpty());
        updatePresetState();
    });
    connect(this, &SamplingPanel::settingsChanged, this, &SamplingPanel::updatePresetState);
    connect(deletePreset_, &QPushButton::clicked, this, [this] { deletePreset(presets_->currentText()); });
    connect(resetPresetsButton, &QPushButton::clicked, this, &SamplingPanel::resetPresets);
    {
        QSettings settings;
        seed_builtin_presets(settings);
    }
    refreshPresets();
}

GenerationSettings SamplingPanel::settings() const {
    GenerationSettings s;
    s.sampling.temperature = static_cast<float>(temperature_->value());
    s.sampling.top_k = topK_->value();
    s.sampling.top_p = static_cast<float>(topP_->value());
    s.sampling.min_p = static_cast<float>(minP_->value());
    s.sampling.repeat_penalty = static_cast<float>(repeatPenalty_->value());
    s.sampling.seed = static_cast<uint64_t>(seed_->value());
    s.maxTokens = maxTokens_->value();
    s.threads = static_cast<unsigned>(threads_->value());
    s.kvCache = static_cast<KvCacheType>(kvCache_->currentData().toInt());
    s.expertFetch = static_cast<ExpertFetch>(expertFetch_->currentData().toInt());
    s.expertCacheMiB = expertCache_->value();
    return s;
}

void SamplingPanel::setSettings(const GenerationSettings& s) {
    temperature_->setValue(s.sampling.temperature);
    topK_->setValue(s.sampling.top_k);
    topP_->setValue(s.sampling.top_p);
    minP_->setValue(s.sampling.min_p);
    repeatPenalty_->setValue(s.sampling.repeat_penalty);
    seed_->setValue(static_cast<int>(s.sampling.seed & 0x7fffffffu));
    maxTokens_->setValue(s.maxTokens);
    threads_->setValue(static_cast<int>(s.threads));
    kvCache_->setCurrentIndex(kvCache_->findData(int(s.kvCache)));
    expertFetch_->setCurrentIndex(expertFetch_->findData(int(s.expertFetch)));
    expertCache_->setValue(s.expertCacheMiB);
    expertCache_->setEnabled(s.expertFetch != ExpertFetch::Mapped);
}

void SamplingPanel::setContextLimits(int contextTokens, ContextPolicy policy) {
    contextTokens_ = std::max(0, contextTokens);
    contextPolicy_ = policy;
    // Under Stop nothing past the context can be generated; the shifting policies go on.
    maxTokens_->setMaximum(contextTokens_ > 0 && policy == ContextPolicy::Stop ? contextTokens_ : kMaxTokensLimit);
    updateMaxTokensNote();
}

QString SamplingPanel::maxTokensNote() const { return maxTokensNote_->isHidden() ? QString() : maxTokensNote_->text(); }

void SamplingPanel::updateMaxTokensNote() {
    if (contextTokens_ <= 0) {
        maxTokensNote_->hide();
        return;
    }
    const int asked = maxTokens_->value();
    QString note;
    if (contextPolicy_ == ContextPolicy::Stop)
        note = tr("At most %1 tokens: the context holds %1 and the Prompt tab's policy (Stop at the limit) ends a "
                  "reply there, prompt included.")
                   .arg(contextTokens_);
    else if (asked > contextTokens_)
        note = tr("Longer than the %1-token context: the reply goes on by %2 as it grows (Prompt tab's policy).")
                   .arg(contextTokens_)
                   .arg(contextPolicy_ == ContextPolicy::DropOldest ? tr("dropping the oldest turns")
                                                                    : tr("sliding the oldest tokens out"));
    else
        note = tr("The context holds %1 tokens, prompt and reply together; 'auto' is %2.")
                   .arg(contextTokens_)
                   .arg(contextTokens_ / 4);
    maxTokensNote_->setText(note);
    maxTokensNote_->show();
}

void SamplingPanel::savePreset(const QString& name) {
    QSettings settings;
    settings.setValue(preset_group() + u'/' + name, settings_to_json(this->settings()));
    refreshPresets();
    presets_->setCurrentText(name);
}

bool SamplingPanel::loadPreset(const QString& name) {
    QSettings settings;
    const QVariant json = settings.value(preset_group() + u'/' + name);
    if (!json.isValid()) return false;
    setSettings(settings_from_json(json.toString(), this->settings()));
    {
        const QSignalBlocker blocker(presets_);
        presets_->setCurrentIndex(presets_->findText(name));
        deletePreset_->setEnabled(presets_->currentIndex() >= 0);
    }
    updatePresetState();
    return true;
}

bool SamplingPanel::presetModified() const {
    const QString name = presets_->currentText();
    if (name.isEmpty()) return false;
    const QVariant json = QSettings().value(preset_group() + u'/' + name);
    if (!json.isValid()) return false;
    const GenerationSettings now = settings();
    const GenerationSettings preset = settings_from_json(json.toString(), now);
    // The spin boxes hold two decimals: a preset's 0.95 reads back as 0.95f, so compare at that step.
    const auto differs = [](float a, float b) { return std::abs(a - b) > 0.004f; };
    return differs(now.sampling.temperature, preset.sampling.temperature) || now.sampling.top_k != preset.sampling.top_k ||
           differs(now.sampling.top_p, preset.sampling.top_p) || differs(now.sampling.min_p, preset.sampling.min_p) ||
           differs(now.sampling.repeat_penalty, preset.sampling.repeat_penalty);
}

void SamplingPanel::updatePresetState() {
    const bool modified = presetModified();
    presetModified_->setVisible(modified);
    presetModified_->setToolTip(modified ? tr("The values differ from the preset \"%1\": Save as… keeps them under a name, "
                                              "choosing the preset again restores its values")
                                               .arg(presets_->currentText())
                                         : QString());
}

bool SamplingPanel::deletePreset(const QString& name) {
    QSettings settings;
    const QString key = preset_group() + u'/' + name;
    if (name.isEmpty() || !settings.contains(key)) return false;
    settings.remove(key);
    refreshPresets();
    return true;
}

void SamplingPanel::resetPresets() {
    QSettings settings;
    reset_builtin_presets(settings);
    refreshPresets();
}

QStringList SamplingPanel::presetNames() const {
    QSettings settings;
    settings.beginGroup(preset_group());
    QStringList user = settings.childKeys();
    QStringList names;
    for (const BuiltinPreset& p : builtin_presets())
        if (user.removeAll(p.name) > 0) names << p.name;
    user.sort(Qt::CaseInsensitive);
    return names + user;
}

void SamplingPanel::refreshPresets() {
    const QString current = presets_->currentText();
    const QSignalBlocker blocker(presets_);
    presets_->clear();
    presets_->addItems(presetNames());
    // A preset no longer listed is not shown as chosen: the placeholder is.
    presets_->setCurrentIndex(presets_->findText(current));
    deletePreset_->setEnabled(presets_->currentIndex() >= 0);
    updatePresetState();
}

} // namespace cflow::ui
