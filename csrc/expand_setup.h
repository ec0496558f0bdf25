// Host-side set-up of expand_labels, shared by its CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>

#include <cmath>
#include <optional>

#include "launch.h"

namespace morphaug {

struct ExpandSetup {
  at::Tensor labels;    // contiguous
  at::Tensor mask;      // labels == 0: the EDT's foreground
  EdtSetup edt;         // its geometry and its squared distances (float32 where exact, else float64)
  at::Tensor features;  // int32, the flat index of each voxel's feature in its slice
  at::Tensor out;       // the expanded labels
  double distance;
  double cut;           // expand_labels.h: partial squared distances beyond it are dropped
};

// The largest integer m with sqrt(m) <= distance in double (+inf where every
// integer square of a slice passes).
inline double largest_square(double distance) {
  if (!(distance * distance < 0x1p62)) return INFINITY;
  double m = std::floor(distance * distance);
  while (std::sqrt(m + 1) <= distance) m += 1;
  while (m > 0 && std::sqrt(m) > distance) m -= 1;
  return m;
}

inline ExpandSetup expand_setup(const at::Tensor& labels, std::optional<at::ArrayRef<double>> sampling,
                                double distance) {
  check_batched(labels, "expand_labels");
  TORCH_CHECK(labels.scalar_type() == at::kBool || at::isIntegralType(labels.scalar_type(), false),
              "morphaug::expand_labels: expected bool or integer labels, got ", labels.scalar_type());
  TORCH_CHECK(distance >= 0.0, "morphaug::expand_labels: distance must be >= 0, got ", distance);
  ExpandSetup setup;
  setup.labels = labels.contiguous();
  const int64_t slice = labels.dim() > 2 && labels.numel() > 0
                            ? labels.numel() / (labels.size(0) * labels.size(1)) : 0;
  TORCH_CHECK(slice < (int64_t{1} << 31), "morphaug::expand_labels: slices of ", slice,
              " voxels do not fit the int32 feature indices");
  setup.mask = at::eq(setup.labels, 0);
  // float32 holds every squared distance exactly with unit sampling below 2^24
  int64_t bound = 0;
  for (int64_t d = 2; d < labels.dim(); ++d) bound += labels.size(d) * labels.size(d);
  bool unit = true;
  if (sampling.has_value()) for (double s : *sampling) unit = unit && s == 1.0;
  const at::ScalarType dtype = unit && bound < (int64_t{1} << 24) ? at::kFloat : at::kDouble;
  setup.edt = edt_setup(setup.mask, sampling, false, dtype);
  setup.features = at::empty(labels.sizes(), labels.options().dtype(at::kInt));
  setup.out = at::empty(labels.sizes(), setup.labels.options());
  setup.distance = distance;
  setup.cut = setup.edt.unit ? largest_square(distance) : INFINITY;
  return setup;
}

// f(L{}) with L the unsigned integer of the labels' width: the kernels move label bits.
template <typename F>
void dispatch_label_width(const at::Tensor& labels, const F& f) {
  switch (labels.element_size()) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// f(T{}, L{}): T the distances' type (float or double), L as dispatch_label_width's.
template <typename F>
void dispatch_expand(const ExpandSetup& setup, const F& f) {
  dispatch_label_width(setup.labels, [&](auto label) {
    if (setup.edt.distances.scalar_type() == at::kFloat) {
      f(float{}, label);
    } else {
      f(double{}, label);
    }
  });
}

}  // namespace morphaug
