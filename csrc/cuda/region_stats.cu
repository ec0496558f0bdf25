// CUDA launchers of morphaug::region_stats and region_histogram
// (core/region_stats.h).
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

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("region_stats", &region_stats_cuda);
  m.impl("region_histogram", &region_histogram_cuda);
}

}  // namespace morphaug
