// Windows side of console.h (the whole file is empty elsewhere; the CLI globs every .cpp).
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>

#include <cstdio>

#include "console.h"

namespace cflow::cli {

void set_binary_stdio() {
    _setmode(_fileno(stdin), _O_BINARY);
    _setmode(_fileno(stdout), _O_BINARY);
}

bool stdin_is_terminal() { return _isatty(_fileno(stdin)) != 0; }

} // namespace cflow::cli
#endif
