# Packaging: `cpack -G DEB` on Debian 12, NSIS installer config for Windows builds.
# Included once, at the end of the top-level CMakeLists.txt, after every other install() rule.
set(CPACK_PACKAGE_NAME "cflow-studio")
set(CPACK_PACKAGE_VENDOR "cflow studio")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Chat with local language models on the CPU and watch the inference")
# Lines of at most 80 characters: the Debian package shows them as they are.
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "cflow studio is a C++20/Qt 6 desktop app and command-line tool that runs\n"
  "language models on the CPU from the tile-native .cflow format, loads\n"
  "mixture-of-experts weights conditionally and schedules layers with a\n"
  "delay-aware pipeline. The desktop app shows the inference while it runs:\n"
  "the bytes streamed per token, the experts routed to and the overlap of the\n"
  "schedule. The package includes a small story model trained by the project,\n"
  "so both programs work without a download.")
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
  # Every Debian package carries its copyright and changelog in /usr/share/doc/<package>/ (sources in
  # packaging/linux/; the changelog compressed with gzip -9n, as dpkg and lintian expect).
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/linux/copyright DESTINATION share/doc/cflow-studio)
  configure_file(${CMAKE_SOURCE_DIR}/packaging/linux/changelog.in ${CMAKE_BINARY_DIR}/packaging/changelog @ONLY)
  find_program(CFLOW_GZIP gzip REQUIRED)
  execute_process(COMMAND ${CFLOW_GZIP} -9nf ${CMAKE_BINARY_DIR}/packaging/changelog COMMAND_ERROR_IS_FATAL ANY)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/changelog.gz DESTINATION share/doc/cflow-studio)
  # Control files with the permissions dpkg-deb and lintian expect (0644 / 0755).
  set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
  if(CFLOW_BUILD_GUI)
    # Plugins Qt loads at run time, so no shared-library scan finds them: the xcb/wayland platform
    # plugins and the QSQLITE driver of the conversation and comparison stores (ui/src/*_store.cpp).
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "qt6-qpa-plugins (>= 6.4), libqt6sql6-sqlite (>= 6.4)")
  endif()
endif()

include(CPack)
