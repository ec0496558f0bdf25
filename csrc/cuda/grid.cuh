// Grid-stride loops shared by the CUDA launchers: kernels loop
// `for (i = grid_start(); i < work; i += grid_step())` over a grid of
// blocks_for(work) blocks of kThreads threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../core/common.h"
#include "runtime.cuh"

namespace morphaug {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

// The set bits of x (__popc on the device; the emulator's host build counts them too).
__device__ __forceinline__ int bit_count(unsigned x) {
#ifdef __CUDA_ARCH__
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}

// The least (Max: the greatest) of `v` over the 32 lanes of a full warp.
template <bool Max, typename T>
__device__ __forceinline__ T warp_extremum(T v) {
  for (int lanes = 16; lanes >= 1; lanes /= 2) {
    const T other = __shfl_xor_sync(0xffffffffu, v, lanes);
    v = (Max ? other > v : other < v) ? other : v;
  }
  return v;
}

// The voxels before this thread's in its block that hold `flag`, and
// (*total) all of them: a count per warp, the warps' counts in `warps`.
// Every thread of a block of kThreads threads calls it.
__device__ __forceinline__ int32_t block_count_before(bool flag, int32_t* warps, int32_t* total) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned votes = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) warps[warp] = bit_count(votes);
  __syncthreads();
  int32_t before = bit_count(votes & ((1u << lane) - 1u)), all = 0;
  for (unsigned w = 0; w < kThreads / 32; ++w) {
    before += w < warp ? warps[w] : 0;
    all += warps[w];
  }
  __syncthreads();  // warps is free again
  *total = all;
  return before;
}

// The C-order coordinates of voxel p of a slice of shape.size (shape.rank axes;
// fixed_rank), in 32-bit.
template <int kRank, typename Shape>
__device__ __forceinline__ void slice_coordinates(uint32_t p, const Shape& shape, int32_t* coord) {
  for (int k = fixed_rank<kRank>(shape.rank) - 1; k >= 0; --k) {
    const uint32_t n = static_cast<uint32_t>(shape.size[k]);
    const uint32_t outer = p / n;
    coord[k] = static_cast<int32_t>(p - outer * n);
    p = outer;
  }
}

__device__ __forceinline__ int64_t grid_start() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}

__device__ __forceinline__ int64_t grid_step() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

inline int blocks_for(int64_t work) {
  return static_cast<int>(std::max<int64_t>(1, std::min((work + kThreads - 1) / kThreads, kMaxBlocks)));
}

// Lines of `n` voxels `inner` lanes wide (element i of the line at lane l of
// slice o at (o n + i) inner + l), a thread per line: blocks of bx
// neighbouring lanes (so that a warp reads neighbouring elements; 1 where the
// lines are contiguous) by kThreads / bx slices, grid-stride over lanes and
// slices, at most max_threads threads in all.
struct StridedLaunch {
  dim3 grid, block;
  int64_t threads;
};

inline StridedLaunch strided_launch(int64_t inner, int64_t outer, int64_t max_threads) {
  int bx = 1;
  while (bx < kThreads && bx < inner) bx *= 2;
  const int by = kThreads / bx;
  int64_t gx = (inner + bx - 1) / bx;
  int64_t gy = std::min((outer + by - 1) / by, kMaxBlocks);
  gy = std::max<int64_t>(1, std::min(gy, max_threads / (gx * kThreads)));
  gx = std::max<int64_t>(1, std::min(gx, max_threads / kThreads));
  return StridedLaunch{dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(bx, by),
                       gx * gy * kThreads};
}

// A thread of a strided_launch: its first lane and slice, their steps, and
// its slot among the launch's threads (neighbouring lanes, neighbouring slots).
struct StridedThread {
  int64_t lane, slice, lane_step, slice_step, slot;
};

__device__ __forceinline__ StridedThread strided_thread() {
  StridedThread t;
  t.lane = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  t.slice = blockIdx.y * static_cast<int64_t>(blockDim.y) + threadIdx.y;
  t.lane_step = gridDim.x * static_cast<int64_t>(blockDim.x);
  t.slice_step = gridDim.y * static_cast<int64_t>(blockDim.y);
  t.slot = t.slice * t.lane_step + t.lane;
  return t;
}

}  // namespace morphaug
