#include "cflow/ui/sampling_presets.h"

#include <algorithm>

#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>

namespace cflow::ui {
namespace {

// Outside the preset group, so it is not listed as a preset.
const QString kSeededKey = QStringLiteral("samplingPresetsSeeded");

} // namespace

const std::vector<BuiltinPreset>& builtin_presets() {
    static const std::vector<BuiltinPreset> presets{
        {QStringLiteral("Precise"), 0.2f, 0.9f, 40, 0.05f, 1.1f},
        {QStringLiteral("Balanced"), 0.7f, 0.95f, 40, 0.05f, 1.1f},
        {QStringLiteral("Creative"), 1.0f, 0.98f, 100, 0.02f, 1.05f},
    };
    return presets;
}

bool is_builtin_preset(const QString& name) {
    const auto& presets = builtin_presets();
    return std::any_of(presets.begin(), presets.end(), [&](const BuiltinPreset& p) { return p.name == name; });
}

QString preset_group() { return QStringLiteral("samplingPresets"); }

QString builtin_preset_json(const BuiltinPreset& p) {
    const QJsonObject o{{QStringLiteral("temperature"), double(p.temperature)},
                        {QStringLiteral("top_p"), double(p.topP)},
                        {QStringLiteral("top_k"), p.topK},
                        {QStringLiteral("min_p"), double(p.minP)},
                        {QStringLiteral("repeat_penalty"), double(p.repeatPenalty)}};
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

bool seed_builtin_presets(QSettings& settings) {
    if (settings.value(kSeededKey).toBool()) return false;
    for (const BuiltinPreset& p : builtin_presets()) {
        const QString key = preset_group() + u'/' + p.name;
        if (!settings.contains(key)) settings.setValue(key, builtin_preset_json(p));
    }
    settings.setValue(kSeededKey, true);
    return true;
}

void reset_builtin_presets(QSettings& settings) {
    for (const BuiltinPreset& p : builtin_presets())
        settings.setValue(preset_group() + u'/' + p.name, builtin_preset_json(p));
    settings.setValue(kSeededKey, true);
}

} // namespace cflow::ui
