// safetensors files (single and sharded) and HF model folders -> SourceModel.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cflow/formats/whole_file.h"
#include "model_folder.h"
#include "cflow/formats/json_depth.h"
#include "cflow/formats/memory_file.h"
#include "cflow/formats/safetensors.h"
#include "cflow/formats/source_model.h"
#include "cflow/formats/tile_codec.h"
#include "hf_config.h"
#include "hf_gpt_oss_experts.h"
#include "hf_tokenizer.h"

namespace cflow {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Element size of every safetensors dtype; 0 for names the format does not define.
uint64_t element_bytes(std::string_view dtype) {
    static const std::map<std::string_view, uint64_t> kSizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
    auto it = kSizes.find(dtype);
    return it == kSizes.end() ? 0 : it->second;
}

std::optional<DType> supported_dtype(std::string_view dtype) {
    if (dtype == "F32") return DType::F32;
    if (dtype == "F16") return DType::F16;
    if (dtype == "BF16") return DType::BF16;
    return std::nullopt;
}

// A JSON value for a message, cut short: a hostile header may hold megabytes in one field.
std::string short_dump(const json& v) {
    std::string text = v.dump();
    if (text.size() > 64) text = text.substr(0, 61) + "...";
    return text;
}

// The data buffer is indexed entirely and without overlap (the safetensors format: "the byte
// buffer needs to be entirely indexed, and cannot contain holes"). Two tensors sharing bytes were
// accepted, and so were holes and unindexed trailing bytes that could hide other content.
Status check_buffer_coverage(const std::string& path, const std::map<std::string, SafetensorsEntry>& entries,
                             uint64_t data_bytes, uint64_t data_offset) {
    std::vector<std::pair<const std::string*, const SafetensorsEntry*>> by_begin;
    for (const auto& [name, e] : entries) by_begin.emplace_back(&name, &e);
    std::stable_sort(by_begin.begin(), by_begin.end(), [](const auto& a, const auto& b) {
        return a.second->begin != b.second->begin ? a.second->begin < b.second->begin : a.second->end < b.second->end;
    });
    const std::string buffer = " (offsets relative to the data buffer at " + std::to_string(data_offset) + ")";
    uint64_t covered = 0;  // end of the bytes indexed so far
    const std::string* previous = nullptr;
    for (const auto& [name, e] : by_begin) {
        const std::string span = "[" + std::to_string(e->begin) + ", " + std::to_string(e->end) + ")";
        if (e->begin < covered)
            return make_error(path + ": tensor '" + *name + "' data_offsets " + span + " overlap tensor '" + *previous +
                              "', which ends at " + std::to_string(covered) + buffer);
        if (e->begin > covered)
            return make_error(path + ": tensor '" + *name + "' data_offsets " + span + " leave bytes [" + std::to_string(covered) +
                              ", " + std::to_string(e->begin) + ") of the data buffer to no tensor" + buffer);
        covered = e->end;
        previous = name;
    }
    if (covered != data_bytes)
        return make_error(path + ": data buffer at offset " + std::to_string(data_offset) + ": " + std::to_string(data_bytes - covered) +
                          " trailing bytes after the last tensor's data (it ends at " + std::to_string(covered) + " of " +
                          std::to_string(data_bytes) + ")");
    return Status::success();
}

Status parse_entry(const std::string& path, const std::string& name, const json& e, uint64_t data_bytes,
                   uint64_t header_end, SafetensorsEntry& out) {
    const std::string where = path + ": tensor '" + name + "' (header, bytes 8.." + std::to_string(header_end) + ")";
    if (!e.is_object()) return make_error(where + ": entry holds " + short_dump(e) + ", not an object");
    // Missing and mistyped fields are told apart, with what the field holds: "missing or not a
    // string" sent the reader of the message looking for both.
    for (const char* field : {"dtype", "shape", "data_offsets"})
        if (!e.contains(field)) return make_error(where + ": field '" + field + "' is missing");
    if (!e.at("dtype").is_string()) return make_error(where + ": field 'dtype' holds " + short_dump(e.at("dtype")) + ", not a string");
    if (!e.at("shape").is_array()) return make_error(where + ": field 'shape' holds " + short_dump(e.at("shape")) + ", not a list");
    if (!e.at("data_offsets").is_array() || e.at("data_offsets").size() != 2)
        return make_error(where + ": field 'data_offsets' holds " + short_dump(e.at("data_offsets")) + ", not [begin, end]");
    out.dtype = e.at("dtype").get<std::string>();
    uint64_t count = 1;
    for (const auto& d : e.at("shape")) {
        if (!d.is_number_unsigned()) return make_error(where + ": field 'shape' holds " + d.dump() + ", not a non-negative integer");
        uint64_t n = d.get<uint64_t>();
        if (n != 0 && count > std::numeric_limits<uint64_t>::max() / n)
            return make_error(where + ": field 'shape' element count overflows 64 bits");
        count *= n;
        out.shape.push_back(n);
    }
    const json& offs = e.at("data_offsets");
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
        return make_error(where + ": field 'data_offsets' must hold non-negative integers, not " + short_dump(offs));
    out.begin = offs[0].get<uint64_t>();
    out.end = offs[1].get<uint64_t>();
    if (out.begin > out.end)
        return make_error(where + ": field 'data_offsets' begin " + std::to_string(out.begin) + " is after end " + std::to_string(out.end));
    if (out.end > data_bytes)
        return make_error(where + ": field 'data_offsets' end " + std::to_string(out.end) + " is past the data buffer (" +
                          std::to_string(data_bytes) + " bytes from offset " + std::to_string(header_end) + ")");
    uint64_t elem = element_bytes(out.dtype);
    if (elem != 0) {
        if (count > std::numeric_limits<uint64_t>::max() / elem)
            return make_error(where + ": byte size of shape overflows 64 bits");
        if (out.end - out.begin != count * elem)
            return make_error(where + ": data_offsets span " + std::to_string(out.end - out.begin) + " bytes but shape x " +
                              out.dtype + " needs " + std::to_string(count * elem) + " bytes");
    }
    return Status::success();
}

Result<json> read_json_file(const fs::path& path) {
    auto text = read_whole_file(path.string(), kMaxJsonConfigBytes, "a JSON index");
    if (!text) return text.take_error();
    if (Status depth = check_json_depth(*text, path.string()); !depth) return depth.take_error();
    try {
        return json::parse(*text);
    } catch (const json::exception& e) {
        return make_error(path.string() + ": invalid JSON: " + e.what());
    }
}

// Gemma checkpoints store every RMSNorm weight as w - 1 (the forward multiplies by 1 + w): the
// norms become f32 vectors of 1 + w in memory, so the converter sees what a GGUF of the same
// model holds (llama.cpp's converter adds the 1 when it writes one).
Status shift_norm_weights(SourceModel& model) {
    std::vector<TensorView*> norms;
    uint64_t floats = 0;
    for (auto& [name, view] : model.tensors) {
        const bool norm = name.size() > 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
        if (!norm) continue;
        if (view.shape.size() != 1)
            return make_error(view.origin + ": a norm weight must be a vector, has " + std::to_string(view.shape.size()) + " dims");
        norms.push_back(&view);
        floats += view.shape[0];
    }
    if (norms.empty()) return Status::success();
    auto memory = MemoryFile::allocate("norm weights + 1", floats * sizeof(float));
    if (!memory) return memory.take_error();
    float* out = reinterpret_cast<float*>((*memory)->mutable_data());  // [sum of norm lengths]
    for (TensorView* view : norms) {
        const uint64_t n = view->shape[0];
        const uint64_t element = view->dtype == DType::F32 ? 4 : 2;
        if (view->bytes != n * element)
            return make_error(view->origin + ": holds " + std::to_string(view->bytes) + " bytes for " + std::to_string(n) + " values");
        for (uint64_t i = 0; i < n; ++i) {
            float w = 0.0f;
            if (view->dtype == DType::F32) {
                std::memcpy(&w, view->data + i * 4, 4);
            } else {
                uint16_t h = 0;
                std::memcpy(&h, view->data + i * 2, 2);
                w = view->dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
            }
            out[i] = 1.0f + w;
        }
        view->dtype = DType::F32;
        view->data = reinterpret_cast<const uint8_t*>(out);
        view->bytes = n * sizeof(float);
        view->origin += " (+1, Gemma's norm convention)";
        out += n;
    }
    model.files.push_back(std::move(*memory));
    return Status::success();
}

// One tensor of the folder, before name mapping.
struct Located {
    const SafetensorsFile* file;
    std::string hf_name;
};

Result<SourceModel> assemble(const fs::path& dir, const std::vector<std::string>& weight_files,
                             const std::map<std::string, std::string>* weight_map, const std::string& label) {
    for (const char* own : {"config.json", "model.safetensors.index.json"})
        if (Status inside = hf::require_inside_model_folder(dir, dir / own); !inside) return inside.take_error();
    auto cfg = hf::load_config((dir / "config.json").string());
    if (!cfg) return cfg.take_error();
    SourceModel model;
    model.source_label = label;
    model.config = cfg->config;

    std::map<std::string, SafetensorsFile> shards;  // by file name; each mapped once
    for (const auto& f : weight_files) {
        // Shards may be links to another disk (a user short of space): they must parse as
        // safetensors, so no unrelated file can hide in one, unlike the text files above.
        auto st = read_safetensors_file((dir / f).string());
        if (!st) return st.take_error();
        model.files.push_back(st->file);
        shards.emplace(f, std::move(st.value()));
    }
    std::vector<Located> located;
    if (weight_map) {
        for (const auto& [name, file] : *weight_map) {
            const SafetensorsFile& shard = shards.at(file);
            if (!shard.entries.count(name))
                return make_error(shard.path + ": tensor '" + name + "' listed in model.safetensors.index.json is not in this shard");
            located.push_back({&shard, name});
        }
    } else {
        for (const auto& [file, shard] : shards)
            for (const auto& [name, entry] : shard.entries) located.push_back({&shard, name});
    }

    hf::GptOssExpertParts gpt_oss_experts;
    std::map<std::string, size_t> ignored_parts;  // why -> how many tensors (one report line each)
    for (const auto& loc : located) {
        hf::NameMapping m = hf::map_tensor_name(loc.hf_name, cfg->family);
        if (m.kind == hf::NameMapping::Kind::Ignore) {
            if (!m.canonical.empty()) ignored_parts[m.canonical] += 1;
            continue;
        }
        if (m.kind == hf::NameMapping::Kind::GptOssExperts) {
            gpt_oss_experts[m.layer][m.canonical] = loc.file;
            continue;
        }
        if (m.kind == hf::NameMapping::Kind::Unknown)
            return make_error(ErrorKind::Unsupported, loc.file->path + ": tensor '" + loc.hf_name +
                                                          "' has no canonical name (unrecognised for " +
                                                          model.config.architecture + ")");
        auto view = loc.file->view(loc.hf_name);
        if (!view) return view.take_error();
        TensorView v = std::move(view.value());
        v.name = m.canonical;
        // Qwen2-MoE's shared_expert_gate is [1 x d]; canonical ffn_gate_inp_shexp is [d].
        if (m.canonical.find("ffn_gate_inp_shexp") != std::string::npos && v.shape.size() == 2 && v.shape[0] == 1)
            v.shape = {v.shape[1]};
        if (!model.tensors.emplace(m.canonical, std::move(v)).second)
            return make_error(loc.file->path + ": tensor '" + loc.hf_name + "' maps to '" + m.canonical + "', which another tensor already provides");
    }

    for (const auto& [why, count] : ignored_parts)
        model.ignored_tensors[std::to_string(count) + " tensor(s) of " + label] = why;  // not tensors: reported as they are
    if (cfg->family == hf::Family::GptOss)
        if (Status s = hf::add_gpt_oss_experts(gpt_oss_experts, model.config, model); !s) return s.take_error();
    if (hf::stores_norm_minus_one(cfg->family))
        if (Status s = shift_norm_weights(model); !s) return s.take_error();
    ModelConfig& c = model.config;
    if (cfg->tie_word_embeddings) model.tensors.erase("output.weight");  // HF ignores lm_head when tied
    if (!model.find("output.weight")) c.feature_flags |= kFeatureTiedEmbeddings;
    if (model.find("blk.0.attn_q.bias")) c.feature_flags |= kFeatureQkvBias;
    if (const TensorView* qn = model.find("blk.0.attn_q_norm.weight"); qn && qn->shape.size() == 1 && qn->shape[0] == c.head_dim)
        c.feature_flags |= kFeatureQkNorm;
    const TensorView* embd = model.find("token_embd.weight");
    if (!embd) return make_error(label + ": tensor 'model.embed_tokens.weight' is missing");
    if (embd->shape.size() != 2 || embd->shape[1] != c.d_model)
        return make_error(embd->origin + ": shape does not match [vocab_size x hidden_size=" + std::to_string(c.d_model) + "]");

    // What the folder holds is what the readers may read (config, index, shards, tokenizer and
    // template files): none of it may become an output.
    {
        std::error_code it_ec;
        for (fs::directory_iterator it(dir, it_ec), end; !it_ec && it != end; it.increment(it_ec))
            if (it->is_regular_file(it_ec)) model.input_files.push_back(it->path().string());
    }
    auto tok = hf::load_tokenizer(dir.string(), model.metadata);
    if (!tok) return tok.take_error();
    if (!model.metadata.contains("general.name")) model.metadata.set("general.name", dir.filename().string());
    model.metadata.set("general.architecture", c.architecture);
    // Only the folder or file name: the path as typed (/home/<user>/...) travelled inside every
    // converted model, as llama2.c's and GGUF's sources never did.
    fs::path source = fs::path(label);
    if (source.filename().empty()) source = source.parent_path();  // "folder/" as typed
    model.metadata.set("general.source", source.filename().string());
    return model;
}

} // namespace

