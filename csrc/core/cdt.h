// Chamfer distance transform with SciPy's raster passes (shared by CPU and CUDA).
//
// scipy.ndimage.distance_transform_cdt runs `distance_transform_op` twice: a
// forward raster pass over the slice, then the same pass over the reversed
// slice. At each voxel that is not background it looks at the neighbours of
// the metric's first half (those before the centre in C order, in that order)
// and takes the first neighbour with the smallest distance t if t + 1 beats
// the current value, copying that neighbour's feature. Out-of-bounds
// neighbours never count; voxels never reached keep -1.
//
// Here a slice lives in a buffer padded by one unreachable voxel on every
// side, so neighbour offsets are constants. A raster row along the last axis
// is done in two steps with the same result as SciPy's voxel loop: (1) every
// voxel of the row looks at its neighbours on earlier rows, which are final
// (vectorised along the row on CPU, a thread per voxel on CUDA); (2) the
// in-row predecessor (0, ..., 0, -1), always last in SciPy's order, is folded
// in by a scan (sequential on CPU, block-wide on CUDA).
#pragma once

#include <vector>

#include "common.h"

namespace morphaug {

constexpr int32_t kCdtUnreached = 1 << 30;  // SciPy's -1, as a large distance
constexpr int kCdtMaxNeighbours = 364;      // half of 3^6: any metric up to 6-D
constexpr int kCdtMaxRows = 121;            // half of 3^5: earlier rows of a 6-D cube

struct CdtNeighbours {
  int count;      // offsets to neighbours on earlier rows, in SciPy's order
  bool has_left;  // whether the metric holds the in-row predecessor
  int32_t offset[kCdtMaxNeighbours];  // padded linear offsets (forward pass)
  // The full 3^rank cube (chessboard): its neighbours on earlier rows are
  // whole triples (x - 1, x, x + 1) of `rows` earlier rows, at row_offset,
  // in SciPy's order.
  bool cube;
  int rows;
  int32_t row_offset[kCdtMaxRows];
};

// Neighbours of the first half of a 3^rank metric (flags in C order), as offsets
// in a buffer with padded strides `pstride`. Host only.
inline CdtNeighbours cdt_neighbours(const std::vector<bool>& metric, int rank,
                                    const int64_t* pstride) {
  CdtNeighbours nb{};
  const int64_t half = static_cast<int64_t>(metric.size()) / 2;
  nb.cube = true;
  for (int64_t e = 0; e < static_cast<int64_t>(metric.size()); ++e) nb.cube = nb.cube && metric[e];
  for (int64_t e = 0; e < half; ++e) {
    if (!metric[e]) continue;
    int64_t offset = 0, rest = e;
    for (int k = rank - 1; k >= 0; --k) {
      offset += (rest % 3 - 1) * pstride[k];
      rest /= 3;
    }
    if (e == half - 1) {
      nb.has_left = true;  // (0, ..., 0, -1)
    } else {
      nb.offset[nb.count++] = static_cast<int32_t>(offset);
    }
    if (nb.cube && e % 3 == 1) nb.row_offset[nb.rows++] = static_cast<int32_t>(offset);
  }
  return nb;
}

// Step 1 for `count` voxels of a row, at padded positions first .. first +
// count - 1 (in memory order, whatever the pass direction): each voxel takes
// one more than a neighbour on earlier rows wherever that is strictly smaller,
// neighbours in SciPy's order. This is SciPy's voxel rule with unreached = a
// large distance: background stays 0, out-of-bounds neighbours never win.
// sign = +1 on the forward pass, -1 on the backward pass (offsets mirrored).
// `feature` may be null (distances only).
MORPHAUG_HD void cdt_previous_rows(int32_t* value, int32_t* feature, int64_t first, int64_t count,
                                   const CdtNeighbours& nb, int sign) {
  int32_t* __restrict__ own = value + first;
  for (int k = 0; k < nb.count; ++k) {
    const int64_t offset = sign * static_cast<int64_t>(nb.offset[k]);
    const int32_t* __restrict__ near = value + first + offset;
    if (feature) {
      int32_t* __restrict__ own_feature = feature + first;
      const int32_t* __restrict__ near_feature = feature + first + offset;
      for (int64_t x = 0; x < count; ++x) {
        const int32_t candidate = near[x] + 1, current = own[x];
        const int32_t candidate_feature = near_feature[x], current_feature = own_feature[x];
        own[x] = candidate < current ? candidate : current;
        own_feature[x] = candidate < current ? candidate_feature : current_feature;
      }
    } else {
      for (int64_t x = 0; x < count; ++x) {
        const int32_t candidate = near[x] + 1, current = own[x];
        own[x] = candidate < current ? candidate : current;
      }
    }
  }
}

// Cube metric: step 1 through `triple`, which holds at each position of a
// finished row the first smallest of the row's values at the three positions
// around it, in this pass's neighbour order (x - 1, x, x + 1 forward, mirrored
// backward), and its feature in `triple_feature` (may be null with `feature`).
// Rows not finished in this pass hold unreached. Same result as
// cdt_previous_rows (first smallest over the triples of the earlier rows, in
// order, is the first smallest over all their neighbours), a third of the reads.
MORPHAUG_HD void cdt_previous_rows_cube(int32_t* value, int32_t* feature, const int32_t* triple,
                                        const int32_t* triple_feature, int64_t first,
                                        int64_t count, const CdtNeighbours& nb, int sign) {
  int32_t* __restrict__ own = value + first;
  for (int r = 0; r < nb.rows; ++r) {
    const int64_t offset = first + sign * static_cast<int64_t>(nb.row_offset[r]);
    const int32_t* __restrict__ near = triple + offset;
    if (feature) {
      int32_t* __restrict__ own_feature = feature + first;
      const int32_t* __restrict__ near_feature = triple_feature + offset;
      for (int64_t x = 0; x < count; ++x) {
        const int32_t candidate = near[x] + 1, current = own[x];
        const int32_t candidate_feature = near_feature[x], current_feature = own_feature[x];
        own[x] = candidate < current ? candidate : current;
        own_feature[x] = candidate < current ? candidate_feature : current_feature;
      }
    } else {
      for (int64_t x = 0; x < count; ++x) {
        const int32_t candidate = near[x] + 1, current = own[x];
        own[x] = candidate < current ? candidate : current;
      }
    }
  }
}

MORPHAUG_HD void cdt_row_triples(const int32_t* value, const int32_t* feature, int32_t* triple,
                                 int32_t* triple_feature, int64_t first, int64_t count, int sign) {
  for (int64_t x = first; x < first + count; ++x) {
    const int32_t a = value[x - sign], b = value[x], c = value[x + sign];  // neighbour order
    const int32_t ab = b < a ? b : a;
    triple[x] = c < ab ? c : ab;
    if (feature) {  // all loads unconditional, so that the loop vectorises
      const int32_t fa = feature[x - sign], fb = feature[x], fc = feature[x + sign];
      const int32_t fab = b < a ? fb : fa;
      triple_feature[x] = c < ab ? fc : fab;
    }
  }
}

// A distance or scan key paired with its feature (unpadded linear index).
struct CdtCandidate {
  int32_t distance;
  int32_t feature;
};

// Step 2, the in-row predecessor, as an associative scan. In processing order
// t = 0, 1, ... along the row, SciPy's rule (take the predecessor's value + 1
// where strictly smaller) gives value(t) = t + min over s <= t of key(s),
// key(s) = step-1 value(s) - s, with the feature of the latest s on a tie.
// cdt_combine(earlier, later) is that associative operator.
MORPHAUG_HD CdtCandidate cdt_key(int32_t distance, int32_t feature, int64_t t) {
  return CdtCandidate{distance - static_cast<int32_t>(t), feature};
}

MORPHAUG_HD CdtCandidate cdt_combine(CdtCandidate earlier, CdtCandidate later) {
  const bool take = later.distance <= earlier.distance;  // field-wise selects, no branch
  return CdtCandidate{take ? later.distance : earlier.distance,
                      take ? later.feature : earlier.feature};
}

MORPHAUG_HD int32_t cdt_distance(int32_t key, int64_t t) {
  return key + static_cast<int32_t>(t);
}

}  // namespace morphaug
