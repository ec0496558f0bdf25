// CUDA launchers of morphaug::region_stats, region_histogram and
// region_median (core/region_stats.h).
//
// region_stats: a block per
// kChunk voxels of a slice, neighbouring threads on neighbouring voxels, the
// slices grid-stride along y; 32-bit index math inside a slice. Pass 0 fills
// the count, sums, extrema keys, moments and bounds; pass 1 (only where
// asked) the first raster index of each extremum (the voxels equal to it,
// atomicMin) and the centred squares (the means from pass 0's tables). With
// few slots a block accumulates in shared memory and adds its tables to the
// global ones once; otherwise every voxel updates the global tables. No host
// read: two launches at most, after the tables' fills.
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <vector>

#include "../core/region_stats.h"
#include "../region_tables.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kItems = 8;                     // voxels per thread
constexpr int kChunk = kThreads * kItems;     // voxels per block
constexpr int kSharedSlots = 64;              // slots of the block-local tables
constexpr int kSharedAxes = 4;                // spatial axes of the block-local moments and bounds

struct Params {
  const void* values;
  const void* labels;
  SlotRule rule;
  RegionTables t;
  int32_t sizes[kMaxRank];
  int32_t rank, numel, slots;
  int64_t slices, channels, label_b, label_c;
  int code, label_code;
};

// The fields Params and HistogramParams share: the values, the labels and
// their rule, the slices; and the grid of their kernels (a block per kChunk
// voxels of a slice, the slices along y).
template <typename P>
dim3 read_voxels(const RegionCall& c, P& p) {
  TORCH_CHECK(c.numel < (int64_t{1} << 31), "morphaug::region_stats: slices of 2**31 voxels or more");
  p.values = c.input.const_data_ptr();
  p.labels = c.labels.defined() ? c.labels.const_data_ptr() : nullptr;
  p.rule = c.rule;
  p.numel = static_cast<int32_t>(c.numel);
  p.slices = c.slices;
  p.channels = c.input.size(1);
  p.label_b = c.label_b;
  p.label_c = c.label_c;
  p.code = c.code;
  p.label_code = c.label_code;
  return dim3(static_cast<unsigned>((c.numel + kChunk - 1) / kChunk),
              static_cast<unsigned>(std::min<int64_t>(c.slices, kMaxBlocks)));
}

