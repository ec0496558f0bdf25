// CPU launchers of morphaug::region_stats, region_histogram and region_median.
//
// region_stats: one pass over the voxels in raster
// order fills every requested table (the positions of the extrema included:
// a strictly better value moves them, so the first voxel wins), a second the
// centred squares. Slices, or chunks of them when slices are fewer than the
// threads and the tables small, run in parallel, each chunk on tables of its
// own, merged in raster order: the same sums for the same thread count.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

#include "../region_tables.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

// a + b modulo 2**64, as NumPy's int64 sums.
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

struct Chunk {
  int64_t slice, start, stop;
};

constexpr int64_t kBlock = 256;  // voxels read at once, per dtype, before they are added

template <int Code>
void read_samples(const void* data, int64_t i, int64_t n, Sample* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = read_sample(data, Code, i + j);
}

template <int Code>
void read_slots(const void* labels, int64_t i, int64_t n, const SlotRule& rule, int64_t* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = slot_of(rule, read_label(labels, Code, i + j));
}

// read_samples / read_slots for the dtype `code`, chosen once per block.
template <template <int> class Call, typename... Args>
void by_code(int code, Args&&... args) {
  switch (code) {
    case kDBool: return Call<kDBool>::run(args...);
    case kDU8: return Call<kDU8>::run(args...);
    case kDI8: return Call<kDI8>::run(args...);
    case kDI16: return Call<kDI16>::run(args...);
    case kDI32: return Call<kDI32>::run(args...);
    case kDI64: return Call<kDI64>::run(args...);
    case kDU16: return Call<kDU16>::run(args...);
    case kDU32: return Call<kDU32>::run(args...);
    case kDU64: return Call<kDU64>::run(args...);
    case kDF16: return Call<kDF16>::run(args...);
    case kDBF16: return Call<kDBF16>::run(args...);
    case kDF32: return Call<kDF32>::run(args...);
    default: return Call<kDF64>::run(args...);
  }
}

template <int Code>
struct Samples {
  static void run(const void* data, int64_t i, int64_t n, Sample* out) { read_samples<Code>(data, i, n, out); }
};

template <int Code>
struct Slots {
  static void run(const void* labels, int64_t i, int64_t n, const SlotRule& rule, int64_t* out) {
    read_slots<Code>(labels, i, n, rule, out);
  }
};

// The columns of voxels [i, i + n) of the label slice at label_offset (without labels: 0).
void read_columns(const RegionCall& c, int64_t label_offset, int64_t i, int64_t n, int64_t* columns) {
  if (c.labels.defined()) {
    by_code<Slots>(c.label_code, c.labels.const_data_ptr(), label_offset + i, n, c.rule, columns);
  } else {
    std::fill(columns, columns + n, int64_t{0});
  }
}

template <int Code>
struct Reals {
  static void run(const void* data, int64_t i, int64_t n, double* out) {
    for (int64_t j = 0; j < n; ++j) out[j] = read_sample(data, Code, i + j).real;
  }
};

template <int Code>
struct LabelKeys {
  static void run(const void* labels, int64_t i, int64_t n, int64_t* out) {
    for (int64_t j = 0; j < n; ++j) out[j] = read_label(labels, Code, i + j);
  }
};

// Adds voxels [start, stop) of slice s to one row of region_histogram's
// counts (slots x bins), counted in a private row first (no false sharing
// with the tasks on neighbouring rows).
void count_bins(const HistogramCall& h, int64_t channels, const Chunk& k, int64_t* row) {
  const RegionCall& c = h.regions;
  std::vector<int64_t> own(c.slots * h.bins, 0);
  int64_t* counts = own.data();
  const void* values = c.input.const_data_ptr();
  const int64_t offset = k.slice * c.numel, label_offset = label_slice(c, k.slice, channels) * c.numel;
  double reals[kBlock];
  int64_t columns[kBlock];
  for (int64_t block = k.start; block < k.stop; block += kBlock) {
    const int64_t n = std::min(kBlock, k.stop - block);
    by_code<Reals>(c.code, values, offset + block, n, reals);
    read_columns(c, label_offset, block, n, columns);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t bin = histogram_bin(reals[j], h.edges.data(), h.bins, h.scale);
      if (bin >= 0) ++counts[columns[j] * h.bins + bin];
    }
  }
  for (size_t j = 0; j < own.size(); ++j) row[j] += own[j];
}

