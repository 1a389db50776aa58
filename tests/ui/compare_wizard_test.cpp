// The comparison's Qt side: the results table and its CSV / Markdown exports (the same cells'
// text, so the same numbers), saved runs in SQLite (round trip, newest first, delete), the
// Pareto front, the Qt Charts built from the report (bar values and scatter points are the
// report's), PNG export, and the wizard end to end on two of the shipped models: run on the
// worker, results shown, saved, reopened, cancelled.
#include <QAbstractButton>
#include <QApplication>
#include <QFontMetricsF>
#include <QDir>
#include <QHelpEvent>
#include <QJsonObject>
#include <QTableView>
#include <QToolTip>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProcess>
#include <QTest>
#include <QWizardPage>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>

#include <QtCharts/QValueAxis>
#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>

#include "cflow/ui/compare_charts.h"
#include "cflow/ui/compare_codec.h"
#include "cflow/ui/compare_results_model.h"
#include "cflow/ui/compare_samples.h"
#include "cflow/ui/compare_store.h"
#include "cflow/ui/compare_wizard.h"
#include "test_support.h"
#include "ui_test_models.h"
#include "wizard_wait.h"

namespace {

using namespace cflow;
using namespace cflow::ui;
using cflow::ui::test::qpath;
namespace fs = std::filesystem;

// A report as the runner returns one; the values are inputs here, every check compares an
// output (table, export, chart, database) with them.
CompareReport sample_report() {
    CompareReport r;
    r.textName = "bundled: short stories";
    r.textTokens = 412;
    r.referenceName = "a, \"quoted\"";
    r.isa = "avx2";
    const double values[3][3] = {{123.456789, 5.4321, 2.5e6}, {98.7, 6.25, 1.25e6}, {150.0, 7.5, 1.75e6}};
    const char* names[3] = {"a, \"quoted\"", "b|pipe", "c"};
    for (int i = 0; i < 3; ++i) {
        CompareRow row;
        row.entry.modelPath = std::string("/models/") + names[i] + ".cflow";
        row.entry.threads = unsigned(i);
        row.entry.expertFetch = i == 2 ? ExpertFetch::Staged : ExpertFetch::Mapped;
        row.displayName = names[i];
        row.values[size_t(CompareMetric::DecodeTokPerS)] = values[i][0];
        row.values[size_t(CompareMetric::Perplexity)] = values[i][1];
        row.values[size_t(CompareMetric::BytesPerToken)] = values[i][2];
        if (i != 1) row.values[size_t(CompareMetric::BCriticalMiB)] = 1.5 + i;
        r.rows.push_back(row);
    }
    return r;
}

// RFC 4180 fields of one line (quotes doubled inside quoted fields).
QStringList csv_fields(const QString& line) {
    QStringList out;
    QString field;
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (quoted) {
            if (c == u'"' && i + 1 < line.size() && line[i + 1] == u'"') field += u'"', ++i;
            else if (c == u'"') quoted = false;
            else field += c;
        } else if (c == u'"') quoted = true;
        else if (c == u',') out << field, field.clear();
        else field += c;
    }
    out << field;
    return out;
}

TEST(CompareResults, CsvAndMarkdownHoldTheTablesNumbers) {
    CompareResultsModel model;
    model.setReport(sample_report());
    ASSERT_EQ(model.rowCount(), 3);
    ASSERT_EQ(model.columnCount(), 5);  // entry + the four metrics some row has
    EXPECT_EQ(model.metrics().front(), CompareMetric::DecodeTokPerS);
    EXPECT_EQ(model.data(model.index(0, 1)).toString(), QStringLiteral("123.46"));  // 2 decimals for tok/s
    EXPECT_DOUBLE_EQ(model.data(model.index(0, 1), CompareResultsModel::RawValueRole).toDouble(), 123.456789);
    EXPECT_FALSE(model.data(model.index(1, 4)).isValid());  // b has no B_critical

    const QStringList lines = model.toCsv().split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
    ASSERT_EQ(lines.size(), 4);
    EXPECT_EQ(lines[0], QStringLiteral("entry,decode_tok_per_s,perplexity,bytes_per_token,b_critical_mib"));
    const QString markdown = model.toMarkdown();
    const QStringList mdLines = markdown.split(u'\n');
    for (int r = 0; r < model.rowCount(); ++r) {
        const QStringList fields = csv_fields(lines[r + 1]);
        ASSERT_EQ(fields.size(), model.columnCount()) << lines[r + 1].toStdString();
        QStringList mdCells = mdLines[r + 2].mid(2, mdLines[r + 2].size() - 4).split(QStringLiteral(" | "));
        for (int c = 0; c < model.columnCount(); ++c) {
            const QString cell = model.data(model.index(r, c)).toString();
            EXPECT_EQ(fields[c], cell) << r << "," << c;
            const QString md = cell.isEmpty() ? QStringLiteral("–") : QString(cell).replace(u'|', QStringLiteral("\\|"));
            if (c < mdCells.size()) {
                EXPECT_EQ(mdCells[c], md) << r << "," << c;
            }
        }
    }
    EXPECT_TRUE(markdown.contains(QStringLiteral("| Entry | Decode (tok/s) | Perplexity |")));
    EXPECT_TRUE(markdown.contains(QStringLiteral("412 tokens")));

    const auto dir = cflow::test::temp_dir("compare_exports");
    const QString path = qpath(dir / "table.csv");
    ASSERT_TRUE(save_text_file(path, model.toCsv()).ok());
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(file.readAll()), model.toCsv());
    EXPECT_FALSE(save_text_file(qpath(dir / "absent" / "x.csv"), model.toCsv()).ok());
}