__device__ __forceinline__ void add_i64(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void min_i64(int64_t* p, int64_t v) {
  atomicMin(reinterpret_cast<long long*>(p), static_cast<long long>(v));
}
__device__ __forceinline__ void max_i64(int64_t* p, int64_t v) {
  atomicMax(reinterpret_cast<long long*>(p), static_cast<long long>(v));
}

// Adds one voxel (value v at raster index i, column `slot` of the row of tables
// `t`) to the tables of `pass`; pass 1 reads pass 0's at `row + slot` of `global`.
__device__ __forceinline__ void add_voxel(const Params& p, const RegionTables& t, int64_t slot, const Sample& v,
                                          uint32_t i, int pass, const RegionTables& global, int64_t row) {
  const int S = p.rank;
  if (pass == 1) {
    const int64_t at = row + slot;
    if (t.low_at && v.low == global.low[at]) min_i64(t.low_at + slot, static_cast<int64_t>(i));
    if (t.high_at && v.high == global.high[at]) min_i64(t.high_at + slot, static_cast<int64_t>(i));
    if (t.squares) {
      const double centred = v.real - global.sum[at] / static_cast<double>(global.count[at]);
      atomicAdd(t.squares + slot, centred * centred);
    }
    return;
  }
  add_i64(t.count + slot, 1);
  if (t.sum) atomicAdd(t.sum + slot, v.real);
  if (t.whole) add_i64(t.whole + slot, v.whole);
  if (t.low) min_i64(t.low + slot, v.low);
  if (t.high) max_i64(t.high + slot, v.high);
  if (t.moments || t.lower) {
    uint32_t rest = i;
    for (int d = S - 1; d >= 0; --d) {
      const uint32_t n = static_cast<uint32_t>(p.sizes[d]), q = rest / n, coord = rest - q * n;
      rest = q;
      if (t.moments) atomicAdd(t.moments + slot * S + d, v.real * static_cast<double>(coord));
      if (t.lower) {
        min_i64(t.lower + slot * S + d, coord);
        max_i64(t.upper + slot * S + d, coord);
      }
    }
  }
}

// The tables of row `row` of `t` (rows of `slots` slots, S axes).
__device__ __forceinline__ RegionTables row_of(const RegionTables& t, int64_t row, int64_t slots, int S) {
  const int64_t f = row * slots, a = f * S;
  auto at = [](auto* base, int64_t o) { return base ? base + o : base; };
  return RegionTables{at(t.count, f), at(t.sum, f), at(t.whole, f), at(t.low, f), at(t.high, f),
                      at(t.low_at, f), at(t.high_at, f), at(t.moments, a), at(t.lower, a), at(t.upper, a),
                      at(t.squares, f)};
}

template <bool Shared>
__global__ void __launch_bounds__(kThreads) region_kernel(Params p, int pass) {
  __shared__ int64_t s_count[Shared ? kSharedSlots : 1], s_whole[Shared ? kSharedSlots : 1];
  __shared__ int64_t s_low[Shared ? kSharedSlots : 1], s_high[Shared ? kSharedSlots : 1];
  __shared__ double s_sum[Shared ? kSharedSlots : 1];
  __shared__ double s_moments[Shared ? kSharedSlots * kSharedAxes : 1];
  __shared__ int64_t s_lower[Shared ? kSharedSlots * kSharedAxes : 1], s_upper[Shared ? kSharedSlots * kSharedAxes : 1];
  const int S = p.rank;
  const uint32_t begin = blockIdx.x * kChunk + threadIdx.x;  // below 2**31 + kChunk
  for (int64_t slice = blockIdx.y; slice < p.slices; slice += gridDim.y) {
    const RegionTables global = row_of(p.t, slice, p.slots, S);
    RegionTables t = global;
    const int flat = p.slots, axes = p.slots * S;
    if (Shared) {  // pass 0: count .. bounds; pass 1: low_at, high_at in s_low, s_high, squares in s_sum
      for (int j = threadIdx.x; j < axes || j < flat; j += blockDim.x) {
        if (j < flat) {
          s_count[j] = s_whole[j] = 0;
          s_sum[j] = 0.0;
          s_low[j] = kKeyMax;  // pass 1: a position
          s_high[j] = pass == 0 ? kKeyMin : kKeyMax;
        }
        if (j < axes) {
          s_moments[j] = 0.0;
          s_lower[j] = kKeyMax;
          s_upper[j] = kKeyMin;
        }
      }
      __syncthreads();
      if (pass == 0) {
        t = RegionTables{s_count, global.sum ? s_sum : nullptr, global.whole ? s_whole : nullptr,
                         global.low ? s_low : nullptr, global.high ? s_high : nullptr, nullptr, nullptr,
                         global.moments ? s_moments : nullptr, global.lower ? s_lower : nullptr,
                         global.upper ? s_upper : nullptr, nullptr};
      } else {
        t = RegionTables{nullptr, nullptr, nullptr, nullptr, nullptr, global.low_at ? s_low : nullptr,
                         global.high_at ? s_high : nullptr, nullptr, nullptr, nullptr,
                         global.squares ? s_sum : nullptr};
      }
    }
    const int64_t offset = slice * p.numel;
    const int64_t label_offset = (slice / p.channels * p.label_b + slice % p.channels * p.label_c) * p.numel;
    for (int k = 0; k < kItems; ++k) {
      const uint32_t i = begin + k * kThreads;
      if (i >= static_cast<uint32_t>(p.numel)) break;
      const int64_t key = p.labels ? read_label(p.labels, p.label_code, label_offset + i) : 0;
      const int64_t slot = slot_of(p.rule, key);
      add_voxel(p, t, slot, read_sample(p.values, p.code, offset + i), i, pass, p.t, slice * p.slots);
    }
    if (Shared) {
      __syncthreads();
      for (int j = threadIdx.x; j < flat; j += blockDim.x) {
        if (pass == 1) {
          if (global.low_at && s_low[j] != kKeyMax) min_i64(global.low_at + j, s_low[j]);
          if (global.high_at && s_high[j] != kKeyMax) min_i64(global.high_at + j, s_high[j]);
          if (global.squares && s_sum[j] != 0.0) atomicAdd(global.squares + j, s_sum[j]);
          continue;
        }
        if (s_count[j] == 0) continue;
        add_i64(global.count + j, s_count[j]);
        if (global.sum) atomicAdd(global.sum + j, s_sum[j]);
        if (global.whole) add_i64(global.whole + j, s_whole[j]);
        if (global.low) min_i64(global.low + j, s_low[j]);
        if (global.high) max_i64(global.high + j, s_high[j]);
        for (int d = 0; d < S; ++d) {
          if (global.moments) atomicAdd(global.moments + j * S + d, s_moments[j * S + d]);
          if (global.lower) {
            min_i64(global.lower + j * S + d, s_lower[j * S + d]);
            max_i64(global.upper + j * S + d, s_upper[j * S + d]);
          }
        }
      }
      __syncthreads();  // before the next slice resets the tables
    }
  }
}

std::vector<at::Tensor> region_stats_cuda(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                          const std::optional<at::Tensor>& table, at::IntArrayRef rule,
                                          int64_t slots, int64_t what) {
  const cuda::DeviceGuard guard(input.device());
  const RegionCall c = region_call(input, labels, table, rule, slots, what);
  std::vector<at::Tensor> out = region_tables(c, c.slices);
  if (c.numel == 0) return out;
  TORCH_CHECK(slots < (int64_t{1} << 31), "morphaug::region_stats: 2**31 slots or more");
  Params p{};
  const dim3 grid = read_voxels(c, p);
  p.t = table_pointers(c, out);
  for (int64_t d = 0; d < c.rank; ++d) p.sizes[d] = static_cast<int32_t>(input.size(d + 2));
  p.rank = static_cast<int32_t>(c.rank);
  p.slots = static_cast<int32_t>(slots);
  const bool shared = slots <= kSharedSlots && c.rank <= kSharedAxes;
  const cudaStream_t stream = cuda::current_stream();
  const bool second = what & (kRegionLowAt | kRegionHighAt | kRegionSquares);
  for (int pass = 0; pass < (second ? 2 : 1); ++pass) {
    if (shared) {
      cuda::launch<region_kernel<true>>(grid, kThreads, stream, p, pass);
    } else {
      cuda::launch<region_kernel<false>>(grid, kThreads, stream, p, pass);
    }
  }
  return out;
}

constexpr int kSharedBins = 4096;  // (slot, bin) counts of the block-local table: 16 KiB of uint32

struct HistogramParams {
  const void* values;
  const void* labels;
  SlotRule rule;
  int64_t* counts;
  const double* edges;
  double scale;
  int32_t bins, width, numel;  // width: slots * bins
  int64_t slices, channels, label_b, label_c;
  int code, label_code;
};

// region_histogram: region_kernel's blocks, each voxel adding 1 to its (slot,
// bin) count, in shared memory when a row of them fits there.
template <bool Shared>
__global__ void __launch_bounds__(kThreads) histogram_kernel(HistogramParams p) {
  __shared__ uint32_t s_counts[Shared ? kSharedBins : 1];
  const uint32_t begin = blockIdx.x * kChunk + threadIdx.x;  // below 2**31 + kChunk
  for (int64_t slice = blockIdx.y; slice < p.slices; slice += gridDim.y) {
    int64_t* global = p.counts + slice * p.width;
    if (Shared) {
      for (int j = threadIdx.x; j < p.width; j += blockDim.x) s_counts[j] = 0;
      __syncthreads();
    }
    const int64_t offset = slice * p.numel;
    const int64_t label_offset = (slice / p.channels * p.label_b + slice % p.channels * p.label_c) * p.numel;
    for (int k = 0; k < kItems; ++k) {
      const uint32_t i = begin + k * kThreads;
      if (i >= static_cast<uint32_t>(p.numel)) break;
      const int64_t bin = histogram_bin(read_sample(p.values, p.code, offset + i).real, p.edges, p.bins, p.scale);
      if (bin < 0) continue;
      const int64_t key = p.labels ? read_label(p.labels, p.label_code, label_offset + i) : 0;
      const int64_t at = slot_of(p.rule, key) * p.bins + bin;
      if (Shared) {
        atomicAdd(s_counts + at, 1u);
      } else {
        add_i64(global + at, 1);
      }
    }
    if (Shared) {
      __syncthreads();
      for (int j = threadIdx.x; j < p.width; j += blockDim.x) {
        if (s_counts[j] != 0) add_i64(global + j, s_counts[j]);
      }
      __syncthreads();  // before the next slice resets the counts
    }
  }
}

at::Tensor region_histogram_cuda(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                 const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                                 at::ArrayRef<double> edges) {
  const cuda::DeviceGuard guard(input.device());
  const HistogramCall h = histogram_call(input, labels, table, rule, slots, edges);
  const RegionCall& c = h.regions;
  if (c.numel == 0) return h.counts;
  const int64_t width = slots * h.bins;
  TORCH_CHECK(width < (int64_t{1} << 31), "morphaug::region_histogram: 2**31 slots times bins or more");
  const at::Tensor device_edges = to_device(h.edges, at::kDouble, input.device());
  HistogramParams p{};
  const dim3 grid = read_voxels(c, p);
  p.counts = h.counts.data_ptr<int64_t>();
  p.edges = device_edges.data_ptr<double>();
  p.scale = h.scale;
  p.bins = static_cast<int32_t>(h.bins);
  p.width = static_cast<int32_t>(width);
  if (width <= kSharedBins) {
    cuda::launch<histogram_kernel<true>>(grid, kThreads, cuda::current_stream(), p);
  } else {
    cuda::launch<histogram_kernel<false>>(grid, kThreads, cuda::current_stream(), p);
  }
  return h.counts;
}

// --- region_median: a radix select of each column's two middles -------------
// Each voxel's value becomes a compact key of the dtype's width (8 to 64 bits,
// ordered as the values, NaN the greatest, -0.0 as 0.0). A count pass fills
// the columns' counts (and the least label of each slice); then, per 8-bit
// digit from the top, a pass counts the digits of the voxels whose higher
// digits match each middle's prefix so far, and a thread per (column, middle)
// walks its 256 counts to the digit holding its rank. After the last digit
// the prefixes are the middles. The first digit pass also takes the least
// value of each slice's least label. No host read, no sort: 1 + 2 * width / 8
// launches (float32: 9), reading the values and labels once per pass.

constexpr int kDigits = 256;
constexpr int kSharedColumns = kSharedBins / (2 * kDigits);  // columns whose digit counts fit a block

// The width in bits of the compact keys of dtype `code`.
__host__ __device__ __forceinline__ int compact_bits(int code) {
  switch (code) {
    case kDBool: case kDU8: case kDI8: return 8;
    case kDI16: case kDU16: case kDF16: case kDBF16: return 16;
    case kDI32: case kDU32: case kDF32: return 32;
    default: return 64;
  }
}

// A float's `bits`-wide pattern as an ordered key: NaN (exponent all ones and
// a mantissa) the greatest key, -0.0 as 0.0.
__device__ __forceinline__ uint64_t float_key(uint64_t raw, int bits, uint64_t infinity) {
  const uint64_t sign = uint64_t{1} << (bits - 1), all = sign | (sign - 1);
  if ((raw & ~sign) > infinity) return all;
  if (raw == sign) raw = 0;
  return raw & sign ? ~raw & all : raw | sign;
}

__device__ __forceinline__ uint64_t compact_key(const void* data, int code, int64_t i) {
  switch (code) {
    case kDBool: return static_cast<const bool*>(data)[i];
    case kDU8: return static_cast<const uint8_t*>(data)[i];
    case kDI8: return static_cast<uint64_t>(static_cast<const int8_t*>(data)[i] + 128);
    case kDI16: return static_cast<uint64_t>(static_cast<const int16_t*>(data)[i] + 32768);
    case kDU16: return static_cast<const uint16_t*>(data)[i];
    case kDF16: return float_key(static_cast<const uint16_t*>(data)[i], 16, 0x7C00u);
    case kDBF16: return float_key(static_cast<const uint16_t*>(data)[i], 16, 0x7F80u);
    case kDI32: return static_cast<uint64_t>(int64_t{static_cast<const int32_t*>(data)[i]} + (int64_t{1} << 31));
    case kDU32: return static_cast<const uint32_t*>(data)[i];
    case kDF32: return float_key(static_cast<const uint32_t*>(data)[i], 32, 0x7F800000u);
    case kDI64: return static_cast<uint64_t>(static_cast<const int64_t*>(data)[i]) ^ (uint64_t{1} << 63);
    case kDU64: return static_cast<const uint64_t*>(data)[i];
    default: return float_key(static_cast<const uint64_t*>(data)[i], 64, 0x7FF0000000000000ull);
  }
}

// region_stats' key (NaN the greatest) of the value whose compact key is `key`.
__device__ __forceinline__ int64_t region_key(uint64_t key, int code) {
  const int bits = compact_bits(code);
  const uint64_t sign = uint64_t{1} << (bits - 1), all = sign | (sign - 1);
  uint64_t raw = key;
  switch (code) {
    case kDI8: raw = key - 128; break;
    case kDI16: raw = key - 32768; break;
    case kDI32: raw = key - (uint64_t{1} << 31); break;
    case kDI64: raw = key ^ sign; break;
    case kDF16: case kDBF16: case kDF32: case kDF64: raw = key & sign ? key & ~sign : ~key & all; break;
    default: break;
  }
  uint64_t value[1] = {raw};  // little-endian: the low bytes hold the dtype's pattern
  return read_sample(value, code, 0).high;
}

struct MedianParams {
  const void* values;
  const void* labels;
  SlotRule rule;
  int32_t numel, slots;
  int64_t slices, channels, label_b, label_c;
  int code, label_code;
  int64_t* count;                   // (rows, slots)
  int32_t* digits;                  // (rows, slots, 2, kDigits): the digit counts of a pass
  const unsigned long long* prefix; // (rows, slots, 2): each middle's key so far
  long long* least_label;           // (rows,): the least label key of each slice
  long long* least;                 // (rows,): the least value key of that label
  int shift;                        // the digit pass's lowest bit; -1: the count pass
};

// The count pass (p.shift < 0) and the digit passes: region_kernel's blocks,
// each voxel adding 1 to its column's count, or to its digit's count for each
// middle whose prefix its higher digits match; in shared memory where a row fits.
template <bool Shared>
__global__ void __launch_bounds__(kThreads) median_kernel(MedianParams p) {
  __shared__ uint32_t s_counts[Shared ? kSharedBins : 1];
  const uint32_t begin = blockIdx.x * kChunk + threadIdx.x;  // below 2**31 + kChunk
  const bool counting = p.shift < 0, top = p.shift + 8 == compact_bits(p.code);
  const int width = counting ? p.slots : p.slots * 2 * kDigits;
  for (int64_t slice = blockIdx.y; slice < p.slices; slice += gridDim.y) {
    if (Shared) {
      for (int j = threadIdx.x; j < width; j += blockDim.x) s_counts[j] = 0;
      __syncthreads();
    }
    const int64_t offset = slice * p.numel;
    const int64_t label_offset = (slice / p.channels * p.label_b + slice % p.channels * p.label_c) * p.numel;
    // counting: the least label key; the top digit's pass: the least value key of that label
    long long least = kKeyMax;
    for (int k = 0; k < kItems; ++k) {
      const uint32_t i = begin + k * kThreads;
      if (i >= static_cast<uint32_t>(p.numel)) break;
      const int64_t label = p.labels ? read_label(p.labels, p.label_code, label_offset + i) : 0;
      const int64_t slot = slot_of(p.rule, label);
      if (counting) {
        least = label < least ? label : least;
        if (Shared) {
          atomicAdd(s_counts + slot, 1u);
        } else {
          atomicAdd(reinterpret_cast<unsigned long long*>(p.count + slice * p.slots + slot), 1ull);
        }
        continue;
      }
      const uint64_t key = compact_key(p.values, p.code, offset + i);
      if (top && p.labels && label == p.least_label[slice]) {
        const long long value = region_key(key, p.code);
        least = value < least ? value : least;
      }
      for (int t = 0; t < 2; ++t) {
        const int64_t entry = (slice * p.slots + slot) * 2 + t;
        if (!top && (key ^ p.prefix[entry]) >> (p.shift + 8) != 0) continue;
        const int at = static_cast<int>((slot * 2 + t) * kDigits + (key >> p.shift & (kDigits - 1)));
        if (Shared) {
          atomicAdd(s_counts + at, 1u);
        } else {
          atomicAdd(p.digits + slice * p.slots * 2 * kDigits + at, 1);
        }
      }
    }
    if (p.labels && (counting || top)) {
      least = warp_extremum<false>(least);
      if (threadIdx.x % 32 == 0 && least != kKeyMax) {
        atomicMin(counting ? p.least_label + slice : p.least + slice, least);
      }
    }
    if (Shared) {
      __syncthreads();
      for (int j = threadIdx.x; j < width; j += blockDim.x) {
        if (s_counts[j] == 0) continue;
        if (counting) {
          atomicAdd(reinterpret_cast<unsigned long long*>(p.count + slice * p.slots + j),
                    static_cast<unsigned long long>(s_counts[j]));
        } else {
          atomicAdd(p.digits + slice * p.slots * 2 * kDigits + j, static_cast<int>(s_counts[j]));
        }
      }
      __syncthreads();  // before the next slice resets the counts
    }
  }
}

// After a digit pass, a thread per (row, column, middle): the digit holding its
// rank (set from the count before the top digit) extends its prefix; the
// counts go back to 0 for the next pass. After the last digit: the middle.
__global__ void median_select_kernel(const int64_t* count, int32_t* digits, unsigned long long* prefix,
                                     int64_t* rank, int64_t entries, int shift, bool top, int code,
                                     int64_t* low, int64_t* high) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < entries;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t n = count[e / 2];
    int32_t* bins = digits + e * kDigits;
    if (n == 0) continue;  // no voxel, no count: middles of 0
    int64_t k = top ? (e % 2 == 0 ? (n - 1) / 2 : n / 2) : rank[e];
    int chosen = 0;
    for (int d = 0, found = 0; d < kDigits; ++d) {
      const int64_t h = bins[d];
      bins[d] = 0;
      if (found) continue;
      if (k < h) {
        chosen = d;
        found = 1;
      } else {
        k -= h;
      }
    }
    const unsigned long long key = (top ? 0ull : prefix[e]) | static_cast<unsigned long long>(chosen) << shift;
    prefix[e] = key;
    rank[e] = k;
    if (shift == 0) (e % 2 == 0 ? low : high)[e / 2] = region_key(key, code);
  }
}

