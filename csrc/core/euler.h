// scikit-image's euler_number (Gray's bit-quads in 2-D, Ohser et al.'s
// 2 x 2 x 2 configurations in 3-D), shared by CPU and CUDA: the sum of a
// table over the configuration codes of every 2 x 2 (x 2) window of the slice
// padded with background.
//
// Bit b of a window's code is its corner b in scikit-image's numbering: with
// the window's last voxel at (z, y, x), bits 0, 1, 4, 5 read (z, y, x),
// (z, y-1, x), (z-1, y, x) and (z-1, y-1, x), bits 2, 3, 6, 7 the same at x-1
// (2-D: bits 0 to 3). A window row: the windows ending at x = 0 .. n of the
// rows (z, y), (z, y-1), (z-1, y), (z-1, y-1), each null outside the slice.
#pragma once

#include <cstdint>

#include "common.h"

namespace morphaug {

// The window rows of a slice: (D + 1) * (H + 1), or H + 1 in 2-D (D = 0).
struct EulerShape {
  int64_t depth, height, width;  // depth 0: a 2-D slice

  MORPHAUG_HD int64_t rows() const { return (depth > 0 ? depth + 1 : 1) * (height + 1); }
  MORPHAUG_HD int64_t voxels() const { return (depth > 0 ? depth : 1) * height * width; }
};

// The four rows of window row w of `slice` (a bool slice as bytes), as above.
MORPHAUG_HD void euler_rows(const uint8_t* slice, const EulerShape& s, int64_t w, const uint8_t** rows) {
  const int64_t z = w / (s.height + 1), y = w - z * (s.height + 1);
  const int64_t planes = s.depth > 0 ? s.depth : 1;
  const bool row_y = y < s.height, row_before = y > 0;
  for (int back_z = 0; back_z < 2; ++back_z) {
    const int64_t plane = z - back_z;
    const bool plane_in = plane >= 0 && plane < planes && (back_z == 0 || s.depth > 0);
    const uint8_t* base = slice + plane * s.height * s.width;
    rows[2 * back_z] = plane_in && row_y ? base + y * s.width : nullptr;
    rows[2 * back_z + 1] = plane_in && row_before ? base + (y - 1) * s.width : nullptr;
  }
}

// Bits 0, 1, 4, 5 of the windows ending at x: the column x of the four rows.
MORPHAUG_HD int euler_column(const uint8_t* const* rows, int64_t x) {
  return (rows[0] != nullptr && rows[0][x] ? 1 : 0) | (rows[1] != nullptr && rows[1][x] ? 2 : 0) |
         (rows[2] != nullptr && rows[2][x] ? 16 : 0) | (rows[3] != nullptr && rows[3][x] ? 32 : 0);
}

// The table's sum over the windows ending at x = 0 .. n of a window row.
MORPHAUG_HD int64_t euler_row_sum(const uint8_t* const* rows, int64_t n, const int8_t* table) {
  int64_t sum = 0;
  int previous = 0;
  for (int64_t x = 0; x < n; ++x) {
    const int column = euler_column(rows, x);
    sum += table[column | previous << 2];
    previous = column;
  }
  return sum + table[previous << 2];
}

}  // namespace morphaug
