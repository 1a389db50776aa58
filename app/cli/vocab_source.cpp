#include "vocab_source.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "cflow/base/utf8_path.h"
#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/hf_tokenizer_files.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/whole_file.h"

namespace cflow::cli {
namespace {

// The first non-blank byte of the file ('{' opens a Hugging Face tokenizer.json), 0 when there is
// none. A FIFO is never opened here (it would block); the mapping below then refuses it by name.
char first_text_byte(const std::string& path) {
    if (!require_regular_file(path)) return 0;
    std::ifstream in(path_from_utf8(path), std::ios::binary);
    char head[64] = {};
    in.read(head, sizeof(head));
    const size_t got = static_cast<size_t>(in.gcount());
    size_t first = 0;
    while (first < got && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
    return first < got ? head[first] : 0;
}

bool has_json_extension(const std::string& path) {
    std::string ext = path_from_utf8(path).extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".json";
}

} // namespace

Result<Metadata> read_vocab_metadata(const std::string& path) {
    switch (sniff_model_path(path)) {
    case ModelPathKind::Missing: return make_error(path + ": cannot open file");
    case ModelPathKind::HfFolder: {
        const std::filesystem::path json = path_from_utf8(path) / "tokenizer.json";
        std::error_code ec;
        if (!std::filesystem::is_regular_file(json, ec)) return make_error(path + ": folder has no tokenizer.json");
        return read_hf_tokenizer(utf8_from_path(json));
    }
    case ModelPathKind::Gguf: {
        auto gguf = read_gguf(path);
        if (!gguf) return gguf.take_error();
        return std::move(gguf->metadata);
    }
    default: break;
    }
    const char first = first_text_byte(path);
    if (first == '{') return read_hf_tokenizer(path);
    // Read as a .cflow, JSON would fail on "bad magic" or a header size: say what it is instead.
    if (first == '[' || first == '"' || has_json_extension(path))
        return make_error(path + ": a tokenizer.json must hold a JSON object (with \"model\"); this file " +
                          (first == '[' ? "holds an array" : first == '"' ? "holds a string" : "is not one"));
    auto file = CflowFile::open(path);
    if (!file) return file.take_error();
    return (*file)->metadata();
}

Result<VocabSource> load_vocab_source(const std::string& path) {
    auto metadata = read_vocab_metadata(path);
    if (!metadata) return metadata.take_error();
    auto tokenizer = Tokenizer::from_metadata(*metadata);
    if (!tokenizer) return make_error(tokenizer.kind(), path + ": " + tokenizer.error());
    return VocabSource{std::move(metadata.value()), std::move(tokenizer.value())};
}

} // namespace cflow::cli
