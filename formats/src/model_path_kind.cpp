#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/whole_file.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "cflow/base/utf8_path.h"
#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/vflow_layout.h"
#include "gguf_format.h"

namespace cflow {
namespace {

constexpr size_t kSniffBytes = 8;                 // the longest magic: "CFLOW\0\0\0" / "VFLOW\0\0\0"
constexpr uint32_t kLlama2cV1Magic = 0x616b3432u;  // "ak42" as the v1 export writes it (llama2c_reader.cpp)

bool starts_with(const char* head, size_t got, const char* magic, size_t magic_bytes) {
    return got >= magic_bytes && std::memcmp(head, magic, magic_bytes) == 0;
}

// The first 4 bytes as the little-endian u32 the GGUF and llama2.c headers begin with.
bool starts_with_u32(const char* head, size_t got, uint32_t magic) {
    uint32_t value = 0;
    if (got < sizeof value) return false;
    std::memcpy(&value, head, sizeof value);
    return value == magic;
}

// The magic part of the rule; Unknown when no magic matches (or the file cannot be read).
ModelPathKind kind_from_magic(const std::filesystem::path& file) {
    if (!require_regular_file(file.string())) return ModelPathKind::Unknown;  // never open a FIFO to sniff it
    std::ifstream in(file, std::ios::binary);
    char head[kSniffBytes] = {};
    in.read(head, sizeof head);
    const size_t got = static_cast<size_t>(in.gcount());
    if (starts_with_u32(head, got, gguf::kMagic)) return ModelPathKind::Gguf;
    if (starts_with(head, got, kCflowMagic, sizeof kCflowMagic)) return ModelPathKind::Cflow;
    if (starts_with(head, got, kVflowMagic, sizeof kVflowMagic)) return ModelPathKind::Vflow;
    if (starts_with_u32(head, got, kLlama2cV1Magic)) return ModelPathKind::Llama2c;
    return ModelPathKind::Unknown;
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return text;
}

} // namespace

ModelPathKind model_kind_from_name(const std::string& path) {
    const std::filesystem::path p = path_from_utf8(path);
    const std::string name = lower(utf8_from_path(p.filename()));
    const std::string ext = lower(utf8_from_path(p.extension()));
    if (ext == ".gguf") return ModelPathKind::Gguf;
    if (ext == ".safetensors" || name == "model.safetensors.index.json") return ModelPathKind::Safetensors;
    if (ext == ".cflow") return ModelPathKind::Cflow;
    if (ext == ".vflow") return ModelPathKind::Vflow;
    if (ext == ".bin") return ModelPathKind::Llama2c;
    return ModelPathKind::Unknown;
}

ModelPathKind sniff_model_path(const std::string& path) {
    const std::filesystem::path p = path_from_utf8(path);
    std::error_code ec;
    const auto status = std::filesystem::status(p, ec);
    if (ec || !std::filesystem::exists(status)) return ModelPathKind::Missing;
    if (std::filesystem::is_directory(status)) return ModelPathKind::HfFolder;
    // Bytes first: a renamed file is still what its magic says.
    if (const ModelPathKind by_magic = kind_from_magic(p); by_magic != ModelPathKind::Unknown) return by_magic;
    return model_kind_from_name(path);
}

bool is_convertible_source(ModelPathKind kind) {
    return kind == ModelPathKind::HfFolder || kind == ModelPathKind::Safetensors || kind == ModelPathKind::Gguf ||
           kind == ModelPathKind::Llama2c;
}

bool is_cflow_container(ModelPathKind kind) { return kind == ModelPathKind::Cflow || kind == ModelPathKind::Vflow; }

const char* source_format_name(ModelPathKind kind) {
    switch (kind) {
    case ModelPathKind::HfFolder:
    case ModelPathKind::Safetensors: return "safetensors";
    case ModelPathKind::Gguf: return "gguf";
    case ModelPathKind::Llama2c: return "llama2c";
    default: return "";
    }
}

} // namespace cflow
