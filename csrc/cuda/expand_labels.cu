// CUDA launcher of morphaug::expand_labels: the EDT's passes of edt.cu, one
// launch a pass across B * C, carrying one flat feature index per voxel
// (core/expand_labels.h); the last pass writes the labels.
//
// Pass 0 and the envelope passes along further axes but the last: a thread
// per line, the lanes of a block neighbours in memory (coalesced); the hull
// of each thread lives in a global scratch, entries `slots` apart, and the
// envelope's choices in an int32 volume. The features move in place
// (expand_carry_line). The last pass stages its lines through shared memory
// as edt.cu's (edt_passes.cuh); its write-out reads the chosen feature of the
// same line and gathers its label, so that the labels are written kChunk
// consecutive elements at a time.
#include <algorithm>
#include <cstdint>

#include "../core/expand_labels.h"
#include "../expand_setup.h"
#include "edt_passes.cuh"
#include "grid.cuh"

namespace morphaug {
namespace {

// What every pass reads: the labels, their mask, the geometry and the test.
template <typename L>
struct ExpandArgs {
  const L* labels;
  const bool* mask;
  L* out;
  Geometry g;
  int64_t slice;  // voxels of a (b, c) slice
  double distance, cut;
};

// Pass 0 along axis 0 (n voxels, lines `inner` lanes wide, `outer` = B * C);
// on a rank-1 slice also the last pass.
template <typename T, typename L>
__global__ void first_pass_kernel(ExpandArgs<L> a, int64_t outer, int64_t n, int64_t inner, T* f,
                                  int32_t* feature) {
  const StridedThread t = strided_thread();
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      int32_t previous, next;
      edt_binary_lines(a.mask + o, n, inner, 1, a.g.sampling[0], f + o, feature + o, f + o, inner,
                       &previous, &next, false);
      if (a.g.rank == 1) {
        expand_emit_line(n, feature + o, static_cast<const int32_t*>(nullptr), f + o,
                         a.labels + o, a.out + o, 1, a.distance);
      } else {
        expand_first_features(n, inner, 1, lane, f + o, feature + o, a.cut);
      }
    }
  }
}

// Pass d > 0 along an axis before the last one (n voxels, lines `inner`
// lanes wide, `outer` slices), in place in f and feature.
// The envelope's choices go to `choices`, laid out as f.
template <typename T, Hull kHull, typename L>
__global__ void envelope_pass_kernel(ExpandArgs<L> a, int d, int64_t outer, int64_t n,
                                     int64_t inner, T* f, int32_t* feature, void* scratch,
                                     int32_t* choices) {
  const StridedThread t = strided_thread();
  const int64_t slots = t.lane_step * t.slice_step;  // the launch's threads
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      int32_t* chosen = choices + o;
      if constexpr (kHull == Hull::kReal) {
        double* hull_f = static_cast<double*>(scratch) + t.slot;
        int32_t* hull_pos =
            reinterpret_cast<int32_t*>(static_cast<double*>(scratch) + n * slots) + t.slot;
        edt_envelope_line(f + o, inner, n, a.g.sampling[d], f + o, inner, chosen, hull_pos,
                          hull_f, slots, false);
      } else {
        EdtParabola<HullInt<kHull>>* hull = static_cast<EdtParabola<HullInt<kHull>>*>(scratch) + t.slot;
        edt_envelope_line_unit(f + o, inner, n, f + o, inner, chosen, hull, slots, false);
      }
      expand_carry_line(n, chosen, inner, f + o, feature + o, inner, a.cut);
    }
  }
}

