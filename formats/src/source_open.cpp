// open_source_model: picks the reader for what a path is (model_path_kind.h decides).
#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/source_model.h"

namespace cflow {

Result<SourceModel> open_source_model(const std::string& path, const std::string& tokenizer_path) {
    switch (sniff_model_path(path)) {
    case ModelPathKind::Missing: return make_error(ErrorKind::Io, path + ": no such file or folder");
    case ModelPathKind::HfFolder:
    case ModelPathKind::Safetensors: return read_safetensors_model(path);
    case ModelPathKind::Gguf: return read_gguf_model(path);
    case ModelPathKind::Cflow:
    case ModelPathKind::Vflow:
        return make_error(path + ": already a .cflow/.vflow model (open it directly; there is nothing to convert)");
    case ModelPathKind::Llama2c:
    case ModelPathKind::Unknown: break;  // the legacy llama2.c export has no magic: any other file may be one
    }
    if (tokenizer_path.empty())
        return make_error(path + ": not a folder, .gguf or .safetensors, so it is read as a llama2.c checkpoint, which needs "
                                 "its tokenizer.bin: pass the tokenizer path");
    return read_llama2c_model(path, tokenizer_path);
}

} // namespace cflow
