#pragma once
// The tools of one conversation: its providers, which of them are enabled, and the lookup from a
// tool name to the provider that runs it. Two enabled providers never offer the same tool name
// (the model could not say which it means): enabling one that would clash is refused with a
// message, and a provider whose tool list grows into a clash (an MCP server's list changed) is
// disabled with that message (notice()). One registry per conversation; nothing global.
#include <memory>
#include <string_view>
#include <vector>

#include <QObject>
#include <QString>

#include <QCoro/QCoroTask>

#include "cflow/base/result.h"
#include "cflow/ui/tools/tool_provider.h"

namespace cflow::ui {

class ToolRegistry : public QObject {
    Q_OBJECT
public:
    explicit ToolRegistry(QObject* parent = nullptr);
    ~ToolRegistry() override;

    // Takes the provider (the registry becomes its QObject parent). Refused when a provider of the
    // same name is here already; enabled = true is refused (the provider is then kept disabled)
    // when one of its tools clashes with an enabled provider's.
    Status addProvider(std::unique_ptr<ToolProvider> provider, bool enabled = true);
    // Deletes the provider; a call of it that is running resolves with an error.
    Status removeProvider(const QString& providerName);
    Status setEnabled(const QString& providerName, bool enabled);
    bool isEnabled(const QString& providerName) const;

    std::vector<ToolProvider*> providers() const;  // in the order they were added
    ToolProvider* provider(const QString& providerName) const;
    // What the next request offers the model: the tools of the enabled providers.
    std::vector<cflow::ToolDefinition> enabledTools() const;
    // The enabled provider offering toolName; nullptr when none does.
    ToolProvider* providerOf(std::string_view toolName) const;
    // Runs call on its provider; a name no enabled provider offers resolves to an error result.
    QCoro::Task<ToolResult> call(cflow::ToolCall call);

    // The last refusal or automatic disabling, for the Tools panel ("" when none).
    const QString& notice() const { return notice_; }

signals:
    // Providers were added, removed, enabled, disabled, or their tools changed.
    void changed();

private:
    struct Entry {
        ToolProvider* provider = nullptr;  // owned: a QObject child of the registry
        bool enabled = false;
    };
    Entry* find(const QString& providerName);
    const Entry* find(const QString& providerName) const;
    // "" when none of provider's tools is offered by another enabled provider; else the message.
    QString clashOf(const ToolProvider& provider) const;
    void onToolsChanged(ToolProvider* provider);

    std::vector<Entry> entries_;
    QString notice_;
};

} // namespace cflow::ui
