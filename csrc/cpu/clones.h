// CPU hot loops compiled twice, for AVX2 and for the baseline, the better one
// picked at load time (GCC / Clang function multi-versioning on x86-64 Linux).
// Their helpers and lambdas take MORPHAUG_CLONE_INLINE (after a lambda's
// parameters): out of line they would be compiled for the baseline only.
#pragma once

#if defined(__x86_64__) && defined(__linux__) && !defined(__CUDACC__) && \
    (defined(__GNUC__) || defined(__clang__))
#define MORPHAUG_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#define MORPHAUG_CLONE_INLINE __attribute__((always_inline))
#else
#define MORPHAUG_CPU_CLONES
#define MORPHAUG_CLONE_INLINE
#endif

// GCC's unroll-and-jam (-O3) would pair the sources of a chunked extremum
// (structure_chunk in grey_structure.cpp) in a scalar loop instead of
// vectorising over positions, many times slower.
#if defined(__GNUC__) && !defined(__clang__)
#define MORPHAUG_NO_JAM __attribute__((optimize("no-loop-unroll-and-jam")))
#else
#define MORPHAUG_NO_JAM
#endif