// accumulate's counts and bounds alone (find_objects, bounding boxes): no
// value read, and each run of one column along a row moves its bounds once.
void accumulate_bounds(const RegionCall& c, int64_t channels, const Chunk& k, const RegionTables& t, int64_t row) {
  const int64_t S = c.rank, last = S - 1, base = row * c.slots;
  const int64_t* sizes = c.input.sizes().data() + 2;
  const int64_t n = sizes[last], label_offset = label_slice(c, k.slice, channels) * c.numel;
  int64_t coord[kMaxRank];
  int64_t columns[kBlock];
  for (int64_t i = k.start; i < k.stop;) {
    const int64_t row_start = i - i % n, row_stop = std::min(k.stop, row_start + n);
    int64_t rest = i / n;  // the row's coordinates before the last axis
    for (int64_t d = last - 1; d >= 0; --d) {
      coord[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    for (int64_t m; i < row_stop; i += m) {
      m = std::min(kBlock, row_stop - i);
      read_columns(c, label_offset, i, m, columns);
      for (int64_t j = 0, e; j < m; j = e) {
        for (e = j + 1; e < m && columns[e] == columns[j];) ++e;
        const int64_t slot = base + columns[j];
        t.count[slot] += e - j;
        int64_t* lower = t.lower + slot * S;
        int64_t* upper = t.upper + slot * S;
        for (int64_t d = 0; d < last; ++d) {
          lower[d] = std::min(lower[d], coord[d]);
          upper[d] = std::max(upper[d], coord[d]);
        }
        lower[last] = std::min(lower[last], i + j - row_start);
        upper[last] = std::max(upper[last], i + e - 1 - row_start);
      }
    }
  }
}

// Counts and sums of few slots (most voxels in the same one: a region, the
// unlisted background) kept in kLanes copies, voxel j adding to copy j %
// kLanes, so that consecutive adds to one slot do not wait for each other.
// Sums only where any order gives the same float64 (values of at most 16 bits).
constexpr int64_t kLanes = 4, kLaneSlots = 64;

// Whether float64 sums of values of the dtype `code` are exact in any order.
inline bool exact_sums(int code) {
  return code == kDBool || code == kDU8 || code == kDI8 || code == kDI16 || code == kDU16;
}

// The counts (and, with `sums`, the sums) of voxels [start, stop) of a slice
// by their columns, in lanes, added to one row's tables (counts, sums).
template <bool Sums>
void add_in_lanes(const RegionCall& c, int64_t label_offset, int64_t offset, const Chunk& k, int64_t* counts,
                  double* sums) {
  int64_t lane_counts[kLanes][kLaneSlots] = {};
  double lane_sums[kLanes][kLaneSlots] = {};
  double reals[kBlock];
  int64_t columns[kBlock];
  for (int64_t block = k.start; block < k.stop; block += kBlock) {
    const int64_t n = std::min(kBlock, k.stop - block);
    read_columns(c, label_offset, block, n, columns);
    if (Sums) by_code<Reals>(c.code, c.input.const_data_ptr(), offset + block, n, reals);
    for (int64_t j = 0; j < n; ++j) {
      ++lane_counts[j % kLanes][columns[j]];
      if (Sums) lane_sums[j % kLanes][columns[j]] += reals[j];
    }
  }
  for (int64_t slot = 0; slot < c.slots; ++slot) {
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      counts[slot] += lane_counts[lane][slot];
      if (Sums) sums[slot] += lane_sums[lane][slot];
    }
  }
}

// Adds voxels [start, stop) of slice s to the tables of one row (pass 0: the
// first pass; pass 1: the centred squares, `means` that row's means).
void accumulate(const RegionCall& c, int64_t channels, const Chunk& k, const RegionTables& t, int64_t row,
                const double* means, int pass) {
  if (pass == 0 && t.lower && !t.sum && !t.whole && !t.low && !t.high && !t.moments) {
    accumulate_bounds(c, channels, k, t, row);
    return;
  }
  const int64_t S = c.rank, slots = c.slots;
  const int64_t* sizes = c.input.sizes().data() + 2;
  const bool coordinates = t.moments || t.lower;
  int64_t coord[kMaxRank];
  int64_t rest = k.start;
  for (int64_t d = S - 1; d >= 0; --d) {
    coord[d] = rest % sizes[d];
    rest /= sizes[d];
  }
  const void* values = c.input.const_data_ptr();
  const int64_t offset = k.slice * c.numel, label_offset = label_slice(c, k.slice, channels) * c.numel;
  const int64_t base = row * slots;
  Sample samples[kBlock];
  double reals[kBlock];
  int64_t columns[kBlock];
  // counts and float64 sums only (mean, sum_labels of floats): the values read as float64, no keys
  const bool sums = pass == 0 && !t.whole && !t.low && !t.high && !coordinates;
  if (sums && slots <= kLaneSlots && (!t.sum || exact_sums(c.code))) {
    if (t.sum) {
      add_in_lanes<true>(c, label_offset, offset, k, t.count + base, t.sum + base);
    } else {
      add_in_lanes<false>(c, label_offset, offset, k, t.count + base, nullptr);
    }
    return;
  }
  for (int64_t block = k.start; block < k.stop; block += kBlock) {
    const int64_t n = std::min(kBlock, k.stop - block);
    read_columns(c, label_offset, block, n, columns);
    if (sums) {
      by_code<Reals>(c.code, values, offset + block, n, reals);
      for (int64_t j = 0; j < n; ++j) ++t.count[base + columns[j]];
      for (int64_t j = 0; t.sum && j < n; ++j) t.sum[base + columns[j]] += reals[j];
      continue;
    }
    by_code<Samples>(c.code, values, offset + block, n, samples);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t slot = base + columns[j], i = block + j;
      const Sample& v = samples[j];
      if (pass == 1) {
        const double centred = v.real - means[slot - base];
        t.squares[slot] += centred * centred;
        continue;
      }
      const bool first = ++t.count[slot] == 1;
      if (t.sum) t.sum[slot] += v.real;
      if (t.whole) t.whole[slot] = wrapping_add(t.whole[slot], v.whole);
      if (t.low && (first || v.low < t.low[slot])) {
        t.low[slot] = v.low;
        if (t.low_at) t.low_at[slot] = i;
      }
      if (t.high && (first || v.high > t.high[slot])) {
        t.high[slot] = v.high;
        if (t.high_at) t.high_at[slot] = i;
      }
      if (!coordinates) continue;
      for (int64_t d = 0; t.moments && d < S; ++d) {
        t.moments[slot * S + d] += v.real * static_cast<double>(coord[d]);
      }
      for (int64_t d = 0; t.lower && d < S; ++d) {
        t.lower[slot * S + d] = std::min(t.lower[slot * S + d], coord[d]);
        t.upper[slot * S + d] = std::max(t.upper[slot * S + d], coord[d]);
      }
      for (int64_t d = S - 1; d >= 0 && ++coord[d] == sizes[d]; --d) coord[d] = 0;
    }
  }
}

