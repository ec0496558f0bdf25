// CUDA launcher of morphaug::binary_erosion (core/binary_erosion.h): one
// launch per step, a thread per voxel (consecutive threads along the last
// axis), blockIdx.y over the slices; the offsets arrive by value and each
// block stages them, and its slice's flags, in shared memory. Index math is
// 32-bit within a slice; 1 to 3 axes compiled for their rank.
#include "../core/binary_erosion.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

template <int kRank>
__global__ void erosion_step_kernel(const uint8_t* in, const uint8_t* mask, const bool* hit, const bool* miss,
                                    uint8_t* out, int64_t slices, uint32_t slice_numel, ErosionOffsets o,
                                    bool border, bool invert) {
  __shared__ int32_t delta[kErosionMaxOffsets];
  __shared__ int8_t step[kErosionMaxOffsets][kErosionMaxRank];
  __shared__ uint8_t flags[kErosionMaxOffsets];
  for (int e = threadIdx.x; e < o.count; e += blockDim.x) {
    delta[e] = o.delta[e];
    for (int k = 0; k < o.rank; ++k) step[e][k] = o.step[e][k];
  }
  const uint32_t stride = gridDim.x * blockDim.x;
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const int64_t flag_base = slice * o.count;
    for (int e = threadIdx.x; e < o.count; e += blockDim.x) {
      flags[e] = static_cast<uint8_t>((hit[flag_base + e] ? kErosionHit : 0) |
                                      (miss[flag_base + e] ? kErosionMiss : 0));
    }
    __syncthreads();
    const int64_t base = slice * slice_numel;
    const uint8_t* v = in + base;
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < slice_numel; p += stride) {
      int32_t coord[kErosionMaxRank];
      slice_coordinates<kRank>(p, o, coord);
      const int32_t i = static_cast<int32_t>(p);
      const bool r = erosion_voxel<kRank>(v, i, coord, delta, step, flags, o, border);
      out[base + p] = (mask == nullptr || mask[base + p]) ? static_cast<uint8_t>(r != invert) : v[i];
    }
    __syncthreads();  // every thread has read the flags before the next slice's replace them
  }
}

at::Tensor binary_erosion_cuda(const at::Tensor& input, const std::optional<at::Tensor>& mask, const at::Tensor& hit,
                               const at::Tensor& miss, at::IntArrayRef offsets, int64_t iterations, bool border,
                               bool invert) {
  const cuda::DeviceGuard guard(input.device());
  const ErosionOffsets o = erosion_setup(input, mask, hit, miss, offsets, iterations);
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  if (x.numel() == 0) return out;
  const at::Tensor m = mask.has_value() ? mask->contiguous() : at::Tensor();
  const at::Tensor hits = hit.contiguous(), misses = miss.contiguous();
  const at::Tensor scratch = iterations > 1 ? at::empty_like(out) : at::Tensor();
  const int64_t slices = x.size(0) * x.size(1);
  const uint32_t slice_numel = static_cast<uint32_t>(x.numel() / slices);
  const dim3 grid(static_cast<unsigned>(blocks_for(slice_numel)),
                  static_cast<unsigned>(std::min<int64_t>(slices, kMaxBlocks)));
  const uint8_t* mk = mask.has_value() ? reinterpret_cast<const uint8_t*>(m.data_ptr<bool>()) : nullptr;
  const uint8_t* source = reinterpret_cast<const uint8_t*>(x.data_ptr<bool>());
  const cudaStream_t stream = cuda::current_stream();
  for (int64_t s = 0; s < iterations; ++s) {
    uint8_t* target = reinterpret_cast<uint8_t*>(
        pass_target(static_cast<int>(s), static_cast<int>(iterations), out, scratch).data_ptr<bool>());
    with_fixed_rank(o.rank, [&](auto rank) {
      cuda::launch<erosion_step_kernel<decltype(rank)::value>>(grid, kThreads, stream, source, mk,
                                                               hits.data_ptr<bool>(), misses.data_ptr<bool>(), target,
                                                               slices, slice_numel, o, border, invert);
    });
    source = target;
  }
  return out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("binary_erosion", &binary_erosion_cuda); }

}  // namespace morphaug
