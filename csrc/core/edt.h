// Exact Euclidean distance transform, one line at a time (shared by CPU and CUDA).
//
// The transform is separable: pass 0 finds the nearest background voxel along
// spatial axis 0, pass d > 0 minimises f(j) + (s_d (i - j))^2 along axis d over
// the squared distances f of pass d - 1 (the lower envelope of parabolas of
// Maurer et al. 2003, as in scipy.ndimage). Arithmetic and tie rule follow
// SciPy's `_VoronoiFT`: the envelope test and the distances are evaluated in
// double in the same order, and the lowest position j wins a tie, so with a
// float64 working type the chosen features are SciPy's, bit for bit. That
// holds on the GPU too: the double arithmetic goes through add_rn / sub_rn /
// mul_rn (common.h), which nvcc cannot contract into fused multiply-adds.
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
// and `next` are scratch for `lanes` positions, `before` for the previous
// background position of every element (element i of lane l at
// i * before_stride + l; P = T with before = out, stride, is exact for lines
// shorter than 2^24, P = int32_t takes a compact buffer that stays in cache).
// Returns whether every line has background.
template <typename T, typename P>
MORPHAUG_HD bool edt_binary_lines(const bool* mask, int64_t n, int64_t stride, int64_t lanes,
                                  double s, T* out, int32_t* arg, P* before,
                                  int64_t before_stride, int32_t* previous, int32_t* next,
                                  bool root) {
  // Rows of `lanes` values; mask bytes read as uint8 and no branches in the
  // lane loops, so that they vectorise.
  const uint8_t* foreground = reinterpret_cast<const uint8_t*>(mask);
  const bool unit = s == 1.0;
  for (int64_t l = 0; l < lanes; ++l) previous[l] = -1;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* __restrict__ m = foreground + i * stride;
    P* b = before + i * before_stride;
    const int32_t at = static_cast<int32_t>(i);
    for (int64_t l = 0; l < lanes; ++l) {
      const int32_t last = previous[l];  // loaded unconditionally: no branch
      previous[l] = m[l] ? last : at;
      b[l] = static_cast<P>(previous[l]);
    }
  }
  for (int64_t l = 0; l < lanes; ++l) next[l] = -1;
  for (int64_t i = n - 1; i >= 0; --i) {
    const uint8_t* __restrict__ m = foreground + i * stride;
    const P* b = before + i * before_stride;
    T* o = out + i * stride;
    const int32_t at = static_cast<int32_t>(i);
    // j: the nearest background (-1 on a line without any); `unit` squares in
    // T, which rounds the exact integer square (< 2^48) once, as double would.
    for (int64_t l = 0; l < lanes; ++l) {
      const int32_t after = next[l];
      const int32_t q = m[l] ? after : at;
      const int32_t p = static_cast<int32_t>(b[l]);
      const int32_t j = (q >= 0) & ((p < 0) | (q - at < at - p)) ? q : p;
      next[l] = q;
      previous[l] = j;
    }
    if (unit) {
      for (int64_t l = 0; l < lanes; ++l) {
        const T t = static_cast<T>(previous[l] - at);
        o[l] = previous[l] < 0 ? static_cast<T>(INFINITY) : t * t;
      }
    } else {
      for (int64_t l = 0; l < lanes; ++l) {
        const double t = mul_rn(static_cast<double>(previous[l] - at), s);
        o[l] = previous[l] < 0 ? static_cast<T>(INFINITY) : static_cast<T>(mul_rn(t, t));
      }
    }
    if (arg) {
      for (int64_t l = 0; l < lanes; ++l) arg[i * stride + l] = previous[l];
    }
    if (root) {
      for (int64_t l = 0; l < lanes; ++l) o[l] = edt_value<T>(static_cast<double>(o[l]), true);
    }
  }
  bool all = true;
  for (int64_t l = 0; l < lanes; ++l) all = all && next[l] >= 0;
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
// height = f(pos) + pos^2, so that its value at i is height + i (i - 2 pos).
// It is strictly lower than the parabola u before it in the hull exactly at
// the i with height - u.height < 2 i (pos - u.pos). I: int64_t in general;
// int32_t when edt_unit_fits_int32 says that every product below fits.
template <typename I>
struct EdtParabola {
  I height;
  int32_t pos;
};

