// Signed Euclidean distance to the boundary of a mask, unit sampling, in
// exact integer squared distances (shared by the launchers).
//
// The boundary voxels are the mask voxels with a face neighbour outside the
// mask (the volume's border is not one). Squared distances to them are
// separable: the first spatial axis counts steps to the nearest boundary
// voxel (a forward and a backward +1 sweep, then squared), and every further
// axis takes, for each voxel, min over t of v(t) + t^2, v(t) the value t
// voxels along the axis. That minimum stops as soon as t^2 reaches the best
// value so far (every v >= 0), so a voxel costs about twice its distance in
// taps, all of them vectorised over rows of neighbouring voxels, instead of
// a lower envelope of parabolas with its data-dependent branches.
//
// Values are unsigned integers W (uint16_t or uint32_t): real squared
// distances are at most sum (n_k - 1)^2, "no boundary voxel yet" is
// `sedt_none` = max(W) - max (n_k - 1)^2, so that none + t^2 never wraps, and
// it must exceed every real value (sedt_fits).
#pragma once

#include <cmath>
#include <limits>

#include "ball.h"
#include "common.h"

namespace morphaug {

// Row chunk of the seeding pass.
constexpr int kSedtSeedLanes = 128;

// Largest (n_k - 1)^2 and sum of them over the spatial axes.
MORPHAUG_HD void sedt_extent(const Geometry& g, int64_t& widest, int64_t& total) {
  widest = 0;
  total = 0;
  for (int k = 0; k < g.rank; ++k) {
    const int64_t reach = (g.size[k] - 1) * (g.size[k] - 1);
    widest = reach > widest ? reach : widest;
    total += reach;
  }
}

// Whether W holds every value of a volume of geometry g.
template <typename W>
MORPHAUG_HD bool sedt_fits(const Geometry& g) {
  int64_t widest, total;
  sedt_extent(g, widest, total);
  const int64_t top = static_cast<int64_t>(std::numeric_limits<W>::max());
  return widest < top && total < top - widest;
}

// "No boundary voxel yet".
template <typename W>
MORPHAUG_HD W sedt_none(const Geometry& g) {
  int64_t widest, total;
  sedt_extent(g, widest, total);
  return static_cast<W>(static_cast<int64_t>(std::numeric_limits<W>::max()) - widest);
}

// First-axis seeds of one row along the last spatial axis (`row` counts
// rows through the volume): v = 0 on a boundary voxel, else `far` (steps no
// line reaches). `stride[k]` is the element stride of axis k. Returns
// whether the row has a boundary voxel. Branch-free chunks of the row, so
// that the CPU vectorises them.
template <typename W>
MORPHAUG_HD bool sedt_seed_row(const uint8_t* mask, const Geometry& g, const int64_t* stride,
                               int64_t row, W far, W* v) {
  const int last = g.rank - 1;
  const int64_t n = g.size[last];
  const uint8_t* __restrict__ m = mask + row * n;
  W* __restrict__ out = v + row * n;
  bool before[kMaxRank], after[kMaxRank];  // whether the row has neighbour rows on axis k
  int64_t rest = row;
  for (int k = last - 1; k >= 0; --k) {
    const int64_t x = rest % g.size[k];
    rest /= g.size[k];
    before[k] = x > 0;
    after[k] = x < g.size[k] - 1;
  }
  uint8_t found = 0;
  for (int64_t c = 0; c < n; c += kSedtSeedLanes) {
    const int64_t lanes = n - c < kSedtSeedLanes ? n - c : kSedtSeedLanes;
    // interior: the voxel and its neighbours in the mask (or outside the volume)
    uint8_t interior[kSedtSeedLanes];
    for (int64_t l = 0; l < lanes; ++l) interior[l] = m[c + l];
    for (int k = 0; k < last; ++k) {
      if (before[k]) {
        const uint8_t* __restrict__ near = m + c - stride[k];
        for (int64_t l = 0; l < lanes; ++l) interior[l] &= near[l];
      }
      if (after[k]) {
        const uint8_t* __restrict__ near = m + c + stride[k];
        for (int64_t l = 0; l < lanes; ++l) interior[l] &= near[l];
      }
    }
    const int64_t lo = c > 0 ? 0 : 1, hi = c + lanes < n ? lanes : lanes - 1;
    for (int64_t l = lo; l < hi; ++l) interior[l] &= m[c + l - 1] & m[c + l + 1];
    if (n > 1 && c == 0) interior[0] &= m[1];
    if (n > 1 && c + lanes == n) interior[lanes - 1] &= m[n - 2];
    for (int64_t l = 0; l < lanes; ++l) {
      const uint8_t boundary = m[c + l] & ~interior[l] & 1;
      out[c + l] = static_cast<W>(static_cast<W>(boundary) - 1) & far;  // 0 or far
      found |= boundary;
    }
  }
  return found != 0;
}

// Steps on the first axis (<= n - 1, or `far` = n with no seed in the line)
// as squared distances, `none` where there is no seed.
template <typename W>
MORPHAUG_HD void sedt_square_steps(W* v, int64_t count, W far, W none) {
  for (int64_t p = 0; p < count; ++p) {
    const W steps = v[p];
    v[p] = steps < far ? static_cast<W>(steps * steps) : none;
  }
}

// Lane operations of sedt_parabola for one voxel at a time (a CUDA thread,
// the CPU's leftover voxels); the CPU launcher has a vector version.
template <typename T>
struct SedtOneLane {
  using W = T;
  using V = T;
  static MORPHAUG_HD V load(const W* p) { return *p; }
  static MORPHAUG_HD V min(V a, V b) { return a < b ? a : b; }
  static MORPHAUG_HD bool any_above(V v, W bound) { return v > bound; }
};

// One parabola pass on the lanes of L::V (voxels side by side): value l of
// the voxel t steps along the axis sits at src[l + t * step], t from
// -before to after (those positions exist). Returns min over t of
// src[t * step] + t^2, trying |t| = 1, 2, ... while some lane is above t^2.
// With `finished`, gives up after `cap` taps: *finished = false and the
// returned value is only an upper bound.
template <typename L>
MORPHAUG_HD typename L::V sedt_parabola(const typename L::W* src, int64_t step, int64_t before,
                                        int64_t after, int64_t cap = INT64_MAX,
                                        bool* finished = nullptr) {
  using W = typename L::W;
  typename L::V best = L::load(src);
  const int64_t reach = before > after ? before : after;
  for (int64_t t = 1; t <= reach; ++t) {
    const W square = static_cast<W>(t * t);
    if (!L::any_above(best, square)) break;
    if (t > cap) {
      *finished = false;
      break;
    }
    if (t <= before) best = L::min(best, L::load(src - t * step) + square);
    if (t <= after) best = L::min(best, L::load(src + t * step) + square);
  }
  return best;
}

// The signed float32 value of a voxel: -distance strictly inside the mask,
// +distance elsewhere (+0 on the boundary).
template <typename W>
MORPHAUG_HD float sedt_signed(W squared, uint8_t in_mask) {
  const float distance = sqrtf(static_cast<float>(squared));
  return in_mask && squared != 0 ? -distance : distance;
}

}  // namespace morphaug
