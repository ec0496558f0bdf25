// The CPU labelling scan: a union-find raster scan (core/label.h) per chunk
// of a slice, chunks and slices in parallel. label.cpp writes its labels;
// components.cpp (the transforms' component tables and filters) and
// fill_holes_by_runs.cpp read the labelled runs without writing labels.
//
// Two scans share the phases. When the structure joins neighbours along the
// last axis (or rows are one voxel long), the run scan: the items are the
// foreground runs of each row, found 64 voxels at a time, each
// joined to the runs it touches in the earlier rows the structure links; the
// parents are a table of the runs. Otherwise the voxel scan: the items are
// the foreground voxels, each joined to its earlier neighbours; the parents
// are kept in the labels. Items are numbered in raster order within a slice.
//
// What is labelled is a Source (MaskVoxels: a bool mask, label; ValueVoxels:
// an integer map, label_values, whose runs are runs of one value and whose
// neighbours join when their values are equal). A mask's runs join by a walk
// through two rows' runs in step; a value map's, short, through the counts
// its rows keep in the labels (ValueVoxels). The run tables take int32 where
// a slice's runs and voxels fit, whatever the labels' type (label.cpp).
//
// Each slice is cut into chunks of whole rows (of voxels, for the voxel scan
// of one spatial axis), as many as the threads need (one per slice when there
// are slices enough). Phases, each a parallel loop over chunks or slices
// (with one chunk per slice, a single loop runs them all, slice by slice):
//   1. scan: each chunk joins its items to the earlier ones inside the chunk,
//      with path compression (a chunk's parents stay in it);
//   2. merge (per slice, several chunks): the links into earlier chunks, then
//      each root that got linked points at its final root (so pointers leave
//      a chunk only from such roots, straight to a final root);
//   3. number the items, in raster order (an item's parent comes first): the
//      k-th root of a chunk k, every other item its parent's number, or -1 - g
//      when its final root g lies in an earlier chunk; then the roots before
//      each chunk of a slice;
//   4. (several chunks) those items take minus their root's number in the
//      slice, the roots before its chunk plus k (positive values are only read);
//   5. write the labels: an item's voxels its number in the slice, the
//      background 0.
// Roots keep the smallest item of their component, so numbering them in
// raster order is SciPy's numbering.
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "../core/label.h"
#include "../launch.h"
#include "clones.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kMinChunk = int64_t{1} << 15;  // voxels: smaller chunks are not worth a merge

// Chunks of whole units (rows, or voxels) cutting each slice; task t is
// chunk t % per_slice of slice t / per_slice.
struct Chunks {
  int64_t numel;              // voxels in a slice
  int64_t per_slice, length;  // chunks in a slice, voxels in each (the last may be shorter)
  int64_t tasks;              // chunks of every slice

  Chunks(const LabelShape& shape, int64_t slices, int64_t unit, int64_t threads = at::get_num_threads())
      : numel(shape.numel) {
    const int64_t units = numel / unit;
    const int64_t wanted = std::max<int64_t>(1, std::min((threads + slices - 1) / slices, numel / kMinChunk));
    length = (units + wanted - 1) / wanted * unit;
    per_slice = (numel + length - 1) / length;
    tasks = slices * per_slice;
  }

  int64_t slice(int64_t task) const { return task / per_slice; }
  int64_t begin(int64_t task) const { return task % per_slice * length; }  // a slice-local voxel
  int64_t end(int64_t task) const { return std::min(numel, begin(task) + length); }
};

// body(task) for every chunk of every slice, in parallel.
template <typename Body>
void each_chunk(const Chunks& chunks, const Body& body) {
  parallel_over(chunks.tasks, chunks.length, [&](int64_t first, int64_t stop) {
    for (int64_t task = first; task < stop; ++task) body(task);
  });
}

template <typename T>
T lower_plain(T* address, T value) {
  const T old = *address;
  if (value < old) *address = value;
  return old;
}

constexpr uint64_t kLowBits = 0x7f7f7f7f7f7f7f7full;
constexpr uint64_t kHighBits = 0x8080808080808080ull;
constexpr uint64_t kGather = 0x0102040810204080ull;  // bit 8k to bit 56 + k
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the word scan reads the first byte lowest");

// Bit i: whether bytes[i] is nonzero, for i < count <= 64.
MORPHAUG_CLONE_INLINE inline uint64_t nonzero_bits(const unsigned char* bytes, int64_t count) {
  uint64_t bits = 0;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    const uint64_t high = (((word & kLowBits) + kLowBits) | word) & kHighBits;  // nonzero bytes' high bits
    bits |= ((high >> 7) * kGather) >> 56 << i;
  }
  for (; i < count; ++i) bits |= uint64_t{bytes[i] != 0} << i;
  return bits;
}

