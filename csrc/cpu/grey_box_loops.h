// The loops of the CPU grey_box (grey.cpp), for grey_passes_*.cpp to compile
// per dtype (grey_passes.h).
//
// The trailing spatial axes of the box (the last one, and up to two before
// it whose extents are at most kDirect) take one fused pass (fused_pass):
// the input is read and the output written once, and the work in between
// stays in cache. A task filters a tile of rows of a block of planes: each
// source plane's rows are first filtered along the last axis, then along the
// rows (into one of kc planes kept in a ring), and each output plane is the
// extremum of kc ring planes. Every step is the extremum of a few whole
// shifted ranges of values (combine_rows), however many rows they span: no
// step pays per row, but the fix-up of the values near each row's ends.
// Each axis before them takes a pass of its own, along which an output row
// (a row of the later axes) is the extremum of whole input rows, in tiles of
// neighbouring lanes: directly for extents up to kDirect, beyond that by van
// Herk / Gil-Werman (core/grey.h) on a packed copy of the tile, which keeps
// its working set in cache whatever the stride between rows.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "../core/grey.h"
#include "clones.h"
#include "grey_passes.h"
#include "grey_rows.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kTileBytes = 4096;        // lanes of a direct tile
constexpr int64_t kPackBytes = 256 << 10;  // the two packed copies of a van Herk tile
constexpr int64_t kFusedBytes = 256 << 10;  // the buffers of a fused task

// Output rows i in [0, n) of a tile of `lanes` neighbouring lanes (rows
// `stride` apart): the extremum of the k input rows of its window.
template <typename T, bool Max>
MORPHAUG_CPU_CLONES void direct_tile(const T* in, T* out, int64_t n, int64_t stride, int64_t lanes,
                                     const BoxAxis& a, const T* fill, const T** rows) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < a.k; ++d) {
      const int64_t source = border_index(i + d - a.left, n, a.mode);
      rows[d] = source < 0 ? fill : in + source * stride;
    }
    combine_rows<T, Max, true>(rows, a.k, out + i * stride, lanes);
  }
}

// The same by van Herk / Gil-Werman lines over a packed copy of the tile
// (`packed`: 2 * n * lanes values; carry and fill: scratch of `lanes`).
template <typename T, bool Max>
MORPHAUG_CPU_CLONES void van_herk_tile(const T* in, T* out, int64_t n, int64_t stride, int64_t lanes,
                                       const BoxAxis& a, T cval, T* packed, T* carry, T* fill) {
  T* packed_out = packed + n * lanes;
  for (int64_t i = 0; i < n; ++i) std::copy(in + i * stride, in + i * stride + lanes, packed + i * lanes);
  box_lines<T, Max>(packed, packed_out, n, lanes, lanes, a.k, a.left, a.mode, cval, carry, fill);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(packed_out + i * lanes, packed_out + (i + 1) * lanes, out + i * stride);
  }
}

// One pass along the axis of `lines`, whose rows hold `lines.stride` lanes.
template <typename T, bool Max>
void strided_pass(const T* in, T* out, const Lines& lines, const BoxAxis& a, T cval) {
  const int64_t n = lines.length, stride = lines.stride, bytes = sizeof(T);
  const bool direct = a.k <= kDirect;
  const int64_t width = std::max<int64_t>(
      1, std::min(stride, direct ? kTileBytes / bytes : kPackBytes / (2 * n * bytes)));
  const int64_t per_outer = (stride + width - 1) / width;
  parallel_over(lines.count / stride * per_outer, n * width * (direct ? a.k : 3),
                [&](int64_t begin, int64_t end) {
    std::unique_ptr<T[]> fill(new T[width]), carry(new T[width]);  // not vector<bool>
    std::unique_ptr<T[]> packed(new T[direct ? 0 : 2 * n * width]);
    std::vector<const T*> rows(a.k);
    std::fill(fill.get(), fill.get() + width, cval);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t outer = task / per_outer, first = task % per_outer * width;
      const int64_t lanes = std::min(width, stride - first), o = outer * n * stride + first;
      if (direct) {
        direct_tile<T, Max>(in + o, out + o, n, stride, lanes, a, fill.get(), rows.data());
      } else {
        van_herk_tile<T, Max>(in + o, out + o, n, stride, lanes, a, cval, packed.get(), carry.get(),
                              fill.get());
      }
    }
  });
}

