// GoogleTest main for the Qt tests: one QApplication for the whole run, on the offscreen
// platform unless the caller chose another (so CI needs no X server). Settings and the
// conversation database go to test locations, never the user's.
#include <QApplication>
#include <QDir>
#include <QStandardPaths>

#include <gtest/gtest.h>

#include "test_support.h"

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QStandardPaths::setTestModeEnabled(true);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("cflow"));
    QApplication::setApplicationName(QStringLiteral("cflow-ui-tests"));
    ::testing::InitGoogleTest(&argc, argv);
    if (qEnvironmentVariableIsEmpty("CFLOW_STUDIO_DB"))
        qputenv("CFLOW_STUDIO_DB", (cflow::test::temp_dir("ui_default_db") / "studio.sqlite").string().c_str());
    return RUN_ALL_TESTS();
}
