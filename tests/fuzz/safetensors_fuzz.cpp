// libFuzzer target: Hugging Face folders (formats/src/safetensors_reader.cpp, hf_config.cpp):
// the input is a config.json and a model.safetensors (split_input.h). The single file is read
// alone too; whatever opens is planned for conversion and every accepted tensor must lie inside
// its file. Any refusal carries a message.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cflow/formats/safetensors.h"
#include "fuzz_file.h"
#include "source_model_check.h"
#include "split_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string dir = [] {
        std::string d = cflow::fuzz::scratch_path(".hf");
        std::filesystem::create_directories(d);
        return d;
    }();
    const cflow::fuzz::SplitInput in = cflow::fuzz::split_input(data, size);
    const std::string weights = dir + "/model.safetensors";
    if (!cflow::fuzz::write_input(dir + "/config.json", in.first, in.first_size) ||
        !cflow::fuzz::write_input(weights, in.second, in.second_size))
        return 0;

    auto file = cflow::read_safetensors_file(weights);
    if (file) {
        for (const auto& [name, e] : file->entries)
            if (e.end < e.begin || file->data_offset > file->file->size() || e.end > file->file->size() - file->data_offset)
                std::abort();  // the reader promised every accepted tensor lies inside the file
    } else if (file.error().empty()) {
        std::abort();
    }
    cflow::fuzz::check_source_model(cflow::read_safetensors_model(dir), cflow::DType::Q8_0);
    return 0;
}
