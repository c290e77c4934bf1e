# Shared by the .ci scripts (sourced): configure and build one build directory.
#   kf_build <build-dir> [extra cmake args...]
KF_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KF_JOBS="$(nproc 2>/dev/null || echo 2)"

kf_build() {
  local dir="$1"
  shift
  local launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$KF_ROOT" -B "$KF_ROOT/$dir" -G Ninja -DKF_WERROR=ON "${launcher[@]}" "$@"
  cmake --build "$KF_ROOT/$dir" -j "$KF_JOBS"
}

# Runs the whole ctest suite of a build directory, one test at a time: the multi-process
# tests start several ranks each and have timeouts, so they must not compete for the cores.
kf_test() {
  local dir="$1"
  shift
  (cd "$KF_ROOT/$dir" && ctest --output-on-failure "$@")
}