template <typename T>
struct Run {
  T start, end;  // foreground [start, end) of one row, slice-local raster indices
};

// The voxels of a bool mask: the true ones, every two neighbours joined.
struct MaskVoxels {
  static constexpr bool kCountsRows = false;  // see ValueVoxels
  const bool* m;

  MaskVoxels at(int64_t offset) const { return {m + offset}; }
  bool inside(int64_t p) const { return m[p]; }
  bool joins(int64_t, int64_t q) const { return m[q]; }   // whether q joins p (p inside)
  int64_t max_runs(int64_t n) const { return (n + 1) / 2; }  // in a row of n voxels
  template <typename T>
  int64_t runs(int64_t begin, int64_t end, Run<T>* out, int64_t next) const {
    return find_runs(m, begin, end, out, next);  // below; found where instantiated
  }
};

// A row's runs ending at or before a voxel, from its `count` (ValueVoxels::runs).
template <typename C>
C ended_before(C count) {
  return count ^ (count >> (8 * sizeof(C) - 1));
}
// Whether a voxel lies in a run, from its `count`.
template <typename C>
bool inside_run(C count) {
  return count >= 0;
}

// The voxels of an integer map, values read as unsigned U of their width
// (equal bits, equal values): those not holding `background` (every voxel
// without one), neighbours joined when their values are equal.
//
// A value map's runs are short (a few voxels where values vary), so the run
// scan joins them without walking two rows' runs in step: each row keeps,
// per voxel, how many of its runs end at or before it (kept in the labels
// until they are written), which gives the runs of a linked row that a run
// reaches in two reads (RunScan::join_counted).
template <typename U>
struct ValueVoxels {
  static constexpr bool kCountsRows = true;
  const U* v;
  U background;
  bool has_background;

  ValueVoxels at(int64_t offset) const { return {v + offset, background, has_background}; }
  bool inside(int64_t p) const { return !has_background || v[p] != background; }
  bool joins(int64_t p, int64_t q) const { return v[q] == v[p]; }
  U value(int64_t p) const { return v[p]; }
  int64_t max_runs(int64_t n) const { return n; }
  // The runs of one value of v[begin, end) (one row) from out[next] on, 64
  // voxels at a time (a bit per voxel where a run starts, and where one
  // ends); the name after the last. counts[p - begin] for each voxel p: the
  // row's runs ending at or before p, or its complement (~, negative) where
  // p is background (read by ended_before and inside_run).
  template <typename T, typename C>
  MORPHAUG_CPU_CLONES int64_t runs(int64_t begin, int64_t end, Run<T>* out, C* counts, int64_t next) const {
    const U* const x = v;  // locals: the byte stores below may alias the members, not them
    const U off = background;
    int64_t starts_at = next, ends_at = next;
    C ended = 0;
    unsigned char bytes[64];
    for (int64_t w = begin; w < end; w += 64) {
      const int count = static_cast<int>(std::min<int64_t>(64, end - w));
      bytes[0] = w == begin || x[w] != x[w - (w > begin)];
      for (int i = 1; i < count; ++i) bytes[i] = x[w + i] != x[w + i - 1];
      // bit i: voxel w + i differs from the one before (a row's first does), bit count: the voxel after the word
      const uint64_t changes = nonzero_bits(bytes, count);
      const bool after = w + count == end || x[w + count] != x[w + count - 1];
      uint64_t kept = ~uint64_t{0};
      if (has_background) {
        for (int i = 0; i < count; ++i) bytes[i] = x[w + i] != off;
        kept = nonzero_bits(bytes, count);
      }
      uint64_t starts = changes & kept;
      uint64_t lasts = ((changes >> 1) | uint64_t{after} << (count - 1)) & kept;
      for (int i = 0; i < count; ++i) {  // ~ended on the background
        counts[w - begin + i] = ended ^ (static_cast<C>((kept >> i) & 1) - 1);
        ended += static_cast<C>((lasts >> i) & 1);
      }
      for (; starts; starts &= starts - 1) {
        const int64_t p = w + __builtin_ctzll(starts);
        out[starts_at++].start = static_cast<T>(p);
      }
      for (; lasts; lasts &= lasts - 1) out[ends_at++].end = static_cast<T>(w + __builtin_ctzll(lasts) + 1);
    }
    return starts_at;
  }
};

// --- the voxel scan ------------------------------------------------------------

// The backward offsets that stay inside the slice from one row (on every axis
// but the last): their linear offsets, steps along the row and places in the
// setup's list.
struct RowNeighbours {
  std::vector<int64_t> linear;
  std::vector<int8_t> step;
  std::vector<int64_t> index;
  int64_t n;  // the row's length

