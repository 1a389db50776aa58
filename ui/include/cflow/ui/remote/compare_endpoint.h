#pragma once
// An endpoint as an entry of the model comparison (issue 34): measured through cflow_remote, so
// the engine's run_comparison (no network, no Qt) stays as it is, and merged into the same
// CompareReport rows. Plain C++ (no Qt): the wizard runs it on its worker thread.
//
// Speed is measured as received: a streamed greedy reply of decodeTokens tokens; time to first
// token from the request to the first content, tokens/s = (completion tokens - 1) over the stream
// time after the first content (the usage's count, else the tokens counted in logprobs).
// Agreement and KL: the endpoint generates greedily with top_logprobs; the local reference model
// is teacher-forced on the same token sequence (each returned token's bytes looked up in the
// reference's vocabulary; a token that is not exactly one reference token leaves agreement
// unmeasured, with the reason). Top-1 agreement is the share of positions where the reference's
// argmax is the endpoint's token; KL(reference || endpoint) is over the endpoint's returned top-k
// only, both renormalised over it (a truncated KL, said in the note). An endpoint that returns no
// logprobs gets kNotReportedByEndpoint in those cells, never 0. Perplexity and bits per byte only
// through vLLM's prompt_logprobs (RemoteClient::score_prompt) on the local entries' scored text,
// per the endpoint's own tokens; elsewhere the cells say why.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/compare/agreement.h"
#include "cflow/engine/compare/comparison.h"
#include "cflow/remote/http_transport.h"
#include "cflow/remote/remote_client.h"

namespace cflow::ui {

inline constexpr std::string_view kNotReportedByEndpoint = "not reported by the endpoint";

struct EndpointCompareEntry {
    std::string label;               // the profile's endpoint_identity_label: the row's name
    remote::EndpointConfig config;   // base URL, key, time-outs
    std::string model;               // the endpoint's model id ("" = the server's only one)
};

struct EndpointCompareInputs {
    std::vector<remote::RemoteMessage> prompt;  // what the endpoint continues
    int32_t decodeTokens = 32;
    int32_t topLogprobs = 20;                   // OpenAI's most
    CompareWorkloads workloads;
    // Perplexity: the documents every local entry scored (common_scored_documents), sent to the
    // endpoint's prompt_logprobs (vLLM); empty: not measured.
    std::vector<std::string> scoredDocuments;
    // The local reference entry's model in a chat session (its template renders `prompt` as the
    // endpoint's should); null: agreement is not measured ("no local reference entry").
    ChatSession* reference = nullptr;
};

// Teacher forcing of the reference on the endpoint's tokens (see the header comment).
struct EndpointAgreement {
    std::optional<AgreementStats> stats;  // set when measured
    bool klMeasured = false;              // the endpoint sent top_logprobs
    std::string notMeasured;              // why stats is empty
};
EndpointAgreement teacher_force_endpoint_tokens(ChatSession& reference, const std::vector<remote::RemoteMessage>& prompt,
                                                const std::vector<remote::RemoteTokenLogprob>& tokens,
                                                const CancelToken* cancel = nullptr);

// Measures one endpoint entry. Never fails for the endpoint's own faults: the row then carries
// failure (the client's diagnosis: refused, DNS, 401, ...) and a note in each chosen cell, so the
// other entries still finish. Errors: Cancelled only.
Result<CompareRow> run_endpoint_entry(const EndpointCompareEntry& entry, std::shared_ptr<remote::HttpTransport> transport,
                                      const EndpointCompareInputs& inputs, const CancelToken* cancel = nullptr);

// What an endpoint is asked in a comparison: one fixed user request for a story, which the
// reference renders with its own template for teacher forcing.
std::vector<remote::RemoteMessage> endpoint_compare_prompt();

// A whole comparison with endpoint entries: run_comparison for the local entries (at least one),
// then each endpoint entry in turn (agreement against the request's reference entry, loaded again
// here), their rows appended in that order. An endpoint's failure is its row's, not the run's.
// Errors: the local run's, or Cancelled.
Result<CompareReport> run_comparison_with_endpoints(const CompareRequest& local, const std::vector<EndpointCompareEntry>& endpoints,
                                                    const std::function<std::shared_ptr<remote::HttpTransport>()>& make_transport,
                                                    const CompareProgress& progress = {}, const CancelToken* cancel = nullptr);

} // namespace cflow::ui
