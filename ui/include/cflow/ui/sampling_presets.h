#pragma once
// The sampling presets cflow studio ships: Precise, Balanced and Creative. They live in
// QSettings beside the user's own ("samplingPresets/<name>", settings JSON with only the
// sampling fields, so loading one keeps max tokens, seed and threads).
#include <vector>

#include <QString>

class QSettings;

namespace cflow::ui {

struct BuiltinPreset {
    QString name;
    float temperature;
    float topP;
    int topK;
    float minP;
    float repeatPenalty;
};

// In the order the preset list shows them.
const std::vector<BuiltinPreset>& builtin_presets();
bool is_builtin_preset(const QString& name);

// The QSettings group the presets are stored under.
QString preset_group();
// The preset's JSON (settings_to_json fields) for the sampling values only.
QString builtin_preset_json(const BuiltinPreset& preset);

// Writes the built-ins into settings once (the first run: settings may be empty); a
// built-in the user deleted later stays deleted. False when they had been seeded before.
bool seed_builtin_presets(QSettings& settings);
// Writes every built-in again, over any change the user saved under its name; the user's
// own presets stay.
void reset_builtin_presets(QSettings& settings);

} // namespace cflow::ui
