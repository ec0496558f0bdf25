// Binary dilation and erosion by a metric ball of small integer radius r,
// per slice (shared by the CPU and CUDA launchers).
//
// A voxel is in the dilation iff some seed (true voxel) lies within distance
// r of it; the erosion (SciPy's border_value = 0) is the complement of the
// dilation of the complement, whose seeds include every voxel outside the
// slice. Distances beyond r never matter, so every value is capped at
// `cap` ("farther than r") and the transform is separable with bounded
// windows: the first spatial axis counts steps to the nearest seed (a
// forward and a backward sweep), every further axis takes, for each voxel,
// the minimum over the 2r + 1 voxels around it of
//   euclidean:  v + t^2     (squared distances; the ball x^2 + ... <= r^2),
//   taxicab:    v + |t|     (|x| + ... <= r, the r-fold iterate of the cross),
//   chessboard: max(v, |t|) (the cube of side 2r + 1),
// where v is the value t steps along the axis. That is exact: the metric of
// each ball composes one axis at a time, and a value above r (r^2) can only
// grow. Outside voxels matter only through the nearest one on each axis.
#pragma once

#include "common.h"

namespace morphaug {

enum BallMetric : int { kBallEuclidean = 0, kBallTaxicab = 1, kBallChessboard = 2 };

// Largest radius of the int16 working type: values stay below 2 r^2 + 2.
constexpr int64_t kBallMaxRadius = 127;

// "Farther than r" after the first axis, in the metric's units (squared for euclidean).
template <int Metric>
MORPHAUG_HD int32_t ball_cap(int32_t r) {
  return Metric == kBallEuclidean ? r * r + 1 : r + 1;
}

// Whether a final value is within the ball.
template <int Metric>
MORPHAUG_HD bool ball_inside(int32_t value, int32_t r) {
  return value <= (Metric == kBallEuclidean ? r * r : r);
}

// Steps along the first axis (at most r + 1) in the metric's units.
template <int Metric, typename S>
MORPHAUG_HD S ball_from_steps(S steps, int32_t r) {
  if (Metric != kBallEuclidean) return steps;
  return steps <= r ? static_cast<S>(steps * steps) : static_cast<S>(r * r + 1);
}

// A value v found t > 0 steps away along a further axis.
template <int Metric, typename S>
MORPHAUG_HD S ball_combine(S v, int32_t t) {
  if (Metric == kBallEuclidean) return static_cast<S>(v + t * t);
  if (Metric == kBallTaxicab) return static_cast<S>(v + t);
  return v > t ? v : static_cast<S>(t);
}

template <typename S>
MORPHAUG_HD S ball_min(S a, S b) {
  return a < b ? a : b;
}

// One +1 sweep over `lanes` lines of n values laid out as in ball_first_axis:
// value i becomes min(value i, its neighbour before it + 1), from the start
// (or, `backward`, from the end).
template <typename S>
MORPHAUG_HD void ball_unit_sweep(S* v, int64_t n, int64_t lanes, int64_t stride, bool backward) {
  for (int64_t k = 1; k < n; ++k) {
    const int64_t i = backward ? n - 1 - k : k;
    const S* __restrict__ near = v + (backward ? i + 1 : i - 1) * stride;
    S* __restrict__ row = v + i * stride;
    for (int64_t l = 0; l < lanes; ++l) row[l] = ball_min<S>(row[l], static_cast<S>(near[l] + 1));
  }
}

// The first axis on `lanes` lines of n values (value i of lane l at
// i * stride + l; CPU: the lanes of a row side by side, CUDA: one lane a
// thread): steps to the nearest seed, capped at r + 1, then in the metric's
// units. Seeds are the mask values equal to `seed_value`, and the outside
// when `outside_seeds`. `mask` and `v` share the layout. Branch-free lane
// loops, so that they vectorise.
template <int Metric, typename S>
MORPHAUG_HD void ball_first_axis(const uint8_t* mask, uint8_t seed_value, bool outside_seeds, S* v,
                                 int64_t n, int64_t lanes, int64_t stride, int32_t r) {
  const S far = static_cast<S>(r + 1);
  const S edge = outside_seeds ? S(1) : far;  // steps from the outside, capped
  for (int64_t l = 0; l < lanes; ++l) v[l] = mask[l] == seed_value ? S(0) : edge;
  for (int64_t i = 1; i < n; ++i) {
    const uint8_t* __restrict__ m = mask + i * stride;
    const S* __restrict__ before = v + (i - 1) * stride;
    S* __restrict__ row = v + i * stride;
    for (int64_t l = 0; l < lanes; ++l) {
      const S away = m[l] != seed_value;
      row[l] = static_cast<S>(away * ball_min<S>(static_cast<S>(before[l] + 1), far));
    }
  }
  S* last = v + (n - 1) * stride;
  for (int64_t l = 0; l < lanes; ++l) last[l] = ball_min<S>(last[l], edge);
  ball_unit_sweep<S>(v, n, lanes, stride, true);
  for (int64_t i = 0; i < n; ++i) {
    S* __restrict__ row = v + i * stride;
    for (int64_t l = 0; l < lanes; ++l) row[l] = ball_from_steps<Metric, S>(row[l], r);
  }
}

// Taxicab and chessboard on a further axis, `lanes` lines laid out as in
// ball_first_axis, O(1) per value whatever r: a forward and a backward +1
// sweep. Taxicab: min over t of v + |t| exactly. Chessboard: only whether the
// result is <= r matters later, so every value becomes 0 (a seed within r
// along the axis) or r + 1, and the sweeps count steps to the nearest 0.
template <int Metric, typename S>
MORPHAUG_HD void ball_sweep(const S* in, S* out, int64_t n, int64_t lanes, int64_t stride, int32_t r,
                            bool outside_seeds) {
  const S far = static_cast<S>(r + 1);
  for (int64_t i = 0; i < n; ++i) {
    const S* __restrict__ src = in + i * stride;
    S* __restrict__ dst = out + i * stride;
    const bool edge = outside_seeds && (i == 0 || i == n - 1);
    for (int64_t l = 0; l < lanes; ++l) {
      S value = Metric == kBallChessboard ? static_cast<S>((src[l] > r) * far) : src[l];
      dst[l] = edge ? ball_min<S>(value, S(1)) : value;
    }
  }
  ball_unit_sweep<S>(out, n, lanes, stride, false);
  ball_unit_sweep<S>(out, n, lanes, stride, true);
  for (int64_t i = 0; i < n; ++i) {
    S* __restrict__ row = out + i * stride;
    for (int64_t l = 0; l < lanes; ++l) {
      row[l] = Metric == kBallChessboard ? static_cast<S>((row[l] > r) * far) : ball_min<S>(row[l], far);
    }
  }
}

// A further axis, one value: min over |t| <= r of combine(v(i + t), |t|) for
// element i of a line of n values `stride` apart (and the nearest outside
// voxel as a seed when `outside_seeds`).
template <int Metric, typename S>
MORPHAUG_HD S ball_window(const S* line, int64_t i, int64_t n, int64_t stride, int32_t r,
                          bool outside_seeds) {
  S best = line[i * stride];
  const int64_t farthest = i > n - 1 - i ? i : n - 1 - i;  // no value lies farther along the line
  const int32_t reach = r < farthest ? r : static_cast<int32_t>(farthest);
  for (int32_t t = 1; t <= reach; ++t) {
    if (i + t < n) best = ball_min<S>(best, ball_combine<Metric, S>(line[(i + t) * stride], t));
    if (i - t >= 0) best = ball_min<S>(best, ball_combine<Metric, S>(line[(i - t) * stride], t));
  }
  const int64_t edge = i + 1 < n - i ? i + 1 : n - i;  // steps to the outside
  if (outside_seeds && edge <= r) {
    best = ball_min<S>(best, ball_combine<Metric, S>(S(0), static_cast<int32_t>(edge)));
  }
  return best;
}

}  // namespace morphaug
