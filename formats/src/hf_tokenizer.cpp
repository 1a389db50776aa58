// HF tokenizer files -> GGUF tokenizer keys, so the engine's tokenizer loads an HF
// folder the same way it loads a GGUF.
#include "hf_tokenizer.h"
#include "model_folder.h"
#include "cflow/formats/whole_file.h"
#include "cflow/formats/json_depth.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace cflow::hf {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int64_t kMaxVocab = 1 << 24;  // ids beyond this are corrupt, not a real vocabulary
constexpr size_t kMaxTokenBytes = 64 << 10;

// llama.cpp token types (gguf.md tokenizer.ggml.token_type)
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

Result<json> read_json(const fs::path& dir, const char* name) {
    const fs::path path = dir / name;
    if (Status inside = require_inside_model_folder(dir, path); !inside) return inside.take_error();
    auto text = read_whole_file(path.string(), kMaxTokenizerJsonBytes, "a tokenizer JSON file");
    if (!text) return text.take_error();
    if (Status depth = check_json_depth(*text, path.string()); !depth) return depth.take_error();
    try {
        return json::parse(*text);
    } catch (const json::exception& e) {
        return make_error(path.string() + ": invalid JSON: " + e.what());
    }
}

// nullopt when the folder has no such file; an unreadable one is an error, not an absence.
Result<std::optional<std::string>> read_text(const fs::path& dir, const char* name) {
    const fs::path path = dir / name;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec))) return std::optional<std::string>{};
    if (Status inside = require_inside_model_folder(dir, path); !inside) return inside.take_error();
    auto text = read_whole_file(path.string(), kMaxChatTemplateBytes, "a chat template");
    if (!text) return text.take_error();
    return std::optional<std::string>(std::move(text).value());
}

bool is_byte_token(const std::string& t) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// A special-token field of tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_content(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v.at("content").is_string()) return v.at("content").get<std::string>();
    return std::nullopt;
}

// Does any normalizer in the (possibly nested) sequence prepend the SentencePiece space?
bool normalizer_prepends_space(const json& n) {
    if (!n.is_object()) return false;
    std::string type = n.value("type", "");
    if (type == "Prepend") return n.value("prepend", "") == "\u2581";
    if (type == "Sequence" && n.contains("normalizers") && n.at("normalizers").is_array())
        for (const auto& child : n.at("normalizers"))
            if (normalizer_prepends_space(child)) return true;
    return false;
}

bool pretokenizer_prepends_space(const json& p) {
    if (!p.is_object()) return false;
    std::string type = p.value("type", "");
    if (type == "Metaspace") {
        if (p.contains("prepend_scheme") && p.at("prepend_scheme").is_string())
            return p.at("prepend_scheme").get<std::string>() != "never";
        return p.value("add_prefix_space", true);
    }
    if (type == "ByteLevel") return p.value("add_prefix_space", false);
    if (type == "Sequence" && p.contains("pretokenizers") && p.at("pretokenizers").is_array())
        for (const auto& child : p.at("pretokenizers"))
            if (pretokenizer_prepends_space(child)) return true;
    return false;
}

// Best-effort llama.cpp pre-tokenizer name from the pre_tokenizer's split regex.
std::string pre_tokenizer_name(const json& p) {
    if (!p.is_object()) return "default";
    std::string type = p.value("type", "");
    if (type == "ByteLevel") return p.value("use_regex", true) ? "gpt2" : "default";
    if (type != "Sequence" || !p.contains("pretokenizers") || !p.at("pretokenizers").is_array()) return "default";
    std::string regex;
    bool punctuation = false;
    bool digits = false;
    bool individual_digits = false;
    for (const auto& child : p.at("pretokenizers")) {
        std::string t = child.value("type", "");
        if (t == "Punctuation") punctuation = true;
        if (t == "Digits") {
            digits = true;
            individual_digits = child.value("individual_digits", false);
        }
        if (t == "Split" && child.contains("pattern") && child.at("pattern").is_object() &&
            child.at("pattern").contains("Regex") && child.at("pattern").at("Regex").is_string())
            regex = child.at("pattern").at("Regex").get<std::string>();
    }
    static const std::map<std::string, std::string> kByRegex = {
        {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         "llama-bpe"},
        {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         "qwen2"},
        {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         "gpt-4o"}};
    if (auto it = kByRegex.find(regex); it != kByRegex.end()) return it->second;
    if (punctuation && digits && regex == "[0-9][0-9][0-9]") return "falcon";
    if (digits && individual_digits) return "starcoder";
    return "gpt2";
}

