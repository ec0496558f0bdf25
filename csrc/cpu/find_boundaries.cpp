// CPU launcher of morphaug::find_boundaries (core/find_boundaries.h), a row
// (line along the last axis) of the output at a time, in segments of at most
// kSegment voxels: each neighbour row is compared with the row, or folded
// into maxima and minima, at one shift over the segment (loops compiled for
// AVX2 too, clones.h).
//
// A row whose neighbour rows boundary_stored keeps (every row below 64 bits;
// in 64 bits each row is checked once) compares values; the others reduce rows into maxima and minima as
// SciPy's passes do (row_extreme), and so does outer's D_S(x) != E_S(raised).
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "../boundaries_setup.h"
#include "clones.h"
#include "fresh.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kSegment = 2048;

template <typename T>
MORPHAUG_CPU_CLONES void mark_differing(const T* row, const T* other, int64_t count, uint8_t* differs) {
  for (int64_t j = 0; j < count; ++j) differs[j] |= other[j] != row[j];
}

template <typename T>
MORPHAUG_CPU_CLONES bool all_kept(const T* v, int64_t count) {
  bool all = true;
  for (int64_t j = 0; j < count; ++j) all &= boundary_kept(v[j]);
  return all;
}

// acc = the maximum (Max) or minimum of acc and source, the background of
// source read as the dtype's largest value where `raise`.
template <bool Max, typename T>
MORPHAUG_CPU_CLONES void fold(T* acc, const T* source, int64_t count, bool raise, T background) {
  constexpr T kLargest = std::numeric_limits<T>::max();
  for (int64_t j = 0; j < count; ++j) {
    const T value = raise && source[j] == background ? kLargest : source[j];
    acc[j] = Max ? std::max(acc[j], value) : std::min(acc[j], value);
  }
}

// boundary_stored of each value; `kept`: every value is kept but the
// dtype's largest (a raised background), which alone is replaced.
template <typename T>
MORPHAUG_CPU_CLONES void store(T* v, int64_t count, bool kept) {
  if constexpr (sizeof(T) == 8) {
    constexpr T kLargest = std::numeric_limits<T>::max();
    const T largest_stored = boundary_stored(kLargest);
    if (kept) {
      for (int64_t j = 0; j < count; ++j) v[j] = v[j] == kLargest ? largest_stored : v[j];
    } else {
      for (int64_t j = 0; j < count; ++j) v[j] = boundary_stored(v[j]);
    }
  }
}

// The neighbour rows of one output row: rows[t] for the steps of axes 0 ..
// S-2 given by t's base-3 digits (axis 0 fastest), null outside the slice.
struct NeighbourRows {
  int count;                   // 3^(S-1)
  int centre;                  // the row itself
  std::vector<int> hops;       // of each t: the axes it steps along
  std::vector<int64_t> delta;  // of each t: its offset in voxels
};

NeighbourRows neighbour_rows(const BoundaryGeometry& g) {
  NeighbourRows n;
  n.count = 1;
  for (int k = 0; k + 1 < g.rank; ++k) n.count *= 3;
  n.centre = n.count / 2;
  n.hops.assign(n.count, 0);
  n.delta.assign(n.count, 0);
  for (int t = 0; t < n.count; ++t) {
    int rest = t;
    for (int k = 0; k + 1 < g.rank; ++k) {
      const int step = rest % 3 - 1;
      rest /= 3;
      n.hops[t] += step != 0;
      n.delta[t] += int64_t{step} * g.stride[k];
    }
  }
  return n;
}

// What row_extreme reads: the neighbour rows, the segment [lo, hi) of a row
// of n voxels, and its halo [first, last) (one voxel beyond, inside the row).
struct Segment {
  const NeighbourRows& nr;
  const std::vector<const void*>& rows;
  int64_t n, lo, hi, first, last;
};

