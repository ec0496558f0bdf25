// CPU launcher of morphaug::label: the labelling scan (label_scan.h) writing
// its labels.
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/Dispatch.h>

#include <tuple>

#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "label_scan.h"

namespace morphaug {
namespace {

template <typename T>
void run(const LabelSetup& s, const bool* mask, T* labels, int64_t* counts) {
  const int64_t row = s.shape.size[s.shape.rank - 1];
  if (joins_runs(s)) {
    const Chunks chunks(s.shape, s.slices, row);
    RunScan<T> scan(s, chunks, mask, labels);
    label_slices<T>(s, chunks, scan, counts, [&](int64_t task, auto&& label) { scan.write(task, label); });
  } else {
    const Chunks chunks(s.shape, s.slices, s.shape.rank == 1 ? 1 : row);
    VoxelScan<T> scan(s, chunks, mask, labels);
    label_slices<T>(s, chunks, scan, counts, [&](int64_t task, auto&& label) { scan.write(task, label); });
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> label_cpu(const at::Tensor& mask, at::IntArrayRef structure,
                                             at::ScalarType dtype) {
  const LabelSetup s = label_setup(mask, structure, dtype);
  at::Tensor labels = fresh_empty(mask.sizes(), mask.options().dtype(dtype));
  at::Tensor counts = at::zeros({mask.size(0), mask.size(1)}, mask.options().dtype(at::kLong));
  if (mask.numel() == 0) return {labels, counts};
  const at::Tensor m = mask.contiguous();
  AT_DISPATCH_INDEX_TYPES(dtype, "label", [&] {
    run<index_t>(s, m.data_ptr<bool>(), labels.data_ptr<index_t>(), counts.data_ptr<int64_t>());
  });
  return {labels, counts};
}

}  // namespace morphaug
