// CPU launcher of morphaug::propagate: a flood fill per (b, c) slice, slices in parallel;
// and of morphaug::fill_holes, by labelling the background (label_runs.h) where it can.
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../core/propagate.h"
#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "label_runs.h"
#include "parallel.h"

namespace morphaug {
namespace {

// One slice. `state` holds padded_numel bytes, `stack`, `active` and `pushed` are scratch.
void propagate_slice(const PropagateSetup& s, const bool* x, const bool* mask, const bool* weight,
                     bool border, bool fill, bool* out, std::vector<uint8_t>& state,
                     std::vector<int32_t>& stack, std::vector<int32_t>& active,
                     std::vector<int32_t>& pushed, std::vector<uint8_t>& seeded) {
  active.clear();
  for (int64_t e = 0; e < s.count; ++e) {
    if (weight[e] && s.offset[e] != 0) active.push_back(s.offset[e]);
  }
  // Vincent's hybrid reconstruction: a forward raster pass (neighbours
  // before the voxel in memory order), a backward one (those after it) that
  // keeps each reached voxel that an open voxel after it reads, then a
  // depth-first flood from those. A voxel left open by both passes that reads
  // a reached one always sits after it, so the flood completes the fixpoint.
  // An open voxel p turns reached when p + d is reached (d in `active`, the
  // passes read them); so a reached voxel q turns q - d reached (`pushed`, the
  // flood writes them): the same offsets for a symmetric element.
  std::sort(active.begin(), active.end());
  pushed.assign(active.rbegin(), active.rend());
  for (int32_t& d : pushed) d = -d;  // sorted too
  const int count = static_cast<int>(active.size());
  const int32_t* offsets = active.data();
  const PaddedShape& padded = s.padded;
  const int last = padded.rank - 1;
  const int64_t reach = padded.pad[last];
  // sorted: [earlier rows | earlier in row | later in row | later rows]
  int split[3] = {0, 0, 0};
  for (int e = 0; e < count; ++e) {
    split[0] += offsets[e] < -reach;
    split[1] += offsets[e] < 0;
    split[2] += offsets[e] <= reach;
  }
  // the voxels after q that q's state seeds: q - d for the offsets d < 0
  const int32_t* later = pushed.data() + (count - split[1]);
  const int after = split[1];
  uint8_t* st = state.data();
  std::memset(st, border ? kPropagateReached : kPropagateClosed, s.padded_numel);
  const int64_t n = padded.size[last];
  const int64_t rows = s.slice_numel / n;
  seeded.resize(n);
  const uint8_t* xs = reinterpret_cast<const uint8_t*>(x);
  const uint8_t* ms = reinterpret_cast<const uint8_t*>(mask);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t first = padded.position(row * n);
    const uint8_t* xr = xs + row * n;
    uint8_t* sr = st + first;
    if (fill) {  // fill holes: seeds none, mask the complement of the input
      for (int64_t i = 0; i < n; ++i) sr[i] = xr[i] ? kPropagateClosed : kPropagateOpen;
    } else if (ms) {
      const uint8_t* mr = ms + row * n;
      for (int64_t i = 0; i < n; ++i) {
        sr[i] = xr[i] ? kPropagateReached : (mr[i] ? kPropagateOpen : kPropagateClosed);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) sr[i] = xr[i] ? kPropagateReached : kPropagateOpen;
    }
    // the forward pass on this row: the rows before it are final for it
    propagate_row(st, first, n, offsets, split[0], offsets + split[0], split[1] - split[0], true,
                  seeded.data());
  }
  stack.clear();
  for (int64_t row = rows - 1; row >= 0; --row) {
    const int64_t first = padded.position(row * n);
    propagate_row(st, first, n, offsets + split[2], count - split[2], offsets + split[1],
                  split[2] - split[1], false, seeded.data());
    // the row is final for both passes: keep its reached voxels that an open voxel after them reads
    uint8_t* keep = seeded.data();
    const uint8_t* sr = st + first;
    for (int64_t i = 0; i < n; ++i) keep[i] = 0;
    for (int k = 0; k < after; ++k) {
      const uint8_t* near = sr + later[k];
      for (int64_t i = 0; i < n; ++i) keep[i] |= near[i] == kPropagateOpen;
    }
    for (int64_t i = 0; i < n; ++i) {
      if (keep[i] && sr[i] == kPropagateReached) stack.push_back(static_cast<int32_t>(first + i));
    }
  }
  while (!stack.empty()) {
    const int64_t p = stack.back();
    stack.pop_back();
    propagate_visit(st, p, pushed.data(), count,
                    [&](int64_t q) { stack.push_back(static_cast<int32_t>(q)); });
  }
  for (int64_t row = 0; row < rows; ++row) {
    const uint8_t* sr = st + padded.position(row * n);
    bool* o = out + row * n;
    if (fill) {
      for (int64_t i = 0; i < n; ++i) o[i] = sr[i] != kPropagateReached;
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = sr[i] == kPropagateReached;
    }
  }
}

at::Tensor run(const at::Tensor& input, const std::optional<at::Tensor>& mask,
               const at::Tensor& weights, at::IntArrayRef offsets, bool border, bool fill) {
  const PropagateSetup s = propagate_setup(input, mask, weights, offsets);
  at::Tensor out = fresh_empty(input.sizes(), input.options());
  if (input.numel() == 0) return out;
  const at::Tensor x = input.contiguous();
  const at::Tensor m = mask.has_value() ? mask->contiguous() : at::Tensor();
  const at::Tensor w = weights.contiguous();
  const bool* xp = x.data_ptr<bool>();
  const bool* mp = m.defined() ? m.data_ptr<bool>() : nullptr;
  const bool* wp = w.data_ptr<bool>();
  bool* op = out.data_ptr<bool>();
  parallel_over(s.slices, s.padded_numel, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> state(s.padded_numel);
    std::vector<int32_t> stack, active, pushed;
    std::vector<uint8_t> seeded;
    for (int64_t slice = begin; slice < end; ++slice) {
      const int64_t o = slice * s.slice_numel;
      propagate_slice(s, xp + o, mp ? mp + o : nullptr, wp + slice * s.count, border, fill, op + o,
                      state, stack, active, pushed, seeded);
    }
  });
  return out;
}