// out[r * n + j] = extremum of row r of `rows` (count rows of n values)
// over the window [j - a.left, j - a.left + a.k), extended by the border.
// Up to kDirect values, the windows inside the rows are one range of shifted
// reads, and the k - 1 values near the ends of each row are then recomputed
// from the border. Wider, each row is extended by its border into `ladder`
// (scratch for 2 (n + k - 1) values), whose windows of 2, 4, ... values give
// each window as two overlapping ones.
template <typename T, bool Max, bool Nan>
MORPHAUG_CPU_CLONES void row_windows(const T* rows, T* out, int64_t count, int64_t n,
                                     const BoxAxis& a, T cval, T* ladder) {
  const int64_t k = a.k, left = a.left;
  if (k == 1) {
    std::copy(rows, rows + count * n, out);
    return;
  }
  if (k > kDirect) {
    const int64_t e = n + k - 1;
    for (int64_t r = 0; r < count; ++r) {
      T *level = ladder, *next = ladder + e;  // windows of `span` values from each position
      const T* row = rows + r * n;
      const auto border = [&](int64_t j) MORPHAUG_CLONE_INLINE {
        const int64_t source = border_index(j - left, n, a.mode);
        level[j] = source < 0 ? cval : row[source];
      };
      for (int64_t j = 0; j < left; ++j) border(j);
      std::copy(row, row + n, level + left);
      for (int64_t j = left + n; j < e; ++j) border(j);
      int64_t span = 1;
      for (; 2 * span <= k; span *= 2, std::swap(level, next)) {
        pair_extrema<T, Max, Nan>(level, next, e - 2 * span + 1, span);
      }
      pair_extrema<T, Max, Nan>(level, out + r * n, n, k - span);
    }
    return;
  }
  if (n > k - 1) {
    const T* shifted[kDirect];
    for (int64_t d = 0; d < k; ++d) shifted[d] = rows + d;
    combine_rows<T, Max, Nan>(shifted, k, out + left, count * n - (k - 1));
  }
  // Outputs [0, lo) and [hi, n) of each row, from a copy of the extended
  // values their windows read.
  const int64_t lo = std::min(left, n), hi = std::max(lo, n - (k - 1 - left));
  T edge[2 * kDirect];
  for (int64_t r = 0; r < count; ++r) {
    const T* row = rows + r * n;
    T* row_out = out + r * n;
    const auto ends = [&](int64_t from, int64_t to) MORPHAUG_CLONE_INLINE {
      if (from == to) return;
      for (int64_t i = 0; i < to - from + k - 1; ++i) {
        const int64_t source = border_index(from + i - left, n, a.mode);
        edge[i] = source < 0 ? cval : row[source];
      }
      for (int64_t j = from; j < to; ++j) {
        T v = edge[j - from];
        for (int64_t d = 1; d < k; ++d) v = pick<T, Max, Nan>(v, edge[j - from + d]);
        row_out[j] = v;
      }
    };
    ends(0, lo);
    ends(hi, n);
  }
}

// combine_rows (grey_rows.h), NaN-aware when `nan`.
template <typename T, bool Max>
MORPHAUG_CPU_CLONES void extrema(const T* const* rows, int64_t count, T* out, int64_t n, bool nan) {
  if constexpr (kMayBeNan<T>) {
    if (nan) return combine_rows<T, Max, true>(rows, count, out, n);
  }
  combine_rows<T, Max, false>(rows, count, out, n);
}

