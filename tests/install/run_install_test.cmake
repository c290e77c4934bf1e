# Installs the build tree into a fresh prefix, then builds tests/install/consumer against the
# installed tree only, with find_package(KungFu) and with pkg-config, and runs the programs.
#   cmake -DBUILD_DIR= -DWORK_DIR= -DSOURCE_DIR= -DCC= -DGENERATOR= -DMAKE_PROGRAM=
#         -DPKG_CONFIG= -DSAN_FLAGS= -P run_install_test.cmake
cmake_minimum_required(VERSION 3.20)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "FAILED (${rc}): ${cmd}\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# A one-rank communicator: no launcher variables.
foreach(var KF_RANK KF_SIZE KF_LOCAL_RANK KF_LOCAL_SIZE KF_ROOT_ADDR KF_JOB_SECRET
            OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK
            OMPI_COMM_WORLD_LOCAL_SIZE SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID
            SLURM_STEP_ID PMI_RANK PMI_SIZE PMIX_RANK)
  unset(ENV{${var}})
endforeach()
# The compiler flags of the build (sanitizers) must be used by the consumers too.
set(ENV{CFLAGS} "${SAN_FLAGS}")
set(ENV{CXXFLAGS} "${SAN_FLAGS}")
set(ENV{LDFLAGS} "${SAN_FLAGS}")

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

message(STATUS "== cmake --install ${BUILD_DIR} --prefix ${prefix}")
run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# What must (and must not) be installed.
file(GLOB_RECURSE libs_so "${prefix}/*/libkungfu.so")
file(GLOB_RECURSE libs_a "${prefix}/*/libkungfu.a")
file(GLOB_RECURSE pcs "${prefix}/*/pkgconfig/kungfu.pc")
file(GLOB_RECURSE configs "${prefix}/*/KungFuConfig.cmake")
file(GLOB_RECURSE versions "${prefix}/*/KungFuConfigVersion.cmake")
file(GLOB headers RELATIVE "${prefix}/include/kungfu" "${prefix}/include/kungfu/*")
file(GLOB src_headers RELATIVE "${SOURCE_DIR}/include/kungfu" "${SOURCE_DIR}/include/kungfu/*.h")
foreach(v libs_so libs_a pcs configs versions)
  list(LENGTH ${v} n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one installed file for ${v}, found: '${${v}}'")
  endif()
endforeach()
list(SORT headers)
list(SORT src_headers)
if(NOT headers STREQUAL src_headers)
  message(FATAL_ERROR "installed headers '${headers}' != public headers '${src_headers}'")
endif()
get_filename_component(libdir "${libs_so}" DIRECTORY)
get_filename_component(pcdir "${pcs}" DIRECTORY)
file(GLOB sonames "${libdir}/libkungfu.so.*")
if(NOT sonames)
  message(FATAL_ERROR "no libkungfu.so.<major> in ${libdir}")
endif()
file(GLOB_RECURSE internal "${prefix}/include/*.hh" "${prefix}/include/base/*"
     "${prefix}/include/algo/*")
if(internal)
  message(FATAL_ERROR "internal headers were installed: ${internal}")
endif()

# 1. CMake: find_package(KungFu) with nothing but the installed prefix.
message(STATUS "== find_package(KungFu) consumer")
set(cbuild "${WORK_DIR}/cmake-consumer")
set(gen_args -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND gen_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/install/consumer" -B "${cbuild}" ${gen_args}
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${CC}" "-DCMAKE_CXX_COMPILER=${CXX}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    -DCMAKE_BUILD_TYPE=Release)
message("${run_output}")
run("${CMAKE_COMMAND}" --build "${cbuild}")
foreach(exe consumer_shared consumer_static)
  run("${cbuild}/${exe}")
  message(STATUS "${exe}: ${run_output}")
endforeach()
# The shared consumer must use the installed library, not the build tree's.
if(EXISTS "/usr/bin/ldd")
  execute_process(COMMAND /usr/bin/ldd "${cbuild}/consumer_shared" OUTPUT_VARIABLE ldd)
  if(NOT ldd MATCHES "${libdir}/libkungfu\\.so")
    message(FATAL_ERROR "consumer_shared does not load ${libdir}/libkungfu.so:\n${ldd}")
  endif()
endif()

# 2. pkg-config: cc consumer.c $(pkg-config --cflags --libs kungfu), run with LD_LIBRARY_PATH.
message(STATUS "== pkg-config consumer")
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
unset(ENV{PKG_CONFIG_LIBDIR})
run("${PKG_CONFIG}" --cflags --libs kungfu)
string(STRIP "${run_output}" pc_flags)
message(STATUS "pkg-config --cflags --libs kungfu: ${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(san UNIX_COMMAND "${SAN_FLAGS}")
run("${CC}" -std=c99 -Wall -Wextra -Werror ${san} "${SOURCE_DIR}/tests/install/consumer/consumer.c"
    -o "${WORK_DIR}/consumer_pkgconfig" ${pc_flags})
run("${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${libdir}" "${WORK_DIR}/consumer_pkgconfig")
message(STATUS "consumer_pkgconfig: ${run_output}")
message(STATUS "install test passed")