Result<TensorView> SafetensorsFile::view(const std::string& name) const {
    auto it = entries.find(name);
    if (it == entries.end()) return make_error(path + ": no tensor named '" + name + "'");
    const SafetensorsEntry& e = it->second;
    auto dtype = supported_dtype(e.dtype);
    if (!dtype)
        return make_error(ErrorKind::Unsupported, path + ": tensor '" + name + "' has dtype " + e.dtype +
                                                      ", which is not supported; supported dtypes: F32, F16, BF16");
    TensorView v;
    v.name = name;
    v.dtype = *dtype;
    v.shape = e.shape;
    v.data = file->data() + data_offset + e.begin;
    v.bytes = e.end - e.begin;
    v.origin = fs::path(path).filename().string() + ": tensor '" + name + "'";
    return v;
}

Result<SafetensorsFile> read_safetensors_file(const std::string& path) {
    try {
        auto mapped = MappedFile::open(path);
        if (!mapped) return mapped.take_error();
        SafetensorsFile out;
        out.path = path;
        out.file = std::move(mapped.value());
        const uint64_t size = out.file->size();
        if (size < 8) return make_error(path + ": header length at offset 0: file is " + std::to_string(size) + " bytes, too short for a safetensors header");
        uint64_t header_bytes = 0;
        std::memcpy(&header_bytes, out.file->data(), 8);
        if (header_bytes > kSafetensorsMaxHeaderBytes || header_bytes > size - 8)
            return make_error(path + ": header length at offset 0: " + std::to_string(header_bytes) + " bytes is past the end of the file (" +
                              std::to_string(size) + " bytes) or over the 100 MiB limit");
        if (header_bytes < 2)
            return make_error(path + ": header length at offset 0: is " + std::to_string(header_bytes) +
                              ", too short for the JSON header (at least \"{}\")");
        out.data_offset = 8 + header_bytes;
        json header;
        const std::string_view headerText(reinterpret_cast<const char*>(out.file->data()) + 8, size_t(header_bytes));
        if (Status depth = check_json_depth(headerText, path + ": header JSON"); !depth) return depth.take_error();
        try {
            header = json::parse(reinterpret_cast<const char*>(out.file->data()) + 8,
                                 reinterpret_cast<const char*>(out.file->data()) + out.data_offset);
        } catch (const json::exception& e) {
            return make_error(path + ": header JSON (bytes 8.." + std::to_string(out.data_offset) + ") is invalid: " + e.what());
        }
        if (!header.is_object()) return make_error(path + ": header JSON at offset 8 is not an object");
        const uint64_t data_bytes = size - out.data_offset;
        for (const auto& [name, entry] : header.items()) {
            if (name == "__metadata__") {
                // A map of strings (the format; the reference reader refuses anything else).
                bool strings = entry.is_object();
                if (strings)
                    for (const auto& value : entry) strings = strings && value.is_string();
                if (!strings)
                    return make_error(path + ": header '__metadata__' (bytes 8.." + std::to_string(out.data_offset) + ") holds " +
                                      short_dump(entry) + ", not an object of strings");
                continue;
            }
            SafetensorsEntry e;
            if (Status s = parse_entry(path, name, entry, data_bytes, out.data_offset, e); !s) return s.take_error();
            out.entries.emplace(name, std::move(e));
        }
        if (Status s = check_buffer_coverage(path, out.entries, data_bytes, out.data_offset); !s) return s.take_error();
        return out;
    } catch (const json::exception& e) {
        return make_error(path + ": unexpected header structure: " + e.what());
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, path + ": out of memory while reading the header");
    }
}

