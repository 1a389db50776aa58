#include "cflow/ui/sampling_panel.h"

#include <algorithm>
#include <limits>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QThread>

namespace cflow::ui {
namespace {

const QString kPresetGroup = QStringLiteral("samplingPresets");

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
                        {QStringLiteral("threads"), static_cast<int>(s.threads)}};
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
    if (o.contains(QLatin1String("threads")))
        s.threads = static_cast<unsigned>(std::max(0, o.value(QLatin1String("threads")).toInt(int(s.threads))));
    return s;
}

SamplingPanel::SamplingPanel(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    presets_ = new QComboBox(this);
    presets_->setObjectName(QStringLiteral("presets"));
    auto* savePresetButton = new QPushButton(tr("Save…"), this);
    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(presets_, 1);
    presetRow->addWidget(savePresetButton);
    form->addRow(tr("Preset"), presetRow);

    temperature_ = real_box(0, 5, 0.05, 2, this);
    topK_ = int_box(0, 1000, this);
    topP_ = real_box(0, 1, 0.01, 2, this);
    minP_ = real_box(0, 1, 0.01, 2, this);
    repeatPenalty_ = real_box(0.5, 3, 0.01, 2, this);
    seed_ = int_box(0, std::numeric_limits<int>::max(), this);  // the UI offers 31-bit seeds
    maxTokens_ = int_box(0, 1 << 20, this);
    maxTokens_->setSpecialValueText(tr("auto (¼ of context)"));
    threads_ = int_box(0, 1024, this);
    threads_->setSpecialValueText(tr("auto (%1)").arg(QThread::idealThreadCount()));
    form->addRow(tr("Temperature"), temperature_);
    form->addRow(tr("Top-k"), topK_);
    form->addRow(tr("Top-p"), topP_);
    form->addRow(tr("Min-p"), minP_);
    form->addRow(tr("Repeat penalty"), repeatPenalty_);
    form->addRow(tr("Seed"), seed_);
    form->addRow(tr("Max tokens"), maxTokens_);
    form->addRow(tr("Threads"), threads_);
    setSettings(GenerationSettings{});

    for (QDoubleSpinBox* box : {temperature_, topP_, minP_, repeatPenalty_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &SamplingPanel::settingsChanged);
    for (QSpinBox* box : {topK_, seed_, maxTokens_, threads_})
        connect(box, &QSpinBox::valueChanged, this, &SamplingPanel::settingsChanged);
    connect(savePresetButton, &QPushButton::clicked, this, [this] {
        bool ok = false;
        const QString name = QInputDialog::getText(this, tr("Save preset"), tr("Preset name:"), QLineEdit::Normal,
                                                   presets_->currentText(), &ok);
        if (ok && !name.trimmed().isEmpty()) savePreset(name.trimmed());
    });
    connect(presets_, &QComboBox::textActivated, this, [this](const QString& name) { loadPreset(name); });
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
}

void SamplingPanel::savePreset(const QString& name) {
    QSettings settings;
    settings.setValue(kPresetGroup + u'/' + name, settings_to_json(this->settings()));
    refreshPresets();
    presets_->setCurrentText(name);
}

bool SamplingPanel::loadPreset(const QString& name) {
    QSettings settings;
    const QVariant json = settings.value(kPresetGroup + u'/' + name);
    if (!json.isValid()) return false;
    setSettings(settings_from_json(json.toString(), this->settings()));
    return true;
}

QStringList SamplingPanel::presetNames() const {
    QSettings settings;
    settings.beginGroup(kPresetGroup);
    return settings.childKeys();
}

void SamplingPanel::refreshPresets() {
    const QString current = presets_->currentText();
    presets_->clear();
    presets_->addItems(presetNames());
    presets_->setCurrentText(current);
}

} // namespace cflow::ui
