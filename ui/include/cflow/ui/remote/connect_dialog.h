#pragma once
// Model > Connect to a server… (issue 34): the saved endpoint profiles, a form for one, a
// connection test that lists the server's models (GET /v1/models) with a diagnosis when it fails,
// and Connect, which saves the profile (its key into the SecretStore, never QSettings) and
// accepts. The caller owns the stores; secrets may be nullptr (a build without a keychain): the
// key is then typed for this session only, and the dialog says so. A keychain that refuses the
// key (locked, none running) is reported, and the next Connect uses the key without saving it.
#include <QDialog>
#include <QPointer>

#include <memory>

#include "cflow/ui/remote/endpoint_profile.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace cflow {
class CancelToken;
}

namespace cflow::ui {

struct EndpointChoice {
    EndpointProfile profile;  // as saved (its id, the chosen model)
    QString apiKey;           // "" = none
};

class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    ConnectDialog(EndpointProfileStore* profiles, SecretStore* secrets, QWidget* parent = nullptr);
    ~ConnectDialog() override;

    // What Connect saved and chose; meaningful after the dialog was accepted.
    EndpointChoice chosen() const { return chosen_; }
    // The line under the form: the last test's outcome or what went wrong ("" when nothing yet).
    QString statusText() const;

signals:
    // A connection test ended and its outcome is shown (tests and screen readers wait for it).
    void testFinished(bool connected);
    // The selected profile's key was read from the SecretStore (or failed to be) and is in the form.
    void keyLoaded();

private:
    void reloadList(const QString& selectId);
    void showProfile(int row);
    void newProfile();
    void deleteProfile();  // asks, then removeProfile
    void removeProfile(const QString& id, bool hadKey);
    void testConnection();
    void connectClicked();
    void browseCaFile();
    // The form as a profile (id of the one shown; "" for a new one).
    EndpointProfile formProfile() const;
    // The worker's answer, on the GUI thread; ignored when a newer test started since.
    void abandonTest();  // another profile is shown: a running test's answer no longer applies
    void finishTest(quint64 generation, bool connected, const QStringList& models, const QString& message);
    void finishConnect(const EndpointProfile& profile, const QString& key);
    void setStatus(const QString& text, bool problem);
    void setBusy(bool busy);
    // After the SecretStore refused the key: Connect then uses it for this session without saving it.
    void setKeyForSessionOnly(bool sessionOnly);

    EndpointProfileStore* profiles_;
    SecretStore* secrets_;
    std::vector<EndpointProfile> saved_;  // in the list's order
    QString shownId_;                     // the profile in the form ("" = a new one)
    bool shownHasKey_ = false;
    QString loadedKey_;                   // the key the SecretStore gave for it (to see an edit)
    bool keyPending_ = false;
    bool keyForSessionOnly_ = false;
    bool testRunning_ = false;
    quint64 testGeneration_ = 0;          // a newer test (or a closed dialog) makes older results stale
    std::shared_ptr<CancelToken> testCancel_;
    EndpointChoice chosen_;

    QListWidget* list_;
    QPushButton* newButton_;
    QPushButton* deleteButton_;
    QLineEdit* name_;
    QLineEdit* baseUrl_;
    QLineEdit* apiKey_;
    QLabel* keyNote_;
    QLineEdit* caFile_;
    QPushButton* browseButton_;
    QSpinBox* readTimeoutS_;
    QPushButton* testButton_;
    QComboBox* model_;
    QLabel* status_;
    QPushButton* connectButton_;
};

} // namespace cflow::ui
