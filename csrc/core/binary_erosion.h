// One step of SciPy's _binary_erosion by any element given as offsets, shared
// by the CPU (rows of bytes) and CUDA (a thread per voxel) launchers.
//
// Each offset d of the element reads the step's input v at p + d (outside the
// slice: `border`). A slice's flag of offset e says how: bit kErosionHit, the
// read must be true; bit kErosionMiss, it must be false (hit-or-miss's second
// element, and dilation: the complement of an erosion by misses). The step's
// result r(p) is the AND of those terms (true without any), then r xor invert
// where the mask holds, else v(p).
#pragma once

#include "common.h"

namespace morphaug {

constexpr int kErosionHit = 1;
constexpr int kErosionMiss = 2;
// The CUDA launcher passes the offsets by value (its kernel's parameters):
// at most this many offsets of at most this many axes, steps in int8.
constexpr int kErosionMaxOffsets = 256;
constexpr int kErosionMaxRank = 8;
constexpr int kErosionMaxReach = 127;

// The term of offset flag `flag` for a read of value v (a flag of both bits
// is always false, as x and not x).
MORPHAUG_HD bool erosion_term(int flag, bool v) {
  return !(((flag & kErosionHit) && !v) || ((flag & kErosionMiss) && v));
}

// Positions [lo, hi) of a row of length n whose read at shift s along the row
// stays inside it; the others read the border.
MORPHAUG_HD void erosion_row_range(int32_t n, int32_t s, int32_t& lo, int32_t& hi) {
  lo = s < 0 ? (-s < n ? -s : n) : 0;
  hi = s > 0 ? n - s : n;
  if (hi < lo) hi = lo;
}

// The offsets of a call: per offset its linear displacement in a slice and
// its step along each spatial axis; the slice's sizes.
struct ErosionOffsets {
  int32_t rank;
  int32_t count;
  int32_t size[kErosionMaxRank];
  int32_t delta[kErosionMaxOffsets];
  int8_t step[kErosionMaxOffsets][kErosionMaxRank];
};

// One voxel p of a slice (coordinates `coord`, per axis) of one step: the
// AND of the terms of the offsets flagged in `flags` (one byte per offset).
template <int kRank>
MORPHAUG_HD bool erosion_voxel(const uint8_t* v, int32_t p, const int32_t* coord,
                               const int32_t* delta, const int8_t (*step)[kErosionMaxRank],
                               const uint8_t* flags, const ErosionOffsets& o, bool border) {
  bool r = true;
  for (int e = 0; e < o.count; ++e) {
    const int flag = flags[e];
    if (flag == 0) continue;
    bool inside = true;
    for (int k = 0; k < fixed_rank<kRank>(o.rank); ++k) {
      inside &= static_cast<uint32_t>(coord[k] + step[e][k]) < static_cast<uint32_t>(o.size[k]);
    }
    r &= erosion_term(flag, inside ? v[p + delta[e]] != 0 : border);
  }
  return r;
}

}  // namespace morphaug
