// GoogleTest main for the Qt tests: one QApplication for the whole run, on the offscreen
// platform unless the caller chose another (so CI needs no X server).
#include <QApplication>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("cflow"));
    QApplication::setApplicationName(QStringLiteral("cflow-ui-tests"));
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
