// CUDA launcher of morphaug::euler_number (core/euler.h): one launch, a warp
// per window row of every slice (grid-stride), its lanes over 32 consecutive
// windows at a time (coalesced reads; each lane takes the previous column
// from the lane before it), one 64-bit atomic per row into its slice's sum;
// the table in shared memory.
#include "../euler_setup.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

__global__ void euler_kernel(const uint8_t* mask, int64_t* out, int64_t slices, EulerShape s, EulerTable table) {
  __shared__ int8_t codes[256];
  for (int c = threadIdx.x; c < 256; c += blockDim.x) codes[c] = table.value[c];
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t per_slice = s.rows(), voxels = s.voxels(), n = s.width;
  for (int64_t w = grid_start() >> 5; w < slices * per_slice; w += grid_step() >> 5) {  // the warp's rows
    const int64_t slice = w / per_slice;
    const uint8_t* rows[4];
    euler_rows(mask + slice * voxels, s, w - slice * per_slice, rows);
    int64_t sum = 0;
    int carry = 0;  // the column before the lanes' first (none before the row)
    for (int64_t first = 0; first <= n; first += 32) {  // the windows ending at first + lane
      const int64_t x = first + lane;
      const int column = x < n ? euler_column(rows, x) : 0;
      int previous = __shfl_up_sync(kFullWarp, column, 1);
      if (lane == 0) previous = carry;
      if (x <= n) sum += codes[column | previous << 2];
      carry = __shfl_sync(kFullWarp, column, 31);
    }
    for (int delta = 16; delta > 0; delta /= 2) sum += __shfl_down_sync(kFullWarp, sum, delta);
    if (lane == 0 && sum != 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(out + slice), static_cast<unsigned long long>(sum));
    }
  }
}

at::Tensor euler_number_cuda(const at::Tensor& mask, at::IntArrayRef table) {
  const cuda::DeviceGuard guard(mask.device());
  const EulerSetup setup = euler_setup(mask, table);
  if (setup.mask.numel() == 0) return setup.out;  // (a 3-D slice of depth 0 is no 2-D slice)
  cuda::launch<euler_kernel>(dim3(blocks_for(setup.slices * setup.shape.rows() * 32)), kThreads,
                             cuda::current_stream(), reinterpret_cast<const uint8_t*>(setup.mask.data_ptr<bool>()),
                             setup.out.data_ptr<int64_t>(), setup.slices, setup.shape, setup.table);
  return setup.out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("euler_number", &euler_number_cuda); }

}  // namespace morphaug
