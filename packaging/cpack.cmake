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
  # Shared-library dependencies come from dpkg-shlibdeps (dpkg-dev, in debian-build-deps.txt),
  # so the package lists exactly the Debian libraries the binaries link against.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  if(CFLOW_BUILD_GUI)
    # Loaded at run time (xcb/wayland platform plugins), so no shared-library scan finds it.
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "qt6-qpa-plugins (>= 6.4)")
  endif()
endif()

include(CPack)
