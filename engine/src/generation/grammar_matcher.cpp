// The grammar's pushdown automaton, fed bytes; the mask's walk over the vocabulary's byte trie.
#include "cflow/engine/generation/grammar_matcher.h"

#include <algorithm>
#include <limits>
#include <new>
#include <unordered_map>

namespace cflow {

namespace {

constexpr uint64_t kGrammarEmptyStackHash = 0x9E3779B97F4A7C15ull;

bool grammar_is_end(GrammarOp op) { return op == GrammarOp::End || op == GrammarOp::Alt; }

uint64_t grammar_mix(uint64_t parent_hash, uint32_t pos) {
    uint64_t h = parent_hash ^ (uint64_t(pos) + 0x9E3779B97F4A7C15ull + (parent_hash << 6) + (parent_hash >> 2));
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 29);
}

// The smallest code point a UTF-8 sequence of `length` bytes may encode (shorter forms are invalid).
uint32_t grammar_utf8_minimum(uint8_t length) {
    switch (length) {
    case 2: return 0x80;
    case 3: return 0x800;
    case 4: return 0x10000;
    default: return 0;
    }
}

} // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), elements_(grammar_->elements.data()) {}

Result<GrammarMatcher> GrammarMatcher::create(std::shared_ptr<const Grammar> grammar,
                                              std::shared_ptr<const GrammarVocabulary> vocabulary) {
    if (!grammar || !vocabulary || grammar->root >= grammar->rule_start.size())
        return make_error(ErrorKind::Internal, "grammar matcher: no grammar or no vocabulary");
    try {
        GrammarMatcher matcher(std::move(grammar), std::move(vocabulary));
        // The root's alternatives, each a stack of its own.
        for (uint32_t a = matcher.grammar_->rule_start[matcher.grammar_->root];;) {
            matcher.todo_.push_back(grammar_is_end(matcher.elements_[a].op) ? kEmptyStack : matcher.push(a, kEmptyStack));
            while (!grammar_is_end(matcher.elements_[a].op)) ++a;
            if (matcher.elements_[a].op == GrammarOp::End) break;
            ++a;
        }
        if (matcher.expand_pending(matcher.stacks_) == Step::OverLimit) return matcher.limit_error();
        return matcher;
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("grammar matcher");
    }
}

Error GrammarMatcher::limit_error() const {
    if (over_ == Limit::Stacks)
        return make_error(ErrorKind::OverBudget, "grammar: more than " + std::to_string(grammar_->limits.max_stacks) +
                                                     " parses are alive at once; the grammar is too ambiguous here");
    if (over_ == Limit::Work)
        return make_error(ErrorKind::OverBudget, "grammar: one step would compare more than " +
                                                     std::to_string(grammar_->limits.max_step_work) +
                                                     " parse stacks; the grammar is too ambiguous here");
    return make_error(ErrorKind::OverBudget, "grammar: one character expands to more than " +
                                                 std::to_string(grammar_->limits.max_expansion_steps) +
                                                 " stack entries; the grammar nests too many alternatives");
}

uint32_t GrammarMatcher::push(uint32_t pos, uint32_t parent) {
    arena_.push_back(StackNode{pos, parent, grammar_mix(stack_hash(parent), pos)});
    return uint32_t(arena_.size() - 1);
}

uint64_t GrammarMatcher::stack_hash(uint32_t stack) const {
    return stack == kEmptyStack ? kGrammarEmptyStackHash : arena_[stack].hash;
}

bool GrammarMatcher::same_stack(uint32_t a, uint32_t b) const {
    while (a != b) {
        if (a == kEmptyStack || b == kEmptyStack || arena_[a].pos != arena_[b].pos) return false;
        a = arena_[a].parent;
        b = arena_[b].parent;
    }
    return true;
}

