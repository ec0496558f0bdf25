// The loops of the CPU grey_footprint (grey_footprint.cpp), for
// grey_passes_*.cpp to compile per dtype (grey_passes.h): a flat footprint as
// runs along the last axis (FootprintSetup, grey_setup.h).
//
// Each task filters a block of planes (positions along axis 0) of one slice,
// for a tile of rows along axis 1. It keeps the k0 source planes the current
// output plane reads in a ring (sized to stay in L2): for every row of a
// source plane that the tile reads, the running extrema of the
// border-extended line for each distinct run width (read straight from the
// line while the widths add up to at most 8; else a ladder of windows of 1,
// 2, 4, ... values, then two overlapping windows per width). An output line
// is then the extremum of one shifted row of the ring per run: a radius-3 ball
// reads 37 rows instead of its 123 positions. Each ring row notes whether it
// holds a NaN; rows without take plain min / max instructions.
#pragma once

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "../core/grey.h"
#include "clones.h"
#include "grey_passes.h"
#include "grey_rows.h"
#include "parallel.h"

namespace morphaug {
namespace {

// The running extrema of one extended line of e values for each width:
// block[slot * e + j] = extremum of line[j, j + widths[slot]). `ladder`
// holds the line at level 0 and gets windows of 2, 4, ... values above it.
template <typename T, bool Max, bool Nan>
inline MORPHAUG_CLONE_INLINE void run_extrema(T* ladder, int64_t e, const std::vector<int64_t>& widths,
                                              T* block) {
  int64_t span = 1;
  for (T* level = ladder; 2 * span <= widths.back(); level += e, span *= 2) {
    pair_extrema<T, Max, Nan>(level, level + e, e - 2 * span + 1, span);
  }
  for (size_t slot = 0; slot < widths.size(); ++slot) {
    const int64_t w = widths[slot];
    int64_t level = 0;
    while (int64_t{2} << level <= w) ++level;
    const T* windows = ladder + level * e;
    const int64_t count = e - w + 1;
    if (w == int64_t{1} << level) {
      std::copy(windows, windows + count, block + slot * e);
    } else {
      pair_extrema<T, Max, Nan>(windows, block + slot * e, count, w - (int64_t{1} << level));
    }
  }
}

// A line of the last axis extended by its border: e = n + k - 1 positions,
// `left` of them before the line; source[j] is the input position that
// extended position j reads, -1 for cval (border_index, worked out once).
struct ExtendedLine {
  int64_t n, e, left;
  std::vector<int64_t> source;
  bool reads_cval;

