#pragma once
// An incremental GBNF matcher: llama.cpp's llama_grammar pushdown automaton over Unicode code
// points (a set of stacks of element positions; a code point advances every stack whose top
// class matches it), fed bytes, so a token that ends inside a UTF-8 sequence keeps the
// sequence's first bytes pending and the next token goes on from there.
//
// mask() walks the vocabulary's implicit byte trie (GrammarVocabulary) from the current stacks:
// a byte prefix shared by many tokens is advanced once, and a dead prefix drops every token that
// starts with it. A token is allowed iff its bytes keep the output a prefix of some string of the
// grammar's language (exact: the parser refused rules that cannot finish). Special tokens never
// match text; the end ids passed to mask() are allowed exactly when the grammar is complete.
//
// Stacks are persistent linked lists in an arena (a node: element position + parent), so a
// code point pushes a node instead of copying a stack; the mask's nodes are dropped after it.
// Bounds: GrammarLimits::max_stacks stacks at once, max_expansion_steps nodes per code point and
// max_step_work stack visits per call; past any a call fails with ErrorKind::OverBudget.
//
// Thread safety: one thread at a time (a generation builds its own); the Grammar and the
// GrammarVocabulary it holds are immutable and shared.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_vocabulary.h"

namespace cflow {

class GrammarMatcher {
public:
    // Errors: a null argument; OverBudget when the root's first positions exceed the limits.
    static Result<GrammarMatcher> create(std::shared_ptr<const Grammar> grammar,
                                         std::shared_ptr<const GrammarVocabulary> vocabulary);

    // Advances by the token's bytes. InvalidInput (state unchanged) when the grammar does not
    // allow them or the token is special or empty; OverBudget past the limits.
    Status accept_token(int32_t id);
    Status accept_bytes(std::string_view bytes);

    // The output so far is a whole string of the language (an end token may come now).
    bool is_complete() const;

    // allowed: resized to [vocab], 1 where the token may come next. End ids: 1 iff is_complete().
    // Returns the number of allowed tokens that are not end ids.
    Result<size_t> allowed_tokens(std::vector<uint8_t>& allowed, std::span<const int32_t> end_ids);
    // logits: [n] f32; every token not allowed (and every id >= the vocabulary's size) becomes
    // -inf. Returns the number of allowed tokens that are not end ids.
    Result<size_t> mask(std::span<float> logits, std::span<const int32_t> end_ids);

    // The next accepted token loses one leading space, as StreamingDecoder drops the SPM dummy
    // prefix of the first token after a context with no text; mask() sees it the same way.
    void set_strip_first_space(bool strip) { strip_first_space_ = strip; }

    size_t stack_count() const { return stacks_.size(); }
    size_t node_count() const { return arena_.size(); }  // stack nodes held, garbage included

    // Masks are remembered per parse state (the set of stacks, the pending UTF-8 bytes and the
    // first-space rule): inside a JSON string or a free-text run the state after each token is
    // the one before it, so the walk over the vocabulary runs once per distinct state instead of
    // once per token. Exact: the walk is a function of that state alone.
    static constexpr size_t kMaskCacheEntries = 8;
    size_t mask_cache_hits() const { return mask_cache_hits_; }

private:
    static constexpr uint32_t kEmptyStack = 0xFFFFFFFFu;  // the stack with nothing left to match

    struct StackNode {
        uint32_t pos;     // index into Grammar::elements; a class (or, transiently, a RuleRef)
        uint32_t parent;  // the node below, kEmptyStack at the bottom
        uint64_t hash;    // of the whole stack, to tell stacks apart quickly
    };
    struct Utf8State {
        uint32_t value = 0;     // bits of the pending code point so far
        uint8_t remaining = 0;  // continuation bytes still to come; 0: at a code point boundary
        uint8_t length = 0;     // bytes of the pending sequence
    };
    enum class Step : uint8_t { Alive, Dead, OverLimit };

    GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocabulary> vocabulary);

    uint32_t push(uint32_t pos, uint32_t parent);
    uint64_t stack_hash(uint32_t stack) const;
    bool same_stack(uint32_t a, uint32_t b) const;
    Step add_unique(std::vector<uint32_t>& out, uint32_t stack);
    void push_alternatives(uint32_t ref_pos, uint32_t parent);
    Step expand_pending(std::vector<uint32_t>& out);  // drains todo_ into out
    Step advance_code_point(const std::vector<uint32_t>& in, uint32_t code_point, std::vector<uint32_t>& out);
    Step advance_byte(const std::vector<uint32_t>& in, Utf8State state, uint8_t byte, std::vector<uint32_t>& out,
                      Utf8State& state_out);
    bool class_matches(uint32_t pos, uint32_t code_point) const;
    bool class_matches_some(uint32_t pos, uint32_t lo, uint32_t hi);
    uint32_t class_end(uint32_t pos) const;
    void compact();
    Error limit_error() const;

    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const GrammarVocabulary> vocabulary_;
    const GrammarElement* elements_ = nullptr;  // grammar_->elements.data()
    std::vector<StackNode> arena_;              // [nodes] every live stack's nodes (and garbage until compact())
    std::vector<uint32_t> stacks_;              // [stacks] tops of the current stacks
    Utf8State utf8_;
    bool strip_first_space_ = false;
    size_t step_base_ = 0;                      // arena size when the current code point began
    enum class Limit : uint8_t { Stacks, Expansion, Work };
    Limit over_ = Limit::Stacks;                // which limit the last OverLimit hit
    size_t work_ = 0;                           // stack visits and comparisons in this call
    size_t compact_at_ = 1 << 16;               // arena size that triggers compact()

    // Scratch, kept to avoid allocations per call.
    std::vector<uint32_t> todo_;                             // [pending] stacks to expand
    std::vector<uint32_t> next_;                             // [stacks]
    std::vector<std::pair<uint32_t, uint32_t>> ranges_;      // [ranges] of a negated class
    std::vector<std::vector<uint32_t>> depth_stacks_;        // [depth][stacks] the mask walk's state per prefix length
    std::vector<Utf8State> depth_utf8_;                      // [depth]
    std::vector<size_t> depth_arena_;                        // [depth] arena size after that depth's state
    std::vector<uint8_t> allowed_;                           // [vocab]

    struct MaskCacheEntry {
        std::vector<uint32_t> state;    // [words] the parse state, canonical (see mask_state_key())
        std::vector<uint8_t> allowed;   // [vocab] the walk's result before end ids are applied
        uint64_t last_used = 0;
    };
    void mask_state_key(std::vector<uint32_t>& key);
    size_t finish_allowed(std::vector<uint8_t>& allowed, std::span<const int32_t> end_ids) const;
    std::vector<MaskCacheEntry> mask_cache_;                 // [<= kMaskCacheEntries]
    std::vector<uint32_t> mask_key_;                         // [words] scratch
    std::vector<std::vector<uint32_t>> mask_key_stacks_;     // [stacks][depth] scratch
    uint64_t mask_clock_ = 0;
    size_t mask_cache_hits_ = 0;
};

} // namespace cflow
