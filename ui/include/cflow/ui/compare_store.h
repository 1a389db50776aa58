#pragma once
// Saved comparisons in the app's SQLite file beside the conversations (default_database_path(),
// CFLOW_STUDIO_DB), table `comparisons`: the request (to re-run it) and the report (to reopen the
// results without measuring again) as JSON (compare_codec.h). One store per thread.
#include <memory>
#include <vector>

#include <QString>
#include <QtGlobal>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"

namespace cflow::ui {

struct StoredComparisonInfo {
    qint64 id = 0;
    QString title;
    qint64 createdMs = 0;  // ms since the Unix epoch, UTC
};

struct StoredComparison {
    StoredComparisonInfo info;
    CompareRequest request;
    CompareReport report;
};

class CompareStore {
public:
    static Result<std::unique_ptr<CompareStore>> open(const QString& path);
    ~CompareStore();
    CompareStore(const CompareStore&) = delete;
    CompareStore& operator=(const CompareStore&) = delete;

    Result<qint64> save(const QString& title, const CompareRequest& request, const CompareReport& report);
    Result<std::vector<StoredComparisonInfo>> list() const;  // newest first
    Result<StoredComparison> load(qint64 id) const;
    Status remove(qint64 id);

private:
    CompareStore(QString path, QString connection);
    QString path_;
    QString connection_;
};

// "decode model, arch1… (3 entries)": a saved run's title from its rows.
QString comparison_title(const CompareReport& report);

} // namespace cflow::ui