// D (Max) or E over the segment by the neighbourhood of `connectivity` hops
// into out[0, hi - lo): stored once at the end or (nested: the full box)
// after each axis's pass, as SciPy runs them; raised: the background read as
// the dtype's largest value; kept: every label of the neighbourhood is kept
// by boundary_stored. scratch: at least (3^(S-1) + 1) * (kSegment + 2) values.
template <bool Max, typename T>
void row_extreme(const Segment& s, int connectivity, bool nested, bool raise, T background, bool kept,
                 T* scratch, T* out) {
  const NeighbourRows& nr = s.nr;
  const auto row = [&](int t) { return static_cast<const T*>(s.rows[t]); };
  constexpr T kIdentity = Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  if (!nested) {
    std::fill(out, out + (s.hi - s.lo), kIdentity);
    for (int t = 0; t < nr.count; ++t) {
      if (row(t) == nullptr) continue;
      for (int shift = -1; shift <= 1; ++shift) {
        if (nr.hops[t] + (shift != 0) > connectivity) continue;
        const int64_t begin = std::max<int64_t>(s.lo, -shift), end = std::min<int64_t>(s.hi, s.n - shift);
        fold<Max>(out + (begin - s.lo), row(t) + begin + shift, end - begin, raise, background);
      }
    }
    store(out, s.hi - s.lo, kept);
    return;
  }
  // the passes along axes 0 .. S-2, each stored: rows of `width` values over the halo, null outside
  const int64_t width = s.last - s.first;
  std::vector<const T*> level(nr.count);
  for (int t = 0; t < nr.count; ++t) level[t] = row(t) == nullptr ? nullptr : row(t) + s.first;
  T* next = scratch;
  bool raw = true;  // the level holds the labels themselves (not raised yet)
  for (int count = nr.count; count > 1 || raw; count = std::max(count / 3, 1)) {
    const int members = count > 1 ? 3 : 1;
    for (int group = 0; group < count / members; ++group) {
      T* folded = next + group * width;
      bool any = false;
      for (int m = 0; m < members; ++m) {
        const T* source = level[group * members + m];
        if (source == nullptr) continue;
        if (!any) std::fill(folded, folded + width, kIdentity);
        fold<Max>(folded, source, width, raw && raise, background);
        any = true;
      }
      if (any && count > 1) store(folded, width, kept);
      level[group] = any ? folded : nullptr;
    }
    next += count / members * width;
    raw = false;
  }
  // the pass along the last axis, stored
  const T* line = level[0];
  const int64_t lo = s.lo - s.first, count = s.hi - s.lo;
  std::copy(line + lo, line + lo + count, out);
  if (s.lo > 0) fold<Max>(out, line + lo - 1, count, false, background);
  else if (count > 1) fold<Max>(out + 1, line + lo, count - 1, false, background);
  if (s.hi < s.n) fold<Max>(out, line + lo + 1, count, false, background);
  else if (count > 1) fold<Max>(out, line + lo + 1, count - 1, false, background);
  store(out, count, kept);
}

