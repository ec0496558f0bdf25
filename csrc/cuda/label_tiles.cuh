// The union-find of the CUDA labelling (label.cu) and of fill holes /
// propagation by labelling (propagate.cu): Allegretti et al.'s block-based
// union-find (BUF) on tiles of each (b, c) slice (of a value map too: label_values,
// where only neighbours of equal value join).
//
// A slice is cut into tiles, boxes of power-of-two extents and at most
// kTileVoxels voxels (32 along the last axis, the other axes doubled in
// turn), so that a voxel's place in its tile is shifts and masks of its
// tile-local index. The grids run over (tile, slice): blockIdx.y walks the
// slices, blockIdx.x the tiles of one, so all index math inside a slice is
// in the labels' type T (32 bits for int32 labels), with no division per voxel.
//   1. union_tiles_kernel: a union-find in shared memory joins each voxel of
//      a tile with its neighbours in the tile (atomicMin links, path halving),
//      and each voxel's parent becomes its tile root's slice index;
//   2. merge_tiles_kernel: a voxel joins its neighbours in earlier or later
//      tiles, on the parents in global memory (the same union).
// Then every foreground voxel's root is its component's minimum raster index
// (core/label.h). Only the backward half of the element is followed (each
// link once); the element must be centrosymmetric.
#pragma once

#include <algorithm>
#include <vector>

#include "../launch.h"  // core/label.h
#include "grid.cuh"

namespace morphaug {

constexpr int kTileVoxels = 1024;
constexpr int kChunk = kThreads;  // raster chunk of the chunk-wise kernels: a voxel per thread
constexpr int kMaxSliceBlocks = 65535;  // gridDim.y

// The parent of a voxel outside the labelled set.
template <typename T>
constexpr T kNoParent = sizeof(T) == 4 ? static_cast<T>(INT32_MIN) : static_cast<T>(INT64_MIN);

// Which voxels are labelled: the mask (label), the input's background
// (fill_holes), the input and the mask (propagate; no mask: every voxel), or
// the voxels of an integer map not holding its background (label_values;
// without one, every voxel), where only neighbours of equal value join.
enum class Region : int32_t { kInput, kBackground, kInputOrMask, kValues };

struct Voxels {
  const bool* input;
  const bool* mask;  // kInputOrMask only; nullptr: everywhere
  Region kind;
  // kValues only: the map, values of `width` bytes compared as bits, and its background's bits
  const void* values = nullptr;
  int32_t width = 0;
  bool has_background = false;
  uint64_t background = 0;

  __device__ __forceinline__ Voxels slice(int64_t offset) const {
    Voxels s = *this;
    if (kind == Region::kValues) {
      s.values = static_cast<const char*>(values) + offset * width;
    } else {
      s.input = input + offset;
      s.mask = mask == nullptr ? nullptr : mask + offset;
    }
    return s;
  }
  template <typename T>
  __device__ __forceinline__ uint64_t value(T i) const {
    switch (width) {  // uniform across the grid
      case 1: return static_cast<const uint8_t*>(values)[i];
      case 2: return static_cast<const uint16_t*>(values)[i];
      case 4: return static_cast<const uint32_t*>(values)[i];
      default: return static_cast<const uint64_t*>(values)[i];
    }
  }
  template <typename T>
  __device__ __forceinline__ bool operator()(T i) const {
    if (kind == Region::kInput) return input[i];
    if (kind == Region::kBackground) return !input[i];
    if (kind == Region::kValues) return !has_background || value(i) != background;
    return mask == nullptr || input[i] || mask[i];
  }
  // Whether two labelled neighbours i and j join.
  template <typename T>
  __device__ __forceinline__ bool joins(T i, T j) const {
    return kind != Region::kValues || value(i) == value(j);
  }
};

// The element's backward offsets (first nonzero step -1), `rank` steps each
// in delta and their offset in a slice in linear; a slice follows offset e
// when weights is null or weights[slice * weight_stride + column[e]].
struct Links {
  const int8_t* delta;
  const int64_t* linear;
  const bool* weights;
  const int32_t* column;
  int64_t weight_stride;
  int32_t count;

