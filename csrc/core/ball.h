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

}  // namespace morphaug
