// Placeholder entry point, replaced by the CLI implementation.
#include <cstdio>
int main() {
    std::fputs("cflow: not built yet\n", stderr);
    return 1;
}
