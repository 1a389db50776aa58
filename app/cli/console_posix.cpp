// POSIX side of console.h (the whole file is empty on Windows; the CLI globs every .cpp).
#ifndef _WIN32
#include <unistd.h>

#include "console.h"

namespace cflow::cli {

void set_binary_stdio() {}  // POSIX streams make no text/binary distinction

bool stdin_is_terminal() { return isatty(STDIN_FILENO) != 0; }

} // namespace cflow::cli
#endif
