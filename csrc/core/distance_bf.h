// scipy.ndimage.distance_transform_bf, shared by CPU and CUDA: which background
// voxels are candidates, the distance of a pair in SciPy's arithmetic, and
// what a voxel is given.
//
// SciPy compares every foreground voxel with the background voxels that have a
// foreground voxel among their 3^S neighbours (its "border"), keeps the first
// strict minimum walking them from the largest flat index down, and so the
// candidate of the largest flat index among equals. Any other background voxel
// q has a background neighbour one step towards the foreground voxel, strictly
// nearer in every metric, so the border holds every nearest background voxel.
// A background voxel's distance is 0 to itself. A slice without background
// leaves its foreground unreached: sqrt(DBL_MAX) (Euclidean; inf in float32) or
// -1 (SciPy's uint32 maximum), indices 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"

namespace morphaug {

// Metrics: Euclidean (SciPy's double arithmetic, sampling 1 where none is
// given: the product by 1 is exact), taxicab, chessboard (int32: a slice's
// coordinate differences sum below 2^31), and Euclidean on a unit grid whose
// squared distances stay below 2^31 (int32 squares, exact, so ordered and
// tied as SciPy's doubles).
enum BfMetric : int { kBfEuclidean = 0, kBfTaxicab = 1, kBfChessboard = 2, kBfSquares = 3 };

// Most spatial axes of the kernel (3^S neighbours per candidate test).
constexpr int kBfMaxRank = 6;

struct BfGeometry {
  int rank;
  int32_t size[kBfMaxRank];
  double sampling[kBfMaxRank];  // Euclidean only
};

// The key a metric orders pairs by: the squared distance (Euclidean) or the distance.
template <int kMetric>
using BfKey = std::conditional_t<kMetric == kBfEuclidean, double, int32_t>;

template <int kMetric>
MORPHAUG_HD BfKey<kMetric> bf_unreached_key() {
  return std::numeric_limits<BfKey<kMetric>>::max();
}

// One axis's term of a pair's key, t the difference of its coordinates along
// the axis, folded into the key so far in SciPy's arithmetic: t times the
// sampling, squared and added (Euclidean; squares: without the sampling); |t|
// added (taxicab) or the greater (chessboard).
template <int kMetric>
MORPHAUG_HD BfKey<kMetric> bf_fold(BfKey<kMetric> d, int32_t t, double sampling) {
  if constexpr (kMetric == kBfEuclidean) {
    const double s = mul_rn(static_cast<double>(t), sampling);
    return add_rn(d, mul_rn(s, s));
  } else if constexpr (kMetric == kBfSquares) {
    return d + t * t;
  } else if constexpr (kMetric == kBfTaxicab) {
    return d + (t < 0 ? -t : t);
  } else {
    const int32_t m = t < 0 ? -t : t;
    return m > d ? m : d;
  }
}

// The key of the pair (a, b): its axes folded in order, axis 0 first (SciPy's).
template <int kRank, int kMetric>
MORPHAUG_HD BfKey<kMetric> bf_key(const int32_t* a, const int32_t* b, const BfGeometry& g) {
  BfKey<kMetric> d = 0;
  for (int k = 0; k < fixed_rank<kRank>(g.rank); ++k) d = bf_fold<kMetric>(d, a[k] - b[k], g.sampling[k]);
  return d;
}

// The distance of a key as the output stores it (T: float, double or int32_t);
// unreached (a slice without background) as SciPy leaves it.
template <int kMetric, typename T>
MORPHAUG_HD T bf_distance(BfKey<kMetric> key, bool unreached) {
  if constexpr (kMetric == kBfEuclidean || kMetric == kBfSquares) {
    const double root = sqrt(unreached ? std::numeric_limits<double>::max() : static_cast<double>(key));
    return static_cast<T>(root);  // sqrt(DBL_MAX) is inf in float32
  } else {
    return unreached ? T(-1) : static_cast<T>(key);
  }
}

// Whether voxel p of slice `v` (coordinates coord) is a candidate: background
// with a foreground voxel among its 3^S neighbours.
template <int kRank>
MORPHAUG_HD bool bf_candidate(const bool* v, int64_t p, const int32_t* coord, const BfGeometry& g) {
  if (v[p]) return false;
  const int rank = fixed_rank<kRank>(g.rank);
  int64_t stride[kBfMaxRank];
  int64_t step = 1;
  int total = 1;
  for (int k = rank - 1; k >= 0; --k) {
    stride[k] = step;
    step *= g.size[k];
    total *= 3;
  }
  for (int n = 0; n < total; ++n) {
    int64_t q = p;
    bool inside = true;
    int rest = n;
    for (int k = rank - 1; k >= 0 && inside; --k) {
      const int shift = rest % 3 - 1;
      rest /= 3;
      const int32_t c = coord[k] + shift;
      inside = c >= 0 && c < g.size[k];
      q += shift * stride[k];
    }
    if (inside && v[q]) return true;
  }
  return false;
}

}  // namespace morphaug
