// cpu_relax(): the pause hint for a spin-wait iteration (x86 PAUSE), so a
// spinning thread yields its core's pipeline to the sibling hyper-thread
// and leaves the loop without a memory-order mis-speculation; a no-op
// elsewhere.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kf {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace kf
