#pragma once
// Sampling controls (temperature, top-k, top-p, min-p, repeat penalty, seed, max tokens,
// threads) with named presets stored in QSettings under "samplingPresets/<name>": the
// built-ins (sampling_presets.h; written on the first run, restored by Reset presets) and the
// user's own, which can be deleted. Max tokens 0 means "auto" (the engine side takes a quarter
// of the model's context). The form scrolls, so the panel fits a small window.
// Settings also round-trip through JSON for the per-conversation record in the store.
#include <QString>
#include <QWidget>

#include "cflow/ui/chat_types.h"

class QComboBox;
class QLabel;
class QPushButton;
class QDoubleSpinBox;
class QSpinBox;

namespace cflow::ui {

QString settings_to_json(const GenerationSettings& settings);
// Fields absent from json keep their values from base.
GenerationSettings settings_from_json(const QString& json, const GenerationSettings& base = {});

class SamplingPanel : public QWidget {
    Q_OBJECT
public:
    explicit SamplingPanel(QWidget* parent = nullptr);

    GenerationSettings settings() const;
    void setSettings(const GenerationSettings& settings);

    void savePreset(const QString& name);   // current values under name
    bool loadPreset(const QString& name);   // false when no such preset
    bool deletePreset(const QString& name);  // false when no such preset
    // Writes the built-in presets again (over changes saved under their names); user presets stay.
    void resetPresets();
    // Built-ins first, in their order, then the user's presets by name.
    QStringList presetNames() const;
    // Whether the values differ from the preset the list shows ("(modified)" beside it).
    bool presetModified() const;
    // Max tokens against the loaded model's context (0: no model) under the conversation's policy:
    // with Stop a reply ends at the context, so the field is capped there; the shifting policies
    // go on past it. The line under the field says which (issue 37: 100000 on a 512-token model
    // was taken without a word).
    void setContextLimits(int contextTokens, ContextPolicy policy);
    QString maxTokensNote() const;

signals:
    void settingsChanged();

private:
    void refreshPresets();
    void updatePresetState();

    QDoubleSpinBox* temperature_;
    QSpinBox* topK_;
    QDoubleSpinBox* topP_;
    QDoubleSpinBox* minP_;
    QDoubleSpinBox* repeatPenalty_;
    QSpinBox* seed_;
    QSpinBox* maxTokens_;
    QLabel* maxTokensNote_;
    int contextTokens_ = 0;
    ContextPolicy contextPolicy_ = ContextPolicy::DropOldest;
    void updateMaxTokensNote();
    QSpinBox* threads_;
    QComboBox* kvCache_;
    QComboBox* expertFetch_;
    QSpinBox* expertCache_;  // MiB; the minimum (kExpertCacheFit) is "fit to free memory"
    QComboBox* presets_;
    QPushButton* deletePreset_;
    QLabel* presetModified_;
};

} // namespace cflow::ui