// The element of every slice as the 3^S flags of a (3,) * S structure, when
// all slices share it and it fits one, is centrosymmetric and the run scan's
// labelling takes it (at most 8 axes, slices under 2^31 voxels); else empty.
std::vector<int64_t> shared_box_structure(const at::Tensor& input, const at::Tensor& weights,
                                          at::IntArrayRef offsets) {
  const int rank = static_cast<int>(input.dim() - 2);
  const int64_t slices = weights.size(0) * weights.size(1), count = weights.size(2);
  if (rank > 8 || slices == 0 || input.numel() / slices >= (int64_t{1} << 31)) return {};
  const at::Tensor w = weights.contiguous();
  const bool* first = w.data_ptr<bool>();
  for (int64_t slice = 1; slice < slices; ++slice) {
    if (!std::equal(first, first + count, first + slice * count)) return {};
  }
  int64_t elements = 1;
  for (int k = 0; k < rank; ++k) elements *= 3;
  std::vector<int64_t> flags(elements, 0);
  for (int64_t e = 0; e < count; ++e) {
    if (!first[e]) continue;
    int64_t index = 0;
    for (int k = 0; k < rank; ++k) {
      const int64_t d = offsets[e * rank + k];
      if (d < -1 || d > 1) return {};
      index = index * 3 + d + 1;
    }
    flags[index] = 1;
  }
  if (!std::equal(flags.begin(), flags.end(), flags.rbegin())) return {};
  return flags;
}

}  // namespace

at::Tensor propagate_cpu(const at::Tensor& input, const std::optional<at::Tensor>& mask,
                         const at::Tensor& weights, at::IntArrayRef offsets, bool border) {
  return run(input, mask, weights, offsets, border, false);
}

// binary_fill_holes: the complement of the propagation from a true border into
// ~input; with a structure that the run scan takes, by labelling the background.
at::Tensor fill_holes_cpu(const at::Tensor& input, const at::Tensor& weights,
                          at::IntArrayRef offsets) {
  propagate_setup(input, std::nullopt, weights, offsets);  // the argument checks
  const std::vector<int64_t> structure = shared_box_structure(input, weights, offsets);
  if (!structure.empty()) {
    at::Tensor out = fill_holes_by_runs(input, structure);
    if (out.defined()) return out;
  }
  return run(input, std::nullopt, weights, offsets, true, true);
}

}  // namespace morphaug