class TokenizerBuilder {
public:
    TokenizerBuilder(fs::path dir, Metadata& meta) : dir_(std::move(dir)), meta_(meta) {}

    Status build(const json& tok, const std::optional<json>& cfg) {
        const std::string label = (dir_ / "tokenizer.json").string();
        if (!tok.is_object() || !tok.contains("model") || !tok.at("model").is_object())
            return make_error(label + ": field 'model' is missing or not an object");
        const json& model = tok.at("model");
        std::string type = model.value("type", "");
        if (type.empty() && model.contains("merges")) type = "BPE";  // older files omit the type
        std::string ggml_model;
        if (type == "BPE") ggml_model = model.value("byte_fallback", false) ? "llama" : "gpt2";
        else if (type == "WordPiece") ggml_model = "bert";
        else if (type == "Unigram") ggml_model = "llama";
        else
            return make_error(ErrorKind::Unsupported,
                              label + ": model.type '" + type + "' is not supported (BPE, WordPiece, Unigram)");

        if (!model.contains("vocab")) return make_error(label + ": field 'model.vocab' is missing");
        // Every id must fall inside the id space the file's own entries can fill: one id of
        // 16,777,215 in a 50k-token file padded the vocabulary to 16.7 M "[PADn]" tokens.
        // Gaps stay allowed (llama.cpp pads them), but no more gap than defined tokens.
        defined_tokens_ = model.at("vocab").size();
        if (tok.contains("added_tokens") && tok.at("added_tokens").is_array()) defined_tokens_ += tok.at("added_tokens").size();
        std::vector<float> unigram_scores;
        if (type == "Unigram") {
            if (!model.at("vocab").is_array()) return make_error(label + ": field 'model.vocab' must be a list for Unigram");
            int32_t id = 0;
            for (const auto& e : model.at("vocab")) {
                if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
                    return make_error(label + ": model.vocab entry " + std::to_string(id) + " is not [piece, score]");
                if (Status s = put(e[0].get<std::string>(), id, label); !s) return s;
                unigram_scores.push_back(e[1].get<float>());
                ++id;
            }
        } else {
            if (!model.at("vocab").is_object()) return make_error(label + ": field 'model.vocab' must be an object");
            for (const auto& [piece, id] : model.at("vocab").items()) {
                if (!id.is_number_integer()) return make_error(label + ": model.vocab['" + piece + "'] is not an integer id");
                if (Status s = put(piece, id.get<int64_t>(), label); !s) return s;
            }
        }
        std::vector<bool> special(tokens_.size(), false);
        std::vector<bool> added(tokens_.size(), false);
        if (tok.contains("added_tokens") && tok.at("added_tokens").is_array()) {
            for (const auto& a : tok.at("added_tokens")) {
                if (!a.is_object() || !a.contains("id") || !a.at("id").is_number_integer() || !a.contains("content") ||
                    !a.at("content").is_string())
                    return make_error(label + ": an added_tokens entry lacks an integer 'id' or a string 'content'");
                int64_t id = a.at("id").get<int64_t>();
                if (Status s = put(a.at("content").get<std::string>(), id, label); !s) return s;
                special.resize(tokens_.size(), false);
                added.resize(tokens_.size(), false);
                special[static_cast<size_t>(id)] = a.value("special", false);
                added[static_cast<size_t>(id)] = true;
            }
        }
        special.resize(tokens_.size(), false);
        added.resize(tokens_.size(), false);

        // Token types; gaps in the id space become "[PADn]" unused tokens, as llama.cpp does.
        std::vector<int32_t> types(tokens_.size(), kNormal);
        std::optional<std::string> unk = model.contains("unk_token") ? token_content(model.at("unk_token")) : std::nullopt;
        if (cfg && cfg->contains("unk_token"))
            if (auto u = token_content(cfg->at("unk_token"))) unk = u;
        for (size_t id = 0; id < tokens_.size(); ++id) {
            if (!present_[id]) {
                tokens_[id] = "[PAD" + std::to_string(id) + "]";
                types[id] = kUnused;
            } else if (unk && tokens_[id] == *unk && ggml_model != "gpt2") {
                types[id] = kUnknown;
            } else if (added[id]) {
                types[id] = special[id] ? kControl : kUserDefined;
            } else if (ggml_model == "llama" && is_byte_token(tokens_[id])) {
                types[id] = kByte;
            }
        }

        std::vector<std::string> merges;
        if (type == "BPE") {
            if (Status s = read_merges(model, label, merges); !s) return s;
        }
        meta_.set("tokenizer.ggml.model", ggml_model);
        if (ggml_model == "llama") {
            std::vector<float> scores = type == "Unigram" ? unigram_scores : merge_scores(merges, types);
            scores.resize(tokens_.size(), 0.0f);
            meta_.set("tokenizer.ggml.scores", std::move(scores));
            bool prefix = normalizer_prepends_space(tok.value("normalizer", json())) ||
                          pretokenizer_prepends_space(tok.value("pre_tokenizer", json()));
            meta_.set("tokenizer.ggml.add_space_prefix", prefix);
            meta_.set("tokenizer.ggml.pre", std::string("default"));
        } else if (ggml_model == "gpt2") {
            meta_.set("tokenizer.ggml.merges", std::move(merges));
            meta_.set("tokenizer.ggml.pre", pre_tokenizer_name(tok.value("pre_tokenizer", json())));
        } else {
            meta_.set("tokenizer.ggml.pre", std::string("default"));
        }
        meta_.set("tokenizer.ggml.token_type", std::move(types));

        if (Status s = special_ids(model, cfg, ggml_model); !s) return s;
        add_bos_eos(tok, cfg, ggml_model);
        return chat_template(cfg);
    }

