// open_source_model: picks the reader for what a path is.
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cflow/formats/source_model.h"

namespace cflow {

namespace {

// True when the file starts with the GGUF magic (a .gguf renamed to something else).
bool has_gguf_magic(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

std::string lower_extension(const std::filesystem::path& p) {
    std::string ext = p.extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return ext;
}

} // namespace

Result<SourceModel> open_source_model(const std::string& path, const std::string& tokenizer_path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p(path);
    if (fs::is_directory(p, ec)) return read_safetensors_model(path);
    if (!fs::exists(p, ec)) return make_error(ErrorKind::Io, path + ": no such file or folder");
    const std::string ext = lower_extension(p);
    if (ext == ".gguf" || has_gguf_magic(path)) return read_gguf_model(path);
    if (ext == ".safetensors" || p.filename() == "model.safetensors.index.json") return read_safetensors_model(path);
    if (tokenizer_path.empty())
        return make_error(path + ": not a folder, .gguf or .safetensors, so it is read as a llama2.c checkpoint, which needs "
                                 "its tokenizer.bin: pass the tokenizer path");
    return read_llama2c_model(path, tokenizer_path);
}

} // namespace cflow