TEST(CompareStore, SavesListsReopensAndDeletesRuns) {
    const QString db = qpath(cflow::test::temp_dir("compare_store") / "studio.sqlite");
    QFile::remove(db);
    auto store = CompareStore::open(db);
    ASSERT_TRUE(store.ok()) << store.error();
    CompareRequest request;
    request.entries = {CompareEntry{"first", "/m/a.cflow", 2, ExpertFetch::Sync, KvCacheType::F16}, CompareEntry{{}, "/m/b.vflow"}};
    request.workloads.agreement = true;
    request.text = "Once upon a time.";
    request.textName = "bundled: short stories";
    request.referenceEntry = 1;
    request.maxScoredTokens = 99;
    const CompareReport report = sample_report();
    auto first = (*store)->save(comparison_title(report), request, report);
    ASSERT_TRUE(first.ok()) << first.error();
    auto second = (*store)->save(QStringLiteral("second"), request, report);
    ASSERT_TRUE(second.ok());
    auto runs = (*store)->list();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    EXPECT_EQ((*runs)[0].id, *second);  // newest first
    EXPECT_EQ((*runs)[1].title, QStringLiteral("a, \"quoted\" vs b|pipe vs c"));

    // Another connection (as a later session would open it) reads the same run back.
    auto again = CompareStore::open(db);
    ASSERT_TRUE(again.ok());
    auto loaded = (*again)->load(*first);
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    ASSERT_EQ(loaded->request.entries.size(), 2u);
    EXPECT_EQ(loaded->request.entries[0].label, "first");
    EXPECT_EQ(loaded->request.entries[0].threads, 2u);
    EXPECT_EQ(loaded->request.entries[0].expertFetch, ExpertFetch::Sync);
    EXPECT_EQ(loaded->request.entries[0].kvCache, KvCacheType::F16);
    EXPECT_TRUE(loaded->request.workloads.agreement);
    EXPECT_EQ(loaded->request.text, request.text);
    EXPECT_EQ(loaded->request.referenceEntry, 1u);
    EXPECT_EQ(loaded->request.maxScoredTokens, 99u);
    CompareResultsModel a, b;
    a.setReport(report);
    b.setReport(loaded->report);
    EXPECT_EQ(a.toCsv(), b.toCsv());
    EXPECT_EQ(loaded->report.rows[2].entry.expertFetch, ExpertFetch::Staged);
    EXPECT_DOUBLE_EQ(*loaded->report.rows[0].value(CompareMetric::DecodeTokPerS), 123.456789);
    EXPECT_FALSE(loaded->report.rows[1].value(CompareMetric::BCriticalMiB).has_value());

    ASSERT_TRUE((*store)->remove(*first).ok());
    EXPECT_FALSE((*store)->load(*first).ok());
    EXPECT_EQ((*store)->list()->size(), 1u);
}

TEST(CompareCharts, ParetoFrontKeepsThePointsNothingBeats) {
    // (cost, loss): 1 is beaten by 0 on both axes, 3 ties 2's cost with a worse loss.
    const std::vector<ParetoPoint> points = {{1.0, 5.0}, {2.0, 6.0}, {3.0, 4.0}, {3.0, 4.5}, {0.5, 9.0}};
    EXPECT_EQ(pareto_front(points), (std::vector<size_t>{4, 0, 2}));
    EXPECT_TRUE(pareto_front({}).empty());
}