    void finish() { meta_.set("tokenizer.ggml.tokens", std::move(tokens_)); }

private:
    Status put(const std::string& piece, int64_t id, const std::string& label) {
        // A token is a few bytes (the longest real ones, runs of spaces or newlines, a few
        // hundred): a huge one is hostile, and building the tokenizer from a 50 MB added token
        // took 3.4 GB.
        if (piece.size() > kMaxTokenBytes)
            return make_error(label + ": token id " + std::to_string(id) + " is " + std::to_string(piece.size()) +
                              " bytes long (a token may have at most " + std::to_string(kMaxTokenBytes) + ")");
        if (id < 0 || id >= kMaxVocab)
            return make_error(label + ": token '" + piece + "' has id " + std::to_string(id) + " outside 0.." + std::to_string(kMaxVocab - 1));
        const uint64_t id_limit = 2 * uint64_t(defined_tokens_);
        if (uint64_t(id) >= id_limit)
            return make_error(label + ": token '" + piece + "' has id " + std::to_string(id) + ", but the file defines only " +
                              std::to_string(defined_tokens_) + " tokens (ids must be below " + std::to_string(id_limit) + ")");
        size_t i = static_cast<size_t>(id);
        if (i >= tokens_.size()) {
            tokens_.resize(i + 1);
            present_.resize(i + 1, false);
        }
        // added_tokens restate vocabulary entries (same id, same text); two texts for one id is a corrupt file.
        if (present_[i] && tokens_[i] != piece)
            return make_error(label + ": token id " + std::to_string(id) + " is given to both '" + tokens_[i] + "' and '" +
                              piece + "'");
        tokens_[i] = piece;
        present_[i] = true;
        ids_[piece] = static_cast<int32_t>(id);
        return Status::success();
    }