  // Whether neighbour e of the voxel at i in the row stays on the row.
  bool on_row(size_t e, int64_t i) const { return step[e] < 0 ? i > 0 : step[e] == 0 || i < n - 1; }
};

// Calls row(row_start, start, stop, neighbours) for the part [start, stop) of
// each row that meets [begin, end), a slice's voxels in raster order.
template <typename Row>
void each_row(const LabelSetup& s, int64_t begin, int64_t end, Row&& row) {
  const LabelShape& shape = s.shape;
  const int rank = shape.rank;
  RowNeighbours neighbours;
  neighbours.n = shape.size[rank - 1];
  int64_t coord[kMaxRank];
  for (int64_t start = begin; start < end;) {
    const int64_t row_start = start - start % neighbours.n;
    const int64_t stop = std::min(end, row_start + neighbours.n);
    shape.coordinates(row_start, coord);
    neighbours.linear.clear();
    neighbours.step.clear();
    neighbours.index.clear();
    for (int64_t e = 0; e < s.count(); ++e) {
      if (!shape.inside(coord, &s.delta[e * rank], rank - 1)) continue;
      neighbours.linear.push_back(s.linear[e]);
      neighbours.step.push_back(s.delta[e * rank + rank - 1]);
      neighbours.index.push_back(e);
    }
    row(row_start, start, stop, neighbours);
    start = stop;
  }
}

// For each of the first 64 backward offsets, a bit per earlier offset whose
// neighbour is also a neighbour of its own (their difference is a structure
// offset): once that one is joined, so is this one.
inline std::vector<uint64_t> adjacent_offsets(const LabelSetup& s) {
  const int rank = s.shape.rank;
  auto code = [&](const int8_t* a, const int8_t* b, int sign) {  // (a - b) * sign in base 3, or -1
    int64_t c = 0;
    for (int k = 0; k < rank; ++k) {
      const int d = sign * (a[k] - b[k]);
      if (d < -1 || d > 1) return int64_t{-1};
      c = 3 * c + d + 1;
    }
    return c;
  };
  int64_t codes = 1;
  for (int k = 0; k < rank; ++k) codes *= 3;
  std::vector<bool> backward(codes, false);
  const std::vector<int8_t> zero(rank, 0);
  for (int64_t e = 0; e < s.count(); ++e) backward[code(&s.delta[e * rank], zero.data(), 1)] = true;
  const int64_t limit = std::min<int64_t>(s.count(), 64);
  std::vector<uint64_t> adjacent(s.count(), 0);
  for (int64_t e = 0; e < limit; ++e) {
    for (int64_t f = 0; f < e; ++f) {
      const int8_t* a = &s.delta[e * rank];
      const int8_t* b = &s.delta[f * rank];
      const int64_t ahead = code(a, b, 1), behind = code(a, b, -1);
      if ((ahead >= 0 && backward[ahead]) || (behind >= 0 && backward[behind])) adjacent[e] |= uint64_t{1} << f;
    }
  }
  return adjacent;
}

// The setup with its backward offsets nearest first (fewest nonzero steps,
// then nearest in memory): those are the likeliest to join, and a joined
// one lets the scan skip the offsets next to it (VoxelScan::scan).
inline LabelSetup nearest_first(const LabelSetup& s) {
  const int rank = s.shape.rank;
  std::vector<int64_t> order(s.count());
  for (int64_t e = 0; e < s.count(); ++e) order[e] = e;
  auto steps = [&](int64_t e) {
    return std::count_if(&s.delta[e * rank], &s.delta[e * rank] + rank, [](int8_t d) { return d != 0; });
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return steps(a) != steps(b) ? steps(a) < steps(b) : s.linear[a] > s.linear[b];
  });
  LabelSetup sorted = s;
  for (int64_t i = 0; i < s.count(); ++i) {
    sorted.linear[i] = s.linear[order[i]];
    std::copy(&s.delta[order[i] * rank], &s.delta[order[i] * rank] + rank, &sorted.delta[i * rank]);
  }
  return sorted;
}

// Items are the foreground voxels, named by their slice-local raster index;
// their parents are kept in the labels.
template <typename T, typename Source>
struct VoxelScan {
  const LabelSetup& s;
  const Chunks& chunks;
  Source mask;
  T* labels;
  LabelSetup near_first;  // s's offsets, nearest first (the scan's order)
  std::vector<uint64_t> adjacent;

  VoxelScan(const LabelSetup& setup, const Chunks& c, const Source& m, T* out)
      : s(setup), chunks(c), mask(m), labels(out), near_first(nearest_first(setup)),
        adjacent(adjacent_offsets(near_first)) {}

