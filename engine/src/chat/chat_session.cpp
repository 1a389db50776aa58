#include "cflow/engine/chat/chat_session.h"

#include <algorithm>
#include <iterator>
#include <new>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/engine/chat/reasoning_split.h"

namespace cflow {
namespace {

std::string special_piece(const Tokenizer& tokenizer, int32_t id) { return id >= 0 ? tokenizer.piece(id) : std::string(); }

// Control tokens a template writes inside an assistant turn, before the content it frames:
// Llama 3.1's built-in tool call is '<|python_tag|>' + the call + '<|eom_id|>', so stopping at
// the tag would cut the call off (llama.cpp does not stop there either).
bool opens_content(std::string_view piece) { return piece == "<|python_tag|>"; }

// End-of-generation tokens llama.cpp stops on whenever the vocabulary has them as control
// tokens, whether or not the template writes them (a Llama 3 instruct model may still emit
// the base model's <|end_of_text|>).
bool ends_generation(std::string_view piece) {
    static constexpr std::string_view kNames[] = {"<|end_of_text|>", "<|eot_id|>", "<|eom_id|>", "<|im_end|>",
                                                  "<end_of_turn>",   "<|endoftext|>", "<|end|>", "<|return|>",
                                                  "<|call|>"};
    return std::find(std::begin(kNames), std::end(kNames), piece) != std::end(kNames);
}

// Earlier gpt-oss replies as its template takes them back: the final channel's text as content,
// the analysis as `thinking` (the template refuses channel tags in content). Others unchanged.
std::vector<ChatMessage> harmony_history(const std::vector<ChatMessage>& messages) {
    std::vector<ChatMessage> out = messages;
    for (ChatMessage& m : out) {
        if (m.role != "assistant") continue;
        const ReasoningSplit split = split_reasoning(m.content);
        if (!split.harmony) continue;
        // A reply that made a tool call keeps its calls (extra_json); its analysis joins them as `thinking`.
        nlohmann::json extra = m.extra_json.empty() ? nlohmann::json::object()
                                                    : nlohmann::json::parse(m.extra_json, nullptr, /*allow_exceptions=*/false);
        if (!extra.is_object() || extra.contains("thinking")) continue;
        std::string thinking = split.has_reasoning ? m.content.substr(split.reasoning_begin, split.reasoning_end - split.reasoning_begin)
                                                   : std::string();
        m.content = m.content.substr(split.answer_begin);
        if (!thinking.empty()) extra["thinking"] = std::move(thinking);
        m.extra_json = extra.empty() ? std::string() : extra.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    return out;
}

bool has_control_piece(const Tokenizer& tokenizer, std::string_view piece) {
    const std::vector<int32_t> ids = tokenizer.encode(std::string(piece), /*add_special=*/false, /*parse_special=*/true);
    return ids.size() == 1 && tokenizer.is_control(ids.front()) && tokenizer.piece(ids.front()) == piece;
}

bool is_end_candidate(const Tokenizer& tokenizer, int32_t id) {
    return tokenizer.is_control(id) && id != tokenizer.eos_id() && id != tokenizer.bos_id() && !tokenizer.piece(id).empty() &&
           !opens_content(tokenizer.piece(id));
}

} // namespace

std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer, const ChatTemplate* chat_template) {
    std::vector<int32_t> ids;
    if (!chat_template) return ids;
    // Harmony (gpt-oss): <|end|> closes the analysis message and the reply goes on with the final
    // one; the turn ends at <|return|> or <|call|>. llama.cpp's rule: a vocabulary with both of
    // those does not stop at <|end|>.
    const bool harmony = has_control_piece(tokenizer, "<|return|>") && has_control_piece(tokenizer, "<|call|>");
    const std::string& source = chat_template->source();
    const auto vocab = static_cast<int32_t>(tokenizer.vocab_size());
    for (int32_t id = 0; id < vocab; ++id)
        if (is_end_candidate(tokenizer, id) &&
            (source.find(tokenizer.piece(id)) != std::string::npos || ends_generation(tokenizer.piece(id))))
            ids.push_back(id);
    TemplateOptions options;
    options.bos_token = special_piece(tokenizer, tokenizer.bos_id());
    options.eos_token = special_piece(tokenizer, tokenizer.eos_id());
    // The probes also find the markers a template builds from pieces ('<|' + role + '|>').
    for (const auto& probe : chat_template_probes()) {
        auto rendered = chat_template->render(probe, options);
        if (!rendered) continue;
        for (int32_t id : tokenizer.encode(*rendered, /*add_special=*/false, /*parse_special=*/true))
            if (is_end_candidate(tokenizer, id)) ids.push_back(id);
    }
    if (harmony) std::erase_if(ids, [&](int32_t id) { return tokenizer.piece(id) == "<|end|>"; });
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, const std::string& prompt) {
    std::vector<int32_t> ids = tokenizer.encode(prompt, /*add_special=*/false, /*parse_special=*/true);
    const int32_t bos = tokenizer.bos_id();
    // The vocabulary's own rule decides whether BOS belongs at the start (add_bos_token);
    // a template that wrote it already does not get a second one.
    const std::vector<int32_t> specials = tokenizer.encode("", /*add_special=*/true);
    const bool wants_bos = bos >= 0 && !specials.empty() && specials.front() == bos;
    if (wants_bos && (ids.empty() || ids.front() != bos)) ids.insert(ids.begin(), bos);
    return ids;
}

std::string_view context_policy_name(ContextPolicy policy) {
    switch (policy) {
    case ContextPolicy::Stop: return "stop";
    case ContextPolicy::DropOldest: return "drop_oldest";
    case ContextPolicy::SlidingWindow: return "sliding_window";
    }
    return "stop";
}

ChatSession::ChatSession(std::shared_ptr<const Model> model, std::unique_ptr<Session> session)
    : model_(std::move(model)), session_(std::move(session)) {
    const Tokenizer& tokenizer = model_->tokenizer();
    template_options_.add_generation_prompt = true;
    template_options_.bos_token = special_piece(tokenizer, tokenizer.bos_id());
    template_options_.eos_token = special_piece(tokenizer, tokenizer.eos_id());
    (void)set_template({});  // the model's own never fails: a broken one falls back with its reason
}

Status ChatSession::set_template(const TemplateChoice& choice) {
    std::optional<ChatTemplate> compiled;
    std::string note;
    switch (choice.kind) {
    case TemplateChoice::Kind::Model:
        if (model_->chat_template().empty()) {
            note = "the model has no chat template";
        } else if (auto t = ChatTemplate::compile(model_->chat_template())) {
            if (Status probe = probe_chat_template(*t, template_options_); !probe)
                note = "the model's chat template was refused at load: " + probe.error();
            else
                compiled = std::move(t).value();
        } else {
            note = "the model's chat template does not compile: " + t.error();
        }
        break;
    case TemplateChoice::Kind::Builtin: {
        const BuiltinTemplate* builtin = find_builtin_template(choice.value);
        if (!builtin) return make_error(ErrorKind::InvalidInput, "no built-in chat template is named '" + choice.value + "'");
        auto t = ChatTemplate::compile(std::string(builtin->source));
        if (!t) return make_error(ErrorKind::Internal, "built-in template '" + choice.value + "': " + t.error());
        compiled = std::move(t).value();
        break;
    }
    case TemplateChoice::Kind::Custom: {
        auto t = ChatTemplate::compile(choice.value);
        if (!t) return make_error(ErrorKind::InvalidInput, "the custom chat template does not compile: " + t.error());
        if (Status probe = probe_chat_template(*t, template_options_); !probe)
            return make_error(ErrorKind::InvalidInput, "the custom chat template was refused: " + probe.error());
        compiled = std::move(t).value();
        break;
    }
    }
    template_ = std::move(compiled);
    template_note_ = std::move(note);
    choice_ = choice;
    end_of_turn_ = cflow::end_of_turn_tokens(model_->tokenizer(), template_ ? &*template_ : nullptr);
    return {};
}

void ChatSession::set_thinking(std::optional<bool> enabled) {
    thinking_ = enabled;
    template_options_.extra_kwargs_json = !enabled ? std::string()
                                          : *enabled ? std::string(R"({"enable_thinking": true})")
                                                     : std::string(R"({"enable_thinking": false})");
}

bool ChatSession::template_reads_thinking() const {
    return template_ && template_->source().find("enable_thinking") != std::string::npos;
}

ToolCallFormat ChatSession::tool_call_format() const {
    return template_ ? detect_tool_call_format(template_->source()) : ToolCallFormat::None;
}

std::optional<std::string> ChatSession::render_with_template(const std::vector<ChatMessage>& messages,
                                                             std::string& note, bool add_generation_prompt,
                                                             const std::string& tools_json) const {
    if (!template_) {
        note = template_note_;
        return std::nullopt;
    }
    TemplateOptions options = template_options_;
    options.add_generation_prompt = add_generation_prompt;
    options.tools_json = tools_json;
    auto rendered = template_->render(harmony_history(messages), options);
    if (rendered) return std::move(rendered).value();
    note = "the chat template failed: " + rendered.error();
    return std::nullopt;
}

Result<PreparedTurn> ChatSession::render_and_encode(const std::vector<ChatMessage>& messages,
                                                    const std::string& tools_json) const {
    PreparedTurn turn;
    try {
        if (auto text = render_with_template(messages, turn.note, /*add_generation_prompt=*/true, tools_json)) {
            turn.text = std::move(*text);
            turn.source = PromptSource::ModelTemplate;
        } else {
            turn.text = render_fallback_chat(messages, /*add_generation_prompt=*/true);
            turn.source = PromptSource::Fallback;
        }
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("rendering the conversation");
    }
    // Templates of models trained without a system role drop it; the user should be told.
    for (const ChatMessage& m : messages)
        if (m.role == "system" && m.content.find_first_not_of(" \t\r\n") != std::string::npos &&
            turn.text.find(m.content) == std::string::npos)
            turn.system_ignored = true;
    return finish_prepare(std::move(turn));
}

uint32_t ChatSession::prompt_budget(const PrepareOptions& options) const {
    const uint32_t context = session_->context_length();
    const uint32_t reserve = std::max<uint32_t>(1, std::min(options.reserve_tokens, context / 2));
    return context > reserve ? context - reserve : 1;
}

Result<PreparedTurn> ChatSession::prepare(const std::vector<ChatMessage>& messages, const PrepareOptions& options) const {
    std::string tools_json;
    try {
        if (!options.tools.empty()) tools_json = tools_template_json(options.tools);
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("writing the tools for the template");
    }
    auto whole = render_and_encode(messages, tools_json);
    if (!whole) return whole;
    PreparedTurn turn = std::move(whole).value();
    // What a sliding window or a context shift keeps; under Stop nothing is cut, so no render for it.
    if (options.policy != ContextPolicy::Stop) turn.kept_head = system_head(messages, turn.ids, tools_json);
    const uint32_t budget = prompt_budget(options);
    if (turn.ids.size() > budget) {
        if (options.policy == ContextPolicy::DropOldest) {
            const size_t head = turn.kept_head;  // the system messages stay first: the same tokens
            auto dropped = drop_oldest(messages, std::move(turn), budget, tools_json);
            if (!dropped) return dropped;
            turn = std::move(dropped).value();
            turn.kept_head = head;
        } else if (options.policy == ContextPolicy::SlidingWindow) {
            slide_window(turn, budget);
        }
    }
    plan_reuse(turn);
    return turn;
}

Result<PreparedTurn> ChatSession::prepare_raw(const std::string& text, const PrepareOptions& options) const {
    PreparedTurn turn;
    turn.text = text;
    turn.source = PromptSource::Raw;
    turn.note = "raw prompt: no chat template applied";
    auto encoded = finish_prepare(std::move(turn));
    if (!encoded) return encoded;
    turn = std::move(encoded).value();
    turn.kept_head = system_head({}, turn.ids);  // BOS, if any: no render
    if (turn.ids.size() > prompt_budget(options) && options.policy != ContextPolicy::Stop)
        slide_window(turn, prompt_budget(options));
    plan_reuse(turn);
    return turn;
}

Result<PreparedTurn> ChatSession::prepare_ids(std::vector<int32_t> ids, const PrepareOptions& options) const {
    if (ids.empty()) return make_error("the prompt holds no tokens");
    const size_t vocab = model_->tokenizer().vocab_size();
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= vocab)
            return make_error("prompt token " + std::to_string(i) + " is id " + std::to_string(ids[i]) +
                              ", outside the vocabulary of " + std::to_string(vocab) + " tokens");
    PreparedTurn turn;
    turn.source = PromptSource::Raw;
    turn.note = "raw prompt given as token ids: no chat template applied";
    turn.ids = std::move(ids);
    turn.text = model_->tokenizer().decode(turn.ids);
    turn.context_length = session_->context_length();
    turn.kept_head = system_head({}, turn.ids);  // BOS, if any: no render
    if (turn.ids.size() > prompt_budget(options) && options.policy != ContextPolicy::Stop)
        slide_window(turn, prompt_budget(options));
    plan_reuse(turn);
    return turn;
}

