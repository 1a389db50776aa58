// libFuzzer target: GGUF files (formats/src/gguf_reader.cpp and the model builder). Any bytes
// either open as a model or fail with a message; a model that opens is planned for conversion
// (validation, layout) and its tokenizer metadata read, all without crashing or undefined
// behaviour. Every row of every accepted tensor is read back through the converter's path.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/source_model.h"
#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = cflow::fuzz::scratch_path(".gguf");
    if (!cflow::fuzz::write_input(path, data, size)) return 0;
    auto raw = cflow::read_gguf(path);
    if (raw) {
        for (const auto& t : raw->tensors)
            if (t.bytes > 0 && (raw->data_offset + t.offset > raw->file->size() ||
                                t.bytes > raw->file->size() - raw->data_offset - t.offset))
                std::abort();  // the reader promised every accepted payload lies inside the file
    }
    auto model = cflow::read_gguf_model(path);
    if (model) {
        if (model->source_label.empty()) std::abort();
        for (cflow::DType q : {cflow::DType::Q4_0, cflow::DType::F32}) {
            cflow::ConvertOptions options;
            options.weight_quant = q;
            (void)cflow::plan_conversion(*model, options);
        }
    } else if (model.error().empty()) {
        std::abort();  // every refusal says what and where
    }
    return 0;
}
