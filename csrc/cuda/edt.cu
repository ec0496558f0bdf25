// CUDA launcher of morphaug::edt: one pass per spatial axis, in place in the
// distances (and the indices), one launch a pass across B * C.
//
// Pass 0 (axis 0, no hull) and the envelope passes along further axes but the
// last: a thread per line on a grid of (lanes, outer slices), the lanes of a
// block neighbours in memory, so that each step of a line reads and writes
// neighbouring elements across a warp. The hull of each thread lives in a
// global scratch, entries `slots` apart (coalesced too); the scratch bounds
// the threads of the envelope passes, not those of pass 0. The pass along
// the last axis stages its lines through shared memory (edt_passes.cuh).
// With indices, the envelope's choices are non-decreasing along a line, so
// edt_gather_indices_in_place rewrites the feature coordinates in place.
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cstdint>

#include "../core/edt.h"
#include "../launch.h"
#include "edt_passes.cuh"
#include "grid.cuh"

namespace morphaug {
namespace {

// Pass 0 along axis 0 (n voxels, lines `inner` lanes wide, `outer` = B * C).
template <typename T>
__global__ void binary_pass_kernel(const bool* mask, int64_t outer, int64_t n, int64_t inner,
                                   Geometry g, T* out, int32_t* idx, bool root) {
  const StridedThread t = strided_thread();
  const int64_t plane = outer * n * inner;
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      int32_t previous, next;
      const bool found = edt_binary_lines(mask + o, n, inner, 1, g.sampling[0], out + o,
                                          idx ? idx + o : nullptr, out + o, inner, &previous,
                                          &next, root);
      if (g.rank == 1 && !found) {
        edt_no_background_line(g, o, out + o, idx ? idx + o : nullptr, plane, root);
      }
    }
  }
}

// Pass d > 0 along an axis before the last one (n voxels, lines `inner`
// lanes wide, `outer` slices), in place in f.
template <typename T, Hull kHull>
__global__ void envelope_pass_kernel(int d, int64_t outer, int64_t n, int64_t inner, Geometry g,
                                     T* f, int32_t* idx, void* scratch) {
  const StridedThread t = strided_thread();
  const int64_t slots = t.lane_step * t.slice_step;  // the launch's threads
  const int64_t plane = outer * n * inner;
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      int32_t* arg = idx ? idx + d * plane + o : nullptr;
      if constexpr (kHull == Hull::kReal) {
        double* hull_f = static_cast<double*>(scratch) + t.slot;
        int32_t* hull_pos =
            reinterpret_cast<int32_t*>(static_cast<double*>(scratch) + n * slots) + t.slot;
        edt_envelope_line(f + o, inner, n, g.sampling[d], f + o, inner, arg, hull_pos, hull_f,
                          slots, false);
      } else {
        EdtParabola<HullInt<kHull>>* hull = static_cast<EdtParabola<HullInt<kHull>>*>(scratch) + t.slot;
        edt_envelope_line_unit(f + o, inner, n, f + o, inner, arg, hull, slots, false);
      }
      if (idx) edt_gather_indices_in_place(idx + o, plane, inner, d, n);
    }
  }
}

// The pass along the last axis d > 0 (lines of n contiguous voxels), in
// place in f: thread r of a block owns line first + r of its tile.
template <typename T, Hull kHull>
__global__ void __launch_bounds__(kTile)
    last_pass_kernel(int d, int64_t lines, int64_t n, Geometry g, T* f, int32_t* idx,
                     void* scratch, bool root) {
  __shared__ T values[kTile][kChunk + 1];
  __shared__ int32_t chosen[kTile][kChunk + 1];
  const int r = threadIdx.x;
  const int64_t plane = lines * n;
  for (int64_t first = blockIdx.x * static_cast<int64_t>(kTile); first < lines;
       first += gridDim.x * static_cast<int64_t>(kTile)) {
    const int rows = static_cast<int>(std::min<int64_t>(kTile, lines - first));
    T* tile = f + first * n;  // element k of row q at tile[q * n + k]
    int32_t* tile_arg = idx ? idx + d * plane + first * n : nullptr;
    const bool found = edt_last_pass_tile<T, kHull>(tile, n, rows, values, chosen, scratch, g.sampling[d], root,
                                                    [&](int q, int64_t c, int k) {
      tile[q * n + c + k] = values[q][k];
      if (tile_arg) tile_arg[q * n + c + k] = chosen[q][k];
    });
    if (r >= rows) continue;
    const int64_t o = (first + r) * n;
    if (idx) edt_gather_indices_in_place(idx + o, plane, 1, d, n);
    if (!found) edt_no_background_line(g, o, f + o, idx ? idx + o : nullptr, plane, root);
  }
}

template <typename T>
void edt_passes(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const Geometry& g = setup.geometry;
  const int rank = g.rank;
  T* f = setup.distances.data_ptr<T>();
  int32_t* idx = setup.indices.numel() > 0 ? setup.indices.data_ptr<int32_t>() : nullptr;
  const cudaStream_t stream = cuda::current_stream();
  const EdtPlan plan = edt_plan(mask, g, setup.unit);
  const at::Tensor scratch = at::empty({plan.scratch_bytes}, mask.options().dtype(at::kByte));
  for (int d = 0; d < rank; ++d) {
    const Lines lines = lines_along(mask, d);
    const int64_t outer = lines.count / lines.stride;
    if (d == 0) {
      const StridedLaunch launch = strided_launch(lines.stride, outer, INT64_MAX);
      cuda::launch<binary_pass_kernel<T>>(launch.grid, launch.block, stream, mask.data_ptr<bool>(),
          outer, lines.length, lines.stride, g, f, idx, rank == 1 && !squared);
      continue;
    }
    with_hull(plan.hulls[d], [&](auto hull) {
      constexpr Hull kHull = decltype(hull)::value;
      if (d < rank - 1) {
        cuda::launch<envelope_pass_kernel<T, kHull>>(plan.strided[d].grid, plan.strided[d].block, stream,
            d, outer, lines.length, lines.stride, g, f, idx, scratch.data_ptr());
      } else {
        cuda::launch<last_pass_kernel<T, kHull>>(static_cast<unsigned>(plan.last_blocks), kTile, stream,
            d, lines.count, lines.length, g, f, idx, scratch.data_ptr(), !squared);
      }
    });
  }
}

void run_edt(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const at::Tensor contiguous = mask.contiguous();
  AT_DISPATCH_FLOATING_TYPES(setup.distances.scalar_type(), "morphaug::edt (CUDA)",
                             [&] { edt_passes<scalar_t>(contiguous, setup, squared); });
}

std::tuple<at::Tensor, at::Tensor> edt_cuda(const at::Tensor& mask,
                                            std::optional<at::ArrayRef<double>> sampling,
                                            bool return_indices, at::ScalarType dtype, bool squared) {
  const cuda::DeviceGuard guard(mask.device());
  const EdtSetup setup = edt_setup(mask, sampling, return_indices, dtype);
  if (mask.numel() > 0) run_edt(mask, setup, squared);
  return {setup.distances, setup.indices};
}

void edt_out_cuda(const at::Tensor& mask, std::optional<at::ArrayRef<double>> sampling,
                  bool squared, at::Tensor& out) {
  const cuda::DeviceGuard guard(mask.device());
  const EdtSetup setup = edt_setup(mask, sampling, false, out.scalar_type(), &out);
  if (mask.numel() > 0) run_edt(mask, setup, squared);
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("edt", &edt_cuda);
  m.impl("edt.out", &edt_out_cuda);
}

}  // namespace morphaug
