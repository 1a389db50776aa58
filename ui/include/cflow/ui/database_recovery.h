#pragma once
// Opening the conversation database at start, and what happens when it cannot be used as it is
// (unreadable, not a database, truncated, pages damaged): the user is asked, naming the file and
// the problem, and chooses; the app never falls back to a database that forgets everything at
// exit without saying so, and never writes on into a damaged file.
#include <functional>
#include <memory>

#include <QString>

#include "cflow/ui/conversation_store.h"

class QWidget;

namespace cflow::ui {

enum class DamagedDatabaseChoice {
    OpenCopyReadOnly,      // read the conversations from a copy; nothing new is kept
    MoveAsideAndStartNew,  // rename the file (and its journal) to PATH.damaged-DATE, start an empty one
    Quit,
};

// Asked once per problem: the file and what is wrong with it, for a person.
using DamagedDatabaseAsk = std::function<DamagedDatabaseChoice(const QString& path, const QString& problem)>;

struct OpenedStore {
    std::unique_ptr<ConversationStore> store;  // null: the user chose Quit
    // What the window keeps showing while this store is in use ("" for a sound file): a
    // read-only copy, or where the damaged file went.
    QString notice;
};

// Opens path, runs PRAGMA quick_check, and on any problem asks and acts on the answer; a choice
// that fails in turn (a folder that cannot be written, say) is asked about again with its reason.
OpenedStore open_conversation_store(const QString& path, const DamagedDatabaseAsk& ask);

// The question as a modal message box with the three choices.
DamagedDatabaseChoice ask_about_damaged_database(QWidget* parent, const QString& path, const QString& problem);

} // namespace cflow::ui
