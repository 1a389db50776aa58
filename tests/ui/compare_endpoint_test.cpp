// Endpoint entries of the model comparison (issue 34), below the wizard: a real `cflow serve`
// (tests/remote/serve_process.h, the bundled default model) measured as an endpoint beside the same
// model loaded locally as the agreement reference; an endpoint that ignores logprobs (a loopback
// server) leaves "not reported by the endpoint" in those cells, through the table, its CSV and the
// saved-comparison codec; a refused endpoint ends as a row with the diagnosis, not an error; Cancel
// ends an endpoint entry mid-stream.
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <thread>

#include <httplib.h>

#include "cflow/remote/httplib_transport.h"
#include "cflow/ui/compare_charts.h"
#include "cflow/ui/compare_codec.h"
#include "cflow/ui/compare_results_model.h"
#include "cflow/ui/compare_samples.h"
#include "cflow/ui/compare_wizard.h"
#include "cflow/ui/default_model.h"
#include "cflow/ui/remote/compare_endpoint.h"
#include "cflow/ui/remote/endpoint_profile.h"
#include "cflow/ui/remote/memory_secret_store.h"
#include "loopback_server.h"
#include "serve_process.h"
#include "test_support.h"
#include "wizard_wait.h"

namespace cflow::ui {
namespace {

using Clock = std::chrono::steady_clock;

EndpointCompareEntry endpoint_at(const std::string& base_url) {
    EndpointCompareEntry entry;
    entry.label = "cflow serve @ " + base_url;
    entry.config.base_url = base_url;
    entry.config.connect_timeout_ms = 5'000;
    entry.config.read_timeout_ms = 60'000;
    return entry;
}

std::shared_ptr<remote::HttpTransport> transport() {
    return std::shared_ptr<remote::HttpTransport>(remote::make_httplib_transport());
}

// A port bound and closed again, never listened on: a connection there is refused.
int refused_port() {
    int port = 0;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
        port = ntohs(address.sin_port);
    if (fd >= 0) ::close(fd);
    return port;
}

EndpointCompareInputs story_inputs() {
    EndpointCompareInputs inputs;
    inputs.prompt = {{"user", "Tell me a story about a cat."}};
    inputs.decodeTokens = 24;
    inputs.workloads = CompareWorkloads{true, true, true, false, false, false};
    return inputs;
}

std::unique_ptr<ChatSession> local_default_model() {
    const QString path = default_model_path(QFileInfo(QStringLiteral(CFLOW_CLI_PATH)).absolutePath());
    if (path.isEmpty()) return nullptr;
    auto model = Model::load(path.toStdString());
    if (!model) return nullptr;
    SessionOptions options;
    options.threads = 2;
    auto session = Session::create(model.value(), options);
    if (!session) return nullptr;
    return std::make_unique<ChatSession>(model.value(), std::move(session).value());
}

TEST(CompareEndpoint, TheSameModelServedAgreesFullyWithItselfLoadedLocally) {
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    auto reference = local_default_model();
    ASSERT_TRUE(reference) << "no default model beside the CLI";
    EndpointCompareInputs inputs = story_inputs();
    inputs.reference = reference.get();
    inputs.scoredDocuments = {"Once upon a time there was a cat."};
    auto row = run_endpoint_entry(endpoint_at(serve.base_url()), transport(), inputs);
    ASSERT_TRUE(row) << row.error();
    EXPECT_TRUE(row->failure.empty()) << row->failure;
    EXPECT_EQ(row->displayName, "cflow serve @ " + serve.base_url());
    // Speed as received.
    ASSERT_TRUE(row->value(CompareMetric::TimeToFirstTokenMs));
    EXPECT_GT(*row->value(CompareMetric::TimeToFirstTokenMs), 0.0);
    ASSERT_TRUE(row->value(CompareMetric::DecodeTokPerS)) << row->note(CompareMetric::DecodeTokPerS);
    EXPECT_GT(*row->value(CompareMetric::DecodeTokPerS), 0.0);
    // Same weights, greedy, the same template: the reference picks every token the endpoint did.
    // Exact (1.0): the engine's kernels give a row's logits independently of the thread count.
    ASSERT_TRUE(row->value(CompareMetric::Top1Agreement)) << row->note(CompareMetric::Top1Agreement);
    EXPECT_DOUBLE_EQ(*row->value(CompareMetric::Top1Agreement), 1.0);
    ASSERT_TRUE(row->value(CompareMetric::MeanKlNats)) << row->note(CompareMetric::MeanKlNats);
    // Not 0: the server's session runs on its own thread count, so its rows may differ from the
    // reference's in the last bits (3e-6 nats seen); a different model is orders of magnitude above.
    EXPECT_LT(*row->value(CompareMetric::MeanKlNats), 1e-4);
    EXPECT_NE(row->note(CompareMetric::MeanKlNats).find("truncated"), std::string::npos);
    // What an endpoint cannot give says why instead of a number: cflow serve has no prompt_logprobs.
    EXPECT_FALSE(row->value(CompareMetric::Perplexity));
    EXPECT_NE(row->note(CompareMetric::Perplexity).find("prompt_logprobs"), std::string::npos)
        << row->note(CompareMetric::Perplexity);
}

// vLLM's prompt_logprobs (its shape, served by a loopback server): perplexity and bits per byte of
// the scored text per the endpoint's own tokens, its first token left out.
TEST(CompareEndpoint, VllmPromptLogprobsGivePerplexityAndBitsPerByte) {
    cflow::test::LoopbackServer server;
    std::string completions_body;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::stream_events(res, {cflow::test::chunk_event("Once"), cflow::test::chunk_event(" upon"),
                                         cflow::test::kEndEvents}, true);
    });
    server.http.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
        completions_body = req.body;
        res.set_content(R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":null,
            "finish_reason":"length","prompt_logprobs":[null,{"1234":{"logprob":-1.0,"rank":1,"decoded_token":" upon"}},
            {"99":{"logprob":-3.0,"rank":7,"decoded_token":" a"}}]}],"usage":{"prompt_tokens":3,"completion_tokens":1}})",
                        "application/json");
    });
    server.start();
    EndpointCompareInputs inputs = story_inputs();
    inputs.scoredDocuments = {"Once upon a"};  // 11 bytes
    auto row = run_endpoint_entry(endpoint_at(server.base_url()), transport(), inputs);
    ASSERT_TRUE(row) << row.error();
    ASSERT_TRUE(row->value(CompareMetric::Perplexity)) << row->note(CompareMetric::Perplexity);
    EXPECT_NEAR(*row->value(CompareMetric::Perplexity), std::exp(2.0), 1e-9);  // mean NLL (1 + 3) / 2
    ASSERT_TRUE(row->value(CompareMetric::BitsPerByte));
    EXPECT_NEAR(*row->value(CompareMetric::BitsPerByte), 4.0 / std::log(2.0) / 11.0, 1e-9);
    EXPECT_NE(completions_body.find("\"prompt_logprobs\":0"), std::string::npos) << completions_body;
    EXPECT_NE(completions_body.find("Once upon a"), std::string::npos);
}

