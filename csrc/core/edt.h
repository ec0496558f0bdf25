// Exact Euclidean distance transform, one line at a time (shared by CPU and CUDA).
//
// The transform is separable: pass 0 finds the nearest background voxel along
// spatial axis 0, pass d > 0 minimises f(j) + (s_d (i - j))^2 along axis d over
// the squared distances f of pass d - 1 (the lower envelope of parabolas of
// Maurer et al. 2003, as in scipy.ndimage). Arithmetic and tie rule follow
// SciPy's `_VoronoiFT`: the envelope test and the distances are evaluated in
// double in the same order, and the lowest position j wins a tie, so with a
// float64 working type the chosen features are SciPy's, bit for bit.
#pragma once

#include <cmath>

#include "common.h"

namespace morphaug {

MORPHAUG_HD float square_root(float x) { return sqrtf(x); }
MORPHAUG_HD double square_root(double x) { return sqrt(x); }

// Squared distance as stored, or its square root on the last pass. The root
// is taken in T: for float, sqrtf of the float square equals the float
// rounding of the double root whenever the square is exact in float.
template <typename T>
MORPHAUG_HD T edt_value(double squared, bool root) {
  const T value = static_cast<T>(squared);
  return root ? square_root(value) : value;
}

// Pass 0 on `lanes` neighbouring lines: element i of lane l sits at
// i * stride + l; mask is true on foreground. Writes out = (s (i - j))^2 for the
// nearest background j (the lower j on a tie) and, when arg is not null,
// arg = j; with no background in a line, out = +inf and arg = -1. `previous`
// and `next` are scratch for `lanes` positions; `out` first holds the previous
// background position (exact in float32 for lines shorter than 2^24), and
// `previous` the chosen positions of the current row.
// Returns whether every line has background.
template <typename T>
MORPHAUG_HD bool edt_binary_lines(const bool* mask, int64_t n, int64_t stride, int64_t lanes,
                                  double s, T* out, int32_t* arg, int32_t* previous, int32_t* next,
                                  bool root) {
  // Rows of `lanes` values; mask bytes read as uint8 and no branches in the
  // lane loops, so that they vectorise.
  const uint8_t* foreground = reinterpret_cast<const uint8_t*>(mask);
  for (int64_t l = 0; l < lanes; ++l) previous[l] = -1;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* __restrict__ m = foreground + i * stride;
    T* __restrict__ o = out + i * stride;
    const int32_t at = static_cast<int32_t>(i);
    for (int64_t l = 0; l < lanes; ++l) {
      const int32_t before = previous[l];  // loaded unconditionally: no branch
      previous[l] = m[l] ? before : at;
      o[l] = static_cast<T>(previous[l]);
    }
  }
  for (int64_t l = 0; l < lanes; ++l) next[l] = -1;
  for (int64_t i = n - 1; i >= 0; --i) {
    const uint8_t* __restrict__ m = foreground + i * stride;
    T* __restrict__ o = out + i * stride;
    const int32_t at = static_cast<int32_t>(i);
    for (int64_t l = 0; l < lanes; ++l) {
      const int32_t after = next[l];
      const int32_t q = m[l] ? after : at;
      const int32_t p = static_cast<int32_t>(o[l]);
      const int32_t j = (q >= 0) & ((p < 0) | (q - at < at - p)) ? q : p;
      const double t = static_cast<double>(j - at) * s;
      o[l] = static_cast<T>(t * t);  // lines without background: fixed below
      next[l] = q;
      previous[l] = j;
    }
    if (arg) {
      for (int64_t l = 0; l < lanes; ++l) arg[i * stride + l] = previous[l];
    }
    if (root) {
      for (int64_t l = 0; l < lanes; ++l) o[l] = edt_value<T>(static_cast<double>(o[l]), true);
    }
  }
  bool all = true;
  for (int64_t l = 0; l < lanes; ++l) {
    if (next[l] >= 0) continue;
    all = false;
    for (int64_t i = 0; i < n; ++i) out[i * stride + l] = static_cast<T>(INFINITY);
  }
  return all;
}

// Lines with no finite f after pass d > 0: +inf, and j = -1 for edt_gather_indices.
template <typename T>
MORPHAUG_HD void edt_empty_line(int64_t n, int64_t stride, T* out, int32_t* arg) {
  for (int64_t i = 0; i < n; ++i) {
    out[i * stride] = static_cast<T>(INFINITY);
    if (arg) arg[i * stride] = -1;
  }
}