  T* parents(int64_t slice) const { return labels + slice * s.shape.numel; }
  int64_t first_item(int64_t task) const { return chunks.begin(task); }
  int64_t chunk_of(int64_t, int64_t item) const { return item / chunks.length; }

  // Joins each voxel of the chunk to its neighbours before it in the chunk,
  // nearest first, skipping (unread) a neighbour next to one already joined:
  // the two are joined already, or are in different chunks and joined by the
  // merge, or hold different values.
  void scan(int64_t task) const {
    const int64_t begin = chunks.begin(task);
    const Source m = mask.at(chunks.slice(task) * s.shape.numel);
    T* P = parents(chunks.slice(task));
    each_row(near_first, begin, chunks.end(task), [&](int64_t row_start, int64_t start, int64_t stop,
                                                      const RowNeighbours& near) {
      for (int64_t p = start; p < stop; ++p) {
        if (!m.inside(p)) continue;
        P[p] = static_cast<T>(p);
        uint64_t joined = 0;  // bits of the neighbours in p's set by now (the first 64)
        for (size_t e = 0; e < near.linear.size(); ++e) {
          const int64_t k = near.index[e];
          if (joined & adjacent[k]) continue;
          const int64_t q = p + near.linear[e];
          if (!near.on_row(e, p - row_start) || q < begin || !m.joins(p, q)) continue;
          if (k < 64) joined |= uint64_t{1} << k;
          label_union<true>(P, static_cast<T>(p), static_cast<T>(q), lower_plain<T>);
        }
      }
    });
  }

  // join(p, q) for every neighbour q of a voxel p with p and q in different chunks.
  template <typename Join>
  void merge(int64_t slice, Join&& join) const {
    const int64_t numel = s.shape.numel;
    const Source m = mask.at(slice * numel);
    int64_t reach = 0;  // the longest backward step
    for (const int64_t l : s.linear) reach = std::max(reach, -l);
    for (int64_t begin = chunks.length; begin < numel; begin += chunks.length) {
      const int64_t end = std::min({numel, begin + chunks.length, begin + reach});
      each_row(s, begin, end, [&](int64_t row_start, int64_t start, int64_t stop, const RowNeighbours& near) {
        for (int64_t p = start; p < stop; ++p) {
          for (size_t e = 0; m.inside(p) && e < near.linear.size(); ++e) {
            const int64_t q = p + near.linear[e];
            if (near.on_row(e, p - row_start) && q < begin && m.joins(p, q)) join(p, q);
          }
        }
      });
    }
  }

  template <typename Item>
  void each_item(int64_t task, Item&& item) const {
    const Source m = mask.at(chunks.slice(task) * s.shape.numel);
    for (int64_t p = chunks.begin(task); p < chunks.end(task); ++p) {
      if (m.inside(p)) item(p);
    }
  }

  // Every voxel of the chunk: label(its number) or the background's 0.
  template <typename Label>
  void write(int64_t task, Label&& label) const {
    const Source m = mask.at(chunks.slice(task) * s.shape.numel);
    T* P = parents(chunks.slice(task));
    for (int64_t p = chunks.begin(task); p < chunks.end(task); ++p) P[p] = m.inside(p) ? label(P[p]) : 0;
  }
};

// --- the run scan --------------------------------------------------------------

// Stores the foreground runs of m[begin, end) (one row) from runs[next] on,
// 64 voxels at a time; returns the name after the last.
template <typename T>
int64_t find_runs(const bool* m, int64_t begin, int64_t end, Run<T>* runs, int64_t next) {
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(m);
  bool inside = false;  // whether the voxel before is foreground
  int64_t start = 0;
  for (int64_t p = begin; p < end; p += 64) {
    const uint64_t bits = nonzero_bits(bytes + p, std::min<int64_t>(64, end - p));
    for (uint64_t edges = bits ^ ((bits << 1) | inside); edges; edges &= edges - 1) {  // a run starts or ends
      const int64_t at = p + __builtin_ctzll(edges);
      if (inside) runs[next++] = {static_cast<T>(start), static_cast<T>(at)};
      start = at;
      inside = !inside;
    }
  }
  if (inside) runs[next++] = {static_cast<T>(start), static_cast<T>(end)};
  return next;
}

// An earlier row that the structure links to each row: how many rows back
// (`rows`, negative), the steps to it (`delta`, for the bounds check on the
// axes but the last) and the steps along the row it joins through (bit dx + 1).
struct RowLink {
  int64_t rows;
  const int8_t* delta;
  unsigned steps;
  int lowest, highest;  // the smallest and largest step

