#pragma once
// One generation request once its slot is leased and its prompt prepared: runs the reply on the
// request thread and writes it through its ReplyWriter (reply_writer.h) into httplib's sink, so
// every API the server speaks shares one way to sample, cancel, count and report.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <httplib.h>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/generation/grammar.h"
#include "cflow/server/openai_request.h"
#include "cflow/server/openai_server.h"
#include "cflow/server/slot_pool.h"
#include "reply_writer.h"

namespace cflow::server {

// What a job needs of the server that runs it.
struct ReplyJobHost {
    const std::atomic<bool>* stopping = nullptr;  // set: cancel at the next step
    const ServerObserver* observer = nullptr;
    std::function<void(const ServedRequest&)> report;  // after every job, whatever its outcome
    ContextPolicy context_policy = ContextPolicy::Stop;
};

struct ReplyJob {
    SlotPool::Lease lease;
    GenerationRequest request;   // sampling, seed, max_tokens, stop; kind Chat: the turn is a chat turn
    PreparedTurn turn;
    std::string key;             // the conversation's key, before the reply
    std::string endpoint;
    std::unique_ptr<ReplyWriter> writer;
    std::shared_ptr<const Grammar> grammar;  // set: the reply stays inside it
    std::chrono::steady_clock::time_point arrived;
    bool ran = false;
};

// What an endpoint hands the shared flow (OpenAiServer's serve_reply): the request in the chat
// core's terms and the writer of its API. serve_reply checks the model, leases a slot, prepares
// the prompt (with `prepare`: its policy and reserve are the server's) and starts the job; every
// refusal on the way is written by writer->refusal().
struct ReplyPlan {
    GenerationRequest request;
    std::unique_ptr<ReplyWriter> writer;
    std::shared_ptr<const Grammar> grammar;
    PrepareOptions prepare;
    std::chrono::steady_clock::time_point arrived;  // when the request's body was read: latencies count from here
};

// Runs the generation and writes the whole response through `sink`. Returns false when the client
// is gone (httplib then drops the connection instead of asking for more).
bool run_reply_job(ReplyJob& job, const ReplyJobHost& host, httplib::DataSink& sink);

} // namespace cflow::server
