#include "cflow/engine/generation/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {

double PerplexityStats::perplexity() const { return std::exp(mean_nll()); }

double PerplexityStats::bits_per_byte() const {
    return scored_bytes ? total_nll / std::numbers::ln2 / double(scored_bytes) : 0;
}

std::vector<uint32_t> token_text_bytes(const Tokenizer& tokenizer, std::span<const int32_t> ids) {
    std::vector<uint32_t> bytes(ids.size(), 0);  // [N]
    bool document_start = true;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (tokenizer.is_control(ids[i])) {
            document_start = true;
            continue;
        }
        const std::string text = tokenizer.token_bytes(ids[i]);
        const bool stripped = document_start && tokenizer.strips_first_space() && !text.empty() && text.front() == ' ';
        bytes[i] = uint32_t(text.size() - (stripped ? 1 : 0));
        document_start = false;
    }
    return bytes;
}

namespace {

// -ln softmax(logits)[target], in double so long streams do not drift. logits: [V]
double negative_log_prob(std::span<const float> logits, int32_t target) {
    double max_logit = -INFINITY;
    for (float v : logits) max_logit = std::max(max_logit, double(v));
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max_logit);
    return max_logit + std::log(sum) - double(logits[size_t(target)]);
}

Status check_ids(std::span<const int32_t> ids, uint32_t vocab) {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || uint32_t(ids[i]) >= vocab)
            return make_error("perplexity: token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                              ", outside the vocabulary of " + std::to_string(vocab));
    return {};
}

} // namespace

Result<PerplexityStats> perplexity(Session& session, std::span<const int32_t> ids, const PerplexityOptions& options,
                                   const PerplexityProgress& progress, const CancelToken* cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (ids.size() < 2) return make_error("perplexity: the text has " + std::to_string(ids.size()) +
                                          " tokens; at least 2 are needed to score one");
    const uint32_t context = options.context_tokens ? options.context_tokens : session.context_length();
    if (context > session.context_length())
        return make_error("perplexity: window of " + std::to_string(context) + " tokens exceeds the context of " +
                          std::to_string(session.context_length()) + " positions");
    const uint32_t stride = options.stride_tokens ? options.stride_tokens : context;
    if (stride > context)
        return make_error("perplexity: stride " + std::to_string(stride) + " is larger than the window " +
                          std::to_string(context) + " (tokens between windows would never be scored)");
    if (auto ok = check_ids(ids, session.model().header().vocab_size); !ok) return ok.take_error();

    const uint64_t scorable = ids.size() - 1;
    const uint64_t budget = options.max_scored_tokens ? std::min<uint64_t>(options.max_scored_tokens, scorable) : scorable;
    const std::vector<uint32_t> text_bytes = token_text_bytes(session.model().tokenizer(), ids);  // [N]
    PerplexityStats stats;
    stats.context_tokens = context;
    stats.stride_tokens = stride;
    size_t scored_to = 0;  // targets ids[1 .. scored_to] are scored
    for (size_t start = 0; start < ids.size() - 1 && stats.scored_tokens < budget; start += stride) {
        const size_t end = std::min(start + context + 1, ids.size());  // window ids[start, end)
        const size_t first_new = scored_to > start ? scored_to - start : 0;  // targets before this were scored
        session.reset();
        for (size_t i = start; i + 1 < end && stats.scored_tokens < budget; ++i) {
            if (cancel && cancel->is_cancelled()) return cancelled_error("perplexity");
            const bool score = i - start >= first_new;
            auto logits = session.step(ids[i], score);
            if (!logits) return logits.take_error();
            ++stats.evaluated_tokens;
            if (!score) continue;
            stats.total_nll += negative_log_prob(logits.value(), ids[i + 1]);
            stats.scored_bytes += text_bytes[i + 1];
            ++stats.scored_tokens;
        }
        ++stats.windows;
        scored_to = end - 1;
        if (progress && !progress(stats.scored_tokens, budget)) return cancelled_error("perplexity");
        if (end == ids.size()) break;
    }
    stats.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return stats;
}

