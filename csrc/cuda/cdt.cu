// CUDA launcher of morphaug::cdt. Taxicab and chessboard distances without
// indices: separable passes (core/cdt_separable.h), one launch per axis over
// all slices, a warp per line on the last axis (ballots of the mask, so that
// the lanes stay on consecutive voxels: coalesced without staging) and a
// thread per line on the others (consecutive threads on consecutive voxels of
// the last axis). Otherwise SciPy's two raster passes, one block per slice;
// within a row, a thread per voxel and a block-wide scan.
#include <algorithm>
#include <vector>

#include "../core/cdt.h"
#include "../core/cdt_separable.h"
#include "../launch.h"
#include "runtime.cuh"

namespace morphaug {
namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;

struct SliceShape {
  int rank;
  int64_t size[6], pstride[6];
  int64_t slice_numel, padded_numel, plane;  // plane: elements between index coordinates
};

__device__ int64_t row_start(const SliceShape& s, int64_t row) {
  int64_t p = 1;  // last coordinate 0, padded stride 1
  for (int k = s.rank - 2; k >= 0; --k) {
    p += (row % s.size[k] + 1) * s.pstride[k];
    row /= s.size[k];
  }
  return p;
}

__device__ CdtCandidate shuffle_up(CdtCandidate c, int delta) {
  return CdtCandidate{__shfl_up_sync(0xffffffffu, c.distance, delta),
                      __shfl_up_sync(0xffffffffu, c.feature, delta)};
}

// Inclusive scan of x over the block with cdt_combine; every thread calls it.
__device__ CdtCandidate block_scan(CdtCandidate x, CdtCandidate* warp_totals) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int delta = 1; delta < 32; delta *= 2) {
    const CdtCandidate earlier = shuffle_up(x, delta);
    if (lane >= delta) x = cdt_combine(earlier, x);
  }
  __syncthreads();  // warp_totals free again
  if (lane == 31) warp_totals[warp] = x;
  __syncthreads();
  if (warp == 0) {
    CdtCandidate total = warp_totals[lane < kWarps ? lane : kWarps - 1];
    for (int delta = 1; delta < kWarps; delta *= 2) {
      const CdtCandidate earlier = shuffle_up(total, delta);
      if (lane >= delta) total = cdt_combine(earlier, total);
    }
    if (lane < kWarps) warp_totals[lane] = total;
  }
  __syncthreads();
  return warp > 0 ? cdt_combine(warp_totals[warp - 1], x) : x;
}

__global__ void __launch_bounds__(kBlock)
cdt_kernel(const bool* mask_all, int32_t* distances_all, int32_t* indices_all, int32_t* value_all,
           int32_t* feature_all, const __grid_constant__ SliceShape s,
           const __grid_constant__ CdtNeighbours nb) {
  __shared__ CdtCandidate warp_totals[kWarps];
  __shared__ CdtCandidate carry_shared;
  const int64_t slice = blockIdx.x;
  const bool* mask = mask_all + slice * s.slice_numel;
  int32_t* distances = distances_all + slice * s.slice_numel;
  int32_t* indices = indices_all ? indices_all + slice * s.slice_numel : nullptr;
  int32_t* value = value_all + slice * s.padded_numel;
  int32_t* feature = feature_all ? feature_all + slice * s.padded_numel : nullptr;
  const int64_t n = s.size[s.rank - 1];
  const int64_t rows = s.slice_numel / n;
  for (int sign = 1; sign >= -1; sign -= 2) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = sign > 0 ? r : rows - 1 - r;
      const int64_t first = row_start(s, row);
      const int64_t v0 = row * n;
      // Step 1: earlier rows, a thread per voxel.
      for (int64_t x = threadIdx.x; x < n; x += kBlock) {
        const int64_t p = first + x;
        if (sign > 0) {
          value[p] = mask[v0 + x] ? kCdtUnreached : 0;
          if (feature) feature[p] = static_cast<int32_t>(v0 + x);
        }
        cdt_previous_rows(value, feature, p, 1, nb, sign);
      }
      __syncthreads();
      // Step 2: the in-row predecessor, scanned in processing order t.
      if (nb.has_left) {
        CdtCandidate carry{kCdtUnreached, 0};
        for (int64_t chunk = 0; chunk < n; chunk += kBlock) {
          const int64_t t = chunk + threadIdx.x;
          const int64_t p = sign > 0 ? first + t : first + n - 1 - t;
          CdtCandidate key{kCdtUnreached, 0};
          if (t < n) key = cdt_key(value[p], feature ? feature[p] : 0, t);
          const CdtCandidate scanned = cdt_combine(carry, block_scan(key, warp_totals));
          if (t < n) {
            value[p] = cdt_distance(scanned.distance, t);
            if (feature) feature[p] = scanned.feature;
          }
          if (threadIdx.x == kBlock - 1) carry_shared = scanned;
          __syncthreads();
          carry = carry_shared;
        }
        __syncthreads();
      }
      if (sign > 0) continue;
      for (int64_t x = threadIdx.x; x < n; x += kBlock) {
        const int32_t d = value[first + x];
        distances[v0 + x] = d >= kCdtUnreached ? -1 : d;
        if (!indices) continue;
        int64_t rest = feature[first + x];
        for (int k = s.rank - 1; k >= 0; --k) {
          indices[k * s.plane + v0 + x] = static_cast<int32_t>(rest % s.size[k]);
          rest /= s.size[k];
        }
      }
    }
    __syncthreads();
  }
}

