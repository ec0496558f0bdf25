// CUDA launcher of morphaug::find_boundaries (core/find_boundaries.h): one
// launch, a thread per voxel (consecutive threads along the last axis, so a
// warp reads neighbouring labels of each neighbour row), blockIdx.y over the
// slices. Index math is 32-bit within a slice; 1 to 3 axes compiled for
// their rank.
#include <algorithm>

#include "../boundaries_setup.h"
#include "grid.cuh"

namespace morphaug {
namespace {

template <typename T, int kRank>
__global__ void find_boundaries_kernel(const T* labels, bool* out, int64_t slices, uint32_t slice,
                                       BoundaryGeometry g, T background, bool has_background) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (int64_t s = blockIdx.y; s < slices; s += gridDim.y) {
    const T* v = labels + s * slice;
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < slice; p += step) {
      int32_t coord[kBoundaryMaxRank];
      slice_coordinates<kRank>(p, g, coord);
      out[s * slice + p] = boundary_voxel<kRank>(v, static_cast<int32_t>(p), coord, g, background, has_background);
    }
  }
}

at::Tensor find_boundaries_cuda(const at::Tensor& labels, int64_t connectivity, int64_t mode,
                                std::optional<int64_t> background) {
  const cuda::DeviceGuard guard(labels.device());
  const BoundarySetup setup = boundary_setup(labels, connectivity, mode, background);
  if (labels.numel() == 0) return setup.out;
  const dim3 grid(static_cast<unsigned>(blocks_for(setup.slice)),
                  static_cast<unsigned>(std::min<int64_t>(setup.slices, kMaxBlocks)));
  const cudaStream_t stream = cuda::current_stream();
  dispatch_ids(setup.labels, "find_boundaries", [&](auto type) {
    using T = decltype(type);
    with_fixed_rank(setup.geometry.rank, [&](auto rank) {
      cuda::launch<find_boundaries_kernel<T, decltype(rank)::value>>(
          grid, kThreads, stream, static_cast<const T*>(setup.labels.data_ptr()), setup.out.data_ptr<bool>(),
          setup.slices, static_cast<uint32_t>(setup.slice), setup.geometry, static_cast<T>(setup.background),
          setup.has_background);
    });
  });
  return setup.out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("find_boundaries", &find_boundaries_cuda); }

}  // namespace morphaug
