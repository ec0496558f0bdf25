// The stopping rule of the convolutional barycenter iteration (POT's), one
// grid position at a time (shared by the launchers).
#pragma once

#include <cmath>

#include "common.h"

namespace morphaug {

// The stopping rule's spread at one position: the standard deviation (ddof
// 0) over the N histograms of exp(log_v + log_ku), values `stride` apart.
template <typename T>
MORPHAUG_HD T barycenter_spread(const T* log_v, const T* log_ku, int64_t n_hists, int64_t stride) {
  T mean = 0;
  for (int64_t i = 0; i < n_hists; ++i) mean += exp(log_v[i * stride] + log_ku[i * stride]);
  mean /= static_cast<T>(n_hists);
  T square = 0;
  for (int64_t i = 0; i < n_hists; ++i) {
    const T d = exp(log_v[i * stride] + log_ku[i * stride]) - mean;
    square += d * d;
  }
  return sqrt(square / static_cast<T>(n_hists));
}

}  // namespace morphaug