// --- separable passes ---------------------------------------------------------

constexpr int kLinesPerBlock = kBlock / 32;  // a warp per line on the last axis
constexpr int64_t kStackLines = int64_t{1} << 18;  // chessboard lines with a stack at once
constexpr unsigned kMaxSlicesPerLaunch = 65535;  // gridDim.y

// Distances along the last axis from the mask, n voxels a line: 0 on
// background, else to the nearest background on the line, unreached if none.
// The lanes of a warp take 32 consecutive voxels; the nearest background at or
// before (after) a lane is the highest (lowest) bit of the ballot up to (from)
// it, else the one carried from the chunks before. `report`: the only pass.
__global__ void __launch_bounds__(kBlock)
cdt_line_kernel(const bool* mask, int32_t* out, int32_t lines, int32_t n, int64_t slice_numel,
                int64_t slices, bool report) {
  const int32_t line = blockIdx.x * kLinesPerBlock + threadIdx.x / 32;
  const int32_t lane = threadIdx.x % 32;
  if (line >= lines) return;  // whole warps
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const int64_t first = slice * slice_numel + static_cast<int64_t>(line) * n;
    const bool* m = mask + first;
    int32_t* d = out + first;
    int32_t before = -kCdtUnreached;  // the last background so far, none: x - before >= unreached
    for (int32_t c = 0; c < n; c += 32) {
      const int32_t x = c + lane;
      const unsigned bits = __ballot_sync(0xffffffffu, x < n && !m[x]);
      const unsigned upto = bits & ((2u << lane) - 1u);
      const int32_t near = upto ? c + 31 - __clz(upto) : before;
      if (x < n) d[x] = x - near < kCdtUnreached ? x - near : kCdtUnreached;
      if (bits) before = c + 31 - __clz(bits);
    }
    int32_t after = n + kCdtUnreached;  // the first background after the chunk, none likewise
    for (int32_t c = (n - 1) / 32 * 32; c >= 0; c -= 32) {
      const int32_t x = c + lane;
      const unsigned bits = __ballot_sync(0xffffffffu, x < n && !m[x]);
      const unsigned from = bits & ~((1u << lane) - 1u);
      const int32_t near = from ? c + __ffs(from) - 1 : after;
      if (x < n) {
        const int32_t h = near - x < d[x] ? near - x : d[x];
        d[x] = report ? cdt_reported(h) : h;
      }
      if (bits) after = c + __ffs(bits) - 1;
    }
  }
}

// A pass along an axis other than the last: `lines` lines a slice of `length`
// values `stride` apart; thread t takes the line at (t / stride) * length *
// stride + t % stride, so that consecutive threads read consecutive voxels.
struct AxisLines {
  int32_t lines, length, stride;
  int64_t slice_numel, slices;
  bool report;  // the last pass: unreached as -1

  __device__ int32_t first(int32_t t) const {
    const int32_t outer = t / stride;
    return outer * length * stride + (t - outer * stride);
  }
};

// Taxicab: a forward and a backward +1 sweep along each line.
__global__ void __launch_bounds__(kBlock) cdt_taxicab_axis_kernel(int32_t* out, AxisLines a) {
  const int32_t t = blockIdx.x * kBlock + threadIdx.x;
  if (t >= a.lines) return;
  const int32_t first = a.first(t);
  for (int64_t slice = blockIdx.y; slice < a.slices; slice += gridDim.y) {
    int32_t* line = out + slice * a.slice_numel + first;
    int32_t carry = line[0];
    for (int32_t i = 1; i < a.length; ++i) line[i * a.stride] = carry = cdt_sweep(line[i * a.stride], carry);
    if (a.report) line[(a.length - 1) * a.stride] = cdt_reported(carry);
    for (int32_t i = a.length - 2; i >= 0; --i) {
      carry = cdt_sweep(line[i * a.stride], carry);
      line[i * a.stride] = a.report ? cdt_reported(carry) : carry;
    }
  }
}

// Chessboard: the 1-D lower envelope of cones along each line; the thread's
// stack lies in `stack`, its entries `step` apart (the threads with a stack).
__global__ void __launch_bounds__(kBlock)
cdt_chessboard_axis_kernel(int32_t* out, int32_t* stack, int64_t step, AxisLines a) {
  const int32_t t = blockIdx.x * kBlock + threadIdx.x;
  if (t >= a.lines) return;
  const int32_t first = a.first(t);
  int32_t* site = stack + blockIdx.y * static_cast<int64_t>(a.lines) + t;
  int32_t* start = site + step * a.length;
  int32_t* value = start + step * a.length;
  for (int64_t slice = blockIdx.y; slice < a.slices; slice += gridDim.y) {
    cdt_chessboard_line(out + slice * a.slice_numel + first, a.stride, a.length, site, start, value,
                        step, a.report);
  }
}