  __device__ __forceinline__ bool active(int64_t slice, int32_t e) const {
    return weights == nullptr || weights[slice * weight_stride + column[e]];
  }
};

// The host side of Links: the backward offsets of `offsets` (rank values
// each; all within -1..1) and the index of each among them. Those that step
// along an axis of one voxel stay: they say which faces lead out (seed_kernel).
struct HostLinks {
  std::vector<int8_t> delta;
  std::vector<int64_t> linear;
  std::vector<int32_t> column;
};

inline HostLinks backward_links(const std::vector<std::vector<int8_t>>& offsets, const LabelShape& shape) {
  HostLinks h;
  const int rank = shape.rank;
  for (size_t e = 0; e < offsets.size(); ++e) {
    const std::vector<int8_t>& step = offsets[e];
    int k = 0;
    while (k < rank && step[k] == 0) ++k;
    if (k == rank || step[k] != -1) continue;  // the centre, or a forward offset
    int64_t linear = 0;
    for (int j = 0; j < rank; ++j) linear += step[j] * shape.stride[j];
    h.delta.insert(h.delta.end(), step.begin(), step.end());
    h.linear.push_back(linear);
    h.column.push_back(static_cast<int32_t>(e));
  }
  return h;
}

// A slice's tiles.
struct Tiles {
  int32_t rank;
  int32_t size[kMaxRank];    // the slice's extent along each axis
  int64_t stride[kMaxRank];  // C-order strides in the slice
  int32_t extent[kMaxRank];  // a tile's extent (a power of two)
  int32_t shift[kMaxRank];   // log2 of the C-order stride in a tile
  int32_t count[kMaxRank];   // tiles along each axis
  int32_t numel;             // voxels of a tile
  int32_t per_slice;         // tiles of a slice
};

inline Tiles make_tiles(const LabelShape& shape) {
  const int rank = shape.rank;
  Tiles t;
  t.rank = rank;
  auto below = [](int64_t extent, int64_t size) { return extent < size; };
  int64_t numel = 1;
  for (int k = 0; k < rank; ++k) {
    TORCH_CHECK(shape.size[k] < (int64_t{1} << 31), "morphaug: the CUDA labelling takes axes of fewer than ",
                "2^31 voxels, got ", shape.size[k]);
    t.size[k] = static_cast<int32_t>(shape.size[k]);
    t.stride[k] = shape.stride[k];
    t.extent[k] = 1;
  }
  const int last = rank - 1;
  const int64_t widest = rank == 1 ? kTileVoxels : 32;
  while (t.extent[last] < widest && below(t.extent[last], shape.size[last])) t.extent[last] *= 2;
  numel = t.extent[last];
  for (bool grew = true; grew;) {
    grew = false;
    for (int k = rank - 2; k >= 0; --k) {
      if (!below(t.extent[k], shape.size[k]) || 2 * numel > kTileVoxels) continue;
      t.extent[k] *= 2;
      numel *= 2;
      grew = true;
    }
  }
  t.numel = static_cast<int32_t>(numel);
  int64_t tiles = 1;
  for (int k = last, shift = 0; k >= 0; --k) {
    t.shift[k] = shift;
    while ((1 << (shift - t.shift[k])) < t.extent[k]) ++shift;
    t.count[k] = static_cast<int32_t>((shape.size[k] + t.extent[k] - 1) / t.extent[k]);
    tiles *= t.count[k];
  }
  TORCH_CHECK(tiles < (int64_t{1} << 31), "morphaug: a slice of ", tiles, " tiles is too many");
  t.per_slice = static_cast<int32_t>(tiles);
  return t;
}

// The tile a block works on: its first voxel's coordinates and slice index.
template <typename T, int kRank>
struct Tile {
  int32_t origin[kMaxRank];
  T first;

