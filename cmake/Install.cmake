# Installation and packaging of libkungfu.
#
# Installs the public headers (include/kungfu/*.h, never src/ headers), the shared library
# (libkungfu.so.<major>, SONAME from src/CMakeLists.txt) and the static library (libkungfu.a),
# an exported CMake package and a pkg-config file:
#
#   find_package(KungFu 0.1 REQUIRED)          # same major = same ABI (SameMajorVersion)
#   target_link_libraries(app PRIVATE KungFu::kungfu)          # or KungFu::kungfu_static
#
#   cc app.c $(pkg-config --cflags --libs kungfu)
#
# The tools (kfrun, kfinfo) are installed by tools/CMakeLists.txt.
#
# Included from pkgconfig/CMakeLists.txt, after every target has been defined.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(KF_CMAKE_PACKAGE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/KungFu"
    CACHE STRING "Where the KungFu CMake package files are installed (relative to the prefix)")
mark_as_advanced(KF_CMAKE_PACKAGE_DIR)

# Public headers: exactly include/kungfu/*.h. Internal headers live under src/ and are not
# installed; tests/abi compiles each of these alone as C and C++.
file(GLOB KF_PUBLIC_HEADERS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/kungfu/*.h")
install(FILES ${KF_PUBLIC_HEADERS}
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/kungfu"
        COMPONENT Development)

install(TARGETS kungfu kungfu_static
        EXPORT KungFuTargets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
                COMPONENT Runtime
                NAMELINK_COMPONENT Development
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Development
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT Runtime
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

install(EXPORT KungFuTargets
        NAMESPACE KungFu::
        FILE KungFuTargets.cmake
        DESTINATION "${KF_CMAKE_PACKAGE_DIR}"
        COMPONENT Development)

set(KF_PKG_BUILD_DIR "${PROJECT_BINARY_DIR}/cmake-package")
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/KungFuConfig.cmake.in"
  "${KF_PKG_BUILD_DIR}/KungFuConfig.cmake"
  INSTALL_DESTINATION "${KF_CMAKE_PACKAGE_DIR}")
write_basic_package_version_file(
  "${KF_PKG_BUILD_DIR}/KungFuConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES "${KF_PKG_BUILD_DIR}/KungFuConfig.cmake"
              "${KF_PKG_BUILD_DIR}/KungFuConfigVersion.cmake"
        DESTINATION "${KF_CMAKE_PACKAGE_DIR}"
        COMPONENT Development)

# pkg-config: kungfu.pc is configured at install time, so that the paths in it are those of
# the prefix actually installed to (`cmake --install build --prefix /opt/kf` included).
set(KF_PC_TEMPLATE "${PROJECT_SOURCE_DIR}/pkgconfig/kungfu.pc.in")
set(KF_PC_INSTALL_FILE "${PROJECT_BINARY_DIR}/pkgconfig/install/kungfu.pc")
# libdir/includedir are ${prefix}-relative unless the GNUInstallDirs values are absolute.
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(KF_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(KF_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
# A build-tree copy with the configure-time prefix, for inspection.
set(KF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file("${KF_PC_TEMPLATE}" "${PROJECT_BINARY_DIR}/pkgconfig/kungfu.pc" @ONLY)
install(CODE "
  set(KF_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(KF_PC_LIBDIR [[${KF_PC_LIBDIR}]])
  set(KF_PC_INCLUDEDIR [[${KF_PC_INCLUDEDIR}]])
  set(PROJECT_VERSION [[${PROJECT_VERSION}]])
  set(PROJECT_DESCRIPTION [[${PROJECT_DESCRIPTION}]])
  set(KF_PC_HWLOC [[${KF_PC_HWLOC}]])
  configure_file([[${KF_PC_TEMPLATE}]] [[${KF_PC_INSTALL_FILE}]] @ONLY)
  " COMPONENT Development)
install(FILES "${KF_PC_INSTALL_FILE}"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
        COMPONENT Development)
