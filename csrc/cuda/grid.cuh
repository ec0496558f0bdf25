// Grid-stride loops shared by the CUDA launchers: kernels loop
// `for (i = grid_start(); i < work; i += grid_step())` over a grid of
// blocks_for(work) blocks of kThreads threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime.cuh"

namespace morphaug {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

__device__ __forceinline__ int64_t grid_start() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}

__device__ __forceinline__ int64_t grid_step() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

inline int blocks_for(int64_t work) {
  return static_cast<int>(std::max<int64_t>(1, std::min((work + kThreads - 1) / kThreads, kMaxBlocks)));
}

}  // namespace morphaug
