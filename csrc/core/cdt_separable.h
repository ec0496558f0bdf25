// Separable taxicab CDT distances (no indices), used by the CPU launcher of cdt.
//
// SciPy's taxicab (faces) chamfer distance is the exact L1 distance to the
// nearest background voxel, so it separates into 1-D passes, one axis after
// the other, over int32 values with kCdtUnreached (2^30) for "no background
// yet"; values stay below 2^31 because a slice's sides sum to less than 2^30
// (checked by the launcher). On every axis, h(i) = min_j f(j) + |i - j|: a
// forward and a backward +1 sweep (the first axis starts from the mask:
// 0 on background, unreached elsewhere). Unreached values (>= 2^30) become
// SciPy's -1 after the last axis (a slice without background).
//
// Chessboard (L-infinity) separates too (h(i) = min_j max(f(j), |i - j|),
// Meijster's chessboard envelope), but per line that envelope was slower on
// CPU than the raster passes of core/cdt.h, so chessboard stays on those.
#pragma once

#include <vector>

#include "cdt.h"
#include "common.h"

namespace morphaug {

// Element i of a line at v[i * stride].
MORPHAUG_HD void cdt_line_sweeps(int32_t* v, int64_t n, int64_t stride) {
  for (int64_t i = 1; i < n; ++i) {
    const int32_t c = v[(i - 1) * stride] + 1;
    if (c < v[i * stride]) v[i * stride] = c;
  }
  for (int64_t i = n - 2; i >= 0; --i) {
    const int32_t c = v[(i + 1) * stride] + 1;
    if (c < v[i * stride]) v[i * stride] = c;
  }
}

// Whether the flags of a (3,) * rank metric (C order) are exactly the faces (taxicab).
inline bool cdt_is_taxicab(const std::vector<bool>& flags, int rank) {
  for (size_t e = 0; e < flags.size(); ++e) {
    int64_t rest = static_cast<int64_t>(e), away = 0;
    for (int k = 0; k < rank; ++k) {
      away += rest % 3 != 1;
      rest /= 3;
    }
    if (flags[e] != (away <= 1)) return false;
  }
  return true;
}

}  // namespace morphaug