// The pass along the last axis d > 0 (lines of n contiguous voxels): thread
// r of a block owns line first + r of its tile; writes the labels.
template <typename T, Hull kHull, typename L>
__global__ void __launch_bounds__(kTile)
    last_pass_kernel(ExpandArgs<L> a, int d, int64_t lines, int64_t n, const T* f,
                     const int32_t* feature, void* scratch) {
  __shared__ T values[kTile][kChunk + 1];
  __shared__ int32_t chosen[kTile][kChunk + 1];
  __shared__ int64_t base[kTile];  // each row's slice, as an offset
  const int r = threadIdx.x;
  for (int64_t first = blockIdx.x * static_cast<int64_t>(kTile); first < lines;
       first += gridDim.x * static_cast<int64_t>(kTile)) {
    const int rows = static_cast<int>(std::min<int64_t>(kTile, lines - first));
    const int32_t* tile_feature = feature + first * n;
    L* tile_out = a.out + first * n;
    if (r < rows) base[r] = (first + r) * n / a.slice * a.slice;
    edt_last_pass_tile<T, kHull>(f + first * n, n, rows, values, chosen, scratch, a.g.sampling[d], false,
                                 [&](int q, int64_t c, int k) {
      const int32_t j = chosen[q][k];
      const int32_t p = j < 0 ? -1 : tile_feature[q * n + j];
      tile_out[q * n + c + k] = expand_label(p, values[q][k], a.labels + base[q], a.distance);
    });
  }
}

template <typename T, typename L>
void expand_passes(const ExpandSetup& setup) {
  const Geometry& g = setup.edt.geometry;
  const int rank = g.rank;
  const at::Tensor& mask = setup.mask;
  ExpandArgs<L> a{static_cast<const L*>(setup.labels.data_ptr()), mask.data_ptr<bool>(),
                  static_cast<L*>(setup.out.data_ptr()), g,
                  mask.numel() / (mask.size(0) * mask.size(1)), setup.distance, setup.cut};
  T* f = setup.edt.distances.data_ptr<T>();
  int32_t* feature = setup.features.data_ptr<int32_t>();
  const cudaStream_t stream = cuda::current_stream();
  const EdtPlan plan = edt_plan(mask, g, setup.edt.unit);
  const at::Tensor scratch = at::empty({plan.scratch_bytes}, mask.options().dtype(at::kByte));
  // the choices of the envelope passes before the last one
  const auto int32 = mask.options().dtype(at::kInt);
  const at::Tensor choices = rank > 2 ? at::empty(mask.sizes(), int32) : at::empty({0}, int32);
  for (int d = 0; d < rank; ++d) {
    const Lines lines = lines_along(mask, d);
    const int64_t outer = lines.count / lines.stride;
    if (d == 0) {
      const StridedLaunch launch = strided_launch(lines.stride, outer, INT64_MAX);
      cuda::launch<first_pass_kernel<T, L>>(launch.grid, launch.block, stream, a, outer,
                                            lines.length, lines.stride, f, feature);
      continue;
    }
    with_hull(plan.hulls[d], [&](auto hull) {
      constexpr Hull kHull = decltype(hull)::value;
      if (d < rank - 1) {
        cuda::launch<envelope_pass_kernel<T, kHull, L>>(plan.strided[d].grid, plan.strided[d].block, stream,
            a, d, outer, lines.length, lines.stride, f, feature, scratch.data_ptr(),
            choices.data_ptr<int32_t>());
      } else {
        cuda::launch<last_pass_kernel<T, kHull, L>>(static_cast<unsigned>(plan.last_blocks), kTile,
            stream, a, d, lines.count, lines.length, f, feature, scratch.data_ptr());
      }
    });
  }
}

at::Tensor expand_labels_cuda(const at::Tensor& labels, std::optional<at::ArrayRef<double>> sampling,
                              double distance) {
  const cuda::DeviceGuard guard(labels.device());
  const ExpandSetup setup = expand_setup(labels, sampling, distance);
  if (labels.numel() == 0) return setup.out;
  dispatch_expand(setup, [&](auto real, auto label) {
    expand_passes<decltype(real), decltype(label)>(setup);
  });
  return setup.out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("expand_labels", &expand_labels_cuda); }

}  // namespace morphaug