// Whether the envelope of a pass along an axis of `n` voxels may use int32:
// with `bound` >= every finite f + the largest w^2 (so >= every height and
// n^2) and bound < 2^24 (every f an exact integer in float), the products in
// edt_hull_push and edt_fill_unit are below bound * 2 n in magnitude.
MORPHAUG_HD bool edt_unit_fits_int32(int64_t bound, int64_t n) {
  return bound < (int64_t{1} << 24) && bound * 2 * n < (int64_t{1} << 31);
}

// Whether pass d > 0 with unit sampling may use int32: every height f + w^2
// of the pass is at most the sum of the squared sizes of axes 0 .. d.
MORPHAUG_HD bool edt_unit_int32(const Geometry& g, int d) {
  int64_t bound = 0;
  for (int k = 0; k <= d; ++k) bound += g.size[k] * g.size[k];
  return edt_unit_fits_int32(bound, g.size[d]);
}

// Adds the parabola at x of the given height to the hull hull[0 .. top]
// (entries hull_stride apart; v = the top one, which starts to win at
// i > num / (2 gap)), first dropping v while x starts to win no later than v.
template <typename I>
MORPHAUG_HD void edt_hull_push(EdtParabola<I>* hull, int64_t hull_stride, int64_t& top,
                               EdtParabola<I>& v, I& num, I& gap, I x, I height) {
  while (top >= 1 && (height - v.height) * gap < num * (x - v.pos)) {
    v = hull[--top * hull_stride];
    if (top >= 1) {
      const EdtParabola<I> u = hull[(top - 1) * hull_stride];
      num = v.height - u.height;
      gap = v.pos - u.pos;
    }
  }
  num = height - v.height;
  gap = x - v.pos;
  v = EdtParabola<I>{height, static_cast<int32_t>(x)};
  hull[++top * hull_stride] = v;
}

// Walks the hull hull[0 .. top] along i = lo, lo + 1, ...: each i takes the
// first lowest parabola, moving on while the next one in the hull is strictly
// lower at i. Starts increase along the hull, so once it is not, no later one
// is either, and the tie keeps the lower position.
template <typename I>
struct EdtUnitWalk {
  const EdtParabola<I>* hull;
  int64_t hull_stride, top, l;
  EdtParabola<I> p, next;

  MORPHAUG_HD EdtUnitWalk(const EdtParabola<I>* hull, int64_t hull_stride, int64_t top)
      : hull(hull), hull_stride(hull_stride), top(top), l(0), p(hull[0]),
        next(top >= 1 ? hull[hull_stride] : hull[0]) {}

  // The exact integer value at i (i never decreases between calls); p.pos: its position.
  MORPHAUG_HD I at(I i) {
    while (l < top && next.height - p.height < 2 * i * (next.pos - p.pos)) {
      p = next;
      if (++l < top) next = hull[(l + 1) * hull_stride];
    }
    return p.height + i * (i - 2 * p.pos);
  }
};

// Writes positions [lo, hi] from the hull hull[0 .. top] (EdtUnitWalk).
template <typename I, typename T>
MORPHAUG_HD void edt_fill_unit(const EdtParabola<I>* hull, int64_t hull_stride, int64_t top,
                               int64_t lo, int64_t hi, T* out, int64_t stride, int32_t* arg,
                               bool root) {
  EdtUnitWalk<I> walk(hull, hull_stride, top);
  for (int64_t w = lo; w <= hi; ++w) {
    // The exact integer value, rounded once to T (as double would be, then T).
    const T value = static_cast<T>(walk.at(static_cast<I>(w)));
    out[w * stride] = root ? square_root(value) : value;
    if (arg) arg[w * stride] = walk.p.pos;
  }
}

