# spdlog (the desktop app's log) on fmt, both from their Debian source packages. Debian's spdlog
# source drops its bundled fmt (+ds), so it is built against this fmt, as Debian builds it.
# Static libraries: nothing more to deploy. Sourced by build-deps.sh: build_spdlog_fmt PREFIX FMT SPDLOG.
build_spdlog_fmt() {
  local prefix="$1" fmt_version="$2" spdlog_version="$3" src build
  src="$(fetch_source fmtlib "$fmt_version")" || die "apt-get source fmtlib=$fmt_version failed"
  build="$work_dir/fmt"
  rm -rf "$build"
  cmake -S "$src" -B "$build" -G Ninja "${cross_cmake_args[@]}" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DBUILD_SHARED_LIBS=OFF -DFMT_TEST=OFF -DFMT_DOC=OFF >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log" >&2; die "configuring fmt failed"; }
  nice_build cmake --build "$build" -j "$(build_jobs)" >"$build.build.log" 2>&1 ||
    { tail -30 "$build.build.log" >&2; die "building fmt failed"; }
  cmake --install "$build" >/dev/null

  src="$(fetch_source spdlog "$spdlog_version")" || die "apt-get source spdlog=$spdlog_version failed"
  build="$work_dir/spdlog"
  rm -rf "$build"
  cmake -S "$src" -B "$build" -G Ninja "${cross_cmake_args[@]}" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -Dfmt_DIR="$prefix/lib/cmake/fmt" \
    -DBUILD_SHARED_LIBS=OFF -DSPDLOG_FMT_EXTERNAL=ON \
    -DSPDLOG_BUILD_EXAMPLE=OFF -DSPDLOG_BUILD_TESTS=OFF -DSPDLOG_BUILD_BENCH=OFF >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log" >&2; die "configuring spdlog failed"; }
  nice_build cmake --build "$build" -j "$(build_jobs)" >"$build.build.log" 2>&1 ||
    { tail -30 "$build.build.log" >&2; die "building spdlog failed"; }
  cmake --install "$build" >/dev/null
  rm -rf "$work_dir/fmt" "$work_dir/spdlog" "$work_dir"/{fmt,spdlog}.*.log
}
