// expand_labels on the EDT's passes (shared by CPU and CUDA).
//
// The passes of edt.h run on the labels' background (label == 0 measures to
// the nearest labelled voxel) and carry, instead of one index plane per axis,
// one int32 plane: the flat index of each voxel's feature inside its slice
// (-1: none). Pass d moves the feature of the chosen j to i; the last pass
// tests the distance and writes the feature's label. Ties and distances are
// the EDT's, hence SciPy's (see edt.h), and the test is SciPy's
// sqrt(squared distance) <= distance in double.
//
// With unit sampling every squared distance is an exact integer, and the
// partial sums of the passes never decrease: a voxel whose partial squared
// distance exceeds `cut` (the largest integer whose root is <= distance)
// cannot be reached through it, so its f is dropped to +inf. That drops no
// candidate of a reached voxel and none of its ties, and the lines beyond
// every label become empty lines of the envelope.
#pragma once

#include <cmath>

#include "edt.h"

namespace morphaug {

// Whether a squared distance passes SciPy's test sqrt(squared) <= distance.
MORPHAUG_HD bool expand_near(double squared, double distance) {
  return sqrt(squared) <= distance;
}

// After pass 0 on `lanes` neighbouring lines (element i of lane l at
// i * stride + l, lane l the slice-local column first + l): feature holds the
// chosen j (edt_binary_lines' arg) and becomes the flat index j * stride +
// first + l, or -1 where there is none or f exceeds cut (f then +inf).
template <typename T>
MORPHAUG_HD void expand_first_features(int64_t n, int64_t stride, int64_t lanes, int64_t first,
                                       T* f, int32_t* feature, double cut) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t l = 0; l < lanes; ++l) {
      const int64_t e = i * stride + l;
      const int32_t j = feature[e];
      const bool keep = j >= 0 && static_cast<double>(f[e]) <= cut;
      feature[e] = keep ? static_cast<int32_t>(j * stride + first + l) : -1;
      if (!keep) f[e] = static_cast<T>(INFINITY);
    }
  }
}

// After pass d > 0 but the last on one line (elements `stride` apart), in
// place: the voxel i takes the feature of the envelope's choice
// chosen[i * chosen_stride] (-1: none), with the cut of
// expand_first_features. The choices are non-decreasing along a line (or -1
// all along it), so as in edt_gather_indices_in_place the voxels with j > i,
// ascending, then the others, descending, read only features not rewritten yet.
template <typename T>
MORPHAUG_HD void expand_carry_line(int64_t n, const int32_t* chosen, int64_t chosen_stride, T* f,
                                   int32_t* feature, int64_t stride, double cut) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t j = chosen[i * chosen_stride];
    if (j > i) feature[i * stride] = feature[j * stride];
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    const int32_t j = chosen[i * chosen_stride];
    if (j >= 0 && j < i) feature[i * stride] = feature[j * stride];
    if (j < 0 || !(static_cast<double>(f[i * stride]) <= cut)) {
      feature[i * stride] = -1;
      f[i * stride] = static_cast<T>(INFINITY);
    }
  }
}

// The label the last pass writes: that of feature p (a flat index into the
// slice's labels `source`, -1: none) where the squared distance passes the
// test, else 0. L: the labels' bits, of their width.
template <typename T, typename L>
MORPHAUG_HD L expand_label(int32_t p, T squared, const L* source, double distance) {
  return p >= 0 && expand_near(static_cast<double>(squared), distance) ? source[p] : L(0);
}

// The last pass's output for one line (elements `stride` apart): the label
// of the feature of the envelope's choice chosen[i] (feature[chosen[i] *
// stride] of the line, or chosen[i] itself where feature is null).
template <typename T, typename L>
MORPHAUG_HD void expand_emit_line(int64_t n, const int32_t* chosen, const int32_t* feature,
                                  const T* f, const L* source, L* out, int64_t stride,
                                  double distance) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t j = chosen[i];
    const int32_t p = j < 0 ? -1 : feature ? feature[j * stride] : j;
    out[i * stride] = expand_label(p, f[i * stride], source, distance);
  }
}

}  // namespace morphaug