  __device__ __forceinline__ Tile(const Tiles& tiles, int32_t index) {
    first = 0;
    for (int k = fixed_rank<kRank>(tiles.rank) - 1; k >= 0; --k) {
      origin[k] = index % tiles.count[k] * tiles.extent[k];
      index /= tiles.count[k];
      first += static_cast<T>(origin[k]) * static_cast<T>(tiles.stride[k]);
    }
  }

  // Tile-local voxel l: its place in the tile, and whether it lies in the slice (then its index v).
  __device__ __forceinline__ bool voxel(const Tiles& tiles, int32_t l, int32_t* within, T& v) const {
    v = first;
    bool inside = true;
    for (int k = 0; k < fixed_rank<kRank>(tiles.rank); ++k) {
      within[k] = (l >> tiles.shift[k]) & (tiles.extent[k] - 1);
      inside = inside && origin[k] + within[k] < tiles.size[k];
      v += static_cast<T>(within[k]) * static_cast<T>(tiles.stride[k]);
    }
    return inside;
  }
};

template <typename T>
__device__ __forceinline__ T atomic_lower(T* address, T value) {
  if constexpr (sizeof(T) == 4) {
    return atomicMin(address, value);
  } else {
    return static_cast<T>(atomicMin(reinterpret_cast<long long*>(address), static_cast<long long>(value)));
  }
}

// The root that voxel `up`'s chain of parents ends at: an entry equal to its
// index, or a negative one (a root that a later step has rewritten already).
template <typename T>
__device__ __forceinline__ T chain_root(const T* parent, T up) {
  for (T next = parent[up]; next >= 0 && next != up; next = parent[up]) up = next;
  return up;
}

// Step 1: a block per (tile, slice); parents of voxels outside the region: kNoParent.
template <typename T, int kRank>
__global__ void union_tiles_kernel(Voxels voxels, T* parent, Tiles tiles, Links links, int64_t slices) {
  __shared__ int32_t local[kTileVoxels];  // tile-local parents, -1 outside the region
  const int rank = fixed_rank<kRank>(tiles.rank);
  const T numel = static_cast<T>(tiles.stride[0]) * static_cast<T>(tiles.size[0]);
  const Tile<T, kRank> tile(tiles, static_cast<int32_t>(blockIdx.x));
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const Voxels in = voxels.slice(slice * numel);
    T* P = parent + slice * numel;
    int32_t within[kMaxRank];
    T v;
    for (int32_t l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      local[l] = tile.voxel(tiles, l, within, v) && in(v) ? l : -1;
    }
    __syncthreads();
    for (int32_t l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      if (local[l] < 0) continue;
      tile.voxel(tiles, l, within, v);
      for (int32_t e = 0; e < links.count; ++e) {
        if (!links.active(slice, e)) continue;
        const int8_t* step = links.delta + e * rank;
        int32_t q = l;
        bool inside = true;
        for (int k = 0; k < rank && inside; ++k) {
          const int32_t c = within[k] + step[k];
          inside = c >= 0 && c < tiles.extent[k] && tile.origin[k] + c < tiles.size[k];
          q += step[k] * (1 << tiles.shift[k]);
        }
        if (inside && local[q] >= 0 && in.joins(v, v + static_cast<T>(links.linear[e]))) {
          label_union<true>(local, l, q, [](int32_t* a, int32_t value) { return atomicMin(a, value); });
        }
      }
    }
    __syncthreads();
    for (int32_t l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      if (!tile.voxel(tiles, l, within, v)) continue;
      T root = kNoParent<T>;
      if (local[l] >= 0) tile.voxel(tiles, label_find<true>(local, l), within, root);
      P[v] = root;
    }
    __syncthreads();  // before the next slice's parents replace these
  }
}