// Adds row `from` of `part` to row `to` of `t` (the chunk `from` follows what `to` holds).
void merge(const RegionCall& c, const RegionTables& t, int64_t to, const RegionTables& part, int64_t from, int pass) {
  const int64_t S = c.rank;
  for (int64_t j = 0; j < c.slots; ++j) {
    const int64_t a = to * c.slots + j, b = from * c.slots + j;
    if (pass == 1) {
      t.squares[a] += part.squares[b];
      continue;
    }
    if (part.count[b] == 0) continue;
    const bool first = t.count[a] == 0;
    t.count[a] += part.count[b];
    if (t.sum) t.sum[a] += part.sum[b];
    if (t.whole) t.whole[a] = wrapping_add(t.whole[a], part.whole[b]);
    if (t.low && (first || part.low[b] < t.low[a])) {
      t.low[a] = part.low[b];
      if (t.low_at) t.low_at[a] = part.low_at[b];
    }
    if (t.high && (first || part.high[b] > t.high[a])) {
      t.high[a] = part.high[b];
      if (t.high_at) t.high_at[a] = part.high_at[b];
    }
    for (int64_t d = 0; t.moments && d < S; ++d) t.moments[a * S + d] += part.moments[b * S + d];
    for (int64_t d = 0; t.lower && d < S; ++d) {
      t.lower[a * S + d] = std::min(t.lower[a * S + d], part.lower[b * S + d]);
      t.upper[a * S + d] = std::max(t.upper[a * S + d], part.upper[b * S + d]);
    }
  }
}