// The fused pass over the box f of contiguous `in` into `out` (not `in`).
template <typename T, bool Max>
void fused_pass(const T* in, T* out, const FusedBox& f, T cval) {
  const int64_t na = f.na, nb = f.nb, nc = f.nc, plane = nb * na;
  const int64_t ka = f.a.k, kb = f.b.k, kc = f.c.k;
  const bool cval_nan = has_nan(&cval, 1);
  // Buffers per row of a tile: the row-filtered rows (kb > 1), the ring and a
  // plane of cval (kc > 1); without, tiles of the same size share the work.
  const int64_t buffered = std::max<int64_t>(1, (kb > 1 ? 1 : 0) + (kc > 1 ? kc + 1 : 0));
  const int64_t tile =
      std::clamp<int64_t>(kFusedBytes / (buffered * na * static_cast<int64_t>(sizeof(T))), 1, nb);
  const int64_t tiles = (nb + tile - 1) / tile;
  const int64_t block = kc > 1 ? std::max<int64_t>(16, 8 * (kc - 1)) : 1;  // planes of a task
  const int64_t blocks = (nc + block - 1) / block;
  const int64_t steps = (ka > 1) + (kb > 1) + (kc > 1);
  parallel_over(f.outer * blocks * tiles, std::min(block, nc) * tile * na * steps,
                [&](int64_t begin, int64_t end) {
    const int64_t width = tile * na;
    std::unique_ptr<T[]> rowed(new T[kb > 1 ? width + (kb - 1) * na : 0]);
    std::unique_ptr<T[]> ring(new T[kc > 1 ? (kc + 1) * width : 0]);  // kc slots, then cval
    std::unique_ptr<T[]> ladder(new T[ka > kDirect ? 2 * (na + ka - 1) : 0]);
    if (kc > 1) std::fill(ring.get() + kc * width, ring.get() + (kc + 1) * width, cval);
    std::vector<int64_t> held(kc);   // the source plane in each ring slot, or -2
    std::vector<char> held_nan(kc);  // whether it holds a NaN
    std::vector<int64_t> needed(kc);
    std::vector<const T*> row_sources(kb), plane_sources(kc);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / (blocks * tiles), t0 = task % tiles * tile;
      const int64_t z0 = task / tiles % blocks * block, z1 = std::min(nc, z0 + block);
      const int64_t rows = std::min(tile, nb - t0), count = rows * na;
      const T* src = in + o * nc * plane;
      T* dst = out + o * nc * plane;

      // `run` consecutive rows from `first` filtered along the last axis into
      // `into`; returns whether a NaN was read.
      auto last_axis = [&](const T* first, int64_t run, T* into) {
        const bool nan = has_nan(first, run * na) || (cval_nan && f.a.mode == kConstant);
        if constexpr (kMayBeNan<T>) {
          if (nan) {
            row_windows<T, Max, true>(first, into, run, na, f.a, cval, ladder.get());
            return true;
          }
        }
        row_windows<T, Max, false>(first, into, run, na, f.a, cval, ladder.get());
        return nan;
      };

      // Rows [t0, t0 + rows) of source plane p filtered along the last two
      // axes into `target`; returns whether a NaN was read.
      auto filter_plane = [&](int64_t p, T* target) {
        const T* source = src + p * plane;
        if (kb == 1) return last_axis(source + t0 * na, rows, target);
        // Extended row e reads source row border_index(t0 + e - left): runs of
        // consecutive source rows are filtered at once.
        const int64_t extended = rows + kb - 1;
        bool nan = false;
        for (int64_t e = 0; e < extended;) {
          const int64_t row = border_index(t0 + e - f.b.left, nb, f.b.mode);
          T* into = rowed.get() + e * na;
          int64_t run = 1;
          if (row < 0) {
            std::fill(into, into + na, cval);
            nan = nan || cval_nan;
          } else {
            while (e + run < extended &&
                   border_index(t0 + e + run - f.b.left, nb, f.b.mode) == row + run) {
              ++run;
            }
            nan = last_axis(source + row * na, run, into) || nan;
          }
          e += run;
        }
        for (int64_t d = 0; d < kb; ++d) row_sources[d] = rowed.get() + d * na;
        extrema<T, Max>(row_sources.data(), kb, target, count, nan);
        return nan;
      };

      std::fill(held.begin(), held.end(), int64_t{-2});
      for (int64_t z = z0; z < z1; ++z) {
        T* target = dst + (z * nb + t0) * na;
        if (kc == 1) {
          filter_plane(z, target);
          continue;
        }
        for (int64_t d = 0; d < kc; ++d) needed[d] = border_index(z + d - f.c.left, nc, f.c.mode);
        bool nan = false;
        for (int64_t d = 0; d < kc; ++d) {
          if (needed[d] < 0) {
            plane_sources[d] = ring.get() + kc * width;
            nan = nan || cval_nan;
            continue;
          }
          int64_t slot = std::find(held.begin(), held.end(), needed[d]) - held.begin();
          if (slot == kc) {  // into a slot whose plane this output plane does not read
            slot = std::find_if(held.begin(), held.end(), [&](int64_t h) {
                     return std::find(needed.begin(), needed.end(), h) == needed.end();
                   }) - held.begin();
            held[slot] = needed[d];
            held_nan[slot] = filter_plane(needed[d], ring.get() + slot * width);
          }
          plane_sources[d] = ring.get() + slot * width;
          nan = nan || held_nan[slot];
        }
        extrema<T, Max>(plane_sources.data(), kc, target, count, nan);
      }
    }
  });
}

}  // namespace
}  // namespace morphaug

// The grey_box passes of grey_passes.h for the type T.
#define MORPHAUG_DEFINE_GREY_BOX_PASSES(T)                                                          \
  void grey_box_strided_pass(const T* in, T* out, const Lines& lines, const BoxAxis& a, T cval,    \
                             bool maximum) {                                                       \
    if (maximum) {                                                                                 \
      strided_pass<T, true>(in, out, lines, a, cval);                                              \
    } else {                                                                                       \
      strided_pass<T, false>(in, out, lines, a, cval);                                             \
    }                                                                                              \
  }                                                                                                \
  void grey_box_fused_pass(const T* in, T* out, const FusedBox& f, T cval, bool maximum) {         \
    if (maximum) {                                                                                 \
      fused_pass<T, true>(in, out, f, cval);                                                       \
    } else {                                                                                       \
      fused_pass<T, false>(in, out, f, cval);                                                      \
    }                                                                                              \
  }