std::vector<at::Tensor> region_median_cuda(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                           const std::optional<at::Tensor>& table, at::IntArrayRef rule,
                                           int64_t slots) {
  const cuda::DeviceGuard guard(input.device());
  const RegionCall c = region_call(input, labels, table, rule, slots, kRegionCount);
  const auto i64 = input.options().dtype(at::kLong);
  at::Tensor count = at::zeros({c.slices, slots}, i64), low = at::zeros({c.slices, slots}, i64);
  at::Tensor high = at::zeros({c.slices, slots}, i64);
  if (c.numel == 0) return {count, low, high, at::zeros({c.slices}, i64)};
  // the least value key of each slice's least label (0 without labels)
  at::Tensor least = c.labels.defined() ? at::full({c.slices}, kKeyMax, i64) : at::zeros({c.slices}, i64);
  const int64_t entries = c.slices * slots * 2;
  TORCH_CHECK(slots * 2 * kDigits < (int64_t{1} << 31), "morphaug::region_median: 2**22 slots or more");
  at::Tensor digits = at::zeros({entries * kDigits}, input.options().dtype(at::kInt));
  at::Tensor prefix = at::empty({entries}, i64), rank = at::empty({entries}, i64);
  at::Tensor least_label = at::full({c.slices}, kKeyMax, i64);
  MedianParams p{};
  const dim3 grid = read_voxels(c, p);
  p.slots = static_cast<int32_t>(slots);
  p.count = count.data_ptr<int64_t>();
  p.digits = digits.data_ptr<int32_t>();
  p.prefix = reinterpret_cast<const unsigned long long*>(prefix.data_ptr<int64_t>());
  p.least_label = reinterpret_cast<long long*>(least_label.data_ptr<int64_t>());
  p.least = reinterpret_cast<long long*>(least.data_ptr<int64_t>());
  const cudaStream_t stream = cuda::current_stream();
  auto pass = [&](int shift, bool shared) {
    p.shift = shift;
    if (shared) {
      cuda::launch<median_kernel<true>>(grid, kThreads, stream, p);
    } else {
      cuda::launch<median_kernel<false>>(grid, kThreads, stream, p);
    }
  };
  pass(-1, slots <= kSharedBins);
  const int bits = compact_bits(c.code);
  for (int shift = bits - 8; shift >= 0; shift -= 8) {
    pass(shift, slots <= kSharedColumns);
    cuda::launch<median_select_kernel>(blocks_for(entries), kThreads, stream, count.data_ptr<int64_t>(),
                                       p.digits, reinterpret_cast<unsigned long long*>(prefix.data_ptr<int64_t>()),
                                       rank.data_ptr<int64_t>(), entries, shift, shift + 8 == bits, c.code,
                                       low.data_ptr<int64_t>(), high.data_ptr<int64_t>());
  }
  return {count, low, high, least};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("region_stats", &region_stats_cuda);
  m.impl("region_histogram", &region_histogram_cuda);
  m.impl("region_median", &region_median_cuda);
}

}  // namespace morphaug
