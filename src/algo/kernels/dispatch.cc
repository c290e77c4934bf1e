// The run-time choice of kernel table: the best ISA the CPU supports, unless
// KF_KERNEL_ISA (read once, at the first reduction) or kernels_force_isa()
// says otherwise. The choice is one atomic pointer, so a reduction costs one
// relaxed load and an indirect call more than a direct call.
#include <atomic>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "algo/kernels/kernels.h"
#include "base/config.h"
#include "base/log.h"

namespace kf {
namespace {

// AVX2 (with the OS saving YMM state, which __builtin_cpu_supports checks)
// and F16C. Clang has no "f16c" for __builtin_cpu_supports, so F16C comes
// from CPUID leaf 1 directly (ECX bit 29).
bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_F16C) != 0;
#else
  return false;
#endif
}

KernelIsa best_isa() {
  return kernel_isa_supported(KernelIsa::kAvx2) ? KernelIsa::kAvx2 : KernelIsa::kBaseline;
}

// Parses "auto", "baseline" or "avx2" into a supported ISA; false otherwise.
bool parse_isa(const char* name, KernelIsa* isa, std::string* why) {
  if (std::strcmp(name, "auto") == 0) {
    *isa = best_isa();
    return true;
  }
  for (int i = 0; i < static_cast<int>(KernelIsa::kCount); ++i) {
    const KernelIsa candidate = static_cast<KernelIsa>(i);
    if (std::strcmp(name, kernel_isa_name(candidate)) != 0) continue;
    if (!kernel_isa_supported(candidate)) {
      *why = "this CPU or build does not support it";
      return false;
    }
    *isa = candidate;
    return true;
  }
  *why = "it is not auto, baseline or avx2";
  return false;
}

const KernelTable* initial_table() {
  KernelIsa isa = best_isa();
  if (knob_is_set(Knob::KF_KERNEL_ISA)) {
    const std::string value = knob_string(Knob::KF_KERNEL_ISA);
    std::string why;
    if (!parse_isa(value.c_str(), &isa, &why)) {
      isa = best_isa();
      KF_LOG_WARN("KF_KERNEL_ISA=" + value + " ignored: " + why + "; using " +
                  kernel_isa_name(isa));
    }
  }
  KF_LOG_DEBUG(std::string("reduction kernels: ") + kernel_isa_name(isa));
  return &kernel_table(isa);
}

std::atomic<const KernelTable*> g_active{nullptr};

}  // namespace

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kBaseline:
      return "baseline";
    case KernelIsa::kAvx2:
      return "avx2";
    case KernelIsa::kCount:
      break;
  }
  return "?";
}

bool kernel_isa_supported(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kBaseline:
      return true;
    case KernelIsa::kAvx2: {
      static const bool ok = kernels::avx2_table() != nullptr && cpu_has_avx2();
      return ok;
    }
    case KernelIsa::kCount:
      break;
  }
  return false;
}

const KernelTable& kernel_table(KernelIsa isa) {
  if (isa == KernelIsa::kAvx2 && kernel_isa_supported(isa)) return *kernels::avx2_table();
  return kernels::baseline_table();
}

const KernelTable& active_kernels() {
  const KernelTable* t = g_active.load(std::memory_order_acquire);
  if (t != nullptr) return *t;
  // Racing first calls compute the same answer; the first store wins.
  const KernelTable* fresh = initial_table();
  const KernelTable* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel))
    return *expected;
  return *fresh;
}

bool kernels_force_isa(const char* name) {
  KernelIsa isa;
  std::string why;
  if (name == nullptr || !parse_isa(name, &isa, &why)) return false;
  g_active.store(&kernel_table(isa), std::memory_order_release);
  return true;
}

}  // namespace kf
