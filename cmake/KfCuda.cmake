# Optional CUDA (KF_WITH_CUDA = AUTO, ON or OFF): sets KF_HAVE_CUDA and enables the
# CUDA language when a compiler is found. Nothing in libkungfu depends on it; only
# cuda/ is built with it.
set(KF_HAVE_CUDA OFF)
if(KF_ASAN OR KF_TSAN)
  # nvcc does not take -fsanitize; the sanitizer builds check the CPU code.
  if(KF_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KF_WITH_CUDA=ON cannot be combined with KF_ASAN or KF_TSAN")
  endif()
  message(STATUS "CUDA is not built in sanitizer builds")
elseif(NOT KF_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # One real architecture plus its PTX, which the driver compiles for newer
    # GPUs; sm_75 is the oldest CUDA 13 supports. Override with
    # -DCMAKE_CUDA_ARCHITECTURES=...
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 75)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(KF_HAVE_CUDA ON)
    message(STATUS "CUDA ${CUDAToolkit_VERSION}: building cuda/ (architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(KF_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KF_WITH_CUDA=ON but no CUDA compiler was found (set CUDACXX or CMAKE_CUDA_COMPILER)")
  else()
    message(STATUS "CUDA not found: cuda/ is not built")
  endif()
endif()
