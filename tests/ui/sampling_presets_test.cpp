// SamplingPanel presets and layout: the built-in presets on a first run, Reset presets,
// deleting the user's presets, max tokens 0 = auto, and a panel short enough for an
// 800 x 600 window. Each test has its own QSettings (a unique organization name).
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/sampling_panel.h"
#include "cflow/ui/sampling_presets.h"

namespace {

using cflow::ui::GenerationSettings;
using cflow::ui::SamplingPanel;

// Points QSettings at empty settings of its own for the test's lifetime.
struct ScopedSettings {
    QString previous = QCoreApplication::organizationName();
    explicit ScopedSettings(const char* name) {
        QCoreApplication::setOrganizationName(QStringLiteral("cflow-test-%1-%2")
                                                  .arg(QString::fromLatin1(name))
                                                  .arg(QCoreApplication::applicationPid()));
        QSettings().clear();
    }
    ~ScopedSettings() {
        QSettings().clear();
        QCoreApplication::setOrganizationName(previous);
    }
};

QStringList combo_items(const QComboBox* combo) {
    QStringList items;
    for (int i = 0; i < combo->count(); ++i) items << combo->itemText(i);
    return items;
}

TEST(SamplingPresets, FirstRunListsTheBuiltIns) {
    ScopedSettings scoped("presets_first_run");
    SamplingPanel panel;
    const auto* combo = panel.findChild<QComboBox*>(QStringLiteral("presets"));
    ASSERT_NE(combo, nullptr);
    EXPECT_EQ(combo_items(combo), QStringList({"Precise", "Balanced", "Creative"}));
    EXPECT_EQ(combo->currentIndex(), -1) << "none is shown as chosen before one is loaded";

    GenerationSettings before = panel.settings();
    before.maxTokens = 77;
    before.threads = 3;
    panel.setSettings(before);
    struct Expected {
        const char* name;
        float temperature, topP;
        int topK;
        float minP, repeat;
    };
    for (const Expected& e : {Expected{"Precise", 0.2f, 0.9f, 40, 0.05f, 1.1f},
                              Expected{"Balanced", 0.7f, 0.95f, 40, 0.05f, 1.1f},
                              Expected{"Creative", 1.0f, 0.98f, 100, 0.02f, 1.05f}}) {
        SCOPED_TRACE(e.name);
        ASSERT_TRUE(panel.loadPreset(QString::fromLatin1(e.name)));
        const GenerationSettings s = panel.settings();
        EXPECT_FLOAT_EQ(s.sampling.temperature, e.temperature);
        EXPECT_FLOAT_EQ(s.sampling.top_p, e.topP);
        EXPECT_EQ(s.sampling.top_k, e.topK);
        EXPECT_FLOAT_EQ(s.sampling.min_p, e.minP);
        EXPECT_FLOAT_EQ(s.sampling.repeat_penalty, e.repeat);
        EXPECT_EQ(s.maxTokens, 77) << "a built-in sets sampling values only";
        EXPECT_EQ(s.threads, 3u);
    }
}

// Issue 37: the list still said "Creative" after the values had changed.
TEST(SamplingPresets, ChangedValuesShowModifiedUntilSavedOrChosenAgain) {
    ScopedSettings scoped("presets_modified");
    SamplingPanel panel;
    const auto* combo = panel.findChild<QComboBox*>(QStringLiteral("presets"));
    const auto* modified = panel.findChild<QLabel*>(QStringLiteral("presetModified"));
    ASSERT_NE(combo, nullptr);
    ASSERT_NE(modified, nullptr);
    EXPECT_FALSE(panel.presetModified());
    EXPECT_FALSE(modified->isVisibleTo(&panel));

    ASSERT_TRUE(panel.loadPreset(QStringLiteral("Creative")));
    EXPECT_EQ(combo->currentText(), QStringLiteral("Creative")) << "the loaded preset is the one shown";
    EXPECT_FALSE(panel.presetModified());
    GenerationSettings s = panel.settings();
    s.sampling.temperature = 0.5f;
    panel.setSettings(s);
    EXPECT_TRUE(panel.presetModified());
    EXPECT_TRUE(modified->isVisibleTo(&panel));
    EXPECT_TRUE(modified->toolTip().contains(QStringLiteral("Creative")));

    ASSERT_TRUE(panel.loadPreset(QStringLiteral("Creative")));
    EXPECT_FALSE(modified->isVisibleTo(&panel)) << "choosing the preset again restores its values";
    s = panel.settings();
    s.maxTokens = 99;  // not a preset's field
    panel.setSettings(s);
    EXPECT_FALSE(panel.presetModified());

    s.sampling.top_k = 7;
    panel.setSettings(s);
    EXPECT_TRUE(panel.presetModified());
    panel.savePreset(QStringLiteral("Narrow"));
    EXPECT_EQ(combo->currentText(), QStringLiteral("Narrow"));
    EXPECT_FALSE(modified->isVisibleTo(&panel));
    EXPECT_EQ(panel.findChild<QPushButton*>(QStringLiteral("savePreset"))->text(), QStringLiteral("Save as…"));
}

// Issue 37: the sampling fields had no tooltips.
TEST(SamplingPresets, EverySettingHasATooltip) {
    ScopedSettings scoped("presets_tooltips");
    SamplingPanel panel;
    int checked = 0;
    for (QAbstractSpinBox* box : panel.findChildren<QAbstractSpinBox*>()) {
        EXPECT_FALSE(box->toolTip().isEmpty()) << box->objectName().toStdString() << " " << box->accessibleName().toStdString();
        ++checked;
    }
    for (QComboBox* box : panel.findChildren<QComboBox*>()) {
        if (box->objectName() == QStringLiteral("presets")) continue;
        EXPECT_FALSE(box->toolTip().isEmpty()) << box->objectName().toStdString();
    }
    EXPECT_GE(checked, 9);
}

TEST(SamplingPresets, ResetRestoresTheBuiltInsAndKeepsUserPresets) {
    ScopedSettings scoped("presets_reset");
    SamplingPanel panel;
    GenerationSettings mine = panel.settings();
    mine.sampling.temperature = 1.7f;
    panel.setSettings(mine);
    panel.savePreset(QStringLiteral("Mine"));
    panel.savePreset(QStringLiteral("Precise"));  // a built-in overwritten by the user
    ASSERT_TRUE(panel.deletePreset(QStringLiteral("Balanced")));
    EXPECT_EQ(panel.presetNames(), QStringList({"Precise", "Creative", "Mine"}));

    auto* reset = panel.findChild<QPushButton*>(QStringLiteral("resetPresets"));
    ASSERT_NE(reset, nullptr);
    EXPECT_FALSE(reset->accessibleName().isEmpty());
    QTest::mouseClick(reset, Qt::LeftButton);
    EXPECT_EQ(panel.presetNames(), QStringList({"Precise", "Balanced", "Creative", "Mine"}));
    ASSERT_TRUE(panel.loadPreset(QStringLiteral("Precise")));
    EXPECT_FLOAT_EQ(panel.settings().sampling.temperature, 0.2f);
    ASSERT_TRUE(panel.loadPreset(QStringLiteral("Mine")));
    EXPECT_FLOAT_EQ(panel.settings().sampling.temperature, 1.7f);
}

TEST(SamplingPresets, PresetsCanBeDeletedAndDeletedBuiltInsStayDeleted) {
    ScopedSettings scoped("presets_delete");
    {
        SamplingPanel panel;
        panel.savePreset(QStringLiteral("Mine"));
        auto* combo = panel.findChild<QComboBox*>(QStringLiteral("presets"));
        auto* remove = panel.findChild<QPushButton*>(QStringLiteral("deletePreset"));
        ASSERT_TRUE(combo && remove);
        EXPECT_EQ(combo->currentText(), QStringLiteral("Mine"));
        QTest::mouseClick(remove, Qt::LeftButton);
        EXPECT_FALSE(panel.presetNames().contains(QStringLiteral("Mine")));
        EXPECT_EQ(combo->currentIndex(), -1);
        EXPECT_FALSE(remove->isEnabled()) << "nothing chosen to delete";
        EXPECT_FALSE(panel.loadPreset(QStringLiteral("Mine")));
        EXPECT_FALSE(panel.deletePreset(QStringLiteral("Mine")));
        ASSERT_TRUE(panel.deletePreset(QStringLiteral("Creative")));
    }
    SamplingPanel nextRun;
    EXPECT_EQ(nextRun.presetNames(), QStringList({"Precise", "Balanced"}));
}

TEST(SamplingPresets, MaxTokensZeroMeansAuto) {
    ScopedSettings scoped("presets_auto_tokens");
    SamplingPanel panel;
    auto* maxTokens = panel.findChild<QSpinBox*>(QStringLiteral("maxTokens"));
    ASSERT_NE(maxTokens, nullptr);
    EXPECT_EQ(maxTokens->minimum(), 0);
    EXPECT_EQ(maxTokens->maximum(), 1 << 20);
    GenerationSettings s = panel.settings();
    s.maxTokens = 0;
    panel.setSettings(s);
    EXPECT_EQ(panel.settings().maxTokens, 0);
    EXPECT_TRUE(maxTokens->text().startsWith(QStringLiteral("auto"))) << maxTokens->text().toStdString();
}

TEST(SamplingPresets, PanelIsShortEnoughForASmallWindow) {
    ScopedSettings scoped("presets_height");
    SamplingPanel panel;
    constexpr int kMaxMinimumHeightPx = 200;
    EXPECT_LE(panel.minimumSizeHint().height(), kMaxMinimumHeightPx);
    // Shown at that height, every control is still reachable (the form scrolls).
    panel.resize(300, kMaxMinimumHeightPx);
    panel.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&panel));
    EXPECT_LE(panel.height(), kMaxMinimumHeightPx);
    auto* maxTokens = panel.findChild<QSpinBox*>(QStringLiteral("maxTokens"));
    ASSERT_NE(maxTokens, nullptr);
    EXPECT_TRUE(maxTokens->isVisibleTo(&panel));
}

} // namespace