TEST(CompareEndpoint, TeacherForcingNoticesTokensTheReferenceWouldNotPick) {
    auto reference = local_default_model();
    ASSERT_TRUE(reference);
    const std::vector<remote::RemoteMessage> prompt = {{"user", "Tell me a story about a cat."}};
    // The reference's own greedy reply, then the same with its third token swapped for another
    // of the vocabulary: agreement drops by exactly that position.
    ReplyOptions greedy;
    greedy.sampling.temperature = 0;
    greedy.max_tokens = 6;
    greedy.ignore_end_of_turn = true;
    auto turn = reference->prepare({{"user", prompt[0].content, ""}});
    ASSERT_TRUE(turn);
    ChatTurnOutcome outcome;
    ASSERT_TRUE(reference->reply(*turn, greedy, {}, nullptr, outcome).ok());
    ASSERT_EQ(outcome.tokens.size(), 6u);
    const Tokenizer& tokenizer = reference->model().tokenizer();
    std::vector<remote::RemoteTokenLogprob> tokens;
    for (int32_t id : outcome.tokens) {
        remote::RemoteTokenLogprob t;
        t.chosen.bytes = t.chosen.token = tokenizer.token_bytes(id);
        tokens.push_back(t);
    }
    auto same = teacher_force_endpoint_tokens(*reference, prompt, tokens);
    ASSERT_TRUE(same.stats) << same.notMeasured;
    EXPECT_EQ(same.stats->positions, 6u);
    EXPECT_EQ(same.stats->top1Matches, 6u);
    EXPECT_FALSE(same.klMeasured) << "no top_logprobs sent";
    int32_t other = outcome.tokens[2] == 100 ? 101 : 100;
    tokens[2].chosen.bytes = tokens[2].chosen.token = tokenizer.token_bytes(other);
    auto swapped = teacher_force_endpoint_tokens(*reference, prompt, tokens);
    ASSERT_TRUE(swapped.stats);
    // Position 2 no longer matches; the later ones are conditioned on the swapped token and may not either.
    EXPECT_LT(swapped.stats->top1Matches, 6u);
    EXPECT_GE(swapped.stats->top1Matches, 2u);
    // A token no reference token spells: not measured, and why.
    tokens[4].chosen.bytes = tokens[4].chosen.token = "\x01\x02\x03 not a token";
    auto foreign = teacher_force_endpoint_tokens(*reference, prompt, tokens);
    EXPECT_FALSE(foreign.stats);
    EXPECT_NE(foreign.notMeasured.find("token 4"), std::string::npos) << foreign.notMeasured;
}

