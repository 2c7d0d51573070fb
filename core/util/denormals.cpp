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

unsigned float_mode() {
#if defined(__x86_64__) || defined(__i386__)
    return _mm_getcsr();
#else
    return 0;
#endif
}

void set_float_mode([[maybe_unused]] unsigned mode) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(mode);
#endif
}

ScopedFloatMode::ScopedFloatMode(unsigned mode) : saved_mode_(float_mode()) { set_float_mode(mode); }

ScopedFloatMode::~ScopedFloatMode() { set_float_mode(saved_mode_); }

}  // namespace mirrorlab
