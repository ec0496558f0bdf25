// CPU launchers of morphaug::label and morphaug::label_values: the labelling
// scan (label_scan.h) of a mask or of a value map, writing its labels.
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

template <typename T, typename Source>
void run(const LabelSetup& s, const Source& voxels, T* labels, int64_t* counts) {
  const int64_t row = s.shape.size[s.shape.rank - 1];
  if (joins_runs(s)) {
    const Chunks chunks(s.shape, s.slices, row);
    auto scan_with = [&](auto table) {  // runs and parents of the table's type (int32 where they fit: less memory)
      using I = decltype(table);
      RunScan<I, Source, T> scan(s, chunks, voxels, labels);
      label_slices<I>(s, chunks, scan, counts, [&](int64_t task, auto&& label) { scan.write(task, label); });
    };
    if (RunScan<int32_t, Source, T>::fits(chunks, voxels, row)) {
      scan_with(int32_t{});
    } else {
      scan_with(T{});
    }
  } else {
    const Chunks chunks(s.shape, s.slices, s.shape.rank == 1 ? 1 : row);
    VoxelScan<T, Source> scan(s, chunks, voxels, labels);
    label_slices<T>(s, chunks, scan, counts, [&](int64_t task, auto&& label) { scan.write(task, label); });
  }
}

// The labels and counts of `input` (labelled as `voxels(input)` gives) with the checks of `setup`.
template <typename Voxels>
std::tuple<at::Tensor, at::Tensor> label_with(const at::Tensor& input, const LabelSetup& s, at::ScalarType dtype,
                                              Voxels&& voxels) {
  at::Tensor labels = fresh_empty(input.sizes(), input.options().dtype(dtype));
  at::Tensor counts = at::zeros({input.size(0), input.size(1)}, input.options().dtype(at::kLong));
  if (input.numel() == 0) return {labels, counts};
  const at::Tensor x = input.contiguous();
  AT_DISPATCH_INDEX_TYPES(dtype, "label", [&] {
    voxels(x, [&](const auto& source) {
      run<index_t>(s, source, labels.data_ptr<index_t>(), counts.data_ptr<int64_t>());
    });
  });
  return {labels, counts};
}

// use(ValueVoxels<U>) of the values, U the unsigned type of their width.
template <typename U, typename Use>
void use_values(const at::Tensor& x, std::optional<int64_t> background, Use&& use) {
  use(ValueVoxels<U>{static_cast<const U*>(x.const_data_ptr()), static_cast<U>(background.value_or(0)),
                     background.has_value()});
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> label_cpu(const at::Tensor& mask, at::IntArrayRef structure,
                                             at::ScalarType dtype) {
  return label_with(mask, label_setup(mask, structure, dtype), dtype, [](const at::Tensor& x, auto&& use) {
    use(MaskVoxels{x.data_ptr<bool>()});
  });
}

std::tuple<at::Tensor, at::Tensor> label_values_cpu(const at::Tensor& values, at::IntArrayRef structure,
                                                    std::optional<int64_t> background, at::ScalarType dtype) {
  const LabelSetup s = label_setup(values, structure, dtype, /*values=*/true);
  return label_with(values, s, dtype, [&](const at::Tensor& x, auto&& use) {
    switch (x.element_size()) {
      case 1: return use_values<uint8_t>(x, background, use);
      case 2: return use_values<uint16_t>(x, background, use);
      case 4: return use_values<uint32_t>(x, background, use);
      default: return use_values<uint64_t>(x, background, use);
    }
  });
}

}  // namespace morphaug