  bool gapped() const { return steps == 0b101u; }  // -1 and +1 without 0
};

// Whether some voxel x of run a has x + dx in run b (`shift` voxels earlier)
// for a step dx of `link`.
template <typename T>
bool touches(const Run<T>& a, const Run<T>& b, int64_t shift, const RowLink& link) {
  for (int dx = link.lowest; dx <= link.highest; ++dx) {
    if ((link.steps >> (dx + 1) & 1) && b.start + shift < a.end + dx && a.start + dx < b.end + shift) return true;
  }
  return false;
}

// join(i, j) for every run runs[i] of [a, a_end) that touches a run runs[j] of
// [b, b_end): the runs of two rows in order, b's the earlier row linked by
// `link`. A run that meets a's reach touches it, unless the steps are gapped.
template <typename T, typename Join>
void join_runs(const Run<T>* runs, int64_t a, int64_t a_end, int64_t b, int64_t b_end, int64_t shift,
               const RowLink& link, Join&& join) {
  for (; a < a_end; ++a) {
    const int64_t lo = runs[a].start + link.lowest, hi = runs[a].end + link.highest;  // a's reach
    while (b < b_end && runs[b].end + shift <= lo) ++b;  // out of reach of the later runs too
    for (int64_t c = b; c < b_end && runs[c].start + shift < hi; ++c) {
      if (!link.gapped() || touches(runs[a], runs[c], shift, link)) join(a, c);
    }
  }
}

// Whether the run scan applies: the structure joins neighbours along the last
// axis (its (0, ..., 0, -1) offset), or rows are one voxel long.
inline bool joins_runs(const LabelSetup& s) {
  const int rank = s.shape.rank;
  if (s.shape.size[rank - 1] == 1) return true;
  for (int64_t e = 0; e < s.count(); ++e) {
    const int8_t* d = &s.delta[e * rank];
    if (std::all_of(d, d + rank - 1, [](int8_t step) { return step == 0; })) return true;
  }
  return false;
}

// Items are the foreground runs of the rows, named by their place in their
// slice's table of runs, which also keeps their parents. T: the type of the
// tables (runs, parents, numbers); L: the type of the labels written.
template <typename T, typename Source = MaskVoxels, typename L = T>
struct RunScan {
  // Chunk c's runs are named from c * capacity on (its rows hold no more),
  // so names follow raster order; tables are touched only where runs are.
  struct SliceRuns {
    std::unique_ptr<Run<T>[]> runs;
    std::unique_ptr<T[]> parent;      // per run
    std::vector<int64_t> chunk_end;   // per chunk, the name after its last run
    std::vector<int64_t> row_runs;    // per row, its first run and the name after its last
  };

  const LabelSetup& s;
  const Chunks& chunks;
  Source mask;
  L* labels;
  int64_t n, rows, chunk_rows;  // the row length, rows in a slice and in a chunk
  int64_t capacity;             // the most runs a chunk's rows can hold
  std::vector<RowLink> links;
  int64_t reach = 0;  // the most rows a link goes back
  std::vector<SliceRuns> tables;  // per slice

  RunScan(const LabelSetup& setup, const Chunks& c, const Source& m, L* out)
      : s(setup), chunks(c), mask(m), labels(out), n(setup.shape.size[setup.shape.rank - 1]),
        rows(setup.shape.numel / n), chunk_rows(c.length / n), capacity(chunk_rows * m.max_runs(n)),
        tables(setup.slices) {
    const int rank = s.shape.rank;
    for (int64_t e = 0; e < s.count(); ++e) {  // offsets to the same row are grouped
      const int8_t* d = &s.delta[e * rank];
      const int dx = d[rank - 1];
      if (std::all_of(d, d + rank - 1, [](int8_t step) { return step == 0; })) continue;  // along the row
      auto same = std::find_if(links.begin(), links.end(),
                               [&](const RowLink& l) { return std::equal(d, d + rank - 1, l.delta); });
      if (same == links.end()) {
        links.push_back({(s.linear[e] - dx) / n, d, 0u, dx, dx});
        same = links.end() - 1;
      }
      same->steps |= 1u << (dx + 1);
      same->lowest = std::min(same->lowest, dx);
      same->highest = std::max(same->highest, dx);
      reach = std::max(reach, -same->rows);
    }
    TORCH_CHECK(fits(chunks, m, n), "morphaug::label: a slice of ", s.shape.numel, " voxels needs int64 labels");
    for (SliceRuns& t : tables) {
      t.runs.reset(new Run<T>[chunks.per_slice * capacity]);
      t.parent.reset(new T[chunks.per_slice * capacity]);
      t.chunk_end.resize(chunks.per_slice);
      t.row_runs.resize(2 * rows);
    }
  }

