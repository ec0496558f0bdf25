// Lee, Kashyap and Chu's 3-D thinning tests on one voxel, shared by the CPU
// kernels (skeletonize_lee, skeletonize_parallel) and the CUDA launcher.
//
// A neighbourhood is a 27-bit code, bit 9 (dz + 1) + 3 (dy + 1) + (dx + 1)
// for the neighbour at offset (dz, dy, dx), the centre's bit (13) clear, read
// from a zero-padded image (so every voxel of the slice has 26 neighbours).
// A voxel is simple when deleting it keeps the Euler characteristic of its
// neighbourhood (the change summed over its 8 octants, from a 128-entry table
// by the code of each octant's other 7 corners) and its foreground neighbours
// form one 26-connected component.
#pragma once

#include <cstdint>

#include "common.h"

namespace morphaug {
namespace thinning3d {

constexpr uint32_t kFull = (uint32_t{1} << 27) - 1;

MORPHAUG_HD constexpr int bit_of(int dz, int dy, int dx) { return 9 * (dz + 1) + 3 * (dy + 1) + (dx + 1); }

// The bits of the positions at `side` (-1 or 1) along `axis` (0: z, 1: y, 2: x).
MORPHAUG_HD constexpr uint32_t side_bits(int axis, int side) {
  uint32_t bits = 0;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if ((axis == 0 ? dz : axis == 1 ? dy : dx) == side) bits |= uint32_t{1} << bit_of(dz, dy, dx);
  return bits;
}

// `bits` grown by one step to the 26 neighbours, inside the 3 x 3 x 3 code
// (separable: one step along each axis (shift 9, 3, 1) in turn, never
// entering the lowest positions of the axis going up nor the highest going down).
MORPHAUG_HD uint32_t dilate(uint32_t bits) {
  constexpr uint32_t up_z = kFull & ~side_bits(0, -1), down_z = ~side_bits(0, 1);
  constexpr uint32_t up_y = kFull & ~side_bits(1, -1), down_y = ~side_bits(1, 1);
  constexpr uint32_t up_x = kFull & ~side_bits(2, -1), down_x = ~side_bits(2, 1);
  bits |= ((bits << 9) & up_z) | ((bits >> 9) & down_z);
  bits |= ((bits << 3) & up_y) | ((bits >> 3) & down_y);
  bits |= ((bits << 1) & up_x) | ((bits >> 1) & down_x);
  return bits;
}

// The bits of the 6 face neighbours.
constexpr uint32_t kFaces = (uint32_t{1} << bit_of(-1, 0, 0)) | (uint32_t{1} << bit_of(1, 0, 0)) |
                            (uint32_t{1} << bit_of(0, -1, 0)) | (uint32_t{1} << bit_of(0, 1, 0)) |
                            (uint32_t{1} << bit_of(0, 0, -1)) | (uint32_t{1} << bit_of(0, 0, 1));

// At most one 26-connected component among the foreground neighbours: grown
// from one of them until it holds them all or stops growing. The seed is a
// face neighbour where there is one: within one step of 18 positions, it
// reaches a half-space neighbourhood in one step where a corner takes two.
MORPHAUG_HD bool connected(uint32_t code) {
  const uint32_t seeds = (code & kFaces) != 0 ? code & kFaces : code;
  uint32_t reach = seeds & (~seeds + 1);
  while (reach != code) {
    const uint32_t grown = dilate(reach) & code;
    if (grown == reach) return false;
    reach = grown;
  }
  return true;
}

// Whether deleting the centre keeps the Euler characteristic: `changes` (128
// entries) by the code of each octant's corners 1 .. 7, the corners of the
// Euler table's 2 x 2 x 2 window (morphaug/measure/_euler.py: corner c at
// (z, y, x) = (c >> 2, c & 1, (c >> 1) & 1)) reflected into the octant of
// signs (sz, sy, sx).
template <typename Change>
MORPHAUG_HD bool euler_invariant(uint32_t code, const Change* changes) {
  int change = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int o = 0; o < 8; ++o) {
    const int sz = (o & 4) ? 1 : -1, sy = (o & 2) ? 1 : -1, sx = (o & 1) ? 1 : -1;
    int octant = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int c = 1; c < 8; ++c)
      octant |= static_cast<int>((code >> bit_of((c >> 2) * sz, (c & 1) * sy, ((c >> 1) & 1) * sx)) & 1) << (c - 1);
    change += static_cast<int>(changes[octant]);
  }
  return change == 0;
}

// The code of the voxel at `at` of a zero-padded image of rows `row` and
// planes `plane` elements apart.
template <typename Index>
MORPHAUG_HD uint32_t code_at(const uint8_t* image, Index at, Index row, Index plane) {
  uint32_t code = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int dz = -1; dz <= 1; ++dz)
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int dy = -1; dy <= 1; ++dy)
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int dx = -1; dx <= 1; ++dx)
        if (dz != 0 || dy != 0 || dx != 0)
          code |= static_cast<uint32_t>(image[at + dz * plane + dy * row + dx] != 0) << bit_of(dz, dy, dx);
  return code;
}

// A simple point (the parallel method's re-check: the centre is foreground).
template <typename Change>
MORPHAUG_HD bool simple(uint32_t code, const Change* changes) {
  return code != 0 && euler_invariant(code, changes) && connected(code);
}

// A candidate of Lee's border pass: simple and not an end point (at most one neighbour).
template <typename Change>
MORPHAUG_HD bool candidate(uint32_t code, const Change* changes) {
  return (code & (code - 1)) != 0 && euler_invariant(code, changes) && connected(code);
}

// The parallel method's subfield of the voxel at padded coordinates (z, y, x):
// their parities; two voxels of one subfield are never 26-neighbours.
MORPHAUG_HD int subfield(uint32_t z, uint32_t y, uint32_t x) {
  return static_cast<int>(((z & 1) << 2) | ((y & 1) << 1) | (x & 1));
}

}  // namespace thinning3d
}  // namespace morphaug
