// CUDA launcher of morphaug::signed_edt (core/signed_edt.h): uint32 values;
// a thread per voxel to find the boundary voxels, per line along the first
// axis for the sweeps and along every further axis (its taps sedt_parabola),
// then per voxel of the rows for the last axis, neighbouring threads on
// neighbouring voxels. Whether a slice has a boundary voxel
// stays on the device: no host read.
#include <algorithm>
#include <cmath>

#include "../core/signed_edt.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

using Value = uint32_t;

// Element strides of the spatial axes of one slice, by value.
struct Strides {
  int64_t of[kMaxRank];
};

// The boundary voxels (sedt_seed_row's, a voxel per thread): 0 at a voxel of
// the mask whose face neighbours (those inside the volume) are not all in
// it, `far` elsewhere. blockIdx.x runs along a row, blockIdx.y over the rows:
// a block's threads share their row, whose coordinates each decodes (1 to 3
// axes compiled for their rank, no per-axis array).
template <int kRank>
__global__ void seed_kernel(const uint8_t* mask, Value* v, int64_t rows, int64_t slice_rows, int64_t n,
                            const __grid_constant__ Geometry g, const __grid_constant__ Strides strides, Value far,
                            int32_t* found) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int last = fixed_rank<kRank>(g.rank) - 1;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const int64_t slice = row / slice_rows, p = row * n + i;
    uint8_t inside = mask[p];
    if (i > 0) inside &= mask[p - 1];
    if (i + 1 < n) inside &= mask[p + 1];
    int64_t rest = row - slice * slice_rows;
    for (int k = last - 1; k >= 0; --k) {
      const int64_t x = rest % g.size[k];
      rest /= g.size[k];
      if (x > 0) inside &= mask[p - strides.of[k]];
      if (x + 1 < g.size[k]) inside &= mask[p + strides.of[k]];
    }
    const bool boundary = mask[p] && !inside;
    v[p] = boundary ? 0 : far;
    if (boundary) found[slice] = 1;  // every writer writes 1
  }
}

// One line along the first axis per thread: `lanes` lines per slice.
__global__ void first_axis_kernel(Value* v, int64_t lines, int64_t n, int64_t lanes, Value far,
                                  Value none) {
  for (int64_t line = grid_start(); line < lines; line += grid_step()) {
    const int64_t slice = line / lanes;
    Value* column = v + slice * n * lanes + (line - slice * lanes);
    ball_unit_sweep<Value>(column, n, 1, lanes, false);
    ball_unit_sweep<Value>(column, n, 1, lanes, true);
    for (int64_t i = 0; i < n; ++i) sedt_square_steps<Value>(column + i * lanes, 1, far, none);
  }
}

// Axis k (n voxels, lines `inner` lanes wide, `outer` slices) before the
// last one: a thread per line (strided_launch), every value of it in turn.
__global__ void further_axis_kernel(const Value* in, Value* out, int64_t outer, int64_t n,
                                    int64_t inner) {
  const StridedThread t = strided_thread();
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = o + i * inner;
        out[p] = sedt_parabola<SedtOneLane<Value>>(in + p, inner, i, n - 1 - i);
      }
    }
  }
}

// The signed result, the last axis's taps first when `taps`: +D / -D for a
// slice without boundary (empty, or full: its first voxel says which). A
// thread per element of a row of n (strided_launch over rows of one lane
// each), its slice found once per row.
__global__ void finish_kernel(const Value* in, const uint8_t* mask, float* out, int64_t rows,
                              int64_t slice_rows, int64_t n, bool taps, const int32_t* found,
                              float diagonal) {
  const StridedThread t = strided_thread();
  for (int64_t row = t.slice; row < rows; row += t.slice_step) {
    const int64_t slice = row / slice_rows;
    const bool boundary = found[slice] != 0;
    const uint8_t first = mask[slice * slice_rows * n];
    for (int64_t i = t.lane; i < n; i += t.lane_step) {
      const int64_t p = row * n + i;
      if (!boundary) {
        out[p] = first ? -diagonal : diagonal;
        continue;
      }
      const Value squared =
          taps ? sedt_parabola<SedtOneLane<Value>>(in + p, 1, i, n - 1 - i) : in[p];
      out[p] = sedt_signed<Value>(squared, mask[p]);
    }
  }
}

