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

# nlohmann/json is header-only and Debian installs it only for the host, in /usr/include.
# Putting all of /usr/include on the Windows compiler's path would shadow mingw's own C
# headers (stdint.h -> glibc's bits/...), so expose just the nlohmann/ folder through a
# link in the build tree and pre-seed the top-level find_path with it.
if(NOT DEFINED CACHE{NLOHMANN_JSON_INCLUDE_DIR} AND EXISTS /usr/include/nlohmann/json.hpp)
  set(_cflow_host_headers "${CMAKE_BINARY_DIR}/host-header-only")
  file(MAKE_DIRECTORY "${_cflow_host_headers}")
  if(NOT EXISTS "${_cflow_host_headers}/nlohmann/json.hpp")
    file(CREATE_LINK /usr/include/nlohmann "${_cflow_host_headers}/nlohmann" SYMBOLIC COPY_ON_ERROR)
  endif()
  set(NLOHMANN_JSON_INCLUDE_DIR "${_cflow_host_headers}" CACHE PATH "nlohmann/json headers (host copy, header-only)")
endif()