// Issue 37: byte counts read as 2500000 and ticks fell on 484435.
TEST(CompareCharts, BytesAreInMiBAndTicksFallOnNiceSteps) {
    const CompareReport report = sample_report();
    std::unique_ptr<QChart> bytes(make_metric_chart(report, CompareMetric::BytesPerToken));
    ASSERT_TRUE(bytes);
    auto* series = qobject_cast<QBarSeries*>(bytes->series().front());
    ASSERT_TRUE(series);
    for (int i = 0; i < 3; ++i)
        EXPECT_DOUBLE_EQ(series->barSets().front()->at(i), *report.rows[size_t(i)].value(CompareMetric::BytesPerToken) / (1024.0 * 1024.0));
    EXPECT_TRUE(bytes->title().contains(QStringLiteral("(MiB)"))) << bytes->title().toStdString();
    for (std::unique_ptr<QChart>* chart : {&bytes}) {
        auto* y = qobject_cast<QValueAxis*>((*chart)->axes(Qt::Vertical).front());
        ASSERT_TRUE(y);
        EXPECT_EQ(y->titleText(), QStringLiteral("MiB"));
        const double step = (y->max() - y->min()) / (y->tickCount() - 1);
        const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
        EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 2.5) < 1e-9 ||
                    std::abs(mantissa - 5) < 1e-9)
            << "tick step " << step;
        EXPECT_GE(y->max(), 2.5e6 / (1024.0 * 1024.0));
    }
    std::unique_ptr<QChart> decode(make_metric_chart(report, CompareMetric::DecodeTokPerS));
    EXPECT_EQ(qobject_cast<QBarSeries*>(decode->series().front())->labelsPrecision(), 3) << "150.0, not 150.000000";
}

TEST(CompareCharts, ChartsShowTheReportsValuesAndSaveAsPng) {
    const CompareReport report = sample_report();
    std::unique_ptr<QChart> bars(make_metric_chart(report, CompareMetric::DecodeTokPerS));
    ASSERT_TRUE(bars);
    auto* series = qobject_cast<QBarSeries*>(bars->series().front());
    ASSERT_TRUE(series);
    ASSERT_EQ(series->barSets().front()->count(), 3);
    for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(series->barSets().front()->at(i), *report.rows[size_t(i)].value(CompareMetric::DecodeTokPerS));
    std::unique_ptr<QChart> partial(make_metric_chart(report, CompareMetric::BCriticalMiB));
    ASSERT_TRUE(partial);
    EXPECT_EQ(qobject_cast<QBarSeries*>(partial->series().front())->barSets().front()->count(), 2);  // b has none
    EXPECT_EQ(make_metric_chart(report, CompareMetric::MeanKlNats), nullptr);

    std::unique_ptr<QChart> scatter(make_pareto_chart(report));
    ASSERT_TRUE(scatter);
    int points = 0;
    QLineSeries* front = nullptr;
    for (QAbstractSeries* s : scatter->series()) {
        if (auto* sc = qobject_cast<QScatterSeries*>(s)) {
            ASSERT_EQ(sc->count(), 1);
            const size_t row = size_t(sc->name().section(u':', 0, 0).toInt() - 1);
            EXPECT_DOUBLE_EQ(sc->at(0).x(), *report.rows[row].value(CompareMetric::BytesPerToken) / (1024.0 * 1024.0));
            EXPECT_DOUBLE_EQ(sc->at(0).y(), *report.rows[row].value(CompareMetric::Perplexity));
            ++points;
        } else if (auto* line = qobject_cast<QLineSeries*>(s)) {
            front = line;
        }
    }
    EXPECT_EQ(points, 3);
    ASSERT_TRUE(front);
    // b (1.25 MiB, 6.25) and a (2.38 MiB, 5.43) are on the front; c (1.67 MiB, 7.5) is beaten by b.
    ASSERT_EQ(front->count(), 2);
    EXPECT_DOUBLE_EQ(front->at(0).y(), 6.25);
    EXPECT_DOUBLE_EQ(front->at(1).y(), 5.4321);

    CompareChartsWidget widget;
    widget.setReport(report);
    EXPECT_EQ(widget.chartNames(), (QStringList{QString::fromLatin1(kParetoChartName), "decode_tok_per_s", "perplexity",
                                                "bytes_per_token", "b_critical_mib"}));
    const auto dir = cflow::test::temp_dir("compare_pngs");
    auto written = widget.savePngs(qpath(dir));
    ASSERT_TRUE(written.ok()) << written.error();
    ASSERT_EQ(written->size(), 5);
    for (const QString& png : *written) {
        QImage image(png);
        ASSERT_FALSE(image.isNull()) << png.toStdString();
        EXPECT_EQ(image.size(), QSize(900, 560));
        EXPECT_GT(QFileInfo(png).size(), 8000) << png.toStdString();  // axes, bars and labels, not a blank
    }
}

