// CUDA launcher of morphaug::label: block-based union-find (core/label.h).
//
// Every slice is cut into tiles, boxes of at most kTileVoxels voxels (32
// along the last axis, the others doubled in turn), one block each:
//   1. local_kernel: the tile's voxels are joined through the neighbours
//      inside the tile, a union-find in shared memory (atomicMin on shared
//      parents), and each voxel's parent becomes its tile's root;
//   2. merge_kernel: each voxel on a tile's face is joined with its
//      neighbours in other tiles (atomicMin on the parents in global memory);
//   3. flatten_kernel: each voxel points at its root, roots are flagged;
//   4. an inclusive scan of the flags per slice (at::cumsum on the device)
//      numbers each root by the roots up to it in raster order;
//   5. number_kernel: each voxel takes its root's number.
// Roots are the minimum raster index of their component (core/label.h), so
// the numbering is SciPy's. A fixed sequence of launches on the current
// stream: no host sync and no iteration to convergence.
#include <algorithm>
#include <tuple>

#include "../core/label.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kTileVoxels = 1024;

// The tiles of a slice: extents, tiles along each axis, C-order strides within a tile.
struct LabelTiles {
  int64_t extent[kMaxRank], count[kMaxRank], stride[kMaxRank];
  int64_t per_slice;
  int numel;
};

LabelTiles label_tiles(const LabelShape& shape) {
  const int rank = shape.rank;
  LabelTiles t;
  std::fill(t.extent, t.extent + rank, 1);
  t.extent[rank - 1] = std::min<int64_t>(shape.size[rank - 1], rank == 1 ? kTileVoxels : 32);
  int64_t numel = t.extent[rank - 1];
  for (bool grew = true; grew;) {
    grew = false;
    for (int k = rank - 2; k >= 0; --k) {
      const int64_t wider = std::min(2 * t.extent[k], shape.size[k]);
      if (wider == t.extent[k] || numel / t.extent[k] * wider > kTileVoxels) continue;
      numel = numel / t.extent[k] * wider;
      t.extent[k] = wider;
      grew = true;
    }
  }
  t.numel = static_cast<int>(numel);
  t.per_slice = 1;
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; --k) {
    t.count[k] = (shape.size[k] + t.extent[k] - 1) / t.extent[k];
    t.per_slice *= t.count[k];
    t.stride[k] = stride;
    stride *= t.extent[k];
  }
  return t;
}

__device__ __forceinline__ int32_t atomic_lower(int32_t* address, int32_t value) {
  return atomicMin(address, value);
}

__device__ __forceinline__ int64_t atomic_lower(int64_t* address, int64_t value) {
  return static_cast<int64_t>(
      atomicMin(reinterpret_cast<long long*>(address), static_cast<long long>(value)));
}

// One block per tile (grid-stride over every tile of every slice).
template <typename T>
__global__ void local_kernel(const bool* mask, T* parent, LabelShape shape, LabelTiles tiles,
                             const int8_t* delta, int64_t count, int64_t total_tiles) {
  __shared__ int32_t local[kTileVoxels];  // tile-local parents, -1 for background
  const int rank = shape.rank;
  for (int64_t t = blockIdx.x; t < total_tiles; t += gridDim.x) {
    const int64_t slice = t / tiles.per_slice;
    int64_t origin[kMaxRank];
    for (int64_t k = rank - 1, rest = t - slice * tiles.per_slice; k >= 0; --k) {
      origin[k] = rest % tiles.count[k] * tiles.extent[k];
      rest /= tiles.count[k];
    }
    const bool* m = mask + slice * shape.numel;
    T* P = parent + slice * shape.numel;
    // the voxel at tile-local index l: its coordinates in the tile, whether it
    // lies inside the slice, and its index there
    auto voxel = [&](int l, int64_t* within, int64_t& v) {
      v = 0;
      for (int k = 0; k < rank; ++k) {
        within[k] = l / tiles.stride[k] % tiles.extent[k];
        const int64_t c = origin[k] + within[k];
        if (c >= shape.size[k]) return false;
        v += c * shape.stride[k];
      }
      return true;
    };
    int64_t within[kMaxRank], v;
    for (int l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      local[l] = voxel(l, within, v) && m[v] ? l : -1;
    }
    __syncthreads();
    for (int l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      if (local[l] < 0 || !voxel(l, within, v)) continue;
      for (int64_t e = 0; e < count; ++e) {
        const int8_t* step = delta + e * rank;
        int32_t q = l;
        bool inside = true;
        for (int k = 0; k < rank && inside; ++k) {
          const int64_t c = within[k] + step[k];
          inside = c >= 0 && c < tiles.extent[k] && origin[k] + c < shape.size[k];
          q += step[k] * static_cast<int32_t>(tiles.stride[k]);
        }
        if (inside && local[q] >= 0) {
          label_union<false>(local, l, q, [](int32_t* a, int32_t value) { return atomicMin(a, value); });
        }
      }
    }
    __syncthreads();
    for (int l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      if (local[l] < 0) continue;
      voxel(l, within, v);
      int64_t root;
      voxel(label_find<false>(local, l), within, root);
      P[v] = static_cast<T>(root);
    }
    __syncthreads();  // before the next tile's parents replace these
  }
}

