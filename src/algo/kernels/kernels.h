// The reduction kernels behind reduce_to / reduce_into / finish_average
// (algo/reduce_kernels.h), one table of function pointers per instruction
// set, and the run-time choice between them.
//
// Every table gives bit-identical results (the semantics are those of
// kernels/scalar.h); they differ only in speed. The table in use is chosen
// once, at the first reduction, from the CPU's features and the KF_KERNEL_ISA
// knob; tests and benchmarks may switch it with kernels_force_isa() or call a
// given table directly.
#pragma once

#include <cstddef>

#include "kungfu/types.h"

namespace kf {

// out[i] = a[i] op b[i]; any of the pointers may be equal, none may partly
// overlap another. count > 0.
using CombineFn = void (*)(void* out, const void* a, const void* b, size_t count);
// buf[i] /= nranks (the last step of KF_AVG). count > 0, nranks > 1.
using DivideFn = void (*)(void* buf, size_t count, int nranks);

enum class KernelIsa {
  kBaseline = 0,  // Plain loops the compiler vectorizes for the build target (SSE2 on x86-64).
  kAvx2 = 1,      // AVX2 + F16C intrinsics (x86-64 only); needs those CPU features at run time.
  kCount = 2
};

struct KernelTable {
  KernelIsa isa;
  CombineFn combine[KF_DTYPE_COUNT][KF_OP_COUNT];  // KF_AVG entries are the sum.
  DivideFn divide[KF_DTYPE_COUNT];
};

// "baseline" or "avx2".
const char* kernel_isa_name(KernelIsa isa);

// Whether the table is compiled into this build and the CPU can run it.
bool kernel_isa_supported(KernelIsa isa);

// The table of an ISA. Precondition: kernel_isa_supported(isa).
const KernelTable& kernel_table(KernelIsa isa);

// The table reduce_to() and friends use now. Thread-safe; the first call
// makes the choice (the best supported ISA, unless KF_KERNEL_ISA says
// otherwise).
const KernelTable& active_kernels();

// Switches the table reduce_to() and friends use, for tests and benchmarks:
// "auto" (the best the CPU supports), "baseline" or "avx2". Returns false, and
// changes nothing, for an unknown name or an ISA this build or CPU lacks.
// Thread-safe; a reduction already running finishes with the old table.
bool kernels_force_isa(const char* name);

namespace kernels {
// Provided by kernels/baseline.cc and kernels/avx2.cc.
const KernelTable& baseline_table();
// nullptr when the build has no AVX2 kernels (not x86-64). Does not check the CPU.
const KernelTable* avx2_table();
}  // namespace kernels

}  // namespace kf