// A parabola of the lower envelope with unit sampling: position `pos` and
// height = f(pos) + pos^2. It is strictly lower than the parabola u below it
// in the hull from the first i > (height - u.height) / (2 (pos - u.pos)).
struct EdtParabola {
  int64_t height;
  int32_t pos;
};

// The envelope over positions [lo, hi] of a line with unit sampling (see
// edt_envelope_line_unit); returns whether some f there is finite.
template <typename T>
MORPHAUG_HD bool edt_envelope_segment_unit(const T* f, int64_t f_stride, int64_t lo, int64_t hi,
                                           T* out, int64_t stride, int32_t* arg,
                                           EdtParabola* hull, int64_t hull_stride, bool root) {
  int64_t top = -1;
  EdtParabola v{0, 0};       // the hull's top
  int64_t num = 0, gap = 0;  // v starts to win at i > num / (2 gap)
  for (int64_t w = lo; w <= hi; ++w) {
    const T fw = f[w * f_stride];
    if (fw == static_cast<T>(INFINITY)) continue;  // no background yet
    const int64_t height = static_cast<int64_t>(fw) + w * w;
    // Drop v while w starts to win no later than v does.
    while (top >= 1 && (height - v.height) * gap < num * (w - v.pos)) {
      v = hull[--top * hull_stride];
      if (top >= 1) {
        const EdtParabola u = hull[(top - 1) * hull_stride];
        num = v.height - u.height;
        gap = v.pos - u.pos;
      }
    }
    num = height - v.height;
    gap = w - v.pos;
    v = EdtParabola{height, static_cast<int32_t>(w)};
    hull[++top * hull_stride] = v;
  }
  if (top < 0) return false;
  int64_t i = lo;
  EdtParabola p = hull[0];
  for (int64_t l = 0; l <= top; ++l) {
    int64_t end = hi + 1;  // p is the first lowest on [i, end)
    EdtParabola next{0, 0};
    if (l < top) {
      next = hull[(l + 1) * hull_stride];
      const int64_t start = next.height - p.height, den = 2 * static_cast<int64_t>(next.pos - p.pos);
      const int64_t floor = start >= 0 ? start / den : -((den - 1 - start) / den);
      end = floor + 1 < end ? floor + 1 : end;
    }
    const double base = static_cast<double>(p.height - static_cast<int64_t>(p.pos) * p.pos);
    const int64_t from = i;
    for (; i < end; ++i) {
      const double t = static_cast<double>(p.pos - i);
      out[i * stride] = edt_value<T>(base + t * t, root);
    }
    if (arg) {
      for (int64_t at = from; at < end; ++at) arg[at * stride] = p.pos;
    }
    p = next;
  }
  return true;
}

// Pass d > 0 with unit sampling on every axis, where every f is an integer.
// Same contract and choices as edt_envelope_line below, in exact integer
// arithmetic: SciPy's envelope test rewritten as a comparison of where
// parabolas start to win (Felzenszwalb-Huttenlocher, strict so that equal
// starts keep the lower position), and each parabola then fills the range of
// i where it is the first lowest. A background voxel (f = 0) is strictly
// nearer than anything beyond it, so the line splits into independent
// segments between background voxels, and runs of background cost nothing.
// hull: scratch for n parabolas.
template <typename T>
MORPHAUG_HD bool edt_envelope_line_unit(const T* f, int64_t f_stride, int64_t n, T* out,
                                        int64_t stride, int32_t* arg, EdtParabola* hull,
                                        int64_t hull_stride, bool root) {
  bool found = false;
  int64_t lo = 0;
  while (lo < n) {
    if (f[lo * f_stride] == T(0) && (lo + 1 == n || f[(lo + 1) * f_stride] == T(0))) {
      out[lo * stride] = T(0);  // background
      if (arg) arg[lo * stride] = static_cast<int32_t>(lo);
      found = true;
      ++lo;
      continue;
    }
    int64_t hi = lo + 1;  // the segment runs to the next background voxel or the line's end
    while (hi < n && f[hi * f_stride] != T(0)) ++hi;
    if (hi == n) hi = n - 1;
    found = edt_envelope_segment_unit(f, f_stride, lo, hi, out, stride, arg, hull, hull_stride,
                                      root) || found;
    lo = hi < n - 1 ? hi : n;  // a background voxel at hi starts the next segment
  }
  if (!found) edt_empty_line(n, stride, out, arg);
  return found;
}

