#include "cflow/engine/forward/load_policy.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "cflow/engine/io/system_memory.h"
#include "cflow/engine/kernels/kernels.h"

namespace cflow {

namespace {

LoadChoice mapped(std::string reason) { return {LoadOptions{}, "map", std::move(reason), true}; }

} // namespace

LoadChoice choose_load_options(const std::string& path, bool expertsReadFromFile) {
    const Kernels& kernels = active_kernels();
    if (!kernels.tile_matvec_quantized_lanes)
        return mapped("the " + std::string(isa_name(kernels.isa)) + " kernels have no lanes walk");
    if (expertsReadFromFile) return mapped("experts are read from the file");
    std::error_code error;
    const uint64_t fileBytes = std::filesystem::file_size(path, error);
    if (error) return mapped("the file size is unknown");
    const SystemMemory memory = query_system_memory();
    if (memory.available_bytes == 0 || fileBytes > memory.available_bytes / 4 * 3) {
        if (memory.limit_bytes == 0) return mapped("the model does not fit three quarters of the available memory");
        constexpr uint64_t kMiB = uint64_t{1} << 20;
        return mapped("the model does not fit three quarters of the memory its cgroup leaves (" +
                      std::to_string(memory.available_bytes / kMiB) + " MiB free of a " +
                      std::to_string(memory.limit_bytes / kMiB) + " MiB limit, " + memory.limit_source + ")");
    }
    LoadChoice lanes{LoadOptions{}, "lanes", "the " + std::string(isa_name(kernels.isa)) + " kernels walk the lanes layout", true};
    lanes.options.lanes = true;
    return lanes;
}

void note_no_lanes_copy(LoadChoice& choice) {
    choice.name = "map";
    choice.reason = "most of its tiles have no lanes layout (K-quant tiles are read in file order)";
    choice.options.lanes = false;
}

Result<std::shared_ptr<const Model>> load_model(const std::string& path, LoadChoice& choice, const ModelLoader& loader) {
    auto model = loader(path, choice.options);
    if (model && choice.options.lanes && !(*model)->lanes_base()) {
        note_no_lanes_copy(choice);  // too few of the file's tiles have a lanes layout (K-quants)
        return model;
    }
    if (model || !choice.automatic || !choice.options.lanes || model.kind() != ErrorKind::OutOfMemory) return model;
    const std::string why = model.error();
    choice = mapped("the lanes copy did not fit (" + why + ")");
    return loader(path, choice.options);
}

} // namespace cflow
