# Optional hwloc (Debian libhwloc-dev) for topology discovery, per KF_WITH_HWLOC:
#   AUTO  use hwloc when pkg-config finds it, else build without it (reduced topology)
#   ON    require it
#   OFF   never use it
# Sets KF_HAVE_HWLOC (cache, so that tools/ sees it) and links hwloc PRIVATE into the library
# objects and the shared library. The static library's consumers need hwloc too: it is an
# INTERFACE link item of kungfu_static given as an absolute path (exported as such, so the
# installed CMake package needs no find_dependency), and -lhwloc is in kungfu.pc's Libs.private.
# Included from src/CMakeLists.txt after the library targets are defined.
set(KF_HAVE_HWLOC OFF CACHE INTERNAL "hwloc found and used")
set(KF_PC_HWLOC "" CACHE INTERNAL "hwloc flags for kungfu.pc Libs.private")
string(TOUPPER "${KF_WITH_HWLOC}" _kf_hwloc_mode)
if(NOT _kf_hwloc_mode STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(KF_HWLOC QUIET hwloc)
  endif()
  if(KF_HWLOC_FOUND)
    set(KF_HAVE_HWLOC ON CACHE INTERNAL "hwloc found and used")
    list(JOIN KF_HWLOC_LDFLAGS " " _kf_hwloc_pc)
    set(KF_PC_HWLOC "${_kf_hwloc_pc}" CACHE INTERNAL "hwloc flags for kungfu.pc Libs.private")
    message(STATUS "hwloc ${KF_HWLOC_VERSION}: topology discovery with hwloc")
    target_compile_definitions(kungfu_objects PRIVATE KF_HAVE_HWLOC=1)
    target_include_directories(kungfu_objects SYSTEM PRIVATE ${KF_HWLOC_INCLUDE_DIRS})
    target_link_libraries(kungfu PRIVATE ${KF_HWLOC_LINK_LIBRARIES})
    target_link_libraries(kungfu_static INTERFACE ${KF_HWLOC_LINK_LIBRARIES})
  elseif(_kf_hwloc_mode STREQUAL "ON")
    message(FATAL_ERROR "KF_WITH_HWLOC=ON but pkg-config cannot find hwloc (apt-get install libhwloc-dev)")
  else()
    message(STATUS "hwloc not found: topology from /proc and /sys only (KF_WITH_HWLOC=AUTO)")
  endif()
else()
  message(STATUS "hwloc disabled (KF_WITH_HWLOC=OFF): topology from /proc and /sys only")
endif()