// Issue 37: stories260K (512-token vocabulary) "beat" the default model (4096 tokens) on perplexity
// 4.6 to 16.97. A report whose tokenizers differ, with long entry names the charts must elide.
CompareReport cross_tokenizer_report() {
    CompareReport r;
    r.textName = "bundled: short stories";
    r.textTokens = 300;
    r.scoredTextBytes = 1234;
    r.tokenizersDiffer = true;
    r.isa = "avx2";
    struct {
        const char* name;
        double ppl, bpb, bytes, decode;
    } rows[] = {{"stories260K converted from llama2.c, 512-token vocabulary", 4.6, 2.0468, 1.0e6, 812.25},
                {"default-model.cflow trained on TinyStories with 4096 tokens", 16.97, 1.1302, 2.5e6, 95.5}};
    for (const auto& in : rows) {
        CompareRow row;
        row.entry.modelPath = std::string("/models/") + in.name + ".cflow";
        row.displayName = in.name;
        row.values[size_t(CompareMetric::Perplexity)] = in.ppl;
        row.values[size_t(CompareMetric::BitsPerByte)] = in.bpb;
        row.values[size_t(CompareMetric::BytesPerToken)] = in.bytes;
        row.values[size_t(CompareMetric::DecodeTokPerS)] = in.decode;
        r.rows.push_back(row);
    }
    return r;
}

TEST(CompareCharts, CrossTokenizerEntriesAreRankedByBitsPerByteWithANote) {
    const CompareReport report = cross_tokenizer_report();
    EXPECT_EQ(compare_quality_metric(report), CompareMetric::BitsPerByte);
    // The default model ranks first although its perplexity is higher.
    const QString ranking = compare_quality_ranking(report);
    EXPECT_TRUE(ranking.startsWith(QStringLiteral("Ranked by bits per byte (lower is better): 1. default-model.cflow"))) << ranking.toStdString();
    EXPECT_TRUE(ranking.contains(QStringLiteral("(1.1302), 2. stories260K"))) << ranking.toStdString();
    EXPECT_TRUE(compare_quality_note(report).contains(QStringLiteral("different tokenizers")));
    EXPECT_TRUE(compare_quality_note(report).contains(QStringLiteral("same 1234 bytes")));

    // The scatter plots bits per byte, and its Pareto front holds both (cheaper vs better).
    std::unique_ptr<QChart> scatter(make_pareto_chart(report));
    ASSERT_TRUE(scatter);
    EXPECT_TRUE(scatter->title().startsWith(QStringLiteral("Bits per byte"))) << scatter->title().toStdString();
    for (QAbstractSeries* s : scatter->series())
        if (auto* sc = qobject_cast<QScatterSeries*>(s)) {
            const size_t row = size_t(sc->name().section(u':', 0, 0).toInt() - 1);
            EXPECT_DOUBLE_EQ(sc->at(0).y(), *report.rows[row].value(CompareMetric::BitsPerByte));
        }
    std::unique_ptr<QChart> ppl(make_metric_chart(report, CompareMetric::Perplexity));
    EXPECT_TRUE(ppl->title().contains(QStringLiteral("not comparable across these tokenizers"))) << ppl->title().toStdString();

    CompareChartsWidget widget;
    widget.setReport(report);
    ASSERT_FALSE(widget.chartNames().isEmpty());
    EXPECT_EQ(widget.chartNames().front(), QString::fromLatin1(kParetoBitsChartName));

    // The table keeps perplexity, with bits per byte beside it; the Markdown says why.
    CompareResultsModel model;
    model.setReport(report);
    ASSERT_EQ(model.headerData(2, Qt::Horizontal).toString(), QStringLiteral("Perplexity"));
    ASSERT_EQ(model.headerData(3, Qt::Horizontal).toString(), QStringLiteral("Bits per byte"));
    EXPECT_EQ(model.data(model.index(0, 3)).toString(), QStringLiteral("2.0468"));
    EXPECT_TRUE(model.headerData(2, Qt::Horizontal, Qt::ToolTipRole).toString().contains(QStringLiteral("bits per byte")));
    EXPECT_TRUE(model.toMarkdown().contains(ranking));

    // Saved and reopened (and a run saved before bits per byte still opens, ranked by perplexity).
    auto reopened = report_from_json(report_to_json(report));
    ASSERT_TRUE(reopened.ok()) << reopened.error();
    EXPECT_TRUE(reopened->tokenizersDiffer);
    EXPECT_EQ(reopened->scoredTextBytes, 1234u);
    EXPECT_DOUBLE_EQ(*reopened->rows[1].value(CompareMetric::BitsPerByte), 1.1302);
    QJsonObject old = report_to_json(report);
    old.remove(QStringLiteral("tokenizers_differ"));
    old.remove(QStringLiteral("scored_text_bytes"));
    auto older = report_from_json(old);
    ASSERT_TRUE(older.ok()) << older.error();
    EXPECT_FALSE(older->tokenizersDiffer);
    EXPECT_EQ(compare_quality_metric(*older), CompareMetric::Perplexity);
    EXPECT_TRUE(compare_quality_note(*older).isEmpty());
    EXPECT_TRUE(compare_quality_note(sample_report()).isEmpty());
}