Result<PreparedTurn> ChatSession::drop_oldest(const std::vector<ChatMessage>& messages, PreparedTurn whole,
                                              uint32_t budget, const std::string& tools_json) const {
    size_t first = 0;  // the leading system messages always stay
    while (first < messages.size() && messages[first].role == "system") ++first;
    const size_t last = messages.empty() ? 0 : messages.size() - 1;
    for (size_t from = first + 1; from <= last && last > first; ++from) {
        // Keep the turns alternating: what is left starts with a user message (or is the last one).
        if (messages[from].role != "user" && from != last) continue;
        std::vector<ChatMessage> kept(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(first));
        kept.insert(kept.end(), messages.begin() + static_cast<std::ptrdiff_t>(from), messages.end());
        auto turn = render_and_encode(kept, tools_json);
        if (!turn) return turn;
        if (turn->ids.size() <= budget || from == last) {
            turn->dropped_messages = from - first;
            turn->dropped_tokens = whole.ids.size() > turn->ids.size() ? whole.ids.size() - turn->ids.size() : 0;
            return turn;
        }
    }
    return whole;  // nothing but the last message: there is no turn to drop
}

size_t ChatSession::system_head(const std::vector<ChatMessage>& messages, const std::vector<int32_t>& ids,
                                const std::string& tools_json) const {
    const Tokenizer& tokenizer = model_->tokenizer();
    const size_t bos = !ids.empty() && ids.front() == tokenizer.bos_id() ? 1 : 0;
    size_t head = bos;
    std::vector<ChatMessage> system;
    for (const ChatMessage& m : messages) {
        if (m.role != "system") break;
        system.push_back(m);
    }
    if (!system.empty()) {
        std::string note;
        // The tools render in the system turn in most templates (Qwen, Hermes, gpt-oss), so they stay with it.
        auto text = render_with_template(system, note, /*add_generation_prompt=*/false, tools_json);
        const std::vector<int32_t> system_ids =
            encode_chat_prompt(tokenizer, text ? *text : render_fallback_chat(system, /*add_generation_prompt=*/false));
        const size_t limit = std::min(system_ids.size(), ids.size());
        head = std::max(head, static_cast<size_t>(std::mismatch(system_ids.begin(),
                                                                system_ids.begin() + static_cast<std::ptrdiff_t>(limit), ids.begin())
                                                      .first -
                                                  system_ids.begin()));
    }
    return head;
}

