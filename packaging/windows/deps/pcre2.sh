# PCRE2 for the engine's byte-level BPE pre-tokenizer (engine/CMakeLists.txt finds it through
# pkg-config as libpcre2-8). 8-bit code units only, Unicode on, JIT on (the tokenizer uses it when
# it compiles, and falls back to the interpreter otherwise). Static, so cflow.exe stays one file.
# Sourced by build-deps.sh: build_pcre2 PREFIX VERSION.
build_pcre2() {
  local prefix="$1" version="$2" src build
  src="$(fetch_source pcre2 "$version")" || die "apt-get source pcre2=$version failed"
  build="$work_dir/pcre2"
  rm -rf "$build"
  # pcre2.h declares dllimport functions unless PCRE2_STATIC is defined, and PCRE2's CMake build
  # leaves the .pc file's @PCRE2_STATIC_CFLAG@ empty: given here, for the static library's users.
  cmake -S "$src" -B "$build" -G Ninja "${cross_cmake_args[@]}" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF \
    -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF \
    -DPCRE2_SUPPORT_UNICODE=ON -DPCRE2_SUPPORT_JIT=ON \
    -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF \
    -DPCRE2_STATIC_CFLAG=-DPCRE2_STATIC >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log" >&2; die "configuring PCRE2 failed"; }
  nice_build cmake --build "$build" -j "$(build_jobs)" >"$build.build.log" 2>&1 ||
    { tail -30 "$build.build.log" >&2; die "building PCRE2 failed"; }
  cmake --install "$build" >/dev/null
  grep -q '^Cflags:.*-DPCRE2_STATIC' "$prefix/lib/pkgconfig/libpcre2-8.pc" ||
    die "PCRE2 installed no libpcre2-8.pc with -DPCRE2_STATIC"
  rm -rf "$build" "$build".*.log
}