  // Whether T names every run and voxel of a slice cut as `chunks` (rows of n voxels of m).
  static bool fits(const Chunks& chunks, const Source& m, int64_t n) {
    const int64_t names = std::max(chunks.per_slice * (chunks.length / n * m.max_runs(n)), chunks.numel);
    return names - 1 <= std::numeric_limits<T>::max();  // and the voxels, which runs start and end at
  }

  T* parents(int64_t slice) { return tables[slice].parent.get(); }
  int64_t first_item(int64_t task) const { return task % chunks.per_slice * capacity; }
  int64_t chunk_of(int64_t slice, int64_t item) const { return tables[slice].runs[item].start / chunks.length; }

  // join(i, j) for each run i of [a, a_end), the runs of a row of a slice
  // (its voxels m, its labels `counts` with ValueVoxels), and each run j it
  // touches and joins in a linked row: from row `earliest` on, or with
  // `before`, the rows before it. coord: the row's coordinates on the axes
  // but the last.
  template <typename Join>
  void join_row(const SliceRuns& t, const Source& m, const L* counts, int64_t row, const int64_t* coord, int64_t a,
                int64_t a_end, int64_t earliest, bool before, Join&& join) const {
    const Run<T>* runs = t.runs.get();
    for (const RowLink& link : links) {
      const int64_t other = row + link.rows;
      if ((other < earliest) != before || !s.shape.inside(coord, link.delta, s.shape.rank - 1)) continue;
      const int64_t b = t.row_runs[2 * other], b_end = t.row_runs[2 * other + 1];
      if constexpr (Source::kCountsRows) {
        join_counted(runs, m, counts, row, a, a_end, other, b, b_end, link, join);
      } else {
        join_runs(runs, a, a_end, b, b_end, -link.rows * n, link, join);
      }
    }
  }

  // join_row through `link` for a value map: the runs [b, b_end) of row
  // `other` that run i reaches are read off that row's counts (those ending
  // before its reach, and those starting in it), and joined when their values
  // are equal. Pairs are kept until the row's are all found, so that finding
  // them does not branch on their values (in locals, which the stores of the
  // pairs cannot alias).
  template <typename Join>
  void join_counted(const Run<T>* runs, const Source& m, const L* counts, int64_t row, int64_t a, int64_t a_end,
                    int64_t other, int64_t b, int64_t b_end, const RowLink& link, Join&& join) const {
    if (b == b_end) return;
    constexpr int kPairs = 256;
    T pair[2 * kPairs];
    int kept = 0;
    auto flush = [&join](const T* pairs, int count) {
      for (int k = 0; k < count; ++k) join(pairs[2 * k], pairs[2 * k + 1]);
      return 0;
    };
    const L* count = counts + other * n;
    const int64_t here = row * n, there = other * n, width = n;
    const int lowest = link.lowest, highest = link.highest;
    const bool gapped = link.gapped();
    for (int64_t i = a; i < a_end; ++i) {
      const int64_t start = runs[i].start, end = runs[i].end;
      const auto value = m.value(start);
      const int64_t low = start - here + lowest;     // its reach in the other row,
      const int64_t high = end - here + highest - 1;  // [low, high] (row-local)
      const L above = count[high < 0 ? 0 : high >= width ? width - 1 : high];
      const int64_t lo = low <= 0 ? b : low >= width ? b_end : b + ended_before(count[low]);
      const int64_t hi = high < 0 ? b : high >= width - 1 ? b_end : b + ended_before(above) + inside_run(above);
      if (hi <= lo) continue;
      if (hi - lo <= 3 && !gapped) {  // the usual case, without branches
        if (kept > kPairs - 3) kept = flush(pair, kept);
        for (int64_t k = 0; k < 3; ++k) {
          const int64_t c = std::min(lo + k, hi - 1);
          pair[2 * kept] = static_cast<T>(i);
          pair[2 * kept + 1] = static_cast<T>(c);
          kept += (lo + k < hi) & (m.value(runs[c].start) == value);
        }
      } else {
        for (int64_t c = lo; c < hi; ++c) {
          if (m.value(runs[c].start) == value && (!gapped || touches(runs[i], runs[c], here - there, link))) {
            join(i, c);
          }
        }
      }
    }
    flush(pair, kept);
  }

  // The coordinates of the next row (on the axes but the last).
  void next_row(int64_t* coord) const {
    for (int k = s.shape.rank - 2; k >= 0 && ++coord[k] == s.shape.size[k]; --k) coord[k] = 0;
  }

