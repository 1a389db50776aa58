#pragma once
// <immintrin.h> for the run-time dispatched x86 code (engine kernels, the converter's codec);
// include it only where the target is x86. GCC 12's AVX-512 intrinsics pass
// _mm*_undefined_*() (self-initialised "__Y = __Y") as the don't-care source operand, which
// -Wuninitialized / -Wmaybe-uninitialized report inside the header (GCC PR 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