// Pass d > 0 on one line: f[i * f_stride] is the squared distance from pass
// d - 1 (+inf where that pass found no background). Writes out[i * stride] =
// min_j f(j) + (s (i - j))^2 and, when arg is not null, the minimising j (the
// lowest on a tie) to arg[i * stride], or -1 on a line with no finite f.
// hull_pos / hull_f (entries hull_stride apart) are scratch for n positions and
// their f. Returns whether some f is finite.
template <typename T>
MORPHAUG_HD bool edt_envelope_line(const T* f, int64_t f_stride, int64_t n, double s, T* out,
                                   int64_t stride, int32_t* arg, int32_t* hull_pos,
                                   double* hull_f, int64_t hull_stride, bool root) {
  int64_t top = -1;  // hull entries 0 .. top: the envelope's parabolas, by position
  for (int64_t w = 0; w < n; ++w) {
    const double fw = static_cast<double>(f[w * f_stride]);
    if (fw == static_cast<double>(INFINITY)) continue;  // no background yet
    // Drop v (between u and w) while its parabola is nowhere strictly lowest.
    while (top >= 1) {
      const int32_t v = hull_pos[top * hull_stride];
      const int32_t u = hull_pos[(top - 1) * hull_stride];
      const double a = static_cast<double>(v - u) * s;
      const double b = static_cast<double>(w - v) * s;
      const double c = a + b;
      const double fv = hull_f[top * hull_stride];
      const double fu = hull_f[(top - 1) * hull_stride];
      if (c * fv - b * fu - a * fw - a * b * c <= 0.0) break;
      --top;
    }
    ++top;
    hull_pos[top * hull_stride] = static_cast<int32_t>(w);
    hull_f[top * hull_stride] = fw;
  }
  if (top < 0) {
    edt_empty_line(n, stride, out, arg);
    return false;
  }
  int64_t l = 0;
  int32_t j = hull_pos[0];
  double fj = hull_f[0];
  for (int64_t i = 0; i < n; ++i) {
    double t = static_cast<double>(j - i) * s;
    double best = fj + t * t;
    while (l < top) {
      const int32_t next = hull_pos[(l + 1) * hull_stride];
      const double fnext = hull_f[(l + 1) * hull_stride];
      t = static_cast<double>(next - i) * s;
      const double candidate = fnext + t * t;
      if (best <= candidate) break;
      best = candidate;
      j = next;
      fj = fnext;
      ++l;
    }
    out[i * stride] = edt_value<T>(best, root);
    if (arg) arg[i * stride] = j;
  }
  return true;
}

// Feature coordinates after pass d > 0. idx_in / idx_out point at coordinate
// 0 of the line in index arrays whose coordinates are `*_plane` elements apart
// and whose elements are `*_stride` apart; idx_out's coordinate d holds the j
// chosen by the envelope. The voxel takes the coordinates < d of the feature
// of j (its own where j = -1), and coordinate d = j (0 where j = -1, as SciPy
// leaves it).
MORPHAUG_HD void edt_gather_indices(const int32_t* idx_in, int64_t in_plane, int64_t in_stride,
                                    int32_t* idx_out, int64_t out_plane, int64_t out_stride, int d,
                                    int64_t n) {
  int32_t* chosen = idx_out + d * out_plane;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t j = chosen[i * out_stride];
    const int64_t source = (j >= 0 ? j : i) * in_stride;
    for (int k = 0; k < d; ++k) {
      idx_out[k * out_plane + i * out_stride] = idx_in[k * in_plane + source];
    }
    if (j < 0) chosen[i * out_stride] = 0;
  }
}

// SciPy's answer for a slice with no background at all: every voxel measures
// to the feature (-1, 0, ..., 0). The line runs along the last spatial axis
// from element `start` of a contiguous (B, C, *spatial) tensor; idx (coordinate
// 0 of the line in the index tensor, or null) gets the feature.
template <typename T>
MORPHAUG_HD void edt_no_background_line(const Geometry& g, int64_t start, T* out, int32_t* idx,
                                        int64_t plane, bool root) {
  const int last = g.rank - 1;
  const int64_t n = g.size[last];
  double fixed = 0.0;  // sum over axes < last, in SciPy's order
  int64_t rest = start / n;
  double axis_terms[kMaxRank];
  for (int k = last - 1; k >= 0; --k) {
    const int64_t x = rest % g.size[k];
    rest /= g.size[k];
    const double t = static_cast<double>(x + (k == 0)) * g.sampling[k];
    axis_terms[k] = t * t;
  }
  for (int k = 0; k < last; ++k) fixed += axis_terms[k];
  for (int64_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i + (last == 0)) * g.sampling[last];
    out[i] = edt_value<T>(fixed + t * t, root);
    if (idx) {
      idx[i] = -1;
      for (int k = 1; k < g.rank; ++k) idx[k * plane + i] = 0;
    }
  }
}

}  // namespace morphaug