// Where a value of a chart is drawn, in the view's viewport coordinates.
QPoint view_point(const QChartView& view, QPointF value, QAbstractSeries* series) {
    const QPointF inChart = view.chart()->mapToPosition(value, series);
    return view.mapFromScene(view.chart()->mapToScene(inChart));
}

void show_at_minimum_size(QChartView& view) {
    view.resize(view.minimumSize());
    view.show();
    for (int i = 0; i < 5; ++i) QApplication::processEvents();  // layout, then the label fit and its relayout
}

TEST(CompareCharts, HoveringGivesTheFullNameAndTheExactValueWithItsUnit) {
    const CompareReport report = cross_tokenizer_report();
    CompareChartView bars(make_metric_chart(report, CompareMetric::BytesPerToken), report, CompareMetric::BytesPerToken);
    show_at_minimum_size(bars);
    auto* series = bars.chart()->series().front();
    const QRectF plot = bars.chart()->plotArea();
    for (int i = 0; i < 2; ++i) {
        const double bytes = *report.rows[size_t(i)].value(CompareMetric::BytesPerToken);
        const QString expected = QString::fromStdString(report.rows[size_t(i)].displayName) +
                                 QStringLiteral("\nBytes/token: ") + metric_value_text(CompareMetric::BytesPerToken, bytes);
        // On the bar, halfway up.
        const QPoint onBar = view_point(bars, QPointF(i, bytes / (1024.0 * 1024.0) / 2), series);
        EXPECT_EQ(bars.toolTipAt(onBar), expected);
        // On its (elided) axis label, under the plot.
        const QPoint onLabel = bars.mapFromScene(bars.chart()->mapToScene(QPointF(view_point(bars, QPointF(i, 0), series).x(), plot.bottom() + 8)));
        EXPECT_EQ(bars.toolTipAt(onLabel), expected);
    }
    EXPECT_EQ(metric_value_text(CompareMetric::BytesPerToken, 2.5e6), QStringLiteral("2500000 bytes (2.38 MiB)"));
    EXPECT_TRUE(bars.toolTipAt(QPoint(2, 2)).isEmpty());  // the corner: no entry

    // The real hover: Qt's tooltip event shows that text.
    const QPoint onFirst = view_point(bars, QPointF(0, 0.5), series);
    QHelpEvent help(QEvent::ToolTip, onFirst, bars.viewport()->mapToGlobal(onFirst));
    QApplication::sendEvent(bars.viewport(), &help);
    EXPECT_EQ(QToolTip::text(), bars.toolTipAt(onFirst));
    EXPECT_TRUE(QToolTip::text().startsWith(QStringLiteral("stories260K converted from llama2.c, 512-token vocabulary\n")));

    // A scatter point: the name, its bytes per token, bits per byte and the perplexity kept beside it.
    CompareChartView scatter(make_pareto_chart(report), report, std::nullopt);
    show_at_minimum_size(scatter);
    int points = 0;
    for (QAbstractSeries* s : scatter.chart()->series()) {
        auto* sc = qobject_cast<QScatterSeries*>(s);
        if (!sc) continue;
        const size_t row = size_t(sc->name().section(u':', 0, 0).toInt() - 1);
        const QString text = scatter.toolTipAt(view_point(scatter, sc->at(0), sc) + QPoint(2, 1));
        EXPECT_TRUE(text.startsWith(QString::fromStdString(report.rows[row].displayName) + u'\n')) << text.toStdString();
        EXPECT_TRUE(text.contains(QStringLiteral("Bits per byte: ") + metric_value_text(CompareMetric::BitsPerByte, *report.rows[row].value(CompareMetric::BitsPerByte))))
            << text.toStdString();
        EXPECT_TRUE(text.contains(QStringLiteral(" bits/byte")));
        EXPECT_TRUE(text.contains(QStringLiteral("Perplexity: ") + format_metric(CompareMetric::Perplexity, *report.rows[row].value(CompareMetric::Perplexity))));
        ++points;
    }
    EXPECT_EQ(points, 2);
}

