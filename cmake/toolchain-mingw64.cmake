# Cross build for 64-bit Windows with Debian's mingw-w64 (posix thread model, so
# std::thread / std::mutex work): cmake --preset mingw
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(CFLOW_MINGW_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${CFLOW_MINGW_TRIPLE}-gcc-posix)
set(CMAKE_CXX_COMPILER ${CFLOW_MINGW_TRIPLE}-g++-posix)
set(CMAKE_RC_COMPILER ${CFLOW_MINGW_TRIPLE}-windres)

# Look for libraries and headers only in the Windows sysroot, programs only on the host.
# (nlohmann/json is header-only and lives in /usr/include: the top-level CMakeLists finds it
# with NO_CMAKE_FIND_ROOT_PATH.)
set(CMAKE_FIND_ROOT_PATH /usr/${CFLOW_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# nlohmann/json and CLI11 are header-only and Debian installs them only for the host, in
# /usr/include. Putting all of /usr/include on the Windows compiler's path would shadow mingw's
# own C headers (stdint.h -> glibc's bits/...), so expose just the nlohmann/ and CLI/ folders
# through links in the build tree and pre-seed the top-level find_path calls with it.
set(_cflow_host_headers "${CMAKE_BINARY_DIR}/host-header-only")
foreach(_cflow_header_lib IN ITEMS "NLOHMANN_JSON;nlohmann;json.hpp" "CLI11;CLI;CLI.hpp")
  list(GET _cflow_header_lib 0 _cflow_var)
  list(GET _cflow_header_lib 1 _cflow_folder)
  list(GET _cflow_header_lib 2 _cflow_header)
  if(NOT DEFINED CACHE{${_cflow_var}_INCLUDE_DIR} AND EXISTS /usr/include/${_cflow_folder}/${_cflow_header})
    file(MAKE_DIRECTORY "${_cflow_host_headers}")
    if(NOT EXISTS "${_cflow_host_headers}/${_cflow_folder}/${_cflow_header}")
      file(CREATE_LINK /usr/include/${_cflow_folder} "${_cflow_host_headers}/${_cflow_folder}" SYMBOLIC COPY_ON_ERROR)
    endif()
    set(${_cflow_var}_INCLUDE_DIR "${_cflow_host_headers}" CACHE PATH "${_cflow_folder}/ headers (host copy, header-only)")
  endif()
endforeach()

# The Windows dependencies packaging/windows/build-deps.sh cross-builds into the CI cache (PCRE2, Qt,
# QCoro, spdlog/fmt), named by the mingw-deps.cmake it writes there. Found only through this file,
# so a Windows build never picks up a Linux library, and builds without them where the cache is
# absent (the `mingw` preset then gives the CLI without PCRE2). CFLOW_MINGW_NO_DEPS: the
# dependencies' own builds. CFLOW_MINGW_DEPS_FILE: another cache's file.
if(NOT CFLOW_MINGW_NO_DEPS)
  if(NOT CFLOW_MINGW_DEPS_FILE)
    if(DEFINED ENV{CFLOW_CI_CACHE})
      set(_cflow_cache "$ENV{CFLOW_CI_CACHE}")
    elseif(DEFINED ENV{XDG_CACHE_HOME})
      set(_cflow_cache "$ENV{XDG_CACHE_HOME}/cflow-ci")
    else()
      set(_cflow_cache "$ENV{HOME}/.cache/cflow-ci")
    endif()
    set(CFLOW_MINGW_DEPS_FILE "${_cflow_cache}/windows/mingw-deps.cmake")
  endif()
  if(EXISTS "${CFLOW_MINGW_DEPS_FILE}")
    include("${CFLOW_MINGW_DEPS_FILE}")
    list(APPEND CMAKE_FIND_ROOT_PATH ${CFLOW_MINGW_PCRE2_PREFIX} ${CFLOW_MINGW_QT_PREFIX} ${CFLOW_MINGW_QCORO_PREFIX} ${CFLOW_MINGW_SPDLOG_PREFIX})
    list(APPEND CMAKE_PREFIX_PATH ${CFLOW_MINGW_QT_PREFIX} ${CFLOW_MINGW_QCORO_PREFIX} ${CFLOW_MINGW_SPDLOG_PREFIX})
    # Qt's build tools (moc, rcc, uic) run on the host: Debian's (qt6-base-dev-tools), the ones the
    # cached Qt was built with.
    set(QT_HOST_PATH /usr)
    set(QT_HOST_PATH_CMAKE_DIR /usr/lib/x86_64-linux-gnu/cmake)
  endif()
endif()
# The Windows PCRE2's pkg-config folder: engine/CMakeLists.txt points pkg-config there (and only
# there, so no host .pc file leaks into the Windows build). Unset without the cache.
if(CFLOW_MINGW_PCRE2_PREFIX AND EXISTS "${CFLOW_MINGW_PCRE2_PREFIX}/lib/pkgconfig/libpcre2-8.pc")
  set(CFLOW_CROSS_PKG_CONFIG_LIBDIR "${CFLOW_MINGW_PCRE2_PREFIX}/lib/pkgconfig")
endif()