GrammarMatcher::Step GrammarMatcher::add_unique(std::vector<uint32_t>& out, uint32_t stack) {
    const uint64_t hash = stack_hash(stack);
    work_ += out.size() + 1;
    if (work_ > grammar_->limits.max_step_work) {
        over_ = Limit::Work;
        return Step::OverLimit;
    }
    for (uint32_t other : out)
        if (other == stack || (stack_hash(other) == hash && same_stack(other, stack))) return Step::Alive;
    if (out.size() >= grammar_->limits.max_stacks) {
        over_ = Limit::Stacks;
        return Step::OverLimit;
    }
    out.push_back(stack);
    return Step::Alive;
}

// Replaces a top that references a rule by the rule's alternatives (the rest of the referencing
// sequence below them) until every top is a class or the stack is empty. Terminates: the parser
// refused left recursion, so a chain of references cannot come back to a rule without a class.
GrammarMatcher::Step GrammarMatcher::expand_pending(std::vector<uint32_t>& out) {
    while (!todo_.empty()) {
        const uint32_t stack = todo_.back();
        todo_.pop_back();
        if (stack == kEmptyStack || elements_[arena_[stack].pos].op != GrammarOp::RuleRef) {
            if (add_unique(out, stack) == Step::OverLimit) return todo_.clear(), Step::OverLimit;
            continue;
        }
        const StackNode node = arena_[stack];
        push_alternatives(node.pos, node.parent);
        if (arena_.size() - step_base_ > grammar_->limits.max_expansion_steps) {
            over_ = Limit::Expansion;
            todo_.clear();
            return Step::OverLimit;
        }
    }
    return Step::Alive;
}

// Queues the alternatives of the rule referenced at `ref_pos`, each above the rest of the
// referencing sequence (nothing when the reference ends it) on `parent`.
void GrammarMatcher::push_alternatives(uint32_t ref_pos, uint32_t parent) {
    const uint32_t after = ref_pos + 1;
    const uint32_t base = grammar_is_end(elements_[after].op) ? parent : push(after, parent);
    for (uint32_t a = grammar_->rule_start[elements_[ref_pos].value];;) {
        todo_.push_back(grammar_is_end(elements_[a].op) ? base : push(a, base));
        while (!grammar_is_end(elements_[a].op)) ++a;
        if (elements_[a].op == GrammarOp::End) break;
        ++a;
    }
}

uint32_t GrammarMatcher::class_end(uint32_t pos) const {
    ++pos;
    while (elements_[pos].op == GrammarOp::CharAlt || elements_[pos].op == GrammarOp::CharRangeUpper) ++pos;
    return pos;
}

bool GrammarMatcher::class_matches(uint32_t pos, uint32_t code_point) const {
    const GrammarElement first = elements_[pos];
    if (first.op == GrammarOp::CharAny) return true;
    bool found = false;
    for (uint32_t i = pos;;) {
        const uint32_t lo = elements_[i].value;
        uint32_t hi = lo;
        if (elements_[i + 1].op == GrammarOp::CharRangeUpper) hi = elements_[++i].value;
        found |= lo <= code_point && code_point <= hi;
        if (elements_[++i].op != GrammarOp::CharAlt) break;
    }
    return found != (first.op == GrammarOp::CharNot);
}

// Whether the class at `pos` matches some code point in [lo, hi].
bool GrammarMatcher::class_matches_some(uint32_t pos, uint32_t lo, uint32_t hi) {
    const GrammarElement first = elements_[pos];
    if (first.op == GrammarOp::CharAny) return true;
    ranges_.clear();
    for (uint32_t i = pos;;) {
        const uint32_t a = elements_[i].value;
        uint32_t b = a;
        if (elements_[i + 1].op == GrammarOp::CharRangeUpper) b = elements_[++i].value;
        if (first.op == GrammarOp::Char && a <= hi && b >= lo) return true;
        ranges_.emplace_back(a, b);
        if (elements_[++i].op != GrammarOp::CharAlt) break;
    }
    if (first.op == GrammarOp::Char) return false;
    // Negated: some code point of [lo, hi] lies outside every range.
    std::sort(ranges_.begin(), ranges_.end());
    uint64_t next_free = lo;
    for (const auto& [a, b] : ranges_) {
        if (a > next_free) break;
        next_free = std::max<uint64_t>(next_free, uint64_t(b) + 1);
        if (next_free > hi) return false;
    }
    return next_free <= hi;
}

