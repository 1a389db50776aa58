#pragma once
// Server > Server settings…: address, port, API key and parallel slots of the local server.
// An address other machines can reach is allowed only with a visible warning (and the advice to
// set a key).
#include <QDialog>

#include "cflow/ui/server_controller.h"

class QLabel;
class QLineEdit;
class QSpinBox;

namespace cflow::ui {

class ServerSettingsDialog : public QDialog {
    Q_OBJECT
public:
    explicit ServerSettingsDialog(const ServerSettings& settings, QWidget* parent = nullptr);
    ServerSettings settings() const;
    QString warningText() const;  // "" when the address is loopback

private:
    void updateWarning();

    QLineEdit* host_;
    QSpinBox* port_;
    QLineEdit* apiKey_;
    QSpinBox* parallel_;
    QLabel* warning_;
    int threadsPerSlot_ = 0;
};

} // namespace cflow::ui