// A thread per voxel: the voxels on a tile's face join their neighbours in other tiles.
template <typename T>
__global__ void merge_kernel(const bool* mask, T* parent, LabelShape shape, LabelTiles tiles,
                             const int8_t* delta, const int64_t* linear, int64_t count, int64_t total) {
  const int rank = shape.rank;
  for (int64_t v = grid_start(); v < total; v += grid_step()) {
    if (!mask[v]) continue;
    const int64_t slice = v / shape.numel, i = v - slice * shape.numel;
    int64_t coord[kMaxRank], within[kMaxRank];
    shape.coordinates(i, coord);
    bool face = false;
    for (int k = 0; k < rank; ++k) {
      within[k] = coord[k] % tiles.extent[k];
      face = face || within[k] == 0 || within[k] == tiles.extent[k] - 1;
    }
    if (!face) continue;
    T* P = parent + slice * shape.numel;
    for (int64_t e = 0; e < count; ++e) {
      const int8_t* step = delta + e * rank;
      if (!shape.inside(coord, step, rank)) continue;
      bool crosses = false;
      for (int k = 0; k < rank; ++k) {
        const int64_t c = within[k] + step[k];
        crosses = crosses || c < 0 || c >= tiles.extent[k];
      }
      const int64_t q = i + linear[e];
      if (crosses && mask[v + linear[e]]) {
        label_union<false>(P, static_cast<T>(i), static_cast<T>(q),
                           [](T* a, T value) { return atomic_lower(a, value); });
      }
    }
  }
}

// Each voxel points at its root; roots flagged.
template <typename T>
__global__ void flatten_kernel(const bool* mask, T* parent, bool* root, int64_t numel, int64_t total) {
  for (int64_t v = grid_start(); v < total; v += grid_step()) {
    const int64_t slice = v / numel, i = v - slice * numel;
    if (!mask[v]) {
      root[v] = false;
      continue;
    }
    const T r = label_find<false>(parent + slice * numel, static_cast<T>(i));
    parent[v] = r;
    root[v] = r == i;
  }
}

// Each voxel takes its root's number, background 0.
template <typename T>
__global__ void number_kernel(const bool* mask, T* labels, const T* ranks, int64_t numel, int64_t total) {
  for (int64_t v = grid_start(); v < total; v += grid_step()) {
    labels[v] = mask[v] ? ranks[v - v % numel + labels[v]] : 0;
  }
}

std::tuple<at::Tensor, at::Tensor> label_cuda(const at::Tensor& mask, at::IntArrayRef structure,
                                              at::ScalarType dtype) {
  const cuda::DeviceGuard guard(mask.device());
  const LabelSetup s = label_setup(mask, structure, dtype);
  at::Tensor labels = at::empty(mask.sizes(), mask.options().dtype(dtype));
  at::Tensor counts = at::zeros({mask.size(0), mask.size(1)}, mask.options().dtype(at::kLong));
  const int64_t total = mask.numel();
  if (total == 0) return {labels, counts};
  const at::Tensor m = mask.contiguous();
  const LabelShape& shape = s.shape;
  const LabelTiles tiles = label_tiles(shape);
  const at::Tensor delta = to_device(s.delta, at::kChar, m.device());
  const at::Tensor linear = to_device(s.linear, at::kLong, m.device());
  const cudaStream_t stream = cuda::current_stream();
  const int64_t total_tiles = s.slices * tiles.per_slice;
  const int tile_blocks = static_cast<int>(std::min(total_tiles, kMaxBlocks));
  at::Tensor root = at::empty(mask.sizes(), m.options());
  AT_DISPATCH_INDEX_TYPES(dtype, "label", [&] {
    const bool* mp = m.data_ptr<bool>();
    index_t* parent = labels.data_ptr<index_t>();
    cuda::launch<local_kernel<index_t>>(tile_blocks, kThreads, stream, mp, parent, shape, tiles,
                                        delta.data_ptr<int8_t>(), s.count(), total_tiles);
    cuda::launch<merge_kernel<index_t>>(blocks_for(total), kThreads, stream, mp, parent, shape, tiles,
                                        delta.data_ptr<int8_t>(), linear.data_ptr<int64_t>(), s.count(),
                                        total);
    cuda::launch<flatten_kernel<index_t>>(blocks_for(total), kThreads, stream, mp, parent,
                                          root.data_ptr<bool>(), shape.numel, total);
    const at::Tensor ranks = root.view({s.slices, shape.numel}).cumsum(1, dtype);
    counts.copy_(ranks.select(1, shape.numel - 1).view({mask.size(0), mask.size(1)}));
    cuda::launch<number_kernel<index_t>>(blocks_for(total), kThreads, stream, mp, parent,
                                         ranks.data_ptr<index_t>(), shape.numel, total);
  });
  return {labels, counts};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("label", &label_cuda); }

}  // namespace morphaug
