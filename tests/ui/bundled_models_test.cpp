// The bundled model zoo as the installed app sees it: an install tree laid out as the .deb lays
// it out (bin/, share/cflow-studio/default-model.cflow, share/cflow-studio/models/ with the real
// resources/models files) is found by bundled_models_folder(), every file models.json lists under
// models/ opens in the ModelLibrary with its name and quantization, and File > Bundled models…
// shows exactly those rows (disabled where a build has no zoo).
#include <algorithm>
#include <filesystem>
#include <vector>

#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTreeWidget>

#include <gtest/gtest.h>

#include "cflow/ui/default_model.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/model_library.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

namespace fs = std::filesystem;
using cflow::ui::test::qpath;

const fs::path kResources = fs::path(CFLOW_SOURCE_DIR) / "resources";

struct ZooFile {
    QString file;  // file name in models/
    QString name;  // general.name
    QString quant;
};

// What models.json says lives in models/ (the default model's entry sits beside, not in, models/).
std::vector<ZooFile> listed_zoo() {
    QFile index(qpath(kResources / "models" / "models.json"));
    EXPECT_TRUE(index.open(QIODevice::ReadOnly)) << "resources/models/models.json is missing";
    std::vector<ZooFile> out;
    for (const QJsonValue& v : QJsonDocument::fromJson(index.readAll()).object().value(QStringLiteral("models")).toArray()) {
        const QJsonObject m = v.toObject();
        const QString file = m.value(QStringLiteral("file")).toString();
        if (!file.startsWith(QStringLiteral("models/"))) continue;
        out.push_back({file.mid(7), m.value(QStringLiteral("name")).toString(), m.value(QStringLiteral("quant")).toString()});
    }
    return out;
}

// <tmp>/usr/bin and <tmp>/usr/share/cflow-studio{,/models} holding copies of the shipped files.
fs::path make_installed_tree(const std::string& name) {
    const fs::path usr = cflow::test::temp_dir(name) / "usr";
    fs::create_directories(usr / "bin");
    const fs::path share = usr / "share" / "cflow-studio";
    fs::create_directories(share / "models");
    fs::copy_file(kResources / "default-model.cflow", share / "default-model.cflow");
    for (const fs::directory_entry& entry : fs::directory_iterator(kResources / "models"))
        fs::copy_file(entry.path(), share / "models" / entry.path().filename());
    return usr;
}

TEST(BundledModels, TheInstalledZooIsFoundAndEveryListedModelOpens) {
    const fs::path usr = make_installed_tree("bundled_zoo_scan");
    const QString folder = cflow::ui::bundled_models_folder(qpath(usr / "bin"));
    ASSERT_EQ(folder, qpath(usr / "share" / "cflow-studio" / "models"));

    const std::vector<ZooFile> listed = listed_zoo();
    ASSERT_GE(listed.size(), 1u) << "models.json lists no file under models/";
    const std::vector<cflow::ui::LibraryEntry> entries = cflow::ui::scan_model_folder(folder);
    ASSERT_EQ(entries.size(), listed.size());
    for (const ZooFile& z : listed) {
        const auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.fileName == z.file; });
        ASSERT_NE(it, entries.end()) << z.file.toStdString() << " is listed in models.json but not in the library";
        EXPECT_TRUE(it->error.isEmpty()) << z.file.toStdString() << ": " << it->error.toStdString();
        EXPECT_EQ(it->name, z.name) << z.file.toStdString();
        EXPECT_EQ(it->quantization, z.quant) << z.file.toStdString();
        EXPECT_GT(it->layers, 0u) << z.file.toStdString();
    }
}