at::Tensor signed_edt_cuda(const at::Tensor& mask) {
  check_mask(mask, "signed_edt");
  const cuda::DeviceGuard guard(mask.device());
  Geometry g{};
  g.rank = static_cast<int>(mask.dim() - 2);
  Strides strides{};
  int64_t slice_numel = 1;
  double diagonal = 0.0;
  for (int k = g.rank - 1; k >= 0; --k) {
    g.size[k] = mask.size(k + 2);
    g.sampling[k] = 1.0;
    strides.of[k] = slice_numel;
    slice_numel *= g.size[k];
    diagonal += static_cast<double>(g.size[k]) * g.size[k];
  }
  TORCH_CHECK(sedt_fits<Value>(g), "morphaug::signed_edt: spatial shape ", mask.sizes().slice(2),
              " is too large for 32-bit squared distances");
  const at::Tensor x = mask.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  const int64_t numel = x.numel();
  if (numel == 0) return out;
  const int64_t slices = numel / slice_numel;
  const auto options = x.options();
  at::Tensor a = at::empty({numel}, options.dtype(at::kInt));  // uint32 values in int32 storage
  at::Tensor b = g.rank > 2 ? at::empty({numel}, options.dtype(at::kInt)) : at::Tensor();
  at::Tensor found = at::zeros({slices}, options.dtype(at::kInt));
  Value* v = reinterpret_cast<Value*>(a.data_ptr<int32_t>());
  Value* w = g.rank > 2 ? reinterpret_cast<Value*>(b.data_ptr<int32_t>()) : nullptr;
  const uint8_t* m = reinterpret_cast<const uint8_t*>(x.data_ptr<bool>());
  const cudaStream_t stream = cuda::current_stream();
  const Value far = static_cast<Value>(g.size[0]), none = sedt_none<Value>(g);
  const int64_t last = g.size[g.rank - 1];

  const int64_t rows = numel / last;
  const dim3 seed_grid(static_cast<unsigned>((last + kThreads - 1) / kThreads),
                       static_cast<unsigned>(std::min<int64_t>(rows, kMaxBlocks)));
  with_fixed_rank(g.rank, [&](auto rank) {
    cuda::launch<seed_kernel<decltype(rank)::value>>(seed_grid, kThreads, stream, m, v, rows, slice_numel / last,
                                                     last, g, strides, far, found.data_ptr<int32_t>());
  });
  const int64_t lanes = slice_numel / g.size[0];
  cuda::launch<first_axis_kernel>(blocks_for(slices * lanes), kThreads, stream, v, slices * lanes,
                                  g.size[0], lanes, far, none);
  for (int k = 1; k < g.rank - 1; ++k) {
    const int64_t outer = numel / (g.size[k] * strides.of[k]);
    const StridedLaunch launch = strided_launch(strides.of[k], outer, INT64_MAX);
    cuda::launch<further_axis_kernel>(launch.grid, launch.block, stream, v, w, outer, g.size[k],
                                      strides.of[k]);
    std::swap(v, w);
  }
  const StridedLaunch finish = strided_launch(last, rows, INT64_MAX);
  cuda::launch<finish_kernel>(finish.grid, finish.block, stream,
      v, m, out.data_ptr<float>(), rows, slice_numel / last, last, g.rank > 1,
      found.data_ptr<int32_t>(), static_cast<float>(std::sqrt(diagonal)));
  return out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("signed_edt", &signed_edt_cuda); }

}  // namespace morphaug