// Pass d > 0 with unit sampling on every axis, where every f is an integer.
// Same contract and choices as edt_envelope_line below, in exact integer
// arithmetic: SciPy's envelope test rewritten as a comparison of where
// parabolas start to win (Felzenszwalb-Huttenlocher, strict so that equal
// starts keep the lower position), and each parabola then fills the range of
// i where it is the first lowest. A background voxel w (f = 0) is strictly
// nearer than anything before it for i >= w, and than anything after it for
// i <= w: positions up to w are filled once w is in the hull, and the hull
// restarts from w alone, so runs of background cost little.
// hull: scratch for n parabolas. All f up to w are read before out is written
// up to w, so out may be f (the CPU passes work in place).
template <typename I, typename T>
MORPHAUG_HD bool edt_envelope_line_unit(const T* f, int64_t f_stride, int64_t n, T* out,
                                        int64_t stride, int32_t* arg, EdtParabola<I>* hull,
                                        int64_t hull_stride, bool root) {
  int64_t top = -1;
  EdtParabola<I> v{0, 0};  // the hull's top
  I num = 0, gap = 0;      // v starts to win at i > num / (2 gap)
  int64_t lo = 0;          // positions before lo are written
  for (int64_t w = 0; w < n; ++w) {
    const T fw = f[w * f_stride];
    if (fw == static_cast<T>(INFINITY)) continue;  // no background yet
    const I x = static_cast<I>(w);
    if (fw != T(0)) {
      edt_hull_push(hull, hull_stride, top, v, num, gap, x, static_cast<I>(fw) + x * x);
      continue;
    }
    if (lo < w) {
      edt_hull_push(hull, hull_stride, top, v, num, gap, x, x * x);
      edt_fill_unit(hull, hull_stride, top, lo, w - 1, out, stride, arg, root);
    }
    out[w * stride] = T(0);
    if (arg) arg[w * stride] = static_cast<int32_t>(w);
    top = 0;
    v = EdtParabola<I>{x * x, static_cast<int32_t>(w)};
    hull[0] = v;
    lo = w + 1;
  }
  if (top < 0) {
    edt_empty_line(n, stride, out, arg);
    return false;
  }
  if (lo < n) edt_fill_unit(hull, hull_stride, top, lo, n - 1, out, stride, arg, root);
  return true;
}

// Adds position w of finite f (fw) to the hull of edt_envelope_line (entries
// hull_pos / hull_f, hull_stride apart, 0 .. top), first dropping the top v
// (between u and w) while its parabola is nowhere strictly lowest.
MORPHAUG_HD void edt_hull_push_real(int32_t* hull_pos, double* hull_f, int64_t hull_stride,
                                    int64_t& top, int32_t w, double fw, double s) {
  while (top >= 1) {
    const int32_t v = hull_pos[top * hull_stride];
    const int32_t u = hull_pos[(top - 1) * hull_stride];
    const double a = mul_rn(static_cast<double>(v - u), s);
    const double b = mul_rn(static_cast<double>(w - v), s);
    const double c = add_rn(a, b);
    const double fv = hull_f[top * hull_stride];
    const double fu = hull_f[(top - 1) * hull_stride];
    // c fv - b fu - a fw - a b c, in SciPy's order, each operation rounded
    const double test = sub_rn(sub_rn(sub_rn(mul_rn(c, fv), mul_rn(b, fu)), mul_rn(a, fw)),
                               mul_rn(mul_rn(a, b), c));
    if (test <= 0.0) break;
    --top;
  }
  ++top;
  hull_pos[top * hull_stride] = w;
  hull_f[top * hull_stride] = fw;
}

// Walks the hull of edt_envelope_line along i = 0, 1, ...: the lowest
// f(j) + (s (i - j))^2, the lower j on a tie, in double as SciPy.
struct EdtRealWalk {
  const int32_t* hull_pos;
  const double* hull_f;
  int64_t hull_stride, top, l;
  double s;
  int32_t j;  // the chosen position after at()
  double fj;

  MORPHAUG_HD EdtRealWalk(const int32_t* hull_pos, const double* hull_f, int64_t hull_stride,
                          int64_t top, double s)
      : hull_pos(hull_pos), hull_f(hull_f), hull_stride(hull_stride), top(top), l(0), s(s),
        j(hull_pos[0]), fj(hull_f[0]) {}

