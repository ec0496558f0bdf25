// CUDA launcher of morphaug::watershed_ift: SciPy's flood (core/watershed_ift.h)
// is sequential within a slice (its queue order decides the ties, which a
// parallel IFT would not reproduce), so a thread runs one (b, c) slice, over
// scratch in global memory, and one launch takes every slice: exact, and
// parallel across slices only. No host read.
#include <ATen/ATen.h>

#include "../watershed_setup.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kSliceThreads = 64;

// Slice t of `slices`: its voxels' scratch at t * size * 3, its levels' at t * levels * 2.
template <typename V, typename M, typename L>
__global__ void __launch_bounds__(kSliceThreads)
    watershed_ift_kernel(const V* image, const M* markers, L* labels, int32_t* voxels, int32_t* levels,
                         WatershedOffsets offsets, int32_t size, int32_t levels_per_slice, int64_t slices) {
  for (int64_t t = grid_start(); t < slices; t += grid_step()) {
    int32_t* own = voxels + t * 3 * size;
    int32_t* lists = levels + t * 2 * levels_per_slice;
    const WatershedScratch scratch{own, own + size, own + 2 * int64_t{size}, lists, lists + levels_per_slice};
    const int64_t o = t * size;
    watershed_ift_slice(image + o, markers + o, labels + o, size, offsets, scratch);
  }
}

at::Tensor watershed_ift_cuda(const at::Tensor& input, const at::Tensor& markers, at::IntArrayRef offsets,
                              at::ScalarType dtype) {
  const cuda::DeviceGuard guard(input.device());
  const WatershedSetup s = watershed_setup(input, markers, offsets, dtype);
  at::Tensor out = at::empty(input.sizes(), input.options().dtype(dtype));
  if (input.numel() == 0) return out;
  const at::Tensor x = input.contiguous(), m = markers.contiguous();
  const at::TensorOptions ints = x.options().dtype(at::kInt);
  at::Tensor voxels = at::empty({s.slices, 3, s.size}, ints);
  at::Tensor levels = at::empty({s.slices, 2, s.levels}, ints);
  const int64_t blocks = std::min<int64_t>((s.slices + kSliceThreads - 1) / kSliceThreads, kMaxBlocks);
  with_watershed_types(x.scalar_type(), m.scalar_type(), dtype, [&](auto v, auto mk, auto l) {
    using V = decltype(v);
    using M = decltype(mk);
    using L = decltype(l);
    cuda::launch<watershed_ift_kernel<V, M, L>>(
        dim3(static_cast<unsigned>(blocks)), kSliceThreads, cuda::current_stream(),
        static_cast<const V*>(x.const_data_ptr()), static_cast<const M*>(m.const_data_ptr()),
        static_cast<L*>(out.data_ptr()), voxels.data_ptr<int32_t>(), levels.data_ptr<int32_t>(), s.offsets, s.size,
        s.levels, s.slices);
  });
  return out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("watershed_ift", &watershed_ift_cuda); }

}  // namespace morphaug