// accumulate on row `row` of `t` through tables of the task's own, merged
// into that row once. Tasks that update neighbouring rows of the shared tables
// at every voxel would write the same cache lines (false sharing:
// center_of_mass of a 4x1x96^3 batch ran 8x slower on 2 threads than on 1).
void accumulate_row(const RegionCall& c, int64_t channels, const Chunk& k, const RegionTables& t, int64_t row,
                    const double* means, int pass) {
  std::vector<at::Tensor> own = region_tables(c, 1);
  const RegionTables mine = table_pointers(c, own);
  accumulate(c, channels, k, mine, 0, means, pass);
  merge(c, t, row, mine, 0, pass);
}

// How run_pass and region_histogram cut the slices: chunks of a slice when
// slices are fewer than the threads, while the chunks' tables (`table`
// values each) stay smaller than the slice. `length` voxels a chunk,
// `per_slice` chunks a slice.
struct ChunkPlan {
  int64_t length, per_slice;
};

ChunkPlan chunk_plan(const RegionCall& c, int64_t table) {
  const int64_t threads = at::get_num_threads();
  const int64_t wanted = std::max<int64_t>(
      1, std::min({(threads + c.slices - 1) / c.slices, c.numel / kTaskWork, c.numel / (8 * table)}));
  const int64_t length = (c.numel + wanted - 1) / wanted;
  return {length, (c.numel + length - 1) / length};
}

// One pass over every slice into `out` (pass 1: `means` (slices, slots)).
void run_pass(const RegionCall& c, std::vector<at::Tensor>& out, const double* means, int pass) {
  const int64_t channels = c.input.size(1);
  const RegionTables t = table_pointers(c, out);
  const auto [length, per_slice] = chunk_plan(c, c.slots * (c.rank + 1));
  const int64_t work = length * (1 + c.rank);
  if (per_slice == 1) {
    parallel_over(c.slices, work, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        accumulate_row(c, channels, {s, 0, c.numel}, t, s, means ? means + s * c.slots : nullptr, pass);
      }
    });
    return;
  }
  std::vector<at::Tensor> parts = region_tables(c, c.slices * per_slice);
  const RegionTables p = table_pointers(c, parts);
  parallel_over(c.slices * per_slice, work, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / per_slice, start = task % per_slice * length;
      accumulate_row(c, channels, {s, start, std::min(c.numel, start + length)}, p, task,
                     means ? means + s * c.slots : nullptr, pass);
    }
  });
  for (int64_t task = 0; task < c.slices * per_slice; ++task) merge(c, t, task / per_slice, p, task, pass);
}

}  // namespace

