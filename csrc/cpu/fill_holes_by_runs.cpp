// binary_fill_holes by labelling the background with the run scan
// (label_runs.h, label_scan.h), for the CPU launcher of morphaug::fill_holes
// (propagate.cpp).
#include <ATen/core/Tensor.h>

#include <cstring>
#include <memory>
#include <vector>

#include "../launch.h"
#include "fresh.h"
#include "label_runs.h"
#include "label_scan.h"

namespace morphaug {

// fill_holes_by_runs (label_runs.h): tasks are slices of the background; a
// component touches the outside when a run of it lies on the first or last
// voxel of an axis the structure steps along.
at::Tensor fill_holes_by_runs(const at::Tensor& input, const std::vector<int64_t>& structure) {
  const at::Tensor x = input.contiguous();
  LabelSetup s = label_setup(x, structure, at::kInt);
  at::Tensor out = fresh_empty(x.sizes(), x.options());
  const int64_t slices = s.slices, numel = s.shape.numel;
  if (x.numel() == 0) return out;
  if (!joins_runs(s)) return at::Tensor();
  const int rank = s.shape.rank;
  bool reaches[kMaxRank] = {};  // the axes a step of the structure moves along
  for (size_t e = 0; e < structure.size(); ++e) {
    int64_t rest = static_cast<int64_t>(e);
    for (int k = rank - 1; k >= 0; --k, rest /= 3) reaches[k] = reaches[k] || (structure[e] && rest % 3 != 1);
  }
  const bool* source = x.data_ptr<bool>();
  bool* result = out.data_ptr<bool>();
  const int64_t n = s.shape.size[rank - 1], rows = numel / n;
  s.slices = 1;
  each_unit(s, slices, numel * 4, [&](int64_t slice, const Chunks& chunks) {
    const bool* in = source + slice * numel;
    bool* filled = result + slice * numel;
    std::unique_ptr<bool[]> background(new bool[numel]);
    for (int64_t i = 0; i < numel; ++i) background[i] = !in[i];
    label_slice_runs(s, chunks, background.get(), [&](const auto& t, int64_t count) {
      std::vector<char> outside(count + 1, 0);
      int64_t coord[kMaxRank];
      int64_t coord_row = -1;  // the row coord holds
      bool border_row = false;
      each_run(t, rows, [&](const Run<int32_t>& r, int32_t label, int64_t row) {
        if (row != coord_row) {
          s.shape.coordinates(row * n, coord);
          coord_row = row;
          border_row = false;
          for (int k = 0; k < rank - 1; ++k) {
            border_row = border_row || (reaches[k] && (coord[k] == 0 || coord[k] == s.shape.size[k] - 1));
          }
        }
        const bool ends = reaches[rank - 1] && (r.start == row * n || r.end == row * n + n);
        if (border_row || ends) outside[label] = 1;
      });
      std::memcpy(filled, in, numel);
      each_run(t, rows, [&](const Run<int32_t>& r, int32_t label, int64_t) {
        if (!outside[label]) std::memset(filled + r.start, 1, r.end - r.start);
      });
    });
  });
  return out;
}

}  // namespace morphaug
