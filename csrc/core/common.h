// Shared by every core header: the host/device qualifier and the line geometry.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MORPHAUG_HD __host__ __device__ __forceinline__
#else
#define MORPHAUG_HD inline
#endif

namespace morphaug {

// Most spatial axes a native op accepts (the CUDA kernels take shapes by value).
constexpr int kMaxRank = 16;

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
