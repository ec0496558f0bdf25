// Connected-component labelling (SciPy's label): union-find over the voxels
// of one slice, shared by the CPU scan and the CUDA tiles (cuda/label_tiles.cuh).
//
// parent[v] holds a voxel of v's component with an index no larger than v's
// (slice-local raster indices, C order); a root is its own parent. Unions
// only ever lower a root's parent, and always link the larger root under
// the smaller, so once every edge is merged each component has one root:
// its minimum raster index, the voxel SciPy numbers the component by.
#pragma once

#include "common.h"

namespace morphaug {

// The root of x; with Compress, path halving on the way. The halving stores
// a grandparent: still an ancestor of no larger index, so concurrent finds
// and unions (label_union) may run at once; a store that overwrites a lower
// parent only loses a shortcut, never a merge (label_union retries).
template <bool Compress, typename T>
MORPHAUG_HD T label_find(T* parent, T x) {
  T up = parent[x];
  while (up != x) {
    if constexpr (Compress) {
      const T above = parent[up];
      parent[x] = above;
      x = above;
    } else {
      x = up;
    }
    up = parent[x];
  }
  return x;
}

// Merges the components of a and b. `lower(address, value)` stores
// min(*address, value) and returns the old value: atomicMin on CUDA, a plain
// read-modify-write on the CPU. When another thread has linked the larger
// root meanwhile, the store still lowered its parent (an ancestor-or-merged
// voxel), and the merge retries from the root's old parent.
#ifdef __CUDACC__
#pragma nv_exec_check_disable  // `lower` is atomicMin on the device: instantiated there only
#endif
template <bool Compress, typename T, typename Lower>
MORPHAUG_HD void label_union(T* parent, T a, T b, Lower&& lower) {
  for (;;) {
    a = label_find<Compress>(parent, a);
    b = label_find<Compress>(parent, b);
    if (a == b) return;
    if (b < a) {
      const T t = a;
      a = b;
      b = t;
    }
    const T old = lower(&parent[b], a);
    if (old == b) return;  // b was still a root: now under a
    b = old;
  }
}

// Slice geometry: sizes and strides of the spatial axes.
struct LabelShape {
  int rank;
  int64_t size[kMaxRank], stride[kMaxRank];
  int64_t numel;  // voxels in a slice

  // coord[k] of slice-local voxel v.
  MORPHAUG_HD void coordinates(int64_t v, int64_t* coord) const {
    for (int k = rank - 1; k >= 0; --k) {
      coord[k] = v % size[k];
      v /= size[k];
    }
  }

  // Whether coord + delta lies inside the slice on the first `axes` axes.
  MORPHAUG_HD bool inside(const int64_t* coord, const int8_t* delta, int axes) const {
    for (int k = 0; k < axes; ++k) {
      const int64_t c = coord[k] + delta[k];
      if (c < 0 || c >= size[k]) return false;
    }
    return true;
  }
};

}  // namespace morphaug