  MORPHAUG_HD double at(int64_t i) {
    double t = mul_rn(static_cast<double>(j - i), s);
    double best = add_rn(fj, mul_rn(t, t));
    while (l < top) {
      const int32_t next = hull_pos[(l + 1) * hull_stride];
      const double fnext = hull_f[(l + 1) * hull_stride];
      t = mul_rn(static_cast<double>(next - i), s);
      const double candidate = add_rn(fnext, mul_rn(t, t));
      if (best <= candidate) break;
      best = candidate;
      j = next;
      fj = fnext;
      ++l;
    }
    return best;
  }
};

// Pass d > 0 on one line: f[i * f_stride] is the squared distance from pass
// d - 1 (+inf where that pass found no background). Writes out[i * stride] =
// min_j f(j) + (s (i - j))^2 and, when arg is not null, the minimising j (the
// lowest on a tie) to arg[i * stride], or -1 on a line with no finite f.
// hull_pos / hull_f (entries hull_stride apart) are scratch for n positions and
// their f. Returns whether some f is finite. Every f is read before out is
// written: out may be f.
template <typename T>
MORPHAUG_HD bool edt_envelope_line(const T* f, int64_t f_stride, int64_t n, double s, T* out,
                                   int64_t stride, int32_t* arg, int32_t* hull_pos,
                                   double* hull_f, int64_t hull_stride, bool root) {
  int64_t top = -1;  // hull entries 0 .. top: the envelope's parabolas, by position
  for (int64_t w = 0; w < n; ++w) {
    const double fw = static_cast<double>(f[w * f_stride]);
    if (fw == static_cast<double>(INFINITY)) continue;  // no background yet
    edt_hull_push_real(hull_pos, hull_f, hull_stride, top, static_cast<int32_t>(w), fw, s);
  }
  if (top < 0) {
    edt_empty_line(n, stride, out, arg);
    return false;
  }
  EdtRealWalk walk(hull_pos, hull_f, hull_stride, top, s);
  for (int64_t i = 0; i < n; ++i) {
    out[i * stride] = edt_value<T>(walk.at(i), root);
    if (arg) arg[i * stride] = walk.j;
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

// edt_gather_indices in place: idx points at coordinate 0 of the line
// (coordinates `plane` apart, elements `stride` apart). The envelope's j is
// non-decreasing along a line (or -1 all along it), so where j(i) > i, j(j(i))
// >= j(i), and where j(i) < i, j(j(i)) <= j(i): the voxels with j > i,
// ascending, then those with j < i, descending, read only coordinates that
// are not rewritten yet.
MORPHAUG_HD void edt_gather_indices_in_place(int32_t* idx, int64_t plane, int64_t stride, int d,
                                             int64_t n) {
  int32_t* chosen = idx + d * plane;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t j = chosen[i * stride];
    if (j <= i) continue;
    for (int k = 0; k < d; ++k) idx[k * plane + i * stride] = idx[k * plane + j * stride];
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    const int32_t j = chosen[i * stride];
    if (j < 0) {
      chosen[i * stride] = 0;
    } else if (j < i) {
      for (int k = 0; k < d; ++k) idx[k * plane + i * stride] = idx[k * plane + j * stride];
    }
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
  // the sum over axes < last, in SciPy's order; each coordinate decoded on its own (no per-axis
  // array: on CUDA it would live in local memory)
  const int64_t row = start / n;
  double fixed = 0.0;
  for (int k = 0; k < last; ++k) {
    int64_t inner = 1;  // rows per step along axis k
    for (int j = k + 1; j < last; ++j) inner *= g.size[j];
    const double t = mul_rn(static_cast<double>(row / inner % g.size[k] + (k == 0)), g.sampling[k]);
    fixed = add_rn(fixed, mul_rn(t, t));
  }
  for (int64_t i = 0; i < n; ++i) {
    const double t = mul_rn(static_cast<double>(i + (last == 0)), g.sampling[last]);
    out[i] = edt_value<T>(add_rn(fixed, mul_rn(t, t)), root);
    if (idx) {
      idx[i] = -1;
      for (int k = 1; k < g.rank; ++k) idx[k * plane + i] = 0;
    }
  }
}

}  // namespace morphaug