TEST(CompareEndpoint, AnEndpointWithoutLogprobsSaysNotReportedInTheTableCsvAndStore) {
    cflow::test::LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::stream_events(res, {cflow::test::chunk_event("Once"), cflow::test::chunk_event(" upon"),
                                         cflow::test::kEndEvents}, true);
    });
    server.start();
    auto reference = local_default_model();
    ASSERT_TRUE(reference);
    EndpointCompareInputs inputs = story_inputs();
    inputs.reference = reference.get();
    auto row = run_endpoint_entry(endpoint_at(server.base_url()), transport(), inputs);
    ASSERT_TRUE(row) << row.error();
    EXPECT_FALSE(row->value(CompareMetric::Top1Agreement)) << "never a 0";
    EXPECT_EQ(row->note(CompareMetric::Top1Agreement), kNotReportedByEndpoint);
    EXPECT_EQ(row->note(CompareMetric::MeanKlNats), kNotReportedByEndpoint);
    EXPECT_TRUE(row->value(CompareMetric::TimeToFirstTokenMs)) << "speed still measured";

    // Beside a local row that has the values, the endpoint's cells read the note.
    CompareReport report;
    CompareRow local;
    local.displayName = "local";
    local.values[size_t(CompareMetric::Top1Agreement)] = 1.0;
    local.values[size_t(CompareMetric::MeanKlNats)] = 0.0;
    report.rows = {local, *row};
    CompareResultsModel model;
    model.setReport(report);
    const QString csv = model.toCsv();
    EXPECT_TRUE(csv.contains(QStringLiteral("not reported by the endpoint"))) << csv.toStdString();
    EXPECT_TRUE(model.toMarkdown().contains(QStringLiteral("not reported by the endpoint")));
    auto reloaded = report_from_json(report_to_json(report));
    ASSERT_TRUE(reloaded) << reloaded.error();
    EXPECT_EQ(reloaded->rows[1].note(CompareMetric::Top1Agreement), kNotReportedByEndpoint);
    EXPECT_EQ(reloaded->rows[1].displayName, row->displayName);
}

// A model that ends its turn at once reports nothing to compare: the cells say so, not "not reported".
TEST(CompareEndpoint, AnEmptyReplySaysNoTokensWereGenerated) {
    cflow::test::LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::stream_events(res, {"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                                         "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}\n\n"
                                         "data: [DONE]\n\n"}, true);
    });
    server.start();
    auto reference = local_default_model();
    ASSERT_TRUE(reference);
    EndpointCompareInputs inputs = story_inputs();
    inputs.reference = reference.get();
    auto row = run_endpoint_entry(endpoint_at(server.base_url()), transport(), inputs);
    ASSERT_TRUE(row) << row.error();
    EXPECT_TRUE(row->failure.empty());
    EXPECT_FALSE(row->value(CompareMetric::DecodeTokPerS));
    EXPECT_EQ(row->note(CompareMetric::Top1Agreement), "the endpoint generated no tokens for this prompt");
    EXPECT_EQ(row->note(CompareMetric::DecodeTokPerS), "the endpoint generated no tokens for this prompt");
}