  // Finds the runs of each row of the chunk and joins them to the runs they
  // touch in the chunk's earlier rows.
  void scan(int64_t task) {
    const int64_t slice = chunks.slice(task);
    SliceRuns& t = tables[slice];
    const Source m = mask.at(slice * s.shape.numel);
    T* P = t.parent.get();
    L* counts = Source::kCountsRows ? labels + slice * s.shape.numel : nullptr;
    const int64_t first_row = chunks.begin(task) / n, last_row = chunks.end(task) / n;
    int64_t coord[kMaxRank];
    s.shape.coordinates(first_row * n, coord);
    int64_t next = first_item(task);
    for (int64_t row = first_row; row < last_row; ++row, next_row(coord)) {
      const int64_t a = next;
      if constexpr (Source::kCountsRows) {
        next = m.runs(row * n, row * n + n, t.runs.get(), counts + row * n, next);
      } else {
        next = m.runs(row * n, row * n + n, t.runs.get(), next);
      }
      t.row_runs[2 * row] = a;
      t.row_runs[2 * row + 1] = next;
      for (int64_t i = a; i < next; ++i) P[i] = static_cast<T>(i);
      join_row(t, m, counts, row, coord, a, next, first_row, false, [&](int64_t i, int64_t j) {
        if (P[i] != P[j]) label_union<true>(P, static_cast<T>(i), static_cast<T>(j), lower_plain<T>);
      });
    }
    t.chunk_end[task % chunks.per_slice] = next;
  }

  // join(i, j) for every run i touching a run j of an earlier chunk.
  template <typename Join>
  void merge(int64_t slice, Join&& join) const {
    const SliceRuns& t = tables[slice];
    const Source m = mask.at(slice * s.shape.numel);
    const L* counts = Source::kCountsRows ? labels + slice * s.shape.numel : nullptr;
    int64_t coord[kMaxRank];
    for (int64_t chunk_row = chunk_rows; chunk_row < rows; chunk_row += chunk_rows) {
      s.shape.coordinates(chunk_row * n, coord);
      const int64_t stop = std::min({rows, chunk_row + chunk_rows, chunk_row + reach});
      for (int64_t row = chunk_row; row < stop; ++row, next_row(coord)) {
        join_row(t, m, counts, row, coord, t.row_runs[2 * row], t.row_runs[2 * row + 1], chunk_row, true, join);
      }
    }
  }

  template <typename Item>
  void each_item(int64_t task, Item&& item) const {
    const int64_t end = tables[chunks.slice(task)].chunk_end[task % chunks.per_slice];
    for (int64_t i = first_item(task); i < end; ++i) item(i);
  }

  // Each run of the chunk keeps its label(number) as its parent (no labels written).
  template <typename Label>
  void label_runs(int64_t task, Label&& label) {
    SliceRuns& t = tables[chunks.slice(task)];
    for (int64_t i = first_item(task); i < t.chunk_end[task % chunks.per_slice]; ++i) t.parent[i] = label(t.parent[i]);
  }

  // Every voxel of the chunk: its run's label(number) or the background's 0.
  template <typename Label>
  void write(int64_t task, Label&& label) {
    const int64_t slice = chunks.slice(task);
    SliceRuns& t = tables[slice];
    L* P = labels + slice * s.shape.numel;
    if constexpr (Source::kCountsRows) {  // a voxel's run is the row's first plus its count
      label_runs(task, label);
      for (int64_t row = chunks.begin(task) / n; row < chunks.end(task) / n; ++row) {
        const T* labelled = t.parent.get() + t.row_runs[2 * row];  // read only in a run
        L* out = P + row * n;
        for (int64_t x = 0; x < n; ++x) {
          const L count = out[x];
          out[x] = inside_run(count) ? static_cast<L>(labelled[count]) : L{0};
        }
      }
    } else {
      std::fill(P + chunks.begin(task), P + chunks.end(task), L{0});
      for (int64_t i = first_item(task); i < t.chunk_end[task % chunks.per_slice]; ++i) {
        std::fill(P + t.runs[i].start, P + t.runs[i].end, static_cast<L>(label(t.parent[i])));
      }
    }
  }
};

// --- the phases ------------------------------------------------------------------

