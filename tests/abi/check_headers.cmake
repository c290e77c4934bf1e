# Compiles every public header alone, twice included (include guards), as C99 and as C++11 and
# C++17, with warnings as errors. Fails, naming the header and the language, if one does not
# compile on its own. Run as:
#   cmake -DCC=<c compiler> -DCXX=<c++ compiler> -DINCLUDE_DIR=<include> -DWORK_DIR=<dir>
#         -P check_headers.cmake
cmake_minimum_required(VERSION 3.20)

file(GLOB headers RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/kungfu/*.h")
if(NOT headers)
  message(FATAL_ERROR "no header in ${INCLUDE_DIR}/kungfu")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(strict -Wall -Wextra -Werror -pedantic -pedantic-errors -Wshadow -Wstrict-prototypes
           -Wmissing-prototypes -Wundef)
set(strict_cxx -Wall -Wextra -Werror -pedantic -pedantic-errors -Wshadow -Wundef
               -Wold-style-cast -Wzero-as-null-pointer-constant)
set(failures "")
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER "${header}" id)
  # Twice, to check the include guard; a use of the header so that it is not empty.
  string(CONCAT body "#include \"${header}\"\n#include \"${header}\"\n"
         "int kf_header_check_${id}(void)" [[;]] "\n"
         "int kf_header_check_${id}(void) { return 0" [[;]] " }\n")
  file(WRITE "${WORK_DIR}/${id}.c" "${body}")
  file(WRITE "${WORK_DIR}/${id}.cpp" "${body}")
  foreach(lang c99 c++11 c++17)
    if(lang STREQUAL "c99")
      set(cmd "${CC}" -std=c99 ${strict} -c "${WORK_DIR}/${id}.c")
    else()
      set(cmd "${CXX}" -std=${lang} ${strict_cxx} -c "${WORK_DIR}/${id}.cpp")
    endif()
    list(APPEND cmd -I "${INCLUDE_DIR}" -o "${WORK_DIR}/${id}.${lang}.o")
    execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0)
      message(STATUS "ok    ${header} as ${lang}")
    else()
      message("FAIL  ${header} as ${lang}:\n${out}")
      list(APPEND failures "${header} (${lang})")
    endif()
  endforeach()
endforeach()
if(failures)
  message(FATAL_ERROR "headers that do not compile alone: ${failures}")
endif()