TEST(CompareEndpoint, ARefusedEndpointIsARowWithTheDiagnosisNotAnError) {
    const int free_port = refused_port();
    ASSERT_GT(free_port, 0);
    EndpointCompareEntry entry = endpoint_at("http://127.0.0.1:" + std::to_string(free_port) + "/v1");
    entry.config.retry.max_attempts = 1;
    auto row = run_endpoint_entry(entry, transport(), story_inputs());
    ASSERT_TRUE(row) << "the other entries go on: " << row.error();
    EXPECT_NE(row->failure.find("refused"), std::string::npos) << row->failure;
    EXPECT_FALSE(row->value(CompareMetric::DecodeTokPerS));
    EXPECT_NE(row->note(CompareMetric::DecodeTokPerS).find("refused"), std::string::npos);
}

TEST(CompareEndpoint, CancelEndsAnEndpointEntryMidStream) {
    cflow::test::LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::paced_events(res, server, 500, 10);
    });
    server.start();
    CancelToken cancel;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel.cancel();
    });
    const auto started = Clock::now();
    auto row = run_endpoint_entry(endpoint_at(server.base_url()), transport(), story_inputs(), &cancel);
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    canceller.join();
    ASSERT_FALSE(row);
    EXPECT_EQ(row.kind(), ErrorKind::Cancelled);
    EXPECT_LT(seconds, 4.0) << "the stream would run 5 s";
}

// The wizard end to end: the default model locally, the same model behind cflow serve and a
// refused endpoint, both from saved profiles (the key from a test keychain): the run finishes with
// three rows, the served one agreeing fully, the refused one saying so; the table, CSV and the
// saved comparison carry the endpoint rows under their identity labels.
TEST(CompareEndpoint, TheWizardRunsEndpointEntriesBesideTheLocalModel) {
    cflow::test::ServeProcess serve({}, "127.0.0.1", {"--api-key", "compare-key"});
    ASSERT_TRUE(serve.started()) << serve.log();
    const QString local = default_model_path(QFileInfo(QStringLiteral(CFLOW_CLI_PATH)).absolutePath());
    ASSERT_FALSE(local.isEmpty());
    QTemporaryDir dir;
    EndpointProfileStore profiles(dir.filePath(QStringLiteral("profiles.ini")));
    MemorySecretStore secrets;
    EndpointProfile served;
    served.name = QStringLiteral("served");
    served.baseUrl = QString::fromStdString(serve.base_url());
    auto saved = profiles.save(served);
    ASSERT_TRUE(saved) << saved.error();
    bool written = false;
    secrets.writeKey(saved->id, QStringLiteral("compare-key"), [&](Status s) { written = s.ok(); });
    ASSERT_TRUE(QTest::qWaitFor([&] { return written; }, 5000));
    EndpointProfile refused;
    refused.name = QStringLiteral("refused");
    refused.baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(refused_port());
    auto savedRefused = profiles.save(refused);
    ASSERT_TRUE(savedRefused) << savedRefused.error();

    const QString db = dir.filePath(QStringLiteral("studio.sqlite"));
    CompareWizard wizard(nullptr, db);
    wizard.setEndpointSources(&profiles, &secrets);
    CompareRequest r;
    r.entries = {CompareEntry{{}, local.toStdString(), 2}};
    r.workloads = CompareWorkloads{true, false, true, false, false, false};
    r.promptTokens = 8;
    r.warmupTokens = 1;
    r.decodeTokens = 16;
    r.maxScoredTokens = 32;
    r.contextTokens = 64;
    r.textName = bundled_text_samples().front().name.toStdString();
    wizard.setRequest(r);
    wizard.show();
    EXPECT_FALSE(cflow::ui::test::wait_page_complete(wizard, 300)) << "one local entry alone is not a comparison";
    ASSERT_TRUE(wizard.addEndpointEntry(saved->id));
    ASSERT_TRUE(wizard.addEndpointEntry(savedRefused->id));
    EXPECT_FALSE(wizard.addEndpointEntry(QStringLiteral("no-such-profile")));
    EXPECT_EQ(wizard.endpointEntries(), (QStringList{saved->id, savedRefused->id}));
    ASSERT_TRUE(cflow::ui::test::wait_page_complete(wizard));
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::WorkloadsPageId);
    ASSERT_TRUE(cflow::ui::test::wait_page_complete(wizard));
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::RunPageId);
    ASSERT_TRUE(cflow::ui::test::wait_page_complete(wizard)) << wizard.lastError().toStdString();
    const CompareReport& report = wizard.report();
    ASSERT_EQ(report.rows.size(), 3u);
    const std::string servedLabel = endpoint_identity_label(endpoint_identity(*saved)).toStdString();
    const CompareRow& endpointRow = report.rows[1];
    EXPECT_EQ(endpointRow.displayName, servedLabel);
    EXPECT_TRUE(endpointRow.failure.empty()) << endpointRow.failure << " (the key reached the server?)";
    EXPECT_TRUE(endpointRow.value(CompareMetric::TimeToFirstTokenMs)) << endpointRow.note(CompareMetric::TimeToFirstTokenMs);
    EXPECT_TRUE(endpointRow.value(CompareMetric::DecodeTokPerS)) << endpointRow.note(CompareMetric::DecodeTokPerS);
    ASSERT_TRUE(endpointRow.value(CompareMetric::Top1Agreement)) << endpointRow.note(CompareMetric::Top1Agreement);
    EXPECT_DOUBLE_EQ(*endpointRow.value(CompareMetric::Top1Agreement), 1.0);
    EXPECT_NE(report.rows[2].failure.find("refused"), std::string::npos) << report.rows[2].failure;
    EXPECT_TRUE(report.rows[0].value(CompareMetric::DecodeTokPerS)) << "the local entry finished too";

    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::ResultsPageId);
    const QString csv = wizard.resultsModel()->toCsv();
    EXPECT_TRUE(csv.contains(QString::fromStdString(servedLabel))) << csv.toStdString();
    // The endpoint's first-token time has a chart of its own (only endpoint rows have the metric).
    EXPECT_TRUE(wizard.charts()->chartNames().contains(QStringLiteral("time_to_first_token_ms")))
        << wizard.charts()->chartNames().join(u',').toStdString();
    EXPECT_TRUE(wizard.resultsModel()->toMarkdown().contains(QString::fromStdString(servedLabel)));
    EXPECT_TRUE(csv.contains(QStringLiteral("refused"))) << csv.toStdString();
    ASSERT_GT(wizard.savedId(), 0);
    CompareWizard reopened(nullptr, db);
    reopened.show();
    ASSERT_TRUE(reopened.openSaved(wizard.savedId()).ok());
    EXPECT_EQ(reopened.resultsModel()->toCsv(), csv);
}

