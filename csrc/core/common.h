// Shared by every core header: the host/device qualifier and the line geometry.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MORPHAUG_HD __host__ __device__ __forceinline__
#else
#define MORPHAUG_HD inline
#endif

namespace morphaug {

// Double arithmetic rounded once per operation, as the host compilers build it
// (and SciPy): nvcc contracts a * b + c into one fused multiply-add, rounded
// once, unless each operation is an explicit round-to-nearest intrinsic, which
// it never fuses. The kernels documented as SciPy's bit for bit (the EDT with
// sampling) use these; tests/test_ptx.py checks their PTX holds no fma.
MORPHAUG_HD double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

MORPHAUG_HD double sub_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

MORPHAUG_HD double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Most spatial axes a native op accepts (the CUDA kernels take shapes by value).
constexpr int kMaxRank = 16;

// The spatial rank of a function compiled for kRank axes (1 to 3: loops the
// compiler unrolls, their per-axis arrays in registers), or for any
// (kRank = 0): `rank`, read at run time. CUDA launchers pick kRank with
// with_fixed_rank (cuda/grid.cuh).
template <int kRank>
MORPHAUG_HD int fixed_rank(int rank) {
  return kRank > 0 ? kRank : rank;
}

// A spatial axis of a contiguous (B, C, *spatial) tensor seen as lines:
// element i of line `line` sits at offset(line) + i * stride.
struct Lines {
  int64_t count;   // B * C * product of the other spatial sizes
  int64_t length;  // size of the axis
  int64_t stride;  // product of the sizes after the axis

  MORPHAUG_HD int64_t offset(int64_t line) const {
    const int64_t outer = line / stride;
    return outer * length * stride + (line - outer * stride);
  }
};

// Spatial sizes and per-axis sampling, passed by value to kernels.
struct Geometry {
  int rank;
  int64_t size[kMaxRank];
  double sampling[kMaxRank];
};

}  // namespace morphaug