  ExtendedLine(int64_t n, int64_t k, int64_t left, int mode)
      : n(n), e(n + k - 1), left(left), source(e), reads_cval(false) {
    for (int64_t j = 0; j < e; ++j) {
      source[j] = border_index(j - left, n, mode);
      reads_cval = reads_cval || source[j] < 0;
    }
  }
};

// Runs read straight from the line while their distinct widths add up to
// at most this; beyond, the ladder's shared levels read less.
constexpr int64_t kDirectWidth = 8;

// block[j] = extremum of the extended line over [j, j + w), j in [0, e - w + 1),
// read straight from the input line of n values (`left` values before it in
// the extended line): no copy, and no pass that reads what the last one
// has just stored. The windows that reach into the border read a copy of
// the extended values they cover, made in `edge` (e values).
template <typename T, bool Max, bool Nan>
inline MORPHAUG_CLONE_INLINE void direct_windows(const T* line, const ExtendedLine& x, T cval,
                                                 int64_t w, T* block, T* edge) {
  const int64_t n = x.n, e = x.e, left = x.left;
  const auto border_windows = [&](int64_t from, int64_t to) MORPHAUG_CLONE_INLINE {
    for (int64_t j = from; j < std::min(e, to + w - 1); ++j) {
      edge[j] = x.source[j] < 0 ? cval : line[x.source[j]];
    }
    for (int64_t j = from; j < to; ++j) {
      T v = edge[j];
      for (int64_t d = 1; d < w; ++d) v = pick<T, Max, Nan>(v, edge[j + d]);
      block[j] = v;
    }
  };
  // Windows inside the line start at j in [left, n - w + left].
  const int64_t count = e - w + 1, lo = std::min(left, count);
  const int64_t hi = std::max(lo, std::min(count, n - w + left + 1));
  border_windows(0, lo);
  const T* rows[kDirectWidth] = {};
  for (int64_t d = 0; d < w; ++d) rows[d] = line + (lo - left) + d;
  if (hi > lo) combine_rows<T, Max, Nan>(rows, w, block + lo, hi - lo);
  border_windows(hi, count);
}

// The running extrema of the input line of n values extended by its border
// (`left` values before it, e in all) into `block`: directly while the
// widths add up to at most kDirectWidth, else on the ladder (the extended
// line at its level 0); returns whether the extended line holds a NaN.
template <typename T, bool Max>
MORPHAUG_CPU_CLONES bool row_extrema(const T* line, const ExtendedLine& x, T cval, T* ladder,
                                     const std::vector<int64_t>& widths, T* block) {
  const int64_t n = x.n, e = x.e, left = x.left;
  if (std::accumulate(widths.begin(), widths.end(), int64_t{0}) <= kDirectWidth) {
    const bool nan = has_nan(line, n) || (x.reads_cval && has_nan(&cval, 1));
    for (size_t slot = 0; slot < widths.size(); ++slot) {
      if constexpr (kMayBeNan<T>) {
        if (nan) {
          direct_windows<T, Max, true>(line, x, cval, widths[slot], block + slot * e, ladder);
          continue;
        }
      }
      direct_windows<T, Max, false>(line, x, cval, widths[slot], block + slot * e, ladder);
    }
    return nan;
  }
  const auto border = [&](int64_t j) MORPHAUG_CLONE_INLINE {
    ladder[j] = x.source[j] < 0 ? cval : line[x.source[j]];
  };
  for (int64_t j = 0; j < left; ++j) border(j);
  std::copy(line, line + n, ladder + left);
  for (int64_t j = left + n; j < e; ++j) border(j);
  const bool nan = has_nan(ladder, e);
  if constexpr (kMayBeNan<T>) {
    if (nan) {
      run_extrema<T, Max, true>(ladder, e, widths, block);
      return true;
    }
  }
  run_extrema<T, Max, false>(ladder, e, widths, block);
  return nan;
}

// out[j] = extremum over the sources of source[j], j in [0, n); `nan`:
// whether a source holds a NaN.
template <typename T, bool Max>
MORPHAUG_CPU_CLONES void combine_runs(const T* const* sources, int64_t count, T* out, int64_t n,
                                      bool nan) {
  if constexpr (kMayBeNan<T>) {
    if (nan) return combine_rows<T, Max, true>(sources, count, out, n);
  }
  combine_rows<T, Max, false>(sources, count, out, n);
}

constexpr int64_t kRingBytes = 256 << 10;  // the ring of a task, to stay in L2

template <typename T, bool Max>
void footprint_filter(const T* in, T* out, int64_t slices, const FootprintSetup& f, T cval) {
  const int axes = static_cast<int>(f.size.size());
  const int last = axes - 1;
  const int64_t n = f.size[last], e = n + f.k[last] - 1, n0 = f.size[0], k0 = f.k[0];
  const ExtendedLine extended(n, f.k[last], f.left[last], f.mode[last]);
  const int64_t block = static_cast<int64_t>(f.widths.size()) * e;  // one extended row
  // Middle axes 2 .. last - 1: output rows and extended rows per position on axis 1.
  int64_t rows_after = 1, ext_after = 1;
  for (int d = 2; d < last; ++d) {
    rows_after *= f.size[d];
    ext_after *= f.size[d] + f.k[d] - 1;
  }
  // Axis 1 (a middle axis from rank 3) comes in tiles of output rows, so that
  // the ring fits kRingBytes; the k1 - 1 extra rows of a tile cost some more
  // running extrema.
  const bool tiled = last >= 2;
  const int64_t n1 = tiled ? f.size[1] : 1, k1 = tiled ? f.k[1] : 1;
  const int64_t row_bytes = k0 * ext_after * block * static_cast<int64_t>(sizeof(T));
  const int64_t tile = std::min(n1, std::max(k1, kRingBytes / row_bytes - (k1 - 1)));
  const int64_t tiles = (n1 + tile - 1) / tile;
  const int64_t plane_rows = (tile + k1 - 1) * ext_after, plane = plane_rows * block;
  int levels = 1;
  while (int64_t{2} << (levels - 1) <= f.widths.back()) ++levels;
  // Blocks of planes per task, the blocks of a (slice, tile) consecutive
  // tasks: a thread's range of tasks keeps its ring from one block to the
  // next, and refills the k0 - 1 planes read before a block only where its
  // range or the (slice, tile) starts.
  const int64_t per_task = std::max<int64_t>(1, 4 * (k0 - 1));
  const int64_t blocks = (n0 + per_task - 1) / per_task;
  const int64_t rows = n1 * rows_after, slice_numel = n0 * rows * n;
  const bool cval_nan = has_nan(&cval, 1);

  std::vector<int64_t> run_start;  // of each run within its ring row
  for (const FootprintRun& run : f.runs) run_start.push_back(run.slot * e + run.start);

  const int64_t task_work = slice_numel / (blocks * tiles) * static_cast<int64_t>(f.runs.size());
  parallel_over(slices * tiles * blocks, task_work, [&](int64_t begin, int64_t end) {
    std::unique_ptr<T[]> ring(new T[k0 * plane]), ladder(new T[levels * e]);
    std::unique_ptr<bool[]> ring_nan(new bool[k0 * plane_rows]);  // per ring row
    std::vector<const T*> sources(f.runs.size());
    std::vector<int64_t> run_row(f.runs.size());
    int64_t held = -1;  // (slice, tile) whose planes the ring holds up to plane `next` + k0 - 2
    int64_t next = -1;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t slice = task / (tiles * blocks), slice_tile = task / blocks;
      const T* src = in + slice * slice_numel;
      T* dst = out + slice * slice_numel;
      const int64_t first = task % blocks * per_task, stop = std::min(n0, first + per_task);
      const int64_t t0 = slice_tile % tiles * tile, tile_rows = std::min(tile, n1 - t0);

      // Input row (within a plane) of the extended position e1 on axis 1 and
      // `rest` over the later middle axes, or -1 (cval).
      auto input_row = [&](int64_t e1, int64_t rest) {
        int64_t row = 0, stride = 1;
        for (int d = last - 1; d >= 2; --d) {
          const int64_t extent = f.size[d] + f.k[d] - 1;
          const int64_t i = border_index(rest % extent - f.left[d], f.size[d], f.mode[d]);
          if (i < 0) return int64_t{-1};
          row += i * stride;
          rest /= extent;
          stride *= f.size[d];
        }
        const int64_t i1 = tiled ? border_index(e1 - f.left[1], n1, f.mode[1]) : 0;
        return i1 < 0 ? -1 : i1 * rows_after + row;
      };

      // The extended plane at position p along axis 0 into ring slot p % k0.
      auto fill_plane = [&](int64_t p) {
        T* target = ring.get() + p % k0 * plane;
        bool* nan = ring_nan.get() + p % k0 * plane_rows;
        const int64_t i0 = border_index(p - f.left[0], n0, f.mode[0]);
        if (i0 < 0) {
          std::fill(target, target + plane, cval);
          return void(std::fill(nan, nan + plane_rows, cval_nan));
        }
        for (int64_t a = 0; a < tile_rows + k1 - 1; ++a) {
          for (int64_t r = 0; r < ext_after; ++r, target += block, ++nan) {
            const int64_t row = input_row(t0 + a, r);
            if (row < 0) {
              std::fill(target, target + block, cval);
              *nan = cval_nan;
            } else {
              *nan = row_extrema<T, Max>(src + (i0 * rows + row) * n, extended, cval, ladder.get(),
                                         f.widths, target);
            }
          }
        }
      };

      if (slice_tile != held || first != next) {
        for (int64_t p = first; p < first + k0 - 1; ++p) fill_plane(p);
      }
      for (int64_t x0 = first; x0 < stop; ++x0) {
        fill_plane(x0 + k0 - 1);
        const int64_t slot0 = x0 % k0;
        for (size_t r = 0; r < f.runs.size(); ++r) {  // the ring row of each run at ext = 0
          const int64_t slot = slot0 + f.runs[r].plane;
          run_row[r] = (slot < k0 ? slot : slot - k0) * plane_rows + f.runs[r].row;
        }
        for (int64_t a = 0; a < tile_rows; ++a) {
          for (int64_t q = 0; q < rows_after; ++q) {
            // Output row (t0 + a, q) as an extended row of the ring plane.
            int64_t rest = q, ext = a * ext_after, stride = 1;
            for (int d = last - 1; d >= 2; --d) {
              ext += rest % f.size[d] * stride;
              rest /= f.size[d];
              stride *= f.size[d] + f.k[d] - 1;
            }
            bool nan = false;
            for (size_t r = 0; r < f.runs.size(); ++r) {
              const int64_t ring_row = run_row[r] + ext;
              sources[r] = ring.get() + ring_row * block + run_start[r];
              nan = nan || ring_nan[ring_row];
            }
            T* line = dst + (x0 * rows + (t0 + a) * rows_after + q) * n;
            combine_runs<T, Max>(sources.data(), static_cast<int64_t>(sources.size()), line, n, nan);
          }
        }
      }
      held = slice_tile;
      next = stop;
    }
  });
}

}  // namespace
}  // namespace morphaug

// The grey_footprint pass of grey_passes.h for the type T.
#define MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(T)                                                     \
  void grey_footprint_pass(const T* in, T* out, int64_t slices, const FootprintSetup& f, T cval,   \
                           bool maximum) {                                                         \
    if (maximum) {                                                                                 \
      footprint_filter<T, true>(in, out, slices, f, cval);                                         \
    } else {                                                                                       \
      footprint_filter<T, false>(in, out, slices, f, cval);                                        \
    }                                                                                              \
  }