void ChatSession::slide_window(PreparedTurn& turn, uint32_t budget) const {
    const size_t bos = !turn.ids.empty() && turn.ids.front() == model_->tokenizer().bos_id() ? 1 : 0;
    size_t head = turn.kept_head;
    if (head * 2 > budget) head = bos;  // a system prompt longer than half the window is cut like the rest
    turn.kept_head = head;
    const size_t tail = budget - head;
    turn.dropped_tokens = turn.ids.size() - budget;
    turn.ids.erase(turn.ids.begin() + static_cast<std::ptrdiff_t>(head), turn.ids.end() - static_cast<std::ptrdiff_t>(tail));
    if (!turn.note.empty()) turn.note += "; ";
    turn.note += "sliding window: the oldest " + std::to_string(turn.dropped_tokens) + " tokens are left out";
}

Result<PreparedTurn> ChatSession::finish_prepare(PreparedTurn turn) const {
    try {
        turn.ids = encode_chat_prompt(model_->tokenizer(), turn.text);
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("tokenizing the prompt");
    }
    if (turn.ids.empty()) return make_error("the prompt is empty: it encodes to no tokens");
    turn.context_length = session_->context_length();
    return turn;
}

void ChatSession::plan_reuse(PreparedTurn& turn) const {
    // KV reuse by token prefix: the longest common prefix of the cached ids and the new prompt
    // is kept, the rest recomputed (a reply that re-encodes differently costs only its tail; a
    // regenerated reply keeps the whole prompt). At least the last prompt token is always fed,
    // for fresh logits. The cache is only trusted while the session holds exactly what was recorded.
    turn.reused_tokens = 0;
    if (session_->position() == cached_.size()) {
        const size_t limit = std::min(cached_.size(), turn.ids.size() - 1);
        turn.reused_tokens = static_cast<size_t>(
            std::mismatch(cached_.begin(), cached_.begin() + static_cast<std::ptrdiff_t>(limit), turn.ids.begin()).first -
            cached_.begin());
    }
}

