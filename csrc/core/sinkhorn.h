// One problem's elementwise steps of POT's Sinkhorn-Knopp matrix scaling,
// with the arithmetic of morphaug.ot's torch loop (same operations, same
// order). The kernel products are GEMMs of the launcher.
#pragma once

#include <cmath>

#include "common.h"

namespace morphaug {

// out = num / den, elementwise.
template <typename T>
MORPHAUG_HD void sinkhorn_divide(const T* num, const T* den, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = num[i] / den[i];
}

// u = a / q_f times the reciprocal of its maximum, which is returned.
template <typename T>
MORPHAUG_HD T sinkhorn_scaled_ratio(const T* a, const T* q_f, T* u, int64_t n) {
  T top = a[0] / q_f[0];
  for (int64_t i = 0; i < n; ++i) {
    u[i] = a[i] / q_f[i];
    top = u[i] > top ? u[i] : top;
  }
  const T inverse = T(1) / top;
  for (int64_t i = 0; i < n; ++i) u[i] = u[i] * inverse;
  return top;
}

// || (b / q_g) * (K^T u) * scale - b ||_2: how far the plan's column mass is from b.
template <typename T>
MORPHAUG_HD T sinkhorn_marginal_error(const T* b_over_q_g, const T* k_u, T scale, const T* b,
                                      int64_t m) {
  T sum = 0;
  for (int64_t j = 0; j < m; ++j) {
    const T d = b_over_q_g[j] * k_u[j] * scale - b[j];
    sum += d * d;
  }
  return sqrt(sum);
}

}  // namespace morphaug
