// Shared by every core header: the host/device qualifier and the line geometry.
#pragma once

#include <cstdint>
#include <type_traits>

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
// (kRank = 0): `rank`, read at run time. Launchers pick kRank with
// with_fixed_rank.
template <int kRank>
MORPHAUG_HD int fixed_rank(int rank) {
  return kRank > 0 ? kRank : rank;
}

// f(std::integral_constant<int, R>{}): R = rank for 1 to 3 spatial axes, else 0
// (the rank read at run time; fixed_rank).
template <typename F>
void with_fixed_rank(int rank, const F& f) {
  switch (rank) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, 0>{}); break;
  }
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
