# Qt 6 qtbase for Windows from Debian's qt6-base source, cross-compiled with mingw-w64 against
# Debian's host Qt tools (moc, rcc, uic from qt6-base-dev-tools: QT_HOST_PATH), as shared DLLs.
# Only what cflow studio links (Core, Gui, Widgets, Sql with the SQLite driver, Concurrent) and the
# plugins it loads (platforms/qwindows, sqldrivers/qsqlite, styles/qwindowsvistastyle); every other
# module, plugin and bundled library is switched off, since each one is minutes of the cold build on
# 2 cores. Changing a flag here: bump qt_recipe in build-deps.sh, or the cache keeps the old build.
# Sourced by build-deps.sh: build_qtbase PREFIX QT_VERSION SQLITE_VERSION.

# SQLite's amalgamation (sqlite3.c) for Qt's bundled SQLite driver: the +dfsg qt6-base tarball drops
# src/3rdparty/sqlite, and Debian's sqlite3 source is the canonical tree, from which the
# amalgamation is generated (tclsh runs its generators; only small host tools are compiled).
make_sqlite_amalgamation() {
  local version="$1" dest="$2" src build
  src="$(fetch_source sqlite3 "$version")" || die "apt-get source sqlite3=$version failed"
  command -v tclsh >/dev/null 2>&1 || die "tclsh is needed to generate SQLite's amalgamation (apt-get install tcl)"
  build="$work_dir/sqlite3"
  rm -rf "$build"
  mkdir -p "$build"
  (cd "$build" && "$src/configure" --disable-tcl >configure.log 2>&1 &&
    nice_build make sqlite3.c >make.log 2>&1) ||
    { tail -20 "$build"/*.log >&2; die "generating sqlite3.c failed"; }
  mkdir -p "$dest"
  cp "$build/sqlite3.c" "$build/sqlite3.h" "$dest/"
  rm -rf "$build"
}

build_qtbase() {
  local prefix="$1" qt_version="$2" sqlite_version="$3" src build t0
  src="$(fetch_source qt6-base "$qt_version")" || die "apt-get source qt6-base=$qt_version failed"
  # Our fixes for this configuration (deps/patches/qtbase-*.patch), once per source tree: patch -N
  # skips one already applied, its --dry-run tells the two apart.
  local fix
  for fix in "$here"/deps/patches/qtbase-*.patch; do
    if patch -d "$src" -p1 -N --dry-run -s <"$fix" >/dev/null 2>&1; then
      patch -d "$src" -p1 -N -s <"$fix" || die "$(basename "$fix") does not apply"
    elif ! patch -d "$src" -p1 -R --dry-run -s <"$fix" >/dev/null 2>&1; then
      die "$(basename "$fix") neither applies nor is applied to $src"
    fi
  done
  if [[ ! -f "$src/src/3rdparty/sqlite/sqlite3.c" ]]; then
    t0=$SECONDS
    make_sqlite_amalgamation "$sqlite_version" "$src/src/3rdparty/sqlite"
    echo "    sqlite3.c generated in $(elapsed "$t0")"
  fi
  # Not removed before: a build that stopped (a compile error, an interrupted run) resumes where
  # it was; CMake applies changed flags to it. Removed once installed.
  build="$work_dir/qtbase"
  local features=(
    # the modules the app does not use
    -DFEATURE_network=OFF -DFEATURE_dbus=OFF -DFEATURE_opengl=OFF -DFEATURE_printsupport=OFF
    -DFEATURE_xml=OFF -DFEATURE_testlib=OFF -DFEATURE_sql=ON -DFEATURE_concurrent=ON
    # rendering back ends and platform plugins other than qwindows (Direct2D, Vulkan)
    -DFEATURE_vulkan=OFF -DFEATURE_direct2d=OFF
    # the dfsg tarball drops wintab.h, which the Windows plugin's tablet support includes
    -DFEATURE_tabletevent=OFF
    # one SQL driver, with the amalgamation above
    -DFEATURE_sql_sqlite=ON -DFEATURE_system_sqlite=OFF -DFEATURE_sql_odbc=OFF -DFEATURE_sql_psql=OFF
    -DFEATURE_sql_mysql=OFF -DFEATURE_sql_ibase=OFF -DFEATURE_sql_oci=OFF -DFEATURE_sql_db2=OFF
    # fonts through DirectWrite/GDI, no FreeType; image plugins the app never loads
    -DFEATURE_freetype=OFF -DFEATURE_jpeg=OFF -DFEATURE_gif=OFF -DFEATURE_ico=OFF
    # bundled third-party code instead of host libraries (there are no Windows ones to find)
    -DFEATURE_system_zlib=OFF -DFEATURE_system_png=OFF -DFEATURE_system_pcre2=OFF
    -DFEATURE_system_harfbuzz=OFF -DFEATURE_system_doubleconversion=OFF -DFEATURE_zstd=OFF
    -DFEATURE_icu=OFF -DFEATURE_pkg_config=OFF
    # Debian's cross.patch lets androiddeployqt build when cross-compiling; Windows has no use for it
    -DFEATURE_androiddeployqt=OFF
    -DFEATURE_textodfwriter=OFF -DFEATURE_sessionmanager=OFF -DFEATURE_pdf=OFF -DFEATURE_movie=OFF
    # widgets and dialogs the app never shows (ui/, app/studio/); a feature switched off here
    # makes a use of it fail to compile, which is when to switch it back on
    -DFEATURE_mdiarea=OFF -DFEATURE_calendarwidget=OFF -DFEATURE_datetimeedit=OFF -DFEATURE_lcdnumber=OFF
    -DFEATURE_dial=OFF -DFEATURE_colordialog=OFF -DFEATURE_fontdialog=OFF -DFEATURE_fontcombobox=OFF
    -DFEATURE_keysequenceedit=OFF -DFEATURE_errormessage=OFF -DFEATURE_progressdialog=OFF
    -DFEATURE_splashscreen=OFF -DFEATURE_undoview=OFF -DFEATURE_undocommand=OFF -DFEATURE_toolbox=OFF
    -DFEATURE_columnview=OFF -DFEATURE_scroller=OFF
  )
  t0=$SECONDS
  cmake -S "$src" -B "$build" -G Ninja "${cross_cmake_args[@]}" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=ON \
    -DQT_HOST_PATH=/usr -DQT_HOST_PATH_CMAKE_DIR=/usr/lib/x86_64-linux-gnu/cmake \
    -DQT_BUILD_EXAMPLES=OFF -DQT_BUILD_TESTS=OFF -DQT_BUILD_BENCHMARKS=OFF \
    "${features[@]}" >"$build.configure.log" 2>&1 ||
    { tail -40 "$build.configure.log" >&2; die "configuring qtbase failed ($build.configure.log)"; }
  echo "    qtbase configured in $(elapsed "$t0") ($(ninja -C "$build" -t targets all 2>/dev/null | grep -c ': ') ninja targets)"
  t0=$SECONDS
  # -k 0: one failing file does not stop the others, so a rerun after a fix compiles only what failed.
  nice_build cmake --build "$build" -j "$(build_jobs)" -- -k 0 >"$build.build.log" 2>&1 ||
    { grep -B2 -A12 'FAILED:' "$build.build.log" | head -80 >&2; die "building qtbase failed ($build.build.log)"; }
  echo "    qtbase built in $(elapsed "$t0")"
  cmake --install "$build" >/dev/null
  for dll in Qt6Core Qt6Gui Qt6Widgets Qt6Sql Qt6Concurrent; do
    [[ -f "$prefix/bin/$dll.dll" ]] || die "qtbase installed no bin/$dll.dll"
  done
  for plugin in platforms/qwindows sqldrivers/qsqlite; do
    [[ -f "$prefix/plugins/$plugin.dll" ]] || die "qtbase installed no plugins/$plugin.dll"
  done
  rm -rf "$build" "$build".*.log
}

# Qt Charts (the comparison wizard's result charts) from Debian's qt6-charts source, into the Qt
# prefix. Returns 1 when the source cannot be fetched: the app then builds without the charts
# (ui/CMakeLists.txt), which the caller reports.
build_qtcharts() {
  local prefix="$1" version="$2" src build t0
  src="$(fetch_source qt6-charts "$version" 2>/dev/null)" || return 1
  build="$work_dir/qtcharts"
  rm -rf "$build"
  t0=$SECONDS
  cmake -S "$src" -B "$build" -G Ninja "${cross_cmake_args[@]}" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DQt6_DIR="$prefix/lib/cmake/Qt6" \
    -DQT_HOST_PATH=/usr -DQT_HOST_PATH_CMAKE_DIR=/usr/lib/x86_64-linux-gnu/cmake \
    -DQT_BUILD_EXAMPLES=OFF -DQT_BUILD_TESTS=OFF >"$build.configure.log" 2>&1 ||
    { tail -40 "$build.configure.log" >&2; die "configuring qtcharts failed ($build.configure.log)"; }
  nice_build cmake --build "$build" -j "$(build_jobs)" >"$build.build.log" 2>&1 ||
    { tail -40 "$build.build.log" >&2; die "building qtcharts failed ($build.build.log)"; }
  cmake --install "$build" >/dev/null
  echo "    qtcharts built in $(elapsed "$t0")"
  rm -rf "$build" "$build".*.log
}