// region_median: a task per slice. Its voxels' value keys (NaN the greatest)
// go to their columns by a counting sort, and each column's lower and upper
// middle come from a selection; the least value key of the slice's least
// label comes along (SciPy's first entry of the slice sorted by label, then
// value: what it gives an index value that no voxel holds).
std::vector<at::Tensor> region_median_cpu(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                          const std::optional<at::Tensor>& table, at::IntArrayRef rule,
                                          int64_t slots) {
  const RegionCall c = region_call(input, labels, table, rule, slots, kRegionCount);
  const auto i64 = input.options().dtype(at::kLong);
  at::Tensor count = at::zeros({c.slices, slots}, i64), low = at::zeros({c.slices, slots}, i64);
  at::Tensor high = at::zeros({c.slices, slots}, i64), least = at::zeros({c.slices}, i64);
  if (c.numel == 0) return {count, low, high, least};
  const int64_t channels = input.size(1);
  int64_t* counts = count.data_ptr<int64_t>();
  int64_t* lows = low.data_ptr<int64_t>();
  int64_t* highs = high.data_ptr<int64_t>();
  int64_t* leasts = least.data_ptr<int64_t>();
  const void* values = c.input.const_data_ptr();
  parallel_over(c.slices, 4 * c.numel, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> keys(c.numel), columns(c.numel), sorted(c.numel), at(slots + 1);
    for (int64_t s = begin; s < end; ++s) {
      const int64_t offset = s * c.numel, label_offset = label_slice(c, s, channels) * c.numel;
      std::vector<int64_t> own(slots, 0);  // the counts, private (no false sharing)
      int64_t* n = own.data();
      int64_t least_label = kKeyMax, least_value = kKeyMax;
      Sample samples[kBlock];
      int64_t label_keys[kBlock];
      for (int64_t block = 0; block < c.numel; block += kBlock) {
        const int64_t m = std::min(kBlock, c.numel - block);
        by_code<Samples>(c.code, values, offset + block, m, samples);
        read_columns(c, label_offset, block, m, columns.data() + block);
        if (c.labels.defined()) by_code<LabelKeys>(c.label_code, c.labels.const_data_ptr(), label_offset + block, m,
                                                   label_keys);
        for (int64_t j = 0; j < m; ++j) {
          const int64_t key = samples[j].high;
          keys[block + j] = key;
          ++n[columns[block + j]];
          if (!c.labels.defined()) continue;
          if (label_keys[j] < least_label) {
            least_label = label_keys[j];
            least_value = key;
          } else if (label_keys[j] == least_label) {
            least_value = std::min(least_value, key);
          }
        }
      }
      leasts[s] = c.labels.defined() ? least_value : 0;
      std::copy(own.begin(), own.end(), counts + s * slots);
      at[0] = 0;
      for (int64_t j = 0; j < slots; ++j) at[j + 1] = at[j] + n[j];
      std::vector<int64_t> next(at.begin(), at.end() - 1);
      for (int64_t i = 0; i < c.numel; ++i) sorted[next[columns[i]]++] = keys[i];
      for (int64_t j = 0; j < slots; ++j) {
        if (n[j] == 0) continue;
        int64_t* first = sorted.data() + at[j];
        int64_t* middle = first + (n[j] - 1) / 2;
        std::nth_element(first, middle, first + n[j]);
        lows[s * slots + j] = *middle;
        highs[s * slots + j] = n[j] % 2 ? *middle : *std::min_element(middle + 1, first + n[j]);
      }
    }
  });
  return {count, low, high, least};
}

// Slices, or chunks of them with counts of their own (while those stay smaller
// than the slice), in parallel; integer counts: merged in any order.
at::Tensor region_histogram_cpu(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                                at::ArrayRef<double> edges) {
  const HistogramCall h = histogram_call(input, labels, table, rule, slots, edges);
  const RegionCall& c = h.regions;
  if (c.numel == 0) return h.counts;
  const int64_t channels = input.size(1), width = slots * h.bins;
  int64_t* counts = h.counts.data_ptr<int64_t>();
  const auto [length, per_slice] = chunk_plan(c, width);
  if (per_slice == 1) {
    parallel_over(c.slices, length, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) count_bins(h, channels, {s, 0, c.numel}, counts + s * width);
    });
    return h.counts;
  }
  std::vector<int64_t> parts(c.slices * per_slice * width, 0);
  parallel_over(c.slices * per_slice, length, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / per_slice, start = task % per_slice * length;
      count_bins(h, channels, {s, start, std::min(c.numel, start + length)}, parts.data() + task * width);
    }
  });
  for (int64_t task = 0; task < c.slices * per_slice; ++task) {
    int64_t* row = counts + task / per_slice * width;
    const int64_t* part = parts.data() + task * width;
    for (int64_t j = 0; j < width; ++j) row[j] += part[j];
  }
  return h.counts;
}

std::vector<at::Tensor> region_stats_cpu(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                         const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                                         int64_t what) {
  const RegionCall c = region_call(input, labels, table, rule, slots, what);
  std::vector<at::Tensor> out = region_tables(c, c.slices);
  if (c.numel == 0) return out;
  run_pass(c, out, nullptr, 0);
  if (what & kRegionSquares) {
    const RegionTables t = table_pointers(c, out);
    std::vector<double> means(c.slices * slots);
    for (int64_t j = 0; j < c.slices * slots; ++j) means[j] = t.sum[j] / static_cast<double>(t.count[j]);
    run_pass(c, out, means.data(), 1);
  }
  return out;
}

}  // namespace morphaug
