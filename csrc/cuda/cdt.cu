// CUDA launcher of morphaug::cdt: SciPy's two raster passes, one block per
// slice; within a row, a thread per voxel and a block-wide scan.
#include <vector>

#include "../core/cdt.h"
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
           int32_t* feature_all, int32_t* triple_all, int32_t* triple_feature_all, SliceShape s,
           CdtNeighbours nb) {
  __shared__ CdtCandidate warp_totals[kWarps];
  __shared__ CdtCandidate carry_shared;
  const int64_t slice = blockIdx.x;
  const bool* mask = mask_all + slice * s.slice_numel;
  int32_t* distances = distances_all + slice * s.slice_numel;
  int32_t* indices = indices_all ? indices_all + slice * s.slice_numel : nullptr;
  int32_t* value = value_all + slice * s.padded_numel;
  int32_t* feature = feature_all ? feature_all + slice * s.padded_numel : nullptr;
  int32_t* triple = triple_all ? triple_all + slice * s.padded_numel : nullptr;
  int32_t* triple_feature =
      triple_feature_all ? triple_feature_all + slice * s.padded_numel : nullptr;
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
        if (triple) {
          cdt_previous_rows_cube(value, feature, triple, triple_feature, p, 1, nb, sign);
        } else {
          cdt_previous_rows(value, feature, p, 1, nb, sign);
        }
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
      if (triple) {
        for (int64_t x = threadIdx.x; x < n; x += kBlock) {
          cdt_row_triples(value, feature, triple, triple_feature, first + x, 1, sign);
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
  // Padded buffers, unreached everywhere: every pass writes a row before reading it.
  const int64_t buffer = setup.slices * setup.padded_numel;
  const bool cube = setup.neighbours.cube;
  const at::Tensor value = at::full({buffer}, kCdtUnreached, options);
  const at::Tensor feature = return_indices ? at::empty({buffer}, options) : at::Tensor();
  const at::Tensor triple = cube ? at::full({buffer}, kCdtUnreached, options) : at::Tensor();
  const at::Tensor triple_feature =
      cube && return_indices ? at::empty({buffer}, options) : at::Tensor();
  SliceShape shape{};
  shape.rank = setup.rank;
  for (int k = 0; k < setup.rank; ++k) {
    shape.size[k] = setup.size[k];
    shape.pstride[k] = setup.pstride[k];
  }
  shape.slice_numel = setup.slice_numel;
  shape.padded_numel = setup.padded_numel;
  shape.plane = mask.numel();
  auto pointer = [](const at::Tensor& t) { return t.defined() ? t.data_ptr<int32_t>() : nullptr; };
  cuda::launch<cdt_kernel>(static_cast<unsigned>(setup.slices), kBlock, cuda::current_stream(),
      contiguous.data_ptr<bool>(), distances.data_ptr<int32_t>(),
      return_indices ? indices.data_ptr<int32_t>() : nullptr, value.data_ptr<int32_t>(),
      pointer(feature), pointer(triple), pointer(triple_feature), shape, setup.neighbours);
  return {distances, indices};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("cdt", &cdt_cuda); }

}  // namespace morphaug