// Step 2: a block per (tile, slice); each voxel joins its neighbours in other tiles.
template <typename T, int kRank>
__global__ void merge_tiles_kernel(Voxels voxels, T* parent, Tiles tiles, Links links, int64_t slices) {
  const int rank = fixed_rank<kRank>(tiles.rank);
  const T numel = static_cast<T>(tiles.stride[0]) * static_cast<T>(tiles.size[0]);
  const Tile<T, kRank> tile(tiles, static_cast<int32_t>(blockIdx.x));
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const Voxels in = voxels.slice(slice * numel);
    T* P = parent + slice * numel;
    for (int32_t l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      int32_t within[kMaxRank];
      T v;
      if (!tile.voxel(tiles, l, within, v)) continue;
      bool face = false;  // links leave the tile from its faces only
      for (int k = 0; k < rank; ++k) face = face || within[k] == 0 || within[k] == tiles.extent[k] - 1;
      if (!face || !in(v)) continue;
      for (int32_t e = 0; e < links.count; ++e) {
        const int8_t* step = links.delta + e * rank;
        bool crosses = false, inside = true;
        for (int k = 0; k < rank; ++k) {
          const int32_t c = within[k] + step[k], g = tile.origin[k] + c;
          crosses = crosses || c < 0 || c >= tiles.extent[k];
          inside = inside && g >= 0 && g < tiles.size[k];
        }
        if (!crosses || !inside || !links.active(slice, e)) continue;
        const T q = v + static_cast<T>(links.linear[e]);
        if (in(q) && in.joins(v, q)) label_union<true>(P, v, q, [](T* a, T value) { return atomic_lower(a, value); });
      }
    }
  }
}

// The grid of the tile kernels, and of the chunk-wise kernels (a block per
// kChunk voxels of a slice in raster order).
inline dim3 tile_grid(const Tiles& tiles, int64_t slices) {
  return dim3(static_cast<unsigned>(tiles.per_slice),
              static_cast<unsigned>(std::min<int64_t>(slices, kMaxSliceBlocks)));
}

inline dim3 chunk_grid(int64_t chunks, int64_t slices) {
  TORCH_CHECK(chunks < (int64_t{1} << 31), "morphaug: a slice of ", chunks, " chunks is too many");
  return dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(std::min<int64_t>(slices, kMaxSliceBlocks)));
}

// Links on the device (columns only with weights): the arrays live as long as this.
struct DeviceLinks {
  at::Tensor delta, linear, column;
  Links links;

  DeviceLinks(const HostLinks& h, const bool* weights, int64_t weight_stride, at::Device device)
      : delta(to_device(h.delta, at::kChar, device)),
        linear(to_device(h.linear, at::kLong, device)),
        column(weights == nullptr ? at::Tensor() : to_device(h.column, at::kInt, device)),
        links{delta.data_ptr<int8_t>(), linear.data_ptr<int64_t>(), weights,
              weights == nullptr ? nullptr : column.data_ptr<int32_t>(), weight_stride,
              static_cast<int32_t>(h.linear.size())} {}
};

// The voxels of every slice labelled: parent holds, for each voxel of the
// region, a voxel of its component (its root: the component's minimum
// index, or one whose chain of parents leads there); kNoParent elsewhere.
template <typename T>
void union_tiles(const Voxels& voxels, T* parent, const Tiles& tiles, const Links& links, int64_t slices,
                 cudaStream_t stream) {
  const dim3 grid = tile_grid(tiles, slices);
  with_fixed_rank(tiles.rank, [&](auto rank) {
    constexpr int kRank = decltype(rank)::value;
    cuda::launch<union_tiles_kernel<T, kRank>>(grid, kThreads, stream, voxels, parent, tiles, links, slices);
    if (tiles.per_slice > 1) {
      cuda::launch<merge_tiles_kernel<T, kRank>>(grid, kThreads, stream, voxels, parent, tiles, links, slices);
    }
  });
}

}  // namespace morphaug