GrammarMatcher::Step GrammarMatcher::advance_code_point(const std::vector<uint32_t>& in, uint32_t code_point,
                                                        std::vector<uint32_t>& out) {
    out.clear();
    step_base_ = arena_.size();
    for (const uint32_t stack : in) {
        if (stack == kEmptyStack) continue;
        const StackNode node = arena_[stack];
        if (!class_matches(node.pos, code_point)) continue;
        const uint32_t after = class_end(node.pos);
        // A reference right after the class is expanded in place, without a node of its own.
        if (elements_[after].op == GrammarOp::RuleRef) push_alternatives(after, node.parent);
        else todo_.push_back(grammar_is_end(elements_[after].op) ? node.parent : push(after, node.parent));
        if (expand_pending(out) == Step::OverLimit) return Step::OverLimit;
    }
    return out.empty() ? Step::Dead : Step::Alive;
}

GrammarMatcher::Step GrammarMatcher::advance_byte(const std::vector<uint32_t>& in, Utf8State state, uint8_t byte,
                                                  std::vector<uint32_t>& out, Utf8State& state_out) {
    if (state.remaining == 0) {
        if (byte < 0x80) {
            state_out = Utf8State{};
            return advance_code_point(in, byte, out);
        }
        if ((byte >> 5) == 0x6) state = Utf8State{byte & 0x1Fu, 1, 2};
        else if ((byte >> 4) == 0xE) state = Utf8State{byte & 0x0Fu, 2, 3};
        else if ((byte >> 3) == 0x1E) state = Utf8State{byte & 0x07u, 3, 4};
        else return Step::Dead;
    } else {
        if ((byte & 0xC0) != 0x80) return Step::Dead;
        state.value = (state.value << 6) | (byte & 0x3Fu);
        if (--state.remaining == 0) {
            const uint32_t cp = state.value;
            if (cp < grammar_utf8_minimum(state.length) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return Step::Dead;
            state_out = Utf8State{};
            return advance_code_point(in, cp, out);
        }
    }
    // Inside a sequence: alive while some stack's class takes a code point that starts this way.
    const uint32_t shift = 6u * state.remaining;
    const uint32_t lo = std::max(state.value << shift, grammar_utf8_minimum(state.length));
    const uint32_t hi = std::min((state.value << shift) | ((1u << shift) - 1), 0x10FFFFu);
    if (lo > hi) return Step::Dead;
    bool viable = false;
    work_ += in.size();
    if (work_ > grammar_->limits.max_step_work) {
        over_ = Limit::Work;
        return Step::OverLimit;
    }
    for (const uint32_t stack : in) {
        if (stack == kEmptyStack) continue;
        const uint32_t pos = arena_[stack].pos;
        // Surrogates are no code points of UTF-8: [lo, hi] without D800..DFFF.
        if (lo < 0xD800 && class_matches_some(pos, lo, std::min(hi, 0xD7FFu))) viable = true;
        else if (hi > 0xDFFF && class_matches_some(pos, std::max(lo, 0xE000u), hi)) viable = true;
        if (viable) break;
    }
    if (!viable) return Step::Dead;
    if (&out != &in) out = in;
    state_out = state;
    return Step::Alive;
}

bool GrammarMatcher::is_complete() const {
    return utf8_.remaining == 0 && std::find(stacks_.begin(), stacks_.end(), kEmptyStack) != stacks_.end();
}

Status GrammarMatcher::accept_token(int32_t id) {
    if (vocabulary_->is_special(id))
        return make_error("grammar: token " + std::to_string(id) + " is a special token, which no grammar text matches");
    if (vocabulary_->bytes(id).empty()) return make_error("grammar: token " + std::to_string(id) + " has no text");
    return accept_bytes(vocabulary_->bytes(id));
}

Status GrammarMatcher::accept_bytes(std::string_view bytes) {
    try {
        if (strip_first_space_ && !bytes.empty() && bytes.front() == ' ') bytes.remove_prefix(1);
        work_ = 0;
        std::vector<uint32_t> current = stacks_, next;  // [stacks]; committed only when every byte fits
        Utf8State state = utf8_;
        for (size_t i = 0; i < bytes.size(); ++i) {
            const Step step = advance_byte(current, state, uint8_t(bytes[i]), next, state);
            if (step == Step::OverLimit) return limit_error();
            if (step == Step::Dead)
                return make_error("grammar: the output may not go on with byte " + std::to_string(i) + " of this text here");
            current.swap(next);
        }
        stacks_ = std::move(current);
        utf8_ = state;
        strip_first_space_ = false;
        compact();
        return Status::success();
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("grammar matcher");
    }
}

// Copies the live stacks into a fresh arena once garbage dominates it.
void GrammarMatcher::compact() {
    if (arena_.size() < compact_at_) return;
    std::vector<StackNode> fresh;
    std::unordered_map<uint32_t, uint32_t> moved;  // old node -> new node
    std::vector<uint32_t> chain;
    for (uint32_t& top : stacks_) {
        chain.clear();
        for (uint32_t s = top; s != kEmptyStack && !moved.count(s); s = arena_[s].parent) chain.push_back(s);
        for (size_t k = chain.size(); k-- > 0;) {
            StackNode node = arena_[chain[k]];
            if (node.parent != kEmptyStack) node.parent = moved.at(node.parent);
            fresh.push_back(node);
            moved[chain[k]] = uint32_t(fresh.size() - 1);
        }
        if (top != kEmptyStack) top = moved.at(top);
    }
    arena_ = std::move(fresh);
    compact_at_ = std::max<size_t>(size_t(1) << 16, arena_.size() * 4);
}

// The parse state a mask depends on, as one word string: the UTF-8 state and the first-space
// rule, then every stack's element positions from top to bottom, stacks sorted (the same set can
// be reached in another order) and each closed by a separator no position can take.
void GrammarMatcher::mask_state_key(std::vector<uint32_t>& key) {
    mask_key_stacks_.resize(stacks_.size());
    for (size_t s = 0; s < stacks_.size(); ++s) {
        std::vector<uint32_t>& positions = mask_key_stacks_[s];
        positions.clear();
        for (uint32_t node = stacks_[s]; node != kEmptyStack; node = arena_[node].parent) positions.push_back(arena_[node].pos);
    }
    std::sort(mask_key_stacks_.begin(), mask_key_stacks_.begin() + ptrdiff_t(stacks_.size()));
    key.clear();
    key.push_back(utf8_.value);
    key.push_back(uint32_t(utf8_.remaining) | uint32_t(utf8_.length) << 8 | uint32_t(strip_first_space_) << 16);
    for (size_t s = 0; s < stacks_.size(); ++s) {
        key.insert(key.end(), mask_key_stacks_[s].begin(), mask_key_stacks_[s].end());
        key.push_back(kEmptyStack);
    }
}

Result<size_t> GrammarMatcher::allowed_tokens(std::vector<uint8_t>& allowed, std::span<const int32_t> end_ids) {
    const GrammarVocabulary& vocabulary = *vocabulary_;
    const std::vector<int32_t>& ids = vocabulary.sorted_ids();
    const std::vector<uint32_t>& shared = vocabulary.shared_prefix();
    const size_t base_nodes = arena_.size();
    work_ = 0;
    try {
        mask_state_key(mask_key_);
        ++mask_clock_;
        MaskCacheEntry* cached = nullptr;
        for (MaskCacheEntry& entry : mask_cache_)
            if (entry.state == mask_key_) cached = &entry;
        if (cached) {
            ++mask_cache_hits_;
            cached->last_used = mask_clock_;
            allowed = cached->allowed;
            return finish_allowed(allowed, end_ids);
        }
        allowed.assign(vocabulary.vocab_size(), 0);
        if (depth_stacks_.empty()) depth_stacks_.resize(1);
        depth_stacks_[0] = stacks_;
        depth_utf8_.assign(1, utf8_);
        depth_arena_.assign(1, base_nodes);
        size_t valid = 0;  // depth_stacks_[0..valid] hold the states of the current token's prefixes
        for (size_t i = 0; i < ids.size(); ++i) {
            const std::string_view bytes = vocabulary.sorted_bytes(i);
            valid = std::min<size_t>(valid, shared[i]);
            size_t depth = valid;
            arena_.resize(depth_arena_[depth]);  // the nodes of the previous token's deeper prefixes
            bool dead = false;
            while (depth < bytes.size()) {
                if (depth_stacks_.size() < depth + 2) depth_stacks_.resize(depth + 2);
                if (depth_utf8_.size() < depth + 2) depth_utf8_.resize(depth + 2), depth_arena_.resize(depth + 2);
                Step step = Step::Alive;
                if (depth == 0 && strip_first_space_ && bytes[0] == ' ') {
                    depth_stacks_[1] = depth_stacks_[0];
                    depth_utf8_[1] = depth_utf8_[0];
                } else {
                    step = advance_byte(depth_stacks_[depth], depth_utf8_[depth], uint8_t(bytes[depth]),
                                        depth_stacks_[depth + 1], depth_utf8_[depth + 1]);
                }
                if (step == Step::OverLimit) {
                    arena_.resize(base_nodes);
                    return limit_error();
                }
                if (step == Step::Dead) {
                    dead = true;
                    break;
                }
                ++depth;
                depth_arena_[depth] = arena_.size();
            }
            valid = depth;
            if (!dead) {
                allowed[size_t(ids[i])] = 1;
                continue;
            }
            // Every later token that starts with the dead prefix bytes[0..depth] is out too.
            while (i + 1 < ids.size() && shared[i + 1] >= depth + 1) ++i;
        }
        arena_.resize(base_nodes);
        MaskCacheEntry* slot = nullptr;
        if (mask_cache_.size() < kMaskCacheEntries) {
            slot = &mask_cache_.emplace_back();
        } else {
            slot = &*std::min_element(mask_cache_.begin(), mask_cache_.end(),
                                      [](const MaskCacheEntry& a, const MaskCacheEntry& b) { return a.last_used < b.last_used; });
        }
        slot->state = mask_key_;
        slot->allowed = allowed;
        slot->last_used = mask_clock_;
    } catch (const std::bad_alloc&) {
        arena_.resize(base_nodes);
        return out_of_memory_error("grammar mask");
    }
    return finish_allowed(allowed, end_ids);
}

// End ids count as ends only: allowed exactly when the output may stop, whatever their bytes.
size_t GrammarMatcher::finish_allowed(std::vector<uint8_t>& allowed, std::span<const int32_t> end_ids) const {
    size_t text_tokens = 0;
    for (const uint8_t a : allowed) text_tokens += a;
    for (const int32_t id : end_ids) {
        if (id < 0 || size_t(id) >= allowed.size() || !allowed[size_t(id)]) continue;
        allowed[size_t(id)] = 0;
        --text_tokens;
    }
    if (is_complete())
        for (const int32_t id : end_ids)
            if (id >= 0 && size_t(id) < allowed.size()) allowed[size_t(id)] = 1;
    return text_tokens;
}

Result<size_t> GrammarMatcher::mask(std::span<float> logits, std::span<const int32_t> end_ids) {
    auto counted = allowed_tokens(allowed_, end_ids);
    if (!counted) return counted;
    for (size_t i = 0; i < logits.size(); ++i)
        if (i >= allowed_.size() || !allowed_[i]) logits[i] = -std::numeric_limits<float>::infinity();
    return counted;
}

} // namespace cflow
