// scikit-image's find_boundaries (modes thick, inner, outer), shared by CPU
// and CUDA: SciPy's arithmetic, and the decision of one voxel (CUDA's).
//
// skimage compares dilation(x) with erosion(x) by the connectivity's element:
// SciPy's grey filters with the "reflect" border, which only repeats voxels of
// the 3-voxel window, so only the neighbours inside the slice count. SciPy
// stores 64-bit integers through float64 (boundary_stored): with the full box
// (connectivity = S) it runs one 3-voxel pass per axis, axis 0 first, each
// stored so; with a smaller element one pass, stored once. Per voxel p, with
// D_c / E_c those maxima / minima over the neighbourhood N_c(p):
//
//   thick(p)  D_c(x)(p) != E_c(x)(p)
//   inner(p)  thick(p) and x(p) != background
//   outer(p)  thick(p) and (x(p) == background or D_S(x)(p) != E_S(raised)(p)),
//             raised: x with the background at the dtype's largest value
//             (skimage's marker)
//
// Where boundary_stored keeps every value of N_c(p) (always below 64 bits),
// thick(p) is whether a neighbour differs from x(p).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"

namespace morphaug {

enum BoundaryMode : int { kBoundaryThick = 0, kBoundaryInner = 1, kBoundaryOuter = 2 };

// Most spatial axes of the kernel (3^S neighbours per voxel).
constexpr int kBoundaryMaxRank = 8;

// A value as SciPy's grey filters store it: int64 rounds to a double, and one
// reaching 2^63 comes back as the smallest int64; uint64's largest value comes
// back as 0 (its other values are kept: labels never get beyond 2^53 there).
template <typename T>
MORPHAUG_HD T boundary_stored(T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    const double wide = static_cast<double>(v);
    return wide >= 0x1p63 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(wide);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return v == std::numeric_limits<uint64_t>::max() ? T(0) : v;
  } else {
    return v;
  }
}

// Whether boundary_stored keeps v (and every value between such values).
template <typename T>
MORPHAUG_HD bool boundary_kept(T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return v >= -(int64_t{1} << 53) && v <= (int64_t{1} << 53);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return v != std::numeric_limits<uint64_t>::max();
  } else {
    return true;
  }
}

// One slice's shape for boundary_voxel: sizes and strides per spatial axis.
struct BoundaryGeometry {
  int rank, connectivity, mode;
  int32_t size[kBoundaryMaxRank], stride[kBoundaryMaxRank];
};

// The functions below take kRank (common.h's fixed_rank): 1 to 3, or 0.
//
// The neighbours of voxel i (coordinates coord) inside its slice v, each
// within `connectivity` orthogonal hops, as f(offset, digits) in the order of
// SciPy's passes (axis 0 fastest); digits[k] in {0, 1, 2} (the step along
// axis k plus 1); f(offset, digits, inside) sees every one of the 3^S steps.
template <int kRank, typename F>
MORPHAUG_HD void each_step(const BoundaryGeometry& g, const int32_t* coord, int connectivity, const F& f) {
  const int rank = fixed_rank<kRank>(g.rank);
  int steps = 1;
  for (int k = 0; k < rank; ++k) steps *= 3;
  for (int s = 0; s < steps; ++s) {
    int digits[kBoundaryMaxRank];
    int rest = s, hops = 0;
    int32_t offset = 0;
    bool inside = true;
    for (int k = 0; k < rank; ++k) {
      const int digit = rest % 3;
      rest /= 3;
      digits[k] = digit;
      const int32_t step = digit - 1;
      hops += step != 0;
      offset += step * g.stride[k];
      const int32_t at = coord[k] + step;
      inside = inside && at >= 0 && at < g.size[k];
    }
    f(offset, digits, inside && hops <= connectivity);
  }
}

// D (Max) or E of voxel i by the neighbourhood of `connectivity` hops, of the
// values load(v[j]): stored once at the end, or (nested: the full box) after
// each axis's pass, as SciPy runs them.
template <bool Max, int kRank, typename T, typename Load>
MORPHAUG_HD T boundary_extreme(const T* v, int32_t i, const int32_t* coord, const BoundaryGeometry& g,
                               int connectivity, bool nested, const Load& load) {
  const int rank = fixed_rank<kRank>(g.rank);
  T level[kBoundaryMaxRank];
  bool any[kBoundaryMaxRank];
  for (int k = 0; k < rank; ++k) any[k] = false;
  T result = T(0);
  each_step<kRank>(g, coord, connectivity, [&](int32_t offset, const int* digits, bool inside) {
    T value = inside ? load(v[i + offset]) : T(0);
    bool has = inside;
    // the pass along axis k closes where the steps of axes 0 .. k are all +1
    for (int k = 0; k < rank; ++k) {
      if (has) {
        level[k] = !any[k] ? value : (Max ? (value > level[k] ? value : level[k])
                                          : (value < level[k] ? value : level[k]));
        any[k] = true;
      }
      if (digits[k] != 2) return;
      has = any[k];
      value = nested || k == rank - 1 ? boundary_stored(level[k]) : level[k];
      any[k] = false;
    }
    result = value;  // the last axis's pass closed: every step seen
  });
  return result;
}

// Whether voxel i of slice v is a boundary of g.mode (see above); background:
// the background label, has_background false where the dtype cannot hold it.
template <int kRank, typename T>
MORPHAUG_HD bool boundary_voxel(const T* v, int32_t i, const int32_t* coord, const BoundaryGeometry& g,
                                T background, bool has_background) {
  const int rank = fixed_rank<kRank>(g.rank);
  const T x = v[i];
  bool differs = false, kept = boundary_kept(x);
  each_step<kRank>(g, coord, g.connectivity, [&](int32_t offset, const int*, bool inside) {
    if (!inside) return;
    const T y = v[i + offset];
    differs = differs || y != x;
    kept = kept && boundary_kept(y);
  });
  const auto same = [](T value) { return value; };
  if (!kept) {
    const bool nested = g.connectivity == rank;
    differs = boundary_extreme<true, kRank>(v, i, coord, g, g.connectivity, nested, same) !=
              boundary_extreme<false, kRank>(v, i, coord, g, g.connectivity, nested, same);
  }
  const bool outside = has_background && x == background;
  if (!differs || g.mode == kBoundaryThick) return differs;
  if (g.mode == kBoundaryInner) return !outside;
  if (outside) return true;
  const auto raised = [=](T value) {
    return has_background && value == background ? std::numeric_limits<T>::max() : value;
  };
  return boundary_extreme<true, kRank>(v, i, coord, g, rank, true, same) !=
         boundary_extreme<false, kRank>(v, i, coord, g, rank, true, raised);
}

}  // namespace morphaug