// Value labels in a large font (a desktop with big fonts or a high scale factor).
QChart* with_large_value_labels(QChart* chart) {
    QFont large;
    large.setPixelSize(26);
    for (QAbstractSeries* s : chart->series()) {
        if (auto* bars = qobject_cast<QBarSeries*>(s))
            for (QBarSet* set : bars->barSets()) set->setLabelFont(large);
        if (auto* points = qobject_cast<QScatterSeries*>(s)) points->setPointLabelsFont(large);
    }
    return chart;
}

// Every value label (above a bar; above a scatter point, with its marker) inside the plot area,
// at the smallest size the charts page gives a chart, in a large font.
TEST(CompareCharts, ValueLabelsStayInsideThePlot) {
    CompareReport report = cross_tokenizer_report();
    report.tokenizersDiffer = false;  // the perplexity scatter: 4.6 and 16.97 far apart
    for (CompareMetric metric : {CompareMetric::DecodeTokPerS, CompareMetric::BytesPerToken, CompareMetric::Perplexity}) {
        CompareChartView view(with_large_value_labels(make_metric_chart(report, metric)), report, metric);
        show_at_minimum_size(view);
        auto* series = qobject_cast<QBarSeries*>(view.chart()->series().front());
        ASSERT_TRUE(series);
        QBarSet* set = series->barSets().front();
        const QRectF plot = view.chart()->plotArea();
        const qreal labelHeight = QFontMetricsF(set->labelFont()).height();
        for (int i = 0; i < set->count(); ++i) {
            const QPointF top = view.chart()->mapToPosition(QPointF(i, set->at(i)), series);
            EXPECT_GE(top.y() - labelHeight, plot.top() - 0.5) << compare_metric_key(metric) << " bar " << i;
        }
    }
    // Six entries: the legend under the scatter takes rows, the plot is short.
    for (int i = 0; i < 4; ++i) {
        CompareRow row = report.rows[size_t(i % 2)];
        row.displayName += " (variant " + std::to_string(i) + ")";
        row.values[size_t(CompareMetric::Perplexity)] = 6.0 + 2.5 * i;
        row.values[size_t(CompareMetric::BitsPerByte)] = 1.2 + 0.2 * i;
        row.values[size_t(CompareMetric::BytesPerToken)] = 1.2e6 + 3e5 * i;
        report.rows.push_back(row);
    }
    for (bool differ : {false, true}) {
        report.tokenizersDiffer = differ;
        CompareChartView view(with_large_value_labels(make_pareto_chart(report)), report, std::nullopt);
        show_at_minimum_size(view);
        const QRectF plot = view.chart()->plotArea();
        for (QAbstractSeries* s : view.chart()->series()) {
            auto* sc = qobject_cast<QScatterSeries*>(s);
            if (!sc) continue;
            const QPointF p = view.chart()->mapToPosition(sc->at(0), sc);
            const QFontMetricsF metrics(sc->pointLabelsFont());
            const qreal half = sc->markerSize() / 2;
            EXPECT_GE(p.y() - half - metrics.height(), plot.top() - 0.5) << sc->name().toStdString();
            EXPECT_LE(p.y() + half, plot.bottom() + 0.5) << sc->name().toStdString();
            EXPECT_GE(p.x() - half, plot.left() - 0.5) << sc->name().toStdString();
            EXPECT_LE(p.x() + half, plot.right() + 0.5) << sc->name().toStdString();
        }
    }
}

// The shipped models (resources/): the default one and a zoo model share the stories tokenizer.
fs::path resource(const char* name) { return fs::path(CFLOW_SOURCE_DIR) / "resources" / name; }

bool wait_complete(CompareWizard& wizard, int timeoutMs = 240000) {
    return cflow::ui::test::wait_page_complete(wizard, timeoutMs);
}

CompareRequest small_request() {
    CompareRequest r;
    r.entries = {CompareEntry{{}, resource("default-model.cflow").string(), 1},
                 CompareEntry{{}, resource("models/arch2_4_sync.q4_0.cflow").string(), 1}};
    r.workloads.agreement = true;
    r.promptTokens = 8;
    r.warmupTokens = 1;
    r.decodeTokens = 8;
    r.maxScoredTokens = 64;
    r.contextTokens = 64;
    r.textName = bundled_text_samples().front().name.toStdString();
    return r;
}