Result<SourceModel> read_safetensors_model(const std::string& dir_or_file) {
    try {
        fs::path p(dir_or_file);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            fs::path index = p / "model.safetensors.index.json";
            if (fs::exists(index)) {
                if (Status inside = hf::require_inside_model_folder(p, index); !inside) return inside.take_error();
                auto j = read_json_file(index);
                if (!j) return j.take_error();
                if (!j->is_object() || !j->contains("weight_map") || !j->at("weight_map").is_object())
                    return make_error(index.string() + ": field 'weight_map' is missing or not an object");
                std::map<std::string, std::string> weight_map;
                std::set<std::string> files;
                for (const auto& [name, file] : j->at("weight_map").items()) {
                    if (!file.is_string()) return make_error(index.string() + ": weight_map['" + name + "'] is not a file name");
                    std::string f = file.get<std::string>();
                    if (f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "..")
                        return make_error(index.string() + ": weight_map['" + name + "'] = '" + f + "' is not a file in the folder");
                    weight_map[name] = f;
                    files.insert(f);
                }
                return assemble(p, {files.begin(), files.end()}, &weight_map, dir_or_file);
            }
            if (fs::exists(p / "model.safetensors")) return assemble(p, {"model.safetensors"}, nullptr, dir_or_file);
            std::vector<std::string> found;
            for (const auto& e : fs::directory_iterator(p))
                if (e.path().extension() == ".safetensors") found.push_back(e.path().filename().string());
            if (found.size() != 1)
                return make_error(dir_or_file + ": expected model.safetensors, model.safetensors.index.json or exactly one *.safetensors file; found " +
                                  std::to_string(found.size()) + " .safetensors files");
            return assemble(p, found, nullptr, dir_or_file);
        }
        if (!fs::exists(p, ec)) return make_error(ErrorKind::Io, dir_or_file + ": no such file or folder");
        fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
        if (p.filename() == "model.safetensors.index.json") return read_safetensors_model(dir.string());
        return assemble(dir, {p.filename().string()}, nullptr, dir_or_file);
    } catch (const fs::filesystem_error& e) {
        return make_error(ErrorKind::Io, dir_or_file + ": " + e.what());
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, dir_or_file + ": out of memory while reading the model");
    }
}

} // namespace cflow
