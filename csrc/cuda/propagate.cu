// CUDA launcher of morphaug::propagate and morphaug::fill_holes: the padded
// voxel states of the CPU kernel (core/propagate.h) for every slice, then
// repeated sweeps until a sweep changes nothing.
//
// A sweep runs a thread per line along one spatial axis, forward or backward,
// and turns each open voxel with a reached neighbour reached at once
// (propagate_sweep), so that a run along the line fills in one sweep; the
// sweeps cycle over the axes the element reaches along, both directions.
// Voxels only ever go from open to reached, and only next to a reached one,
// so whatever order threads see each other's writes in, the states converge
// to the CPU kernel's fixpoint. A sweep visits every voxel: one that changes
// nothing proves the fixpoint (no write, so every read was current).
//
// Host syncs: a thread that reaches a voxel stores the sweep's index in one
// device int; the host reads it after every two rounds over the axes (one
// sync) and stops once the last sweep changed nothing. Most masks settle in
// a few rounds; a path that turns often needs a round per turn or so.
#include <algorithm>
#include <optional>
#include <vector>

#include "../core/propagate.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kRoundsPerCheck = 2;  // rounds over the axes between two host reads

// Each slice's element: the padded offsets of its true positions but the
// centre, active[slice * count ...], and how many there are.
__global__ void active_offsets_kernel(const bool* weights, const int32_t* offsets, int64_t count,
                                      int64_t slices, int32_t* active, int32_t* active_count) {
  for (int64_t slice = grid_start(); slice < slices; slice += grid_step()) {
    int32_t n = 0;
    for (int64_t e = 0; e < count; ++e) {
      if (weights[slice * count + e] && offsets[e] != 0) active[slice * count + n++] = offsets[e];
    }
    active_count[slice] = n;
  }
}

// The starting state of every voxel inside the (already filled) padding.
__global__ void start_kernel(const bool* input, const bool* mask, uint8_t* state, int64_t numel,
                             int64_t slice_numel, int64_t padded_numel, PaddedShape padded,
                             bool fill) {
  for (int64_t v = grid_start(); v < numel; v += grid_step()) {
    const int64_t slice = v / slice_numel;
    const int64_t p = slice * padded_numel + padded.position(v - slice * slice_numel);
    state[p] = propagate_start(input[v], mask == nullptr || mask[v], fill);
  }
}

// One sweep along `lines` (an axis of the unpadded tensor, padded stride
// `step`); threads that reach a voxel store `sweep` in *last_change.
__global__ void sweep_kernel(uint8_t* state, Lines lines, int64_t step, bool forward,
                             int64_t slice_numel, int64_t padded_numel, PaddedShape padded,
                             const int32_t* active, const int32_t* active_count, int64_t count,
                             int32_t* last_change, int32_t sweep) {
  bool changed = false;
  for (int64_t line = grid_start(); line < lines.count; line += grid_step()) {
    const int64_t o = lines.offset(line);
    const int64_t slice = o / slice_numel;
    int64_t first = slice * padded_numel + padded.position(o - slice * slice_numel);
    if (!forward) first += (lines.length - 1) * step;
    changed |= propagate_sweep(state, first, lines.length, forward ? step : -step,
                               active + slice * count, active_count[slice]);
  }
  if (changed) *last_change = sweep;
}

__global__ void finish_kernel(const uint8_t* state, bool* out, int64_t numel, int64_t slice_numel,
                              int64_t padded_numel, PaddedShape padded, bool fill) {
  for (int64_t v = grid_start(); v < numel; v += grid_step()) {
    const int64_t slice = v / slice_numel;
    const bool reached =
        state[slice * padded_numel + padded.position(v - slice * slice_numel)] == kPropagateReached;
    out[v] = reached != fill;
  }
}

at::Tensor run(const at::Tensor& input, const std::optional<at::Tensor>& mask,
               const at::Tensor& weights, at::IntArrayRef offsets, bool border, bool fill) {
  const cuda::DeviceGuard guard(input.device());
  const PropagateSetup s = propagate_setup(input, mask, weights, offsets);
  at::Tensor out = at::empty(input.sizes(), input.options());
  if (input.numel() == 0) return out;
  const at::Tensor x = input.contiguous();
  const at::Tensor m = mask.has_value() ? mask->contiguous() : at::Tensor();
  const at::Tensor w = weights.contiguous();
  const auto on_device = x.options();
  const cudaStream_t stream = cuda::current_stream();
  const int64_t numel = x.numel();
  const PaddedShape& padded = s.padded;

  const at::Tensor all_offsets = to_device(s.offset, at::kInt, x.device());
  at::Tensor active = at::empty({s.slices, s.count}, on_device.dtype(at::kInt));
  at::Tensor active_count = at::empty({s.slices}, on_device.dtype(at::kInt));
  cuda::launch<active_offsets_kernel>(blocks_for(s.slices), kThreads, stream,
      w.data_ptr<bool>(), all_offsets.data_ptr<int32_t>(), s.count, s.slices,
      active.data_ptr<int32_t>(), active_count.data_ptr<int32_t>());

  at::Tensor state = at::full({s.slices * s.padded_numel}, border ? kPropagateReached : kPropagateClosed,
                              on_device.dtype(at::kByte));
  uint8_t* st = state.data_ptr<uint8_t>();
  cuda::launch<start_kernel>(blocks_for(numel), kThreads, stream,
      x.data_ptr<bool>(), m.defined() ? m.data_ptr<bool>() : nullptr, st, numel, s.slice_numel,
      s.padded_numel, padded, fill);

  std::vector<int> axes;  // those an element offset moves along
  for (int k = 0; k < padded.rank; ++k) {
    if (padded.pad[k] > 0) axes.push_back(k);
  }
  if (!axes.empty()) {
    at::Tensor last_change = at::full({1}, -1, on_device.dtype(at::kInt));
    int32_t sweep = 0;
    do {
      for (int round = 0; round < kRoundsPerCheck; ++round) {
        for (const int axis : axes) {
          const Lines lines = lines_along(x, axis);
          for (const bool forward : {true, false}) {
            cuda::launch<sweep_kernel>(blocks_for(lines.count), kThreads, stream,
                st, lines, padded.pstride[axis], forward, s.slice_numel, s.padded_numel, padded,
                active.data_ptr<int32_t>(), active_count.data_ptr<int32_t>(),
                s.count, last_change.data_ptr<int32_t>(), sweep++);
          }
        }
      }
    } while (last_change.item<int32_t>() == sweep - 1);  // the host sync
  }

  cuda::launch<finish_kernel>(blocks_for(numel), kThreads, stream,
      st, out.data_ptr<bool>(), numel, s.slice_numel, s.padded_numel, padded, fill);
  return out;
}

at::Tensor propagate_cuda(const at::Tensor& input, const std::optional<at::Tensor>& mask,
                          const at::Tensor& weights, at::IntArrayRef offsets, bool border) {
  return run(input, mask, weights, offsets, border, false);
}

// binary_fill_holes: the complement of the propagation from a true border into ~input.
at::Tensor fill_holes_cuda(const at::Tensor& input, const at::Tensor& weights,
                           at::IntArrayRef offsets) {
  return run(input, std::nullopt, weights, offsets, true, true);
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("propagate", &propagate_cuda);
  m.impl("fill_holes", &fill_holes_cuda);
}

}  // namespace morphaug