void ChatSession::forget() {
    session_->reset();
    cached_.clear();
}

Status ChatSession::reply(const PreparedTurn& turn, const ReplyOptions& options, const PieceCallback& on_piece,
                          const CancelToken* cancel, ChatTurnOutcome& outcome) {
    outcome = ChatTurnOutcome{};
    outcome.context_used = session_->position();
    if (!turn.fits())
        return make_error(ErrorKind::ContextFull, "the conversation needs " + std::to_string(turn.ids.size()) +
                                                      " tokens and the context holds " +
                                                      std::to_string(session_->context_length()));
    // Re-check the plan: the cache may have changed since prepare().
    size_t reused = turn.reused_tokens;
    if (reused > 0 && (session_->position() != cached_.size() || reused > cached_.size() || reused >= turn.ids.size() ||
                       !std::equal(turn.ids.begin(), turn.ids.begin() + static_cast<std::ptrdiff_t>(reused), cached_.begin())))
        reused = 0;
    if (reused == 0) {
        forget();
    } else {
        // A sliding-window model may have to start over (its rings no longer hold the prefix).
        reused = session_->truncate(static_cast<uint32_t>(reused));
        cached_.resize(reused);
    }

    GenerateRequest request;
    request.prompt.assign(turn.ids.begin() + static_cast<std::ptrdiff_t>(reused), turn.ids.end());
    request.sampling = options.sampling;
    request.max_tokens = std::max(0, options.max_tokens);
    request.stop_at_end_of_generation = !options.ignore_end_of_turn;
    if (!options.ignore_end_of_turn) request.stop_tokens = end_of_turn_;
    request.on_step = options.on_step;
    request.on_sampled = options.on_sampled;
    const uint32_t keep = static_cast<uint32_t>(std::min(turn.kept_head, turn.ids.size()));
    if (options.context_policy != ContextPolicy::Stop) request.context_shift = ContextShift{cached_, keep};
    if (options.grammar) {
        if (!grammar_vocabulary_) grammar_vocabulary_ = GrammarVocabulary::from_tokenizer(model_->tokenizer());
        request.grammar = options.grammar;
        request.grammar_vocabulary = grammar_vocabulary_;
    }

    Session& session = *session_;
    StopSequenceMatcher stops(options.stop_sequences);
    const auto emit = [&](int32_t token, std::string_view text) {
        outcome.text.append(text);
        // generate() feeds the token right after this callback, at the current position.
        if (on_piece) on_piece(ChatPiece{token, text, session.position()});
    };
    const TokenCallback on_token = [&](int32_t token, std::string_view text) {
        if (token >= 0) outcome.tokens.push_back(token);
        if (stops.empty()) {
            emit(token, text);
            return true;
        }
        const std::string released = stops.feed(text);
        if (!released.empty() || !stops.matched()) emit(token, released);
        return !stops.matched();
    };
    // generate() catches bad_alloc itself and reports it as OutOfMemory.
    const Result<GenerateStats> result = generate(session, request, on_token, cancel, &outcome.stats);
    outcome.context_used = session.position();
    if (stops.matched()) {
        outcome.stats.stop_reason = StopReason::StopSequence;
        outcome.stop_sequence = stops.matched_sequence();
    } else if (std::string tail = stops.flush(); !tail.empty()) {
        emit(-1, tail);  // the held-back text that never became a stop string
    }
    if (!result && result.kind() != ErrorKind::Cancelled) {
        forget();  // the cache's state is unknown after a failed step
        outcome.context_used = 0;
        return result.take_error();
    }
    // Everything stepped is in the cache, in order: the prompt, then the tokens fed so far
    // (a reply cut by cancellation or the context keeps what was computed).
    cached_ = turn.ids;
    cached_.insert(cached_.end(), outcome.tokens.begin(), outcome.tokens.end());
    // Each context shift dropped the tokens right after the kept head: together one run of them.
    if (const uint32_t dropped = outcome.stats.shift_dropped_tokens; dropped > 0 && keep + dropped <= cached_.size())
        cached_.erase(cached_.begin() + keep, cached_.begin() + keep + dropped);
    cached_.resize(std::min<size_t>(cached_.size(), session.position()));
    if (!result) return result.take_error();
    return {};
}

} // namespace cflow
