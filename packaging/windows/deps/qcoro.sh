# QCoro for Windows. The app uses only QCoro's Task and its QFuture awaiter (QCoro/QCoroTask,
# QCoro/QCoroFuture), which are header-only templates: nothing of libQCoro6Core is linked. The mirror
# this was built against serves no `qcoro` source tarball (apt-get source qcoro: 404), so the headers
# come from Debian's qcoro-qt6-dev (the same 0.8.0 release; headers are not architecture-specific) and
# a small QCoro6Config.cmake gives the header-only QCoro6::Core target ui/CMakeLists.txt asks for.
# Using a compiled QCoro class (QCoroTimer, QCoroProcess, ...) in the app would fail to link here:
# that is the moment to build libQCoro6Core from the `qcoro` source package instead.
# Sourced by build-deps.sh: build_qcoro PREFIX VERSION (VERSION: qcoro-qt6-dev's).
build_qcoro() {
  local prefix="$1" version="$2" installed
  installed="$(dpkg-query -W -f '${Version}' qcoro-qt6-dev 2>/dev/null || true)"
  [[ "$installed" == "$version" ]] ||
    die "qcoro-qt6-dev $version is needed for QCoro's headers (installed: '${installed:-none}'; packaging/install-deps.sh)"
  mkdir -p "$prefix/include" "$prefix/lib/cmake/QCoro6"
  cp -a /usr/include/qcoro6 "$prefix/include/"
  cat >"$prefix/lib/cmake/QCoro6/QCoro6Config.cmake" <<'CONFIG'
# Header-only QCoro 6 for the mingw-w64 build (packaging/windows/deps/qcoro.sh says why).
include(CMakeFindDependencyMacro)
find_dependency(Qt6 COMPONENTS Core)
get_filename_component(_qcoro_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(_qcoro_includes "${_qcoro_prefix}/include/qcoro6;${_qcoro_prefix}/include/qcoro6/qcoro;${_qcoro_prefix}/include/qcoro6/QCoro")
if(NOT TARGET QCoro6::Coro)
  add_library(QCoro6::Coro INTERFACE IMPORTED)
  set_target_properties(QCoro6::Coro PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_qcoro_includes}")
endif()
if(NOT TARGET QCoro6::Core)
  add_library(QCoro6::Core INTERFACE IMPORTED)
  set_target_properties(QCoro6::Core PROPERTIES INTERFACE_LINK_LIBRARIES "QCoro6::Coro;Qt6::Core")
endif()
set(QCoro6_FOUND TRUE)
foreach(_qcoro_component IN LISTS QCoro6_FIND_COMPONENTS)
  if(_qcoro_component STREQUAL "Core" OR _qcoro_component STREQUAL "Coro")
    set(QCoro6_${_qcoro_component}_FOUND TRUE)
  else()
    set(QCoro6_${_qcoro_component}_FOUND FALSE)
    if(QCoro6_FIND_REQUIRED_${_qcoro_component})
      set(QCoro6_FOUND FALSE)
      set(QCoro6_NOT_FOUND_MESSAGE "only QCoro6 Core (header-only) is built for Windows, not ${_qcoro_component}")
    endif()
  endif()
endforeach()
CONFIG
}
