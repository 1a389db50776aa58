# cpp-httplib for Windows: the HTTP of `cflow serve` (server/). Debian's libcpp-httplib-dev is not
# header-only: its /usr/include/httplib.h is split.py's declarations, the code is in the Linux
# libcpp-httplib.so, so neither serves a Windows build. The source package's httplib.h is the
# upstream single header (declarations and inline code, Debian's CVE patch applied): the same
# release as the Linux build's, installed as it is. No OpenSSL (plain HTTP for a local server),
# so nothing is compiled here; the top-level CMakeLists.txt links ws2_32.
# Sourced by build-deps.sh: build_cpp_httplib PREFIX VERSION.
build_cpp_httplib() {
  local prefix="$1" version="$2" src
  src="$(fetch_source cpp-httplib "$version")" || die "apt-get source cpp-httplib=$version failed"
  # The split declarations-only header has no Server constructor body; the single header does.
  grep -q '^inline Server::Server()' "$src/httplib.h" ||
    die "cpp-httplib $version's source has no single-header httplib.h (inline Server::Server() not found in $src/httplib.h)"
  mkdir -p "$prefix/include"
  cp "$src/httplib.h" "$src/LICENSE" "$prefix/include/"
}