template <typename T>
void find_boundaries_rows(const BoundarySetup& setup) {
  const BoundaryGeometry& g = setup.geometry;
  const T* labels = static_cast<const T*>(setup.labels.data_ptr());
  bool* out = setup.out.data_ptr<bool>();
  const int64_t n = g.size[g.rank - 1];
  const int64_t rows_per_slice = setup.slice / n, rows = setup.slices * rows_per_slice;
  const NeighbourRows nr = neighbour_rows(g);
  const T background = static_cast<T>(setup.background);
  const bool has_background = setup.has_background;
  // 64 bits: whether boundary_stored keeps each row's labels (0: not known yet, 1: yes, 2: no), found
  // by the first thread that needs it (a second one finds the same)
  std::vector<std::atomic<uint8_t>> row_kept(sizeof(T) == 8 ? rows : 0);
  const auto kept_row = [&](int64_t index) {
    uint8_t known = row_kept[index].load(std::memory_order_relaxed);
    if (known == 0) {
      known = all_kept(labels + index * n, n) ? 1 : 2;
      row_kept[index].store(known, std::memory_order_relaxed);
    }
    return known == 1;
  };
  parallel_over(rows, n * nr.count * 3, [&](int64_t begin, int64_t end) {
    std::vector<const void*> neighbours(nr.count);
    std::vector<uint8_t> differs(kSegment);
    std::vector<T> high(kSegment), low(kSegment), scratch((nr.count + 1) * (kSegment + 2));
    for (int64_t r = begin; r < end; ++r) {
      // the row's coordinates along axes 0 .. S-2 decide which neighbour rows exist
      int64_t rest = r % rows_per_slice;
      int32_t coord[kBoundaryMaxRank];
      for (int k = g.rank - 2; k >= 0; --k) {
        coord[k] = static_cast<int32_t>(rest % g.size[k]);
        rest /= g.size[k];
      }
      for (int t = 0; t < nr.count; ++t) {
        int digits = t;
        bool inside = true;
        for (int k = 0; k + 1 < g.rank; ++k) {
          const int32_t at = coord[k] + digits % 3 - 1;
          digits /= 3;
          inside = inside && at >= 0 && at < g.size[k];
        }
        neighbours[t] = inside ? labels + r * n + nr.delta[t] : nullptr;
      }
      const auto row_of = [&](int t) { return static_cast<const T*>(neighbours[t]); };
      // 64 bits: whether boundary_stored keeps the labels of the element's rows, and of the box's (outer)
      bool kept = true, box_kept = true;
      if constexpr (sizeof(T) == 8) {
        for (int t = 0; t < nr.count; ++t) {
          if (row_of(t) == nullptr || (nr.hops[t] > g.connectivity && g.mode != kBoundaryOuter)) continue;
          const bool all = kept_row(r + nr.delta[t] / n);
          box_kept = box_kept && all;
          if (nr.hops[t] <= g.connectivity) kept = kept && all;
        }
      }
      const T* row = row_of(nr.centre);
      bool* out_row = out + r * n;
      for (int64_t lo = 0; lo < n; lo += kSegment) {
        const int64_t hi = std::min(n, lo + kSegment), width = hi - lo;
        const Segment s{nr, neighbours, n, lo, hi, std::max<int64_t>(lo - 1, 0), std::min(hi + 1, n)};
        if (kept) {  // whether a neighbour differs
          std::fill(differs.begin(), differs.begin() + width, uint8_t{0});
          for (int t = 0; t < nr.count; ++t) {
            if (row_of(t) == nullptr) continue;
            for (int shift = -1; shift <= 1; ++shift) {
              if (nr.hops[t] + (shift != 0) > g.connectivity || (t == nr.centre && shift == 0)) continue;
              const int64_t first = std::max<int64_t>(lo, -shift), last = std::min<int64_t>(hi, n - shift);
              mark_differing(row + first, row_of(t) + first + shift, last - first, differs.data() + (first - lo));
            }
          }
        } else {
          const bool nested = g.connectivity == g.rank;
          row_extreme<true>(s, g.connectivity, nested, false, background, false, scratch.data(), high.data());
          row_extreme<false>(s, g.connectivity, nested, false, background, false, scratch.data(), low.data());
          for (int64_t j = 0; j < width; ++j) differs[j] = high[j] != low[j];
        }
        if (g.mode == kBoundaryThick) {
          std::copy(differs.begin(), differs.begin() + width, out_row + lo);
          continue;
        }
        const auto outside = [&](int64_t j) { return has_background && row[j] == background; };
        if (g.mode == kBoundaryInner) {
          for (int64_t j = 0; j < width; ++j) out_row[lo + j] = differs[j] && !outside(lo + j);
          continue;
        }
        // outer: also the region voxels whose D_S(x) differs from E_S(raised)
        bool region_edge = false;
        for (int64_t j = 0; j < width; ++j) region_edge |= differs[j] && !outside(lo + j);
        if (region_edge) {
          row_extreme<true>(s, g.rank, true, false, background, box_kept, scratch.data(), high.data());
          row_extreme<false>(s, g.rank, true, has_background, background, box_kept, scratch.data(), low.data());
        }
        for (int64_t j = 0; j < width; ++j) {
          out_row[lo + j] = differs[j] && (outside(lo + j) || (region_edge && high[j] != low[j]));
        }
      }
    }
  });
}

}  // namespace

at::Tensor find_boundaries_cpu(const at::Tensor& labels, int64_t connectivity, int64_t mode,
                               std::optional<int64_t> background) {
  const BoundarySetup setup = boundary_setup(labels, connectivity, mode, background);
  if (labels.numel() == 0) return setup.out;
  fault_in_huge_pages(setup.out);
  dispatch_ids(setup.labels, "find_boundaries", [&](auto type) { find_boundaries_rows<decltype(type)>(setup); });
  return setup.out;
}

}  // namespace morphaug
