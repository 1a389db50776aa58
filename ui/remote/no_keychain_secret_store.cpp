// The build without Qt6Keychain: no key store at all (keychain_secret_store.h). The Connect
// dialog then asks for the key each session and says it is not saved; nothing is written to disk.
#include "cflow/ui/remote/keychain_secret_store.h"

namespace cflow::ui {

std::unique_ptr<SecretStore> make_system_secret_store() { return nullptr; }

} // namespace cflow::ui