TEST(CompareWizard, ComparesTwoShippedModelsSavesAndReopensTheRun) {
    const QString db = qpath(cflow::test::temp_dir("compare_wizard") / "studio.sqlite");
    QFile::remove(db);
    CompareWizard wizard(nullptr, db);
    wizard.setRequest(small_request());
    wizard.show();
    ASSERT_TRUE(wait_complete(wizard));  // models page: two existing files
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::WorkloadsPageId);
    ASSERT_TRUE(wait_complete(wizard));
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::RunPageId);
    ASSERT_TRUE(wait_complete(wizard)) << wizard.lastError().toStdString();
    ASSERT_TRUE(wizard.hasReport());
    EXPECT_GT(wizard.savedId(), 0);
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::ResultsPageId);

    const CompareReport& report = wizard.report();
    ASSERT_EQ(report.rows.size(), 2u);
    EXPECT_EQ(report.textName, "bundled: short stories");
    EXPECT_GT(report.textTokens, 64u);  // the bundled sample is longer than the scored budget
    for (const CompareRow& row : report.rows) {
        EXPECT_GT(*row.value(CompareMetric::DecodeTokPerS), 0);
        EXPECT_GT(*row.value(CompareMetric::Perplexity), 1);
        EXPECT_GT(*row.value(CompareMetric::BytesPerToken), 0);
        EXPECT_GT(*row.value(CompareMetric::BCriticalMiB), 0);
    }
    // Two differently trained models: they agree on most tokens of a story, not on all.
    const double agreement = *report.rows[1].value(CompareMetric::Top1Agreement);
    EXPECT_GT(agreement, 0.2);
    EXPECT_LT(agreement, 1.0);
    CompareResultsModel* model = wizard.resultsModel();
    ASSERT_EQ(model->rowCount(), 2);
    EXPECT_TRUE(wizard.charts()->chartNames().contains(QString::fromLatin1(kParetoChartName)));

    const auto dir = cflow::test::temp_dir("compare_wizard_exports");
    ASSERT_TRUE(wizard.exportCsv(qpath(dir / "c.csv")).ok());
    QFile csv(qpath(dir / "c.csv"));
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(csv.readAll()), model->toCsv());
    const QString csvText = model->toCsv();

    // Reopened from the database in a fresh wizard: the same table, no measuring.
    CompareWizard reopened(nullptr, db);
    reopened.show();
    ASSERT_TRUE(reopened.openSaved(wizard.savedId()).ok());
    EXPECT_EQ(reopened.currentId(), CompareWizard::ResultsPageId);
    EXPECT_FALSE(reopened.isBusy());
    EXPECT_EQ(reopened.resultsModel()->toCsv(), csvText);
    EXPECT_EQ(reopened.request().entries.size(), 2u);
    EXPECT_FALSE(reopened.openSaved(wizard.savedId() + 100).ok());
}

// Two models whose tokenizers differ (the default model's 4096 stories tokens, the synthetic
// ChatML model's byte-level vocabulary): the run scores one text, ranks by bits per byte and says why.
TEST(CompareWizard, CrossTokenizerRunRanksByBitsPerByteAndSaysWhy) {
    const QString db = qpath(cflow::test::temp_dir("compare_wizard_tokenizers") / "studio.sqlite");
    QFile::remove(db);
    CompareWizard wizard(nullptr, db);
    CompareRequest r = small_request();
    r.entries[1] = CompareEntry{{}, cflow::ui::test::chatml_model().string(), 1};
    r.workloads = CompareWorkloads{false, true, false, true, false, false};  // the scatter needs bytes per token
    r.maxScoredTokens = 256;
    wizard.setRequest(r);
    wizard.show();
    ASSERT_TRUE(wait_complete(wizard));
    wizard.next();
    ASSERT_TRUE(wait_complete(wizard));
    wizard.next();
    ASSERT_TRUE(wait_complete(wizard)) << wizard.lastError().toStdString();
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::ResultsPageId);
    const CompareReport& report = wizard.report();
    EXPECT_TRUE(report.tokenizersDiffer);
    EXPECT_GT(report.scoredTextBytes, 150u);
    for (const CompareRow& row : report.rows) {
        EXPECT_GT(*row.value(CompareMetric::BitsPerByte), 0);
        EXPECT_GT(*row.value(CompareMetric::Perplexity), 1);
    }
    auto* note = wizard.findChild<QLabel*>(QStringLiteral("compareQualityNote"));
    ASSERT_TRUE(note);
    EXPECT_TRUE(note->isVisible());
    EXPECT_TRUE(note->text().contains(QStringLiteral("different tokenizers")));
    auto* summary = wizard.findChild<QLabel*>(QStringLiteral("compareSummary"));
    ASSERT_TRUE(summary);
    EXPECT_TRUE(summary->text().contains(QStringLiteral("Ranked by bits per byte"))) << summary->text().toStdString();
    // The trained default model needs fewer bits a byte than the random synthetic one.
    EXPECT_EQ(rank_compare_rows(report, CompareMetric::BitsPerByte).front(), 0u);
    EXPECT_EQ(wizard.charts()->chartNames().front(), QString::fromLatin1(kParetoBitsChartName));
}