TEST(BundledModels, TheFileMenuEntryListsTheZoo) {
    const cflow::ui::test::ScopedDb db("bundled_zoo_menu");
    const fs::path usr = make_installed_tree("bundled_zoo_menu");
    cflow::ui::MainWindowOptions options;
    options.bundledModelsFolder = cflow::ui::bundled_models_folder(qpath(usr / "bin"));
    cflow::ui::MainWindow window(nullptr, options);
    auto* action = window.findChild<QAction*>(QStringLiteral("bundledModelsAction"));
    ASSERT_NE(action, nullptr);
    EXPECT_TRUE(action->isEnabled());

    action->trigger();
    const auto libraries = window.findChildren<cflow::ui::ModelLibrary*>();
    ASSERT_EQ(libraries.size(), 1);
    cflow::ui::ModelLibrary* library = libraries.front();
    EXPECT_EQ(library->folder(), qpath(usr / "share" / "cflow-studio" / "models"));
    if (library->isScanning()) {
        QSignalSpy finished(library, &cflow::ui::ModelLibrary::scanFinished);
        ASSERT_TRUE(finished.wait(30000));
    }
    EXPECT_EQ(library->tree()->topLevelItemCount(), int(listed_zoo().size()));
    for (const auto& entry : library->entries()) EXPECT_TRUE(entry.error.isEmpty()) << entry.fileName.toStdString();
}

TEST(BundledModels, WithoutAZooTheEntryIsDisabled) {
    const cflow::ui::test::ScopedDb db("bundled_zoo_none");
    // An install tree with the default model but no models/models.json.
    const fs::path usr = cflow::test::temp_dir("bundled_zoo_none") / "usr";
    fs::create_directories(usr / "bin");
    fs::create_directories(usr / "share" / "cflow-studio" / "models");
    fs::copy_file(kResources / "default-model.cflow", usr / "share" / "cflow-studio" / "default-model.cflow");
    EXPECT_TRUE(cflow::ui::bundled_models_folder(qpath(usr / "bin")).isNull());

    cflow::ui::MainWindowOptions options;
    options.bundledModelsFolder = QString();
    cflow::ui::MainWindow window(nullptr, options);
    auto* action = window.findChild<QAction*>(QStringLiteral("bundledModelsAction"));
    ASSERT_NE(action, nullptr);
    EXPECT_FALSE(action->isEnabled());
    EXPECT_TRUE(action->toolTip().startsWith(QStringLiteral("Not available: no bundled models were found")))
        << action->toolTip().toStdString() << ": a greyed-out entry says why";
    EXPECT_EQ(window.showModelFolder(QString()), nullptr);
    EXPECT_TRUE(window.findChildren<cflow::ui::ModelLibrary*>().isEmpty());
}

// Issue 37: started from the build tree as the README says, the app greyed out File > Bundled
// models…, showed no card for the default model and the scorecard found no RESULTS.md. The build
// now lays out beside each executable what an install puts in share/cflow-studio.
TEST(BundledModels, TheBuildTreeHoldsWhatAnInstallHoldsBesideTheApp) {
#ifdef CFLOW_STUDIO_DIR
    for (const QString& exe_dir : {QStringLiteral(CFLOW_STUDIO_DIR), QFileInfo(QStringLiteral(CFLOW_CLI_PATH)).absolutePath()}) {
        const QString zoo = cflow::ui::bundled_models_folder(exe_dir);
        ASSERT_FALSE(zoo.isEmpty()) << exe_dir.toStdString();
        for (const ZooFile& listed : listed_zoo())
            EXPECT_TRUE(QFile::exists(QDir(zoo).filePath(listed.file))) << listed.file.toStdString();
        const QString model = cflow::ui::default_model_path(exe_dir);
        ASSERT_FALSE(model.isEmpty());
        const QDir beside = QFileInfo(model).dir();
        EXPECT_TRUE(QFile::exists(beside.filePath(QStringLiteral("default-model.md")))) << "the card the Model panel reads";
        EXPECT_TRUE(QFile::exists(beside.filePath(QStringLiteral("training/RESULTS.md")))) << "Table 4.1 for the scorecard";
    }
#else
    GTEST_SKIP() << "a build without the desktop app";
#endif
}

} // namespace
