#!/usr/bin/env bash
# Installs what is missing, builds libkungfu (build/, warnings as errors) and runs the whole
# test suite. Usage: bash .ci/test.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/deps.sh"
source "$here/common.sh"

kf_build build
kf_test build