TEST(CompareWizard, CancelStopsARunningComparison) {
    const QString db = qpath(cflow::test::temp_dir("compare_wizard_cancel") / "studio.sqlite");
    CompareWizard wizard(nullptr, db);
    CompareRequest r = small_request();
    r.decodeTokens = 4000;  // long enough to be cancelled mid-run
    r.promptTokens = 8;
    wizard.setRequest(r);
    wizard.show();
    ASSERT_TRUE(wait_complete(wizard));
    wizard.next();
    ASSERT_TRUE(wait_complete(wizard));
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::RunPageId);
    QTest::qWait(200);
    ASSERT_TRUE(wizard.isBusy());
    QElapsedTimer timer;
    timer.start();
    wizard.reject();
    EXPECT_LT(timer.elapsed(), 10000);  // reject() waited for the worker, which stopped within a token
    QTest::qWait(50);                   // its finished signal reaches the page
    EXPECT_FALSE(wizard.isBusy());
    EXPECT_FALSE(wizard.hasReport());
}

#ifdef CFLOW_STUDIO_PATH
// The real app's `--self-test compare` (what CI runs under Xvfb) on two shipped models: exit 0,
// a PNG per page and per chart, and exports whose rows are the saved run's table.
TEST(StudioCompareSelfTest, ComparesTwoModelsAndSavesPagesChartsAndExports) {
    const auto dir = cflow::test::temp_dir("studio_compare_self_test");
    QProcess studio;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("CFLOW_STUDIO_DB"), qpath(dir / "studio.sqlite"));
    env.insert(QStringLiteral("HOME"), qpath(dir));
    env.insert(QStringLiteral("XDG_DATA_HOME"), qpath(dir / "data"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), qpath(dir / "config"));
    studio.setProcessEnvironment(env);
    const QString shots = qpath(dir / "shots");
    studio.start(QStringLiteral(CFLOW_STUDIO_PATH),
                 {QStringLiteral("--self-test"), QStringLiteral("compare"), QStringLiteral("--screenshot-dir"), shots,
                  qpath(resource("default-model.cflow")), qpath(resource("models/arch4_async_experts.q4_0.cflow"))});
    ASSERT_TRUE(studio.waitForFinished(240000)) << "cflow-studio --self-test compare did not exit";
    const QString output = QString::fromLocal8Bit(studio.readAllStandardOutput() + studio.readAllStandardError());
    ASSERT_EQ(studio.exitStatus(), QProcess::NormalExit) << output.toStdString();
    ASSERT_EQ(studio.exitCode(), 0) << output.toStdString();
    for (const char* png : {"1-models", "2-workloads", "3-running", "4-results-table", "4-results-charts",
                            "charts/pareto-perplexity-vs-bytes", "charts/perplexity", "charts/bytes_per_token"}) {
        const QString path = QDir(shots).filePath(QString::fromLatin1(png) + QStringLiteral(".png"));
        EXPECT_FALSE(QImage(path).isNull()) << png;
        EXPECT_GT(QFileInfo(path).size(), 8192) << png;
    }
    auto store = CompareStore::open(qpath(dir / "studio.sqlite"));
    ASSERT_TRUE(store.ok()) << store.error();
    auto runs = (*store)->list();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u);
    auto saved = (*store)->load(runs->front().id);
    ASSERT_TRUE(saved.ok()) << saved.error();
    CompareResultsModel model;
    model.setReport(saved->report);
    QFile csv(QDir(shots).filePath(QStringLiteral("comparison.csv")));
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(csv.readAll()), model.toCsv());
    QFile md(QDir(shots).filePath(QStringLiteral("comparison.md")));
    ASSERT_TRUE(md.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(md.readAll()), model.toMarkdown());
    EXPECT_TRUE(output.contains(QStringLiteral("compare self-test passed: 2 entries"))) << output.toStdString();
}
#endif

} // namespace