    Status read_merges(const json& model, const std::string& label, std::vector<std::string>& merges) {
        if (!model.contains("merges")) return Status::success();
        const json& m = model.at("merges");
        if (!m.is_array()) return make_error(label + ": field 'model.merges' must be a list");
        merges.reserve(m.size());
        for (size_t i = 0; i < m.size(); ++i) {
            const json& e = m[i];
            if (e.is_string()) {
                merges.push_back(e.get<std::string>());
            } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
                merges.push_back(e[0].get<std::string>() + " " + e[1].get<std::string>());  // newer [a, b] form
            } else {
                return make_error(label + ": model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [a, b]");
            }
            if (merges.back().size() > 2 * kMaxTokenBytes + 1)
                return make_error(label + ": model.merges[" + std::to_string(i) + "] is " + std::to_string(merges.back().size()) +
                                  " bytes long (a merge joins two tokens of at most " + std::to_string(kMaxTokenBytes) +
                                  " bytes each)");
        }
        return Status::success();
    }

    // SentencePiece-BPE priority: a token created by merge r scores -r, so llama.cpp's SPM
    // tokenizer (highest score first) merges in the same order as HF's BPE (lowest rank first).
    std::vector<float> merge_scores(const std::vector<std::string>& merges, const std::vector<int32_t>& types) const {
        std::vector<float> scores(tokens_.size(), 0.0f);
        std::vector<bool> set(tokens_.size(), false);
        for (size_t r = 0; r < merges.size(); ++r) {
            const std::string& m = merges[r];
            size_t space = m.find(' ');
            if (space == std::string::npos) continue;
            auto it = ids_.find(m.substr(0, space) + m.substr(space + 1));
            if (it == ids_.end()) continue;
            size_t id = static_cast<size_t>(it->second);
            if (set[id] || types[id] != kNormal) continue;
            scores[id] = -static_cast<float>(r);
            set[id] = true;
        }
        return scores;
    }

    Status special_ids(const json& model, const std::optional<json>& cfg, const std::string& ggml_model) {
        const std::string label = (dir_ / "tokenizer_config.json").string();
        struct Field { const char* config_key; const char* gguf_key; };
        static const Field kFields[] = {
            {"bos_token", "tokenizer.ggml.bos_token_id"},     {"eos_token", "tokenizer.ggml.eos_token_id"},
            {"unk_token", "tokenizer.ggml.unknown_token_id"}, {"pad_token", "tokenizer.ggml.padding_token_id"},
            {"sep_token", "tokenizer.ggml.seperator_token_id"}, {"cls_token", "tokenizer.ggml.cls_token_id"},
            {"mask_token", "tokenizer.ggml.mask_token_id"}};
        for (const auto& f : kFields) {
            std::optional<std::string> content;
            if (cfg && cfg->contains(f.config_key) && !cfg->at(f.config_key).is_null()) {
                content = token_content(cfg->at(f.config_key));
                if (!content) return make_error(label + ": field '" + f.config_key + "' is neither a string nor {\"content\": ...}");
            } else if (std::string(f.config_key) == "unk_token" && model.contains("unk_token")) {
                content = token_content(model.at("unk_token"));
            }
            if (!content) continue;
            auto it = ids_.find(*content);
            if (it == ids_.end())
                return make_error(label + ": " + f.config_key + " '" + *content + "' is not in the vocabulary");
            meta_.set(f.gguf_key, static_cast<int64_t>(it->second));
        }
        (void)ggml_model;
        return Status::success();
    }

    void add_bos_eos(const json& tok, const std::optional<json>& cfg, const std::string& ggml_model) {
        std::optional<bool> bos;
        std::optional<bool> eos;
        if (cfg && cfg->contains("add_bos_token") && cfg->at("add_bos_token").is_boolean()) bos = cfg->at("add_bos_token").get<bool>();
        if (cfg && cfg->contains("add_eos_token") && cfg->at("add_eos_token").is_boolean()) eos = cfg->at("add_eos_token").get<bool>();
        // Without explicit flags, the post-processor's single-sequence template says what HF adds.
        const json& post = tok.contains("post_processor") ? tok.at("post_processor") : json();
        if (post.is_object() && post.value("type", "") == "TemplateProcessing" && post.contains("single") &&
            post.at("single").is_array() && !post.at("single").empty()) {
            const json& single = post.at("single");
            if (!bos) bos = single.front().contains("SpecialToken");
            if (!eos) eos = single.back().contains("SpecialToken");
        }
        if (!bos && ggml_model == "llama") bos = true;  // LlamaTokenizer's default
        if (bos) meta_.set("tokenizer.ggml.add_bos_token", *bos);
        if (eos) meta_.set("tokenizer.ggml.add_eos_token", *eos);
    }

    Status chat_template(const std::optional<json>& cfg) {
        const std::string label = (dir_ / "tokenizer_config.json").string();
        if (cfg && cfg->contains("chat_template") && !cfg->at("chat_template").is_null()) {
            const json& t = cfg->at("chat_template");
            if (t.is_string()) {
                meta_.set("tokenizer.chat_template", t.get<std::string>());
                return Status::success();
            }
            if (t.is_array()) {
                for (const auto& e : t) {
                    if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e.at("template").is_string()) {
                        meta_.set("tokenizer.chat_template", e.at("template").get<std::string>());
                        return Status::success();
                    }
                }
                return make_error(label + ": field 'chat_template' is a list without a template named \"default\"");
            }
            return make_error(label + ": field 'chat_template' is neither a string nor a list of {name, template}");
        }
        // Newer HF folders keep the template beside the config.
        auto text = read_text(dir_, "chat_template.jinja");
        if (!text) return text.take_error();
        if (*text) {
            meta_.set("tokenizer.chat_template", **text);
            return Status::success();
        }
        if (fs::exists(dir_ / "chat_template.json")) {
            auto j = read_json(dir_, "chat_template.json");
            if (!j) return j.take_error();
            if (j->is_object() && j->contains("chat_template") && j->at("chat_template").is_string())
                meta_.set("tokenizer.chat_template", j->at("chat_template").get<std::string>());
            else
                return make_error((dir_ / "chat_template.json").string() + ": field 'chat_template' is missing or not a string");
        }
        return Status::success();
    }

    fs::path dir_;
    Metadata& meta_;
    std::vector<std::string> tokens_;
    std::vector<bool> present_;
    size_t defined_tokens_ = 0;  // entries in model.vocab and added_tokens: bounds the ids
    std::unordered_map<std::string, int32_t> ids_;
};

} // namespace

Result<bool> load_tokenizer(const std::string& dir, Metadata& meta) {
    try {
        fs::path d(dir);
        if (!fs::exists(d / "tokenizer.json")) return false;
        auto tok = read_json(d, "tokenizer.json");
        if (!tok) return tok.take_error();
        std::optional<json> cfg;
        if (fs::exists(d / "tokenizer_config.json")) {
            auto c = read_json(d, "tokenizer_config.json");
            if (!c) return c.take_error();
            if (!c->is_object()) return make_error((d / "tokenizer_config.json").string() + ": top level is not a JSON object");
            cfg = std::move(c.value());
        }
        Metadata staged;  // nothing reaches meta unless the whole tokenizer reads
        TokenizerBuilder builder(d, staged);
        if (Status s = builder.build(*tok, cfg); !s) return s.take_error();
        builder.finish();
        for (const auto& [k, v] : staged.entries()) meta.set(k, v);
        return true;
    } catch (const json::exception& e) {
        return make_error(dir + ": tokenizer files: unexpected JSON structure: " + e.what());
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, dir + ": out of memory while reading the tokenizer");
    } catch (const fs::filesystem_error& e) {
        return make_error(ErrorKind::Io, dir + ": " + e.what());
    }
}

} // namespace cflow::hf
