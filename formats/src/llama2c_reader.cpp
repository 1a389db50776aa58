// llama2.c checkpoints (legacy and version-1 export) + tokenizer.bin -> SourceModel.
#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "cflow/formats/source_model.h"
#include "checked_math.h"

namespace cflow {

namespace {

constexpr uint32_t kV1Magic = 0x616b3432u;  // "ak42" little-endian
constexpr uint64_t kV1HeaderBytes = 256;

#pragma pack(push, 1)
struct LegacyHeader {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};
struct V1HeaderPrefix {
    uint32_t magic;
    int32_t version;
    LegacyHeader params;
    uint8_t shared_classifier;
};
#pragma pack(pop)
static_assert(sizeof(LegacyHeader) == 28, "llama2.c legacy header is 7 x int32");
static_assert(sizeof(V1HeaderPrefix) == 37, "llama2.c v1 header prefix is magic, version, 7 params, shared flag");

struct Geometry {
    uint64_t dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, vocab = 0, seq_len = 0;
    uint64_t head_size = 0, kv_dim = 0;
    bool shared = true;
};

// One f32 block of the file: n_layers consecutive [rows x cols] matrices (or one).
struct Block {
    const char* what;       // for messages
    uint64_t count;         // layers (1 for global tensors)
    uint64_t rows, cols;    // per-layer shape; cols == 0 means a vector of rows
    uint64_t offset = 0;    // absolute byte offset, filled in by layout()
    uint64_t floats_each() const { return cols == 0 ? rows : rows * cols; }
};

// Which tensor a file of the wrong size cuts into, or what it holds too much after: "expected N
// bytes" alone left a truncated download and a header of the wrong model looking the same.
std::string where_size_differs(const std::vector<Block>& blocks, uint64_t size, uint64_t expected) {
    if (size > expected)
        return ": " + std::to_string(size - expected) + " trailing bytes after " + blocks.back().what + " (which ends at " +
               std::to_string(expected) + ")";
    for (const Block& b : blocks) {
        const uint64_t each = b.floats_each() * 4;
        const uint64_t end = b.offset + b.count * each;  // laid out without overflow
        if (size == b.offset) return ": the file ends where " + std::string(b.what) + " begins (offset " + std::to_string(b.offset) + ")";
        if (size < end) {
            const std::string layer = b.count > 1 ? " layer " + std::to_string((size - b.offset) / each) : "";
            return ": the file ends inside " + std::string(b.what) + layer + " ([" + std::to_string(b.offset) + ", " + std::to_string(end) + "))";
        }
    }
    return "";
}

Error geometry_error(const std::string& path, const std::string& what) {
    return make_error(path + ": header at offset 0: " + what);
}

// `params_at` is where the 7 int32 fields start (0 legacy, 8 in the v1 header): each message
// names the field and its own offset, not only the seven values in a row.
Status validate(const std::string& path, const LegacyHeader& h, uint64_t params_at, Geometry& g) {
    auto field = [&](const char* name, size_t index) {
        return std::string(name) + " (int32 at offset " + std::to_string(params_at + 4 * index) + ")";
    };
    // vocab_size's sign has a meaning (checked below); 1 keeps the table's index its field index.
    const std::pair<const char*, int32_t> positive[] = {{"dim", h.dim},       {"hidden_dim", h.hidden_dim}, {"n_layers", h.n_layers},
                                                        {"n_heads", h.n_heads}, {"n_kv_heads", h.n_kv_heads}, {"vocab_size", 1},
                                                        {"seq_len", h.seq_len}};
    for (size_t i = 0; i < std::size(positive); ++i)
        if (positive[i].second <= 0)
            return geometry_error(path, field(positive[i].first, i) + " is " + std::to_string(positive[i].second) + ", must be positive");
    if (h.vocab_size == 0)
        return geometry_error(path, field("vocab_size", 5) + " is 0, must be non-zero (negative: a separate classifier follows)");
    if (h.vocab_size == std::numeric_limits<int32_t>::min())
        return geometry_error(path, field("vocab_size", 5) + " is " + std::to_string(h.vocab_size) + ", out of range");
    if (h.n_kv_heads > h.n_heads || h.n_heads % h.n_kv_heads != 0)
        return geometry_error(path, field("n_kv_heads", 4) + ": n_kv_heads " + std::to_string(h.n_kv_heads) + " does not divide n_heads " +
                                        std::to_string(h.n_heads));
    if (h.dim % h.n_heads != 0 || (h.dim / h.n_heads) % 2 != 0)
        return geometry_error(path, field("n_heads", 3) + ": dim " + std::to_string(h.dim) + " / n_heads " + std::to_string(h.n_heads) +
                                        " is not an even head size");
    g.dim = static_cast<uint64_t>(h.dim);
    g.hidden = static_cast<uint64_t>(h.hidden_dim);
    g.layers = static_cast<uint64_t>(h.n_layers);
    g.heads = static_cast<uint64_t>(h.n_heads);
    g.kv_heads = static_cast<uint64_t>(h.n_kv_heads);
    g.vocab = static_cast<uint64_t>(h.vocab_size < 0 ? -static_cast<int64_t>(h.vocab_size) : h.vocab_size);
    g.seq_len = static_cast<uint64_t>(h.seq_len);
    g.head_size = g.dim / g.heads;
    g.kv_dim = g.head_size * g.kv_heads;
    return Status::success();
}

// Assigns offsets to blocks laid out back to back from start; returns the end offset.
bool layout(std::vector<Block>& blocks, uint64_t start, uint64_t* end) {
    uint64_t at = start;
    for (auto& b : blocks) {
        b.offset = at;
        uint64_t floats = 0, bytes = 0;
        if (!checked::mul(b.count, b.floats_each(), &floats) || !checked::mul(floats, 4, &bytes) || !checked::add(at, bytes, &at))
            return false;
    }
    *end = at;
    return true;
}

// Named blocks in the order a format stores them.
enum BlockId { kEmbd, kAttnNorm, kWq, kWk, kWv, kWo, kFfnNorm, kW1, kW2, kW3, kFinalNorm, kFreqReal, kFreqImag, kCls, kBlockCount };

std::array<Block, kBlockCount> block_shapes(const Geometry& g) {
    std::array<Block, kBlockCount> b{};
    b[kEmbd] = {"token_embedding", 1, g.vocab, g.dim};      // [vocab x dim]
    b[kAttnNorm] = {"rms_att", g.layers, g.dim, 0};        // [L x dim]
    b[kWq] = {"wq", g.layers, g.dim, g.dim};               // [L x dim x dim]
    b[kWk] = {"wk", g.layers, g.kv_dim, g.dim};            // [L x kv_dim x dim]
    b[kWv] = {"wv", g.layers, g.kv_dim, g.dim};            // [L x kv_dim x dim]
    b[kWo] = {"wo", g.layers, g.dim, g.dim};               // [L x dim x dim]
    b[kFfnNorm] = {"rms_ffn", g.layers, g.dim, 0};         // [L x dim]
    b[kW1] = {"w1", g.layers, g.hidden, g.dim};            // [L x hidden x dim]
    b[kW2] = {"w2", g.layers, g.dim, g.hidden};            // [L x dim x hidden]
    b[kW3] = {"w3", g.layers, g.hidden, g.dim};            // [L x hidden x dim]
    b[kFinalNorm] = {"rms_final", 1, g.dim, 0};            // [dim]
    b[kFreqReal] = {"freq_cis_real", 1, g.seq_len, g.head_size / 2};  // [seq_len x head_size/2]
    b[kFreqImag] = {"freq_cis_imag", 1, g.seq_len, g.head_size / 2};
    b[kCls] = {"wcls", 1, g.vocab, g.dim};                 // [vocab x dim]
    return b;
}

void add_views(SourceModel& m, const std::vector<Block>& order, const std::array<BlockId, kBlockCount>& ids, size_t n,
               const uint8_t* base, const std::string& file_name) {
    static const std::array<const char*, kBlockCount> kCanonical = {
        "token_embd.weight", "attn_norm.weight", "attn_q.weight",   "attn_k.weight",   "attn_v.weight",
        "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight",
        "output_norm.weight", "",                "",                "output.weight"};
    for (size_t i = 0; i < n; ++i) {
        const Block& b = order[i];
        BlockId id = ids[i];
        if (id == kFreqReal || id == kFreqImag) continue;  // RoPE tables: recomputed from theta
        uint64_t each_bytes = b.floats_each() * 4;
        for (uint64_t l = 0; l < b.count; ++l) {
            TensorView v;
            bool per_layer = b.count > 1 || (id != kEmbd && id != kFinalNorm && id != kCls);
            v.name = per_layer ? "blk." + std::to_string(l) + "." + kCanonical[id] : kCanonical[id];
            v.dtype = DType::F32;
            v.shape = b.cols == 0 ? std::vector<uint64_t>{b.rows} : std::vector<uint64_t>{b.rows, b.cols};
            v.data = base + b.offset + l * each_bytes;
            v.bytes = each_bytes;
            v.origin = file_name + ": " + b.what + (per_layer ? " layer " + std::to_string(l) : "");
            m.tensors[v.name] = std::move(v);
        }
    }
}

std::string restore_word_marker(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char ch : text) {
        if (ch == ' ') out += "\xE2\x96\x81";  // U+2581 in UTF-8
        else out.push_back(ch);
    }
    return out;
}

Status read_tokenizer(const std::string& path, uint64_t vocab, Metadata& meta) {
    auto mapped = MappedFile::open(path);
    if (!mapped) return mapped.take_error();
    const uint8_t* data = (*mapped)->data();
    const uint64_t size = (*mapped)->size();
    if (size < 4) return make_error(path + ": max_token_length at offset 0: file is " + std::to_string(size) + " bytes, truncated");
    int32_t max_token_length = 0;
    std::memcpy(&max_token_length, data, 4);
    // llama2.c sizes its merge buffer from this field; the export writes the longest token's length.
    if (max_token_length <= 0)
        return make_error(path + ": max_token_length at offset 0: is " + std::to_string(max_token_length) + ", must be positive");
    uint64_t at = 4;
    std::vector<std::string> tokens;    // [vocab]
    std::vector<float> scores;          // [vocab]
    std::vector<int32_t> types;         // [vocab]
    tokens.reserve(static_cast<size_t>(std::min<uint64_t>(vocab, size / 8)));
    for (uint64_t i = 0; i < vocab; ++i) {
        if (size - at < 8)
            return make_error(path + ": token " + std::to_string(i) + " score/length at offset " + std::to_string(at) +
                              ": file is truncated (" + std::to_string(size) + " bytes; the model's vocab_size is " + std::to_string(vocab) + ")");
        float score = 0;
        int32_t len = 0;
        std::memcpy(&score, data + at, 4);
        std::memcpy(&len, data + at + 4, 4);
        if (len < 0)
            return make_error(path + ": token " + std::to_string(i) + " length at offset " + std::to_string(at + 4) + ": length " +
                              std::to_string(len) + " is negative");
        if (static_cast<uint64_t>(len) > size - at - 8)
            return make_error(path + ": token " + std::to_string(i) + " length at offset " + std::to_string(at + 4) + ": length " +
                              std::to_string(len) + " runs past the end of the file (" + std::to_string(size) + " bytes)");
        if (len > max_token_length)
            return make_error(path + ": token " + std::to_string(i) + " length at offset " + std::to_string(at + 4) + ": length " +
                              std::to_string(len) + " exceeds max_token_length " + std::to_string(max_token_length) + " (offset 0)");
        std::string text(reinterpret_cast<const char*>(data + at + 8), static_cast<size_t>(len));
        at += 8 + static_cast<uint64_t>(len);
        // llama2.c's tokenizer export writes BOS/EOS as "\n<s>\n" / "\n</s>\n" so that run.c prints
        // newlines; the vocabulary pieces (and llama.cpp's conversion) are "<s>" / "</s>".
        if (text == "\n<s>\n") text = "<s>";
        else if (text == "\n</s>\n") text = "</s>";
        // It also writes SentencePiece's word marker U+2581 as a plain space; SentencePiece
        // pieces never hold a real space, so restoring the marker is exact.
        text = restore_word_marker(text);
        int32_t type = 1;  // normal
        if (i == 0 && text == "<unk>") type = 2;
        else if (text == "<s>" || text == "</s>") type = 3;
        else if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') type = 6;
        tokens.push_back(std::move(text));
        scores.push_back(score);
        types.push_back(type);
    }
    // More tokens than the model's vocabulary: a tokenizer for another model (tok32000.bin beside a
    // 512-token checkpoint read its first 512 tokens silently).
    if (at != size)
        return make_error(path + ": offset " + std::to_string(at) + ": " + std::to_string(size - at) +
                          " bytes after the model's " + std::to_string(vocab) +
                          " tokens (vocab_size in the checkpoint header): a tokenizer for a larger vocabulary?");
    meta.set("tokenizer.ggml.model", std::string("llama"));
    meta.set("tokenizer.ggml.tokens", std::move(tokens));
    meta.set("tokenizer.ggml.scores", std::move(scores));
    meta.set("tokenizer.ggml.token_type", std::move(types));
    meta.set("tokenizer.ggml.bos_token_id", int64_t{1});
    meta.set("tokenizer.ggml.eos_token_id", int64_t{2});
    meta.set("tokenizer.ggml.unknown_token_id", int64_t{0});
    meta.set("tokenizer.ggml.add_bos_token", true);
    meta.set("tokenizer.ggml.add_space_prefix", true);
    return Status::success();
}

Result<SourceModel> read_impl(const std::string& bin_path, const std::string& tokenizer_path) {
    auto mapped = MappedFile::open(bin_path);
    if (!mapped) return mapped.take_error();
    const uint8_t* data = (*mapped)->data();
    const uint64_t size = (*mapped)->size();
    const std::string file_name = std::filesystem::path(bin_path).filename().string();

    Geometry g;
    uint64_t weights_start = 0;
    std::vector<BlockId> order;
    uint32_t magic = 0;
    if (size >= 4) std::memcpy(&magic, data, 4);
    if (magic == kV1Magic) {
        if (size < kV1HeaderBytes)
            return make_error(bin_path + ": header at offset 0: file is " + std::to_string(size) + " bytes, shorter than the 256-byte v1 header");
        V1HeaderPrefix h{};
        std::memcpy(&h, data, sizeof h);
        if (h.version == 2)
            return make_error(ErrorKind::Unsupported, bin_path +
                                                          ": header version at offset 4: version 2 (Q8_0 export) is "
                                                          "not supported; export with version 1 or legacy");
        if (h.version != 1)
            return make_error(ErrorKind::Unsupported,
                              bin_path + ": header version at offset 4: unsupported llama2.c export version " +
                                  std::to_string(h.version));
        if (h.params.vocab_size < 0)
            return geometry_error(bin_path, "vocab_size (int32 at offset 28) is " + std::to_string(h.params.vocab_size) +
                                                ": a v1 vocab_size must be positive (the shared_classifier byte says whether wcls follows)");
        if (Status s = validate(bin_path, h.params, 8, g); !s) return s.take_error();
        g.shared = h.shared_classifier != 0;
        weights_start = kV1HeaderBytes;
        order = {kAttnNorm, kFfnNorm, kFinalNorm, kEmbd, kWq, kWk, kWv, kWo, kW1, kW2, kW3};
    } else {
        if (size < sizeof(LegacyHeader))
            return make_error(bin_path + ": header at offset 0: file is " + std::to_string(size) + " bytes, too short for the 28-byte llama2.c header");
        LegacyHeader h{};
        std::memcpy(&h, data, sizeof h);
        if (Status s = validate(bin_path, h, 0, g); !s) return s.take_error();
        g.shared = h.vocab_size > 0;  // negative vocab_size => separate classifier follows
        weights_start = sizeof(LegacyHeader);
        order = {kEmbd, kAttnNorm, kWq, kWk, kWv, kWo, kFfnNorm, kW1, kW2, kW3, kFinalNorm, kFreqReal, kFreqImag};
    }
    if (!g.shared) order.push_back(kCls);

    auto shapes = block_shapes(g);
    std::vector<Block> blocks;
    std::array<BlockId, kBlockCount> ids{};
    for (size_t i = 0; i < order.size(); ++i) {
        blocks.push_back(shapes[order[i]]);
        ids[i] = order[i];
    }
    uint64_t expected = 0;
    if (!layout(blocks, weights_start, &expected))
        return geometry_error(bin_path, "weight sizes implied by the header overflow 64 bits");
    if (expected != size)
        return make_error(bin_path + ": file size: expected " + std::to_string(expected) + " bytes for dim " + std::to_string(g.dim) +
                          ", hidden_dim " + std::to_string(g.hidden) + ", " + std::to_string(g.layers) + " layers, vocab " +
                          std::to_string(g.vocab) + (g.shared ? " (shared classifier)" : " (separate classifier)") + ", but the file has " +
                          std::to_string(size) + " bytes" + where_size_differs(blocks, size, expected));

    SourceModel m;
    m.source_label = bin_path;
    m.input_files = {bin_path, tokenizer_path};
    m.files.push_back(*mapped);
    add_views(m, blocks, ids, blocks.size(), data, file_name);

    ModelConfig& c = m.config;
    c.architecture = "llama2c";
    c.d_model = static_cast<uint32_t>(g.dim);
    c.n_layers = static_cast<uint32_t>(g.layers);
    c.n_heads = static_cast<uint32_t>(g.heads);
    c.n_kv_heads = static_cast<uint32_t>(g.kv_heads);
    c.head_dim = static_cast<uint32_t>(g.head_size);
    c.d_ff = static_cast<uint32_t>(g.hidden);
    c.vocab_size = static_cast<uint32_t>(g.vocab);
    c.max_seq_len = static_cast<uint32_t>(g.seq_len);
    c.norm_eps = 1e-5f;
    c.rope_theta = 10000.0f;
    c.rope_fraction = 1.0f;
    c.rope_interleaved = true;
    c.ffn_activation = FfnActivation::SwiGLU;
    c.combine_style = CombineStyle::Sequential;
    if (g.shared) c.feature_flags |= kFeatureTiedEmbeddings;

    if (Status s = read_tokenizer(tokenizer_path, g.vocab, m.metadata); !s) return s.take_error();
    m.metadata.set("general.name", std::filesystem::path(bin_path).stem().string());
    m.metadata.set("general.source", file_name);
    m.metadata.set("general.architecture", std::string("llama2c"));
    return m;
}

} // namespace

Result<SourceModel> read_llama2c_model(const std::string& bin_path, const std::string& tokenizer_bin_path) {
    try {
        return read_impl(bin_path, tokenizer_bin_path);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, bin_path + ": out of memory while reading the llama2.c checkpoint");
    }
}

} // namespace cflow
