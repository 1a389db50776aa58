#include "cflow/formats/hf_tokenizer_files.h"

#include <filesystem>
#include <system_error>

#include "hf_tokenizer.h"

namespace cflow {

Result<Metadata> read_hf_tokenizer(const std::string& tokenizer_json_path) {
    namespace fs = std::filesystem;
    const fs::path path(tokenizer_json_path);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return make_error(ErrorKind::Io, tokenizer_json_path + ": no such file");
    // The HF loader reads a folder by its fixed file names; a renamed tokenizer.json would
    // silently pair with the wrong (or no) tokenizer_config.json, so it is refused instead.
    if (path.filename() != "tokenizer.json")
        return make_error(tokenizer_json_path + ": expected a file named tokenizer.json "
                                                "(tokenizer_config.json is read from the same folder)");
    fs::path dir = path.parent_path();
    if (dir.empty()) dir = ".";
    Metadata metadata;
    auto loaded = hf::load_tokenizer(dir.string(), metadata);
    if (!loaded) return loaded.take_error();
    // It was there a moment ago (checked above): the folder changed under us.
    if (!loaded.value()) return make_error(ErrorKind::Io, tokenizer_json_path + ": no tokenizer.json found");
    return metadata;
}

} // namespace cflow