// Taxicab or chessboard distances of the mask into `distances`: the last axis
// from the mask, then each earlier axis in place.
void cdt_separable(const at::Tensor& mask, at::Tensor& distances, const CdtSetup& s, bool chessboard) {
  const cudaStream_t stream = cuda::current_stream();
  const unsigned slices_per_launch = static_cast<unsigned>(std::min<int64_t>(s.slices, kMaxSlicesPerLaunch));
  int32_t* d = distances.data_ptr<int32_t>();
  const int32_t n = static_cast<int32_t>(s.size[s.rank - 1]);
  const int32_t rows = static_cast<int32_t>(s.slice_numel / n);
  const dim3 line_grid((rows + kLinesPerBlock - 1) / kLinesPerBlock, slices_per_launch);
  cuda::launch<cdt_line_kernel>(line_grid, kBlock, stream, mask.data_ptr<bool>(), d, rows, n,
                                s.slice_numel, s.slices, s.rank == 1);
  int32_t stride = n;
  for (int k = s.rank - 2; k >= 0; --k) {
    AxisLines a{};
    a.length = static_cast<int32_t>(s.size[k]);
    a.stride = stride;
    a.lines = static_cast<int32_t>(s.slice_numel / a.length);
    a.slice_numel = s.slice_numel;
    a.slices = s.slices;
    a.report = k == 0;
    const unsigned blocks = static_cast<unsigned>((a.lines + kBlock - 1) / kBlock);
    if (chessboard) {
      // as many slices at once as kStackLines lines allow: the stacks are 3 x length per line
      const unsigned at_once = static_cast<unsigned>(
          std::clamp<int64_t>(kStackLines / a.lines, 1, slices_per_launch));
      const int64_t step = static_cast<int64_t>(at_once) * a.lines;
      const at::Tensor stack = at::empty({3 * step * a.length}, distances.options());
      cuda::launch<cdt_chessboard_axis_kernel>(dim3(blocks, at_once), kBlock, stream, d,
                                               stack.data_ptr<int32_t>(), step, a);
    } else {
      cuda::launch<cdt_taxicab_axis_kernel>(dim3(blocks, slices_per_launch), kBlock, stream, d, a);
    }
    stride *= a.length;
  }
}

std::tuple<at::Tensor, at::Tensor> cdt_cuda(const at::Tensor& mask, at::IntArrayRef metric,
                                            bool return_indices) {
  const cuda::DeviceGuard guard(mask.device());
  const CdtSetup setup = cdt_setup(mask, metric);
  const auto options = mask.options().dtype(at::kInt);
  at::Tensor distances = at::empty(mask.sizes(), options);
  std::vector<int64_t> index_shape{setup.rank};
  index_shape.insert(index_shape.end(), mask.sizes().begin(), mask.sizes().end());
  if (!return_indices) index_shape = {0};
  at::Tensor indices = at::empty(index_shape, options);
  if (mask.numel() == 0) return {distances, indices};
  const at::Tensor contiguous = mask.contiguous();
  const CdtPath path = cdt_path(setup, metric, return_indices);
  if (path != CdtPath::raster) {
    cdt_separable(contiguous, distances, setup, path == CdtPath::chessboard);
    return {distances, indices};
  }
  // Padded buffers, unreached everywhere: every pass writes a row before reading it. The
  // cube reads its earlier rows' voxels from them too (the CPU's row triples would be two
  // more buffers; here the reads hit the cache).
  const int64_t buffer = setup.slices * setup.padded_numel;
  const at::Tensor value = at::full({buffer}, kCdtUnreached, options);
  const at::Tensor feature = return_indices ? at::empty({buffer}, options) : at::Tensor();
  SliceShape shape{};
  shape.rank = setup.rank;
  for (int k = 0; k < setup.rank; ++k) {
    shape.size[k] = setup.size[k];
    shape.pstride[k] = setup.pstride[k];
  }
  shape.slice_numel = setup.slice_numel;
  shape.padded_numel = setup.padded_numel;
  shape.plane = mask.numel();
  cuda::launch<cdt_kernel>(static_cast<unsigned>(setup.slices), kBlock, cuda::current_stream(),
      contiguous.data_ptr<bool>(), distances.data_ptr<int32_t>(),
      return_indices ? indices.data_ptr<int32_t>() : nullptr, value.data_ptr<int32_t>(),
      return_indices ? feature.data_ptr<int32_t>() : nullptr, shape, setup.neighbours);
  return {distances, indices};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("cdt", &cdt_cuda); }

}  // namespace morphaug
