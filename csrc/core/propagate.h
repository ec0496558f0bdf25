// Binary propagation (SciPy's binary_dilation with iterations = -1 and a mask)
// for an element that holds its centre: a flood fill on CPU (CUDA labels the
// region instead, cuda/propagate.cu).
//
// The masked OR step is then extensive and monotone: an open voxel p turns
// reached when p + d is reached for an offset d of the element (one way only
// where the element lacks -d), so its fixpoint is the input plus every mask
// voxel that a path of such steps, inside the mask, leads to from a true input
// voxel or, when border_value = 1, from the outside of the volume. A slice
// lives in a byte buffer padded by the element's reach on each axis, so that
// neighbour offsets are constants and need no bounds checks.
#pragma once

#include "common.h"

namespace morphaug {

// Voxel states of the padded buffer.
constexpr uint8_t kPropagateOpen = 0;     // in the mask and not reached yet
constexpr uint8_t kPropagateReached = 1;  // true: an input voxel, reached, or a true border
constexpr uint8_t kPropagateClosed = 2;   // outside the mask and false, or a false border

// Each slice padded by the element's reach on each axis (pad[k] voxels on both
// sides), C order; pstride[k] is the padded stride of axis k.
struct PaddedShape {
  int rank;
  int64_t size[kMaxRank], pad[kMaxRank], pstride[kMaxRank];

  // Padded position of voxel `voxel` (C order over the sizes).
  MORPHAUG_HD int64_t position(int64_t voxel) const {
    int64_t p = 0;
    for (int k = rank - 1; k >= 0; --k) {
      p += (voxel % size[k] + pad[k]) * pstride[k];
      voxel /= size[k];
    }
    return p;
  }
};

// Visits the open voxels p + offsets[0 .. count) (those that read p: the
// element's offsets negated), marks them reached and hands each to `push`.
// Returns how many were reached.
template <typename Push>
MORPHAUG_HD int propagate_visit(uint8_t* state, int64_t p, const int32_t* offsets, int count,
                                Push&& push) {
  int reached = 0;
  for (int k = 0; k < count; ++k) {
    const int64_t q = p + offsets[k];
    if (state[q] == kPropagateOpen) {
      state[q] = kPropagateReached;
      push(q);
      ++reached;
    }
  }
  return reached;
}

// One row of a raster pass, `count` voxels from padded position `first`, with
// `rows` offsets to finished rows and `inrow` offsets within the row (all of
// one sign: negative on the forward pass, positive on the backward pass, which
// walks the row backwards). Open voxels with a reached neighbour turn reached.
MORPHAUG_HD void propagate_row(uint8_t* state, int64_t first, int64_t count,
                               const int32_t* rows, int nrows, const int32_t* inrow,
                               int ninrow, bool forward, uint8_t* seeded) {
  uint8_t* __restrict__ own = state + first;
  for (int64_t i = 0; i < count; ++i) seeded[i] = 0;
  for (int k = 0; k < nrows; ++k) {  // finished rows: vectorised
    const uint8_t* __restrict__ near = state + first + rows[k];
    for (int64_t i = 0; i < count; ++i) seeded[i] |= near[i] == kPropagateReached;
  }
  if (ninrow == 1 && (inrow[0] == -1 || inrow[0] == 1)) {  // the usual case, branch-free
    const int64_t step = forward ? 1 : -1;
    int64_t i = forward ? 0 : count - 1;
    bool carry = own[i - step] == kPropagateReached;
    for (int64_t t = 0; t < count; ++t, i += step) {
      const uint8_t v = own[i];
      const bool reached = v == kPropagateReached || (v == kPropagateOpen && (seeded[i] || carry));
      own[i] = reached ? kPropagateReached : v;
      carry = reached;
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    own[i] = (own[i] == kPropagateOpen && seeded[i]) ? kPropagateReached : own[i];
  }
  for (int64_t t = 0; ninrow > 0 && t < count; ++t) {  // the row itself: sequential
    const int64_t i = forward ? t : count - 1 - t;
    if (own[i] != kPropagateOpen) continue;
    for (int k = 0; k < ninrow; ++k) {
      if (own[i + inrow[k]] == kPropagateReached) {
        own[i] = kPropagateReached;
        break;
      }
    }
  }
}

// Whether voxel p has an open neighbour (through offsets[0 .. count)).
MORPHAUG_HD bool propagate_open_after(const uint8_t* state, int64_t p, const int32_t* offsets,
                                      int count) {
  for (int k = 0; k < count; ++k) {
    if (state[p + offsets[k]] == kPropagateOpen) return true;
  }
  return false;
}

}  // namespace morphaug
