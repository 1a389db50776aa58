#include "cflow/engine/io/expert_cache_budget.h"

#include <algorithm>

namespace cflow {

uint64_t expert_bank_bytes(const Model& model) {
    uint64_t bytes = 0;
    for (const LayerWeights& w : model.layers())
        if (w.expert_bank) bytes += w.expert_bank->bytes;
    return bytes;
}

uint64_t expert_cache_fit_bytes(const Model& model, const SystemMemory& memory) {
    const uint64_t bank = expert_bank_bytes(model);
    const uint64_t file = model.file().file().size();
    const uint64_t resident = file > bank ? file - bank : 0;
    const uint64_t half = memory.available_bytes / 2;
    if (half <= resident) return 0;
    return std::min(half - resident, bank);
}

} // namespace cflow
