// libFuzzer target: .cflow / .vflow containers (formats/src/cflow_reader.cpp, region and
// vflow readers). Any bytes either open, with every segment inside the file, or fail with a
// message; nothing crashes and no offset arithmetic overflows (UBSan).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "cflow/formats/cflow_reader.h"
#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The reader decides the container by magic, not by name: one scratch name serves both.
    static const std::string path = cflow::fuzz::scratch_path(".cflow");
    if (!cflow::fuzz::write_input(path, data, size)) return 0;
    auto file = cflow::CflowFile::open(path, cflow::LoadMode::ReadAnon);
    if (!file && file.error().empty()) std::abort();
    if (file && (*file)->file_bytes() > size) std::abort();
    return 0;
}