// Cancel in the wizard while an endpoint entry streams: the run stops within bounds, no report.
TEST(CompareEndpoint, CancellingTheWizardStopsAStreamingEndpointEntry) {
    cflow::test::LoopbackServer server;
    std::atomic<bool> streaming{false};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        streaming = true;
        cflow::test::paced_events(res, server, 1000, 10);
    });
    server.start();
    const QString local = default_model_path(QFileInfo(QStringLiteral(CFLOW_CLI_PATH)).absolutePath());
    ASSERT_FALSE(local.isEmpty());
    QTemporaryDir dir;
    EndpointProfileStore profiles(dir.filePath(QStringLiteral("profiles.ini")));
    MemorySecretStore secrets;
    EndpointProfile slow;
    slow.name = QStringLiteral("slow");
    slow.baseUrl = QString::fromStdString(server.base_url());
    auto saved = profiles.save(slow);
    ASSERT_TRUE(saved) << saved.error();

    CompareWizard wizard(nullptr, dir.filePath(QStringLiteral("studio.sqlite")));
    wizard.setEndpointSources(&profiles, &secrets);
    CompareRequest r;
    r.entries = {CompareEntry{{}, local.toStdString(), 1}};
    r.workloads = CompareWorkloads{true, false, false, false, false, false};
    r.promptTokens = 4;
    r.warmupTokens = 1;
    r.decodeTokens = 4;
    wizard.setRequest(r);
    wizard.show();
    ASSERT_TRUE(wizard.addEndpointEntry(saved->id));
    ASSERT_TRUE(cflow::ui::test::wait_page_complete(wizard));
    wizard.next();
    ASSERT_TRUE(cflow::ui::test::wait_page_complete(wizard));
    wizard.next();
    ASSERT_EQ(wizard.currentId(), CompareWizard::RunPageId);
    ASSERT_TRUE(QTest::qWaitFor([&] { return streaming.load(); }, 60000)) << "the endpoint entry never started";
    const auto started = Clock::now();
    wizard.reject();
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    EXPECT_LT(seconds, 4.0) << "the stream would run 10 s";
    EXPECT_TRUE(QTest::qWaitFor([&] { return !wizard.isBusy(); }, 2000)) << "its finished signal reaches the page";
    EXPECT_FALSE(wizard.hasReport());
}

} // namespace
} // namespace cflow::ui
#endif
