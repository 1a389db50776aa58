#pragma once
// Tools > Compare models…: 2-8 models, or one model under several configurations, measured side
// by side (cflow/engine/compare/comparison.h) in four pages:
//   1. Models: files and per entry threads, expert fetch (mapped / staged / sync) and KV cache,
//      and endpoints from the saved profiles (speed as received; agreement where they return
//      logprobs: ui/remote/compare_endpoint.h); earlier comparisons saved in the app's database
//      can be reopened or loaded to re-run (their local entries)
//   2. Workloads: speed, perplexity on a bundled sample or a file, top-1 agreement and KL against
//      a reference entry, bytes per token per stream, B_naive / B_critical, expert-wait share
//   3. Running: the comparison on a worker, with progress; Cancel stops it within a token
//   4. Results: the table and the Qt Charts (a bar chart per metric, perplexity against bytes per
//      token with its Pareto front); export CSV, Markdown (from the same table model) and PNGs
// The run's worker shares state with the wizard through a shared_ptr and is waited for on
// destruction, so it never outlives what it reports to.
#include <memory>

#include <QString>
#include <QStringList>
#include <QWizard>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"

namespace cflow::ui {

class CompareResultsModel;
class CompareChartsWidget;
class EndpointProfileStore;
class SecretStore;

class CompareWizard : public QWizard {
    Q_OBJECT
public:
    enum PageId { ModelsPageId, WorkloadsPageId, RunPageId, ResultsPageId };

    // databasePath: where runs are saved ("" = default_database_path(), CFLOW_STUDIO_DB).
    explicit CompareWizard(QWidget* parent = nullptr, const QString& databasePath = QString());
    ~CompareWizard() override;

    // Entries and workloads as the pages will show them (also what "re-run" loads).
    void setRequest(const CompareRequest& request);
    CompareRequest request() const;
    // The entries the models page offers first when nothing else was set (the default model).
    void setInitialModels(const QStringList& paths);
    // Endpoint entries (issue 34): the models page offers the saved profiles of `profiles`, each
    // key read from `secrets` when the entry is added. Both optional (null: local entries only),
    // owned by the caller, which keeps them alive as long as the wizard. Ignored in a build
    // without the network client.
    void setEndpointSources(EndpointProfileStore* profiles, SecretStore* secrets);
    // As the page's "Add endpoint" does: false when the id names no saved profile.
    bool addEndpointEntry(const QString& profileId);
    QStringList endpointEntries() const;  // the chosen profiles' ids, in order

    bool isBusy() const;                    // the comparison runs
    bool hasReport() const;
    const CompareReport& report() const;    // the finished (or reopened) run
    qint64 savedId() const;                 // its row in the database, 0 when not saved
    QString lastError() const;              // the run's or the database's last error, "" if none
    CompareResultsModel* resultsModel() const;
    CompareChartsWidget* charts() const;

    Status exportCsv(const QString& path) const;
    Status exportMarkdown(const QString& path) const;
    Result<QStringList> exportPngs(const QString& folder) const;  // one PNG per chart

    // Shows a saved comparison's results without measuring again.
    Status openSaved(qint64 id);

public slots:
    void reject() override;  // Cancel: stops a running comparison first

public:
    struct PagesState;  // the pages' common state (compare_wizard.cpp)

private:
    std::shared_ptr<PagesState> shared_;
};

} // namespace cflow::ui