// The phases, ending with finish(task, label) per chunk: label(number) is the
// final label of an item of that chunk numbered `number` (scan.write writes
// them into the labels).
template <typename T, typename Scan, typename Finish>
void label_slices(const LabelSetup& s, const Chunks& chunks, Scan& scan, int64_t* counts, Finish&& finish) {
  std::vector<int64_t> roots(chunks.tasks);  // per chunk: its roots, then those before it in the slice

  // 3. number a chunk's items
  auto number = [&](int64_t task) {
    T* P = scan.parents(chunks.slice(task));
    const int64_t first = scan.first_item(task);
    T k = 0;
    scan.each_item(task, [&](int64_t i) {
      const T up = P[i];
      P[i] = up == i ? ++k : (up >= first ? P[up] : -1 - up);
    });
    roots[task] = k;
  };
  // 5. a chunk's labels
  auto write = [&](int64_t task) {
    const T before = static_cast<T>(roots[task]);
    finish(task, [&](T number) { return static_cast<T>(number < 0 ? -number : number + before); });
  };

  if (chunks.per_slice == 1) {  // every phase of a slice in one task: no merge, numbers final
    each_chunk(chunks, [&](int64_t slice) {
      scan.scan(slice);
      number(slice);
      counts[slice] = roots[slice];
      roots[slice] = 0;
      write(slice);
    });
    return;
  }

  // 1. scan
  each_chunk(chunks, [&](int64_t task) { scan.scan(task); });

  // 2. merge
  parallel_over(s.slices, s.shape.numel, [&](int64_t first, int64_t stop) {
    for (int64_t slice = first; slice < stop; ++slice) {
      T* P = scan.parents(slice);
      std::vector<int64_t> linked;
      auto lower = [&](T* address, T value) {  // sequential: it always links the root
        linked.push_back(address - P);
        return lower_plain(address, value);
      };
      scan.merge(slice, [&](int64_t a, int64_t b) {
        label_union<false>(P, static_cast<T>(a), static_cast<T>(b), lower);
      });
      // a linked root's parents lead to its final root; in increasing order,
      // through smaller linked roots that already point at theirs
      std::sort(linked.begin(), linked.end());
      for (const int64_t r : linked) P[r] = label_find<false>(P, P[r]);
    }
  });

  // 3. number
  each_chunk(chunks, number);
  for (int64_t slice = 0; slice < s.slices; ++slice) {
    int64_t before = 0;
    for (int64_t c = slice * chunks.per_slice; c < (slice + 1) * chunks.per_slice; ++c) {
      const int64_t k = roots[c];
      roots[c] = before;
      before += k;
    }
    counts[slice] = before;
  }

  // 4. the items under a root in an earlier chunk: minus its number in the
  // slice (the roots' own numbers are only read, so far)
  each_chunk(chunks, [&](int64_t task) {
    const int64_t slice = chunks.slice(task);
    T* P = scan.parents(slice);
    const int64_t* before = &roots[slice * chunks.per_slice];
    scan.each_item(task, [&](int64_t i) {
      if (P[i] < 0) {
        const int64_t root = -1 - P[i];
        P[i] = static_cast<T>(-(before[scan.chunk_of(slice, root)] + P[root]));
      }
    });
  });

  // 5. the labels
  each_chunk(chunks, write);
}

// --- labelled runs without labels: filter_components, fill_holes_by_runs ----------
// Each slice goes through the run scan's phases in a task of its own, its runs
// keeping their labels (none written), and is then read a run at a time.

// The run scan's phases on one slice of `setup` (slices = 1) cut as `chunks`:
// use(table, count), the slice's runs with their labels 1 .. count.
template <typename Use>
void label_slice_runs(const LabelSetup& setup, const Chunks& chunks, const bool* mask, Use&& use) {
  RunScan<int32_t> scan(setup, chunks, MaskVoxels{mask}, nullptr);
  int64_t count = 0;
  label_slices<int32_t>(setup, chunks, scan, &count, [&](int64_t task, auto&& label) { scan.label_runs(task, label); });
  use(scan.tables[0], count);
}

// visit(run, label, row) for every run of a slice of `rows` rows, row by row.
template <typename Visit>
void each_run(const RunScan<int32_t>::SliceRuns& t, int64_t rows, Visit&& visit) {
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t i = t.row_runs[2 * row]; i < t.row_runs[2 * row + 1]; ++i) visit(t.runs[i], t.parent[i], row);
  }
}

// task(u, chunks) for every u in [0, units), units of `work` voxel-operations
// (a slice, or a sample's slices), with the chunks cutting one slice of
// `setup`: units in parallel and one chunk per slice when they are as many as
// the threads, else one after another with each slice in chunks.
template <typename Task>
void each_unit(const LabelSetup& setup, int64_t units, int64_t work, Task&& task) {
  const bool parallel = units >= at::get_num_threads();
  const Chunks chunks(setup.shape, 1, setup.shape.size[setup.shape.rank - 1], parallel ? 1 : at::get_num_threads());
  if (parallel) {
    parallel_over(units, work, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) task(u, chunks);
    });
  } else {
    for (int64_t u = 0; u < units; ++u) task(u, chunks);
  }
}

}  // namespace
}  // namespace morphaug
