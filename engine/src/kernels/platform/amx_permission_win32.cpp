// Windows enables AMX state for a thread on its first use where the OS supports it, but there is
// no documented call to ask whether it will (and wine has none): the prefill keeps its AVX-512
// VNNI walk on Windows until a Windows machine with AMX can test the tile path.
#include "kernels/kernels_internal.h"

namespace cflow::kernels {

bool request_amx_tile_permission() { return false; }

} // namespace cflow::kernels
