#include "core/util/denormals.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mirrorlab {

void enable_flush_denormals() {
#if defined(__x86_64__) || defined(__i386__)
    // FTZ (bit 15) and DAZ (bit 6) of MXCSR.
    _mm_setcsr(_mm_getcsr() | 0x8040u);
#endif
}

ScopedFlushDenormals::ScopedFlushDenormals() {
#if defined(__x86_64__) || defined(__i386__)
    saved_mode_ = _mm_getcsr();
    enable_flush_denormals();
#endif
}

ScopedFlushDenormals::~ScopedFlushDenormals() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(saved_mode_);
#endif
}

}  // namespace mirrorlab
