// libFuzzer target: llama2.c checkpoints with their tokenizer.bin (formats/src/llama2c_reader.cpp):
// the input is the tokenizer and the checkpoint (split_input.h). Whatever opens is planned for
// conversion; any refusal carries a message.
#include <cstdint>
#include <string>

#include "fuzz_file.h"
#include "source_model_check.h"
#include "split_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string checkpoint = cflow::fuzz::scratch_path(".bin");
    static const std::string tokenizer = cflow::fuzz::scratch_path(".tok.bin");
    const cflow::fuzz::SplitInput in = cflow::fuzz::split_input(data, size);
    if (!cflow::fuzz::write_input(tokenizer, in.first, in.first_size) ||
        !cflow::fuzz::write_input(checkpoint, in.second, in.second_size))
        return 0;
    cflow::fuzz::check_source_model(cflow::read_llama2c_model(checkpoint, tokenizer), cflow::DType::Q4_0);
    return 0;
}
