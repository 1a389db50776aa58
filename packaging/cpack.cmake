# Packaging: `cpack -G DEB` on Debian 12, NSIS installer config for Windows builds.
# Included once, at the end of the top-level CMakeLists.txt, after every install() rule.
set(CPACK_PACKAGE_NAME "cflow-studio")
set(CPACK_PACKAGE_VENDOR "cflow studio")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Chat with local language models on the CPU and watch the inference")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "cflow studio is a C++20/Qt 6 desktop app and command-line tool that runs language models on the CPU "
  "from the tile-native .cflow format, loads mixture-of-experts weights conditionally and schedules "
  "layers with a delay-aware pipeline.")
set(CPACK_PACKAGE_CONTACT "cflow studio developers")
set(CPACK_PACKAGE_INSTALL_DIRECTORY "cflow studio")
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/out/")
if(EXISTS "${CMAKE_SOURCE_DIR}/LICENSE")
  set(CPACK_RESOURCE_FILE_LICENSE "${CMAKE_SOURCE_DIR}/LICENSE")
endif()
if(CFLOW_BUILD_GUI)
  # Start-menu / desktop entry for the GUI (NSIS); the CLI stays on the PATH only.
  set(CPACK_PACKAGE_EXECUTABLES "cflow-studio" "cflow studio")
endif()

if(WIN32)
  set(CPACK_GENERATOR "NSIS;ZIP")
  set(CPACK_NSIS_DISPLAY_NAME "cflow studio ${PROJECT_VERSION}")
  set(CPACK_NSIS_PACKAGE_NAME "cflow studio")
  set(CPACK_NSIS_MODIFY_PATH ON)  # offers to put `cflow` on the PATH
  set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
  if(CFLOW_BUILD_GUI)
    set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\\\cflow-studio.exe")
  endif()
else()
  set(CPACK_GENERATOR "DEB")
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SECTION "utils")
  set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
  # Debian 12 runtime packages, listed rather than derived by dpkg-shlibdeps so the
  # package does not depend on what happens to be installed on the build machine.
  set(_cflow_deb_depends "libc6 (>= 2.36)" "libstdc++6 (>= 12)" "libgcc-s1" "libpcre2-8-0 (>= 10.42)")
  if(CFLOW_BUILD_GUI)
    list(APPEND _cflow_deb_depends
      "libqt6core6 (>= 6.4)" "libqt6gui6 (>= 6.4)" "libqt6widgets6 (>= 6.4)" "libqt6concurrent6 (>= 6.4)"
      "libqcoro6core0 (>= 0.8)" "libspdlog1.10" "libfmt9"
      # loaded at run time (xcb/wayland platform plugins), so no shared-library check would find it
      "qt6-qpa-plugins (>= 6.4)")
  endif()
  list(JOIN _cflow_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
endif()

include(CPack)
