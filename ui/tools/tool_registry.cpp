#include "cflow/ui/tools/tool_registry.h"

#include <algorithm>
#include <utility>

#include "qt_text.h"

namespace cflow::ui {
namespace {

// A call that is answered without running anything (no provider offers the tool).
QCoro::Task<ToolResult> registry_answer_now(ToolResult result) { co_return result; }

bool registry_offers(const ToolProvider& provider, const std::string& toolName) {
    const std::vector<cflow::ToolDefinition> tools = provider.tools();
    return std::any_of(tools.begin(), tools.end(), [&](const cflow::ToolDefinition& t) { return t.name == toolName; });
}

} // namespace

ToolRegistry::ToolRegistry(QObject* parent) : QObject(parent) {}

ToolRegistry::~ToolRegistry() = default;

ToolRegistry::Entry* ToolRegistry::find(const QString& providerName) {
    for (Entry& e : entries_)
        if (e.provider->name() == providerName) return &e;
    return nullptr;
}

const ToolRegistry::Entry* ToolRegistry::find(const QString& providerName) const {
    for (const Entry& e : entries_)
        if (e.provider->name() == providerName) return &e;
    return nullptr;
}

QString ToolRegistry::clashOf(const ToolProvider& provider) const {
    for (const cflow::ToolDefinition& tool : provider.tools()) {
        for (const Entry& e : entries_) {
            if (!e.enabled || e.provider == &provider) continue;
            if (registry_offers(*e.provider, tool.name))
                return tr("%1 offers a tool named %2, as %3 does; only one of them can be enabled")
                    .arg(provider.name(), qt(tool.name), e.provider->name());
        }
    }
    return {};
}

Status ToolRegistry::addProvider(std::unique_ptr<ToolProvider> provider, bool enabled) {
    if (!provider) return make_error(ErrorKind::Internal, "no provider given");
    const QString name = provider->name();
    if (find(name)) return make_error(utf8(tr("a tool provider named %1 is here already").arg(name)));
    ToolProvider* added = provider.release();
    added->setParent(this);
    entries_.push_back({added, false});
    connect(added, &ToolProvider::toolsChanged, this, [this, added] { onToolsChanged(added); });
    Status status;
    if (enabled) status = setEnabled(name, true);
    emit changed();
    return status;
}

Status ToolRegistry::removeProvider(const QString& providerName) {
    const auto it = std::find_if(entries_.begin(), entries_.end(),
                                 [&](const Entry& e) { return e.provider->name() == providerName; });
    if (it == entries_.end()) return make_error(utf8(tr("no tool provider is named %1").arg(providerName)));
    ToolProvider* removed = it->provider;
    entries_.erase(it);
    delete removed;
    emit changed();
    return {};
}

Status ToolRegistry::setEnabled(const QString& providerName, bool enabled) {
    Entry* entry = find(providerName);
    if (!entry) return make_error(utf8(tr("no tool provider is named %1").arg(providerName)));
    if (entry->enabled == enabled) return {};
    if (enabled) {
        const QString clash = clashOf(*entry->provider);
        if (!clash.isEmpty()) {
            notice_ = clash;
            emit changed();
            return make_error(utf8(clash));
        }
    }
    entry->enabled = enabled;
    emit changed();
    return {};
}

bool ToolRegistry::isEnabled(const QString& providerName) const {
    const Entry* entry = find(providerName);
    return entry && entry->enabled;
}

std::vector<ToolProvider*> ToolRegistry::providers() const {
    std::vector<ToolProvider*> all;
    all.reserve(entries_.size());
    for (const Entry& e : entries_) all.push_back(e.provider);
    return all;
}

ToolProvider* ToolRegistry::provider(const QString& providerName) const {
    const Entry* entry = find(providerName);
    return entry ? entry->provider : nullptr;
}

std::vector<cflow::ToolDefinition> ToolRegistry::enabledTools() const {
    std::vector<cflow::ToolDefinition> tools;
    for (const Entry& e : entries_) {
        if (!e.enabled) continue;
        for (cflow::ToolDefinition& t : e.provider->tools()) tools.push_back(std::move(t));
    }
    return tools;
}

ToolProvider* ToolRegistry::providerOf(std::string_view toolName) const {
    const std::string name(toolName);
    for (const Entry& e : entries_)
        if (e.enabled && registry_offers(*e.provider, name)) return e.provider;
    return nullptr;
}

QCoro::Task<ToolResult> ToolRegistry::call(cflow::ToolCall call) {
    ToolProvider* runner = providerOf(call.name);
    if (!runner)
        return registry_answer_now({false, tr("no enabled tool is named %1").arg(qt(call.name))});
    return runner->call(std::move(call));
}

void ToolRegistry::onToolsChanged(ToolProvider* provider) {
    Entry* entry = nullptr;
    for (Entry& e : entries_)
        if (e.provider == provider) entry = &e;
    if (!entry) return;
    if (entry->enabled) {
        const QString clash = clashOf(*provider);
        if (!clash.isEmpty()) {
            entry->enabled = false;
            notice_ = tr("%1 was disabled: %2").arg(provider->name(), clash);
        }
    }
    emit changed();
}

} // namespace cflow::ui
