#pragma once
// Server > Server settings…: address, port, API key and parallel slots of the local server.
// An address other machines can reach is allowed only with a visible warning (and the advice to
// set a key). The key is kept in the OS keychain (ServerKeyKeeper); what the dialog says under it
// tells where it is when that is not the keychain (a refusal, an older build's settings file).
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
    // Where the key is when not simply in the keychain ("" hides the line).
    void setKeyNote(const QString& note);
    QString keyNoteText() const;
    // While the keychain is still being read the key field is read-only (its text is not the key).
    void setKeyPending(bool pending);

private:
    void updateWarning();

    QLineEdit* host_;
    QSpinBox* port_;
    QLineEdit* apiKey_;
    QSpinBox* parallel_;
    QLabel* warning_;
    QLabel* keyNote_;
    int threadsPerSlot_ = 0;
};

} // namespace cflow::ui