Result<PerplexityStats> perplexity_llama_chunks(Session& session, std::span<const int32_t> ids, uint32_t chunk_tokens,
                                                int32_t bos_id, uint64_t max_scored_tokens,
                                                const PerplexityProgress& progress, const CancelToken* cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (chunk_tokens < 4) return make_error("perplexity: chunks of " + std::to_string(chunk_tokens) +
                                            " tokens are too short (at least 4; llama-perplexity's usual is 512)");
    if (chunk_tokens > session.context_length())
        return make_error("perplexity: chunk of " + std::to_string(chunk_tokens) + " tokens exceeds the context of " +
                          std::to_string(session.context_length()) + " positions");
    if (ids.size() < 2 * size_t(chunk_tokens))
        return make_error("perplexity: the text has " + std::to_string(ids.size()) + " tokens; chunks of " +
                          std::to_string(chunk_tokens) + " need at least " + std::to_string(2 * size_t(chunk_tokens)) +
                          " (as llama-perplexity asks)");
    const uint32_t vocab = session.model().header().vocab_size;
    if (auto ok = check_ids(ids, vocab); !ok) return ok.take_error();
    if (bos_id >= 0 && uint32_t(bos_id) >= vocab)
        return make_error("perplexity: BOS id " + std::to_string(bos_id) + " is outside the vocabulary of " +
                          std::to_string(vocab));

    const size_t chunks = ids.size() / chunk_tokens;
    const uint32_t first = chunk_tokens / 2;
    const uint64_t per_chunk = chunk_tokens - first - 1;
    const uint64_t all = chunks * per_chunk;
    const uint64_t budget = max_scored_tokens ? std::min(max_scored_tokens, all) : all;
    // Of the stream as given: a chunk's first id replaced by BOS is never a target.
    const std::vector<uint32_t> text_bytes = token_text_bytes(session.model().tokenizer(), ids);  // [N]
    PerplexityStats stats;
    stats.context_tokens = chunk_tokens;
    stats.stride_tokens = chunk_tokens;
    std::vector<int32_t> chunk(chunk_tokens);  // [chunk_tokens] ids as the model sees them
    for (size_t c = 0; c < chunks && stats.scored_tokens < budget; ++c) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("perplexity");
        std::copy_n(ids.begin() + ptrdiff_t(c * chunk_tokens), chunk_tokens, chunk.begin());
        if (bos_id >= 0) chunk[0] = bos_id;
        session.reset();
        // The unscored half needs no logits: one batched prefill.
        if (auto r = session.prefill(std::span<const int32_t>(chunk.data(), first), /*want_logits=*/false); !r)
            return r.take_error();
        stats.evaluated_tokens += first;
        for (uint32_t j = first; j + 1 < chunk_tokens; ++j) {
            if (cancel && cancel->is_cancelled()) return cancelled_error("perplexity");
            auto logits = session.step(chunk[j]);
            if (!logits) return logits.take_error();
            ++stats.evaluated_tokens;
            stats.total_nll += negative_log_prob(logits.value(), chunk[j + 1]);
            stats.scored_bytes += text_bytes[c * chunk_tokens + j + 1];
            ++stats.scored_tokens;
        }
        ++stats.windows;
        if (progress && !progress(stats.scored_tokens, budget)) return cancelled_error("perplexity");
    }
    stats.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return stats;
}

std::vector<std::string> split_documents(std::string_view text) {
    auto trim = [](std::string_view s) {
        const char* ws = " \t\r\n\f\v";
        const size_t a = s.find_first_not_of(ws);
        if (a == std::string_view::npos) return std::string_view{};
        return s.substr(a, s.find_last_not_of(ws) - a + 1);
    };
    std::vector<std::string> docs;
    auto add = [&](std::string_view part) {
        if (auto t = trim(part); !t.empty()) docs.emplace_back(t);
    };
    constexpr std::string_view kEndOfText = "<|endoftext|>";
    if (text.find(kEndOfText) != std::string_view::npos) {
        size_t pos = 0;
        for (size_t hit; (hit = text.find(kEndOfText, pos)) != std::string_view::npos; pos = hit + kEndOfText.size())
            add(text.substr(pos, hit - pos));
        add(text.substr(pos));
        return docs;
    }
    // Blank line = a newline, optional whitespace, a newline (Python's re "\n\s*\n").
    size_t doc_start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\n') continue;
        size_t j = i + 1;
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\f' ||
                                   text[j] == '\v' || text[j] == '\n'))
            ++j;
        // the run i..j-1 must contain a second newline
        if (std::find(text.begin() + long(i) + 1, text.begin() + long(j), '\n') == text.begin() + long(j)) continue;
        add(text.substr(doc_start, i - doc_start));
        doc_start = j;
        i = j - 1;
    }
    add(text.substr(doc_start));
    return docs;
}

std::vector<int32_t> tokenize_documents(const Tokenizer& tokenizer, const std::vector<std::string>& documents) {
    std::vector<int32_t> ids;
    for (const auto& doc : documents) {
        if (tokenizer.bos_id() >= 0) ids.push_back(tokenizer.bos_id());
        const auto piece = tokenizer.encode(doc, /*add_special=*/false);
        ids.insert(ids.end(), piece.begin(), piece.end());
        if (tokenizer.eos_id() >= 0) ids.push_back(tokenizer.eos_id());
    }
    return ids;
}

} // namespace cflow
