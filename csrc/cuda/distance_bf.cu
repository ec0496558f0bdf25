// CUDA launcher of morphaug::distance_bf (core/distance_bf.h): a block per
// kThreads voxels of a slice in raster order (blockIdx.y over the slices), in
// three launches and a cumsum, with no host read:
//   1. tally_kernel: each chunk's candidates, summed along each slice by a
//      cumsum (so the last sum of a slice is its number of candidates);
//   2. list_kernel: each candidate's flat index at its rank in its slice's
//      list (raster order), an int32 per voxel;
//   3. bf_kernel: a block that holds foreground stages its slice's list
//      kThreads candidates at a time, as coordinates in shared memory, and
//      each foreground thread keeps the last of its least keys (the largest
//      flat index among equals, SciPy's).
// Index math is 32-bit within a slice; 1 to 3 axes compiled for their rank.
#include <ATen/ops/cumsum.h>

#include <algorithm>
#include <tuple>

#include "../distance_bf_setup.h"
#include "grid.cuh"

namespace morphaug {
namespace {

// Whether voxel p of slice `v` (numel voxels) is a candidate.
template <int kRank>
__device__ __forceinline__ bool listed(const bool* v, int32_t p, int32_t numel, const BfGeometry& g) {
  if (p >= numel) return false;
  int32_t coord[kBfMaxRank];
  slice_coordinates<kRank>(static_cast<uint32_t>(p), g, coord);
  return bf_candidate<kRank>(v, p, coord, g);
}

// Step 1: tallies[slice][chunk] = the chunk's candidates.
template <int kRank>
__global__ void tally_kernel(const bool* mask, int32_t numel, int64_t slices, BfGeometry g, int32_t* tallies) {
  __shared__ int32_t warps[kThreads / 32];
  const int32_t p = static_cast<int32_t>(blockIdx.x) * kThreads + static_cast<int32_t>(threadIdx.x);
  for (int64_t s = blockIdx.y; s < slices; s += gridDim.y) {
    int32_t total = 0;
    block_count_before(listed<kRank>(mask + s * numel, p, numel, g), warps, &total);
    if (threadIdx.x == 0) tallies[s * gridDim.x + blockIdx.x] = total;
  }
}

// Step 2: list[slice][rank] = the flat index of the slice's candidate of that
// rank. `ends`: the tallies' cumsum along each slice.
template <int kRank>
__global__ void list_kernel(const bool* mask, int32_t numel, int64_t slices, BfGeometry g, const int32_t* ends,
                            int32_t* list) {
  __shared__ int32_t warps[kThreads / 32];
  const int32_t p = static_cast<int32_t>(blockIdx.x) * kThreads + static_cast<int32_t>(threadIdx.x);
  for (int64_t s = blockIdx.y; s < slices; s += gridDim.y) {
    const bool flag = listed<kRank>(mask + s * numel, p, numel, g);
    int32_t total = 0;
    const int32_t before = block_count_before(flag, warps, &total);
    const int32_t start = blockIdx.x == 0 ? 0 : ends[s * gridDim.x + blockIdx.x - 1];
    if (flag) list[s * numel + start + before] = p;
  }
}

// Step 3: the distances (and, where `index` is not null, the (S, B, C,
// *spatial) indices) of every voxel.
template <int kRank, int kMetric, typename T>
__global__ void bf_kernel(const bool* mask, int32_t numel, int64_t slices, BfGeometry g, const int32_t* ends,
                          const int32_t* list, T* dist, int32_t* index) {
  __shared__ int32_t warps[kThreads / 32];
  __shared__ int32_t staged[kBfMaxRank][kThreads];  // the staged candidates' coordinates, axis by axis
  const int rank = fixed_rank<kRank>(g.rank);
  const int32_t p = static_cast<int32_t>(blockIdx.x) * kThreads + static_cast<int32_t>(threadIdx.x);
  const int64_t planes = slices * numel;
  for (int64_t s = blockIdx.y; s < slices; s += gridDim.y) {
    const bool inside = p < numel;
    const bool foreground = inside && mask[s * numel + p];
    int32_t coord[kBfMaxRank] = {};
    if (inside) slice_coordinates<kRank>(static_cast<uint32_t>(p), g, coord);
    const int32_t* candidates = list + s * numel;
    const int32_t count = ends[s * gridDim.x + gridDim.x - 1];
    int32_t busy = 0;
    block_count_before(foreground, warps, &busy);
    BfKey<kMetric> best = bf_unreached_key<kMetric>();
    int32_t arg = -1;
    for (int32_t first = 0; busy > 0 && first < count; first += kThreads) {  // the same for the whole block
      const int32_t j = first + static_cast<int32_t>(threadIdx.x);
      if (j < count) {
        int32_t c[kBfMaxRank];
        slice_coordinates<kRank>(static_cast<uint32_t>(candidates[j]), g, c);
        for (int k = 0; k < rank; ++k) staged[k][threadIdx.x] = c[k];
      }
      __syncthreads();
      if (foreground) {
        const int32_t n = count - first < kThreads ? count - first : kThreads;
        for (int32_t i = 0; i < n; ++i) {
          int32_t c[kBfMaxRank];
          for (int k = 0; k < rank; ++k) c[k] = staged[k][i];
          const BfKey<kMetric> key = bf_key<kRank, kMetric>(coord, c, g);
          if (key <= best) {
            best = key;
            arg = first + i;
          }
        }
      }
      __syncthreads();
    }
    if (!inside) continue;
    const int64_t at = s * numel + p;
    dist[at] = bf_distance<kMetric, T>(foreground ? best : BfKey<kMetric>(0), foreground && arg < 0);
    if (index == nullptr) continue;
    int32_t c[kBfMaxRank] = {};
    if (!foreground) {
      for (int k = 0; k < rank; ++k) c[k] = coord[k];
    } else if (arg >= 0) {
      slice_coordinates<kRank>(static_cast<uint32_t>(candidates[arg]), g, c);
    }
    for (int k = 0; k < rank; ++k) index[k * planes + at] = c[k];
  }
}

std::tuple<at::Tensor, at::Tensor> distance_bf_cuda(const at::Tensor& mask, int64_t metric,
                                                    std::optional<at::ArrayRef<double>> sampling,
                                                    bool return_indices, at::ScalarType dtype) {
  const cuda::DeviceGuard guard(mask.device());
  const BfSetup setup = bf_setup(mask, metric, sampling, return_indices, dtype);
  if (mask.numel() == 0) return {setup.distances, setup.indices};
  const int32_t numel = static_cast<int32_t>(setup.slice);
  const int64_t chunks = (setup.slice + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(std::min<int64_t>(setup.slices, kMaxBlocks)));
  const cudaStream_t stream = cuda::current_stream();
  const bool* v = setup.mask.data_ptr<bool>();
  const at::TensorOptions ints = mask.options().dtype(at::kInt);
  at::Tensor tallies = at::empty({setup.slices, chunks}, ints);
  at::Tensor list = at::empty({setup.slices, setup.slice}, ints);
  int32_t* index = return_indices ? setup.indices.data_ptr<int32_t>() : nullptr;
  with_fixed_rank(setup.geometry.rank, [&](auto rank) {
    constexpr int kRank = decltype(rank)::value;
    cuda::launch<tally_kernel<kRank>>(grid, kThreads, stream, v, numel, setup.slices, setup.geometry,
                                      tallies.data_ptr<int32_t>());
    const at::Tensor ends = at::cumsum(tallies, 1, at::kInt);
    const int32_t* E = ends.data_ptr<int32_t>();
    cuda::launch<list_kernel<kRank>>(grid, kThreads, stream, v, numel, setup.slices, setup.geometry, E,
                                     list.data_ptr<int32_t>());
    dispatch_bf(setup, [&](auto which, auto type) {
      using T = decltype(type);
      cuda::launch<bf_kernel<kRank, decltype(which)::value, T>>(grid, kThreads, stream, v, numel, setup.slices,
                                                                setup.geometry, E, list.data_ptr<int32_t>(),
                                                                setup.distances.data_ptr<T>(), index);
    });
  });
  return {setup.distances, setup.indices};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("distance_bf", &distance_bf_cuda); }

}  // namespace morphaug
