#include "vocab_source.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/hf_tokenizer_files.h"

namespace cflow::cli {

Result<Metadata> read_vocab_metadata(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        const fs::path json = fs::path(path) / "tokenizer.json";
        if (!fs::is_regular_file(json, ec)) return make_error(path + ": folder has no tokenizer.json");
        return read_hf_tokenizer(json.string());
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(path + ": cannot open file");
    char head[64] = {};
    in.read(head, sizeof(head));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got >= 4 && std::string(head, 4) == "GGUF") {
        auto gguf = read_gguf(path);
        if (!gguf) return gguf.take_error();
        return std::move(gguf->metadata);
    }
    size_t first = 0;
    while (first < got && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
    if (first < got && head[first] == '{') return read_hf_tokenizer(path);
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
