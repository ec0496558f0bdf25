// CPU launchers of morphaug::grey_structure (a non-flat element shared by
// every slice) and morphaug::grey_element (elements per slice, flat or not),
// by direct loops (StructureSetup and ElementSetup in launch.h, the
// arithmetic in core/grey.h).
//
// Every slice is first copied, extended by its borders on every axis, into
// one buffer; an output line is then the extremum, over the element's true
// positions, of one shifted extended line plus that position's weight.
// Lanes along the last axis go in chunks whose accumulators stay in
// registers, so that the loops vectorise.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/grey.h"
#include "../grey_dispatch.h"
#include "../launch.h"
#include "launchers.h"
#include "clones.h"
#include "fresh.h"
#include "parallel.h"

namespace morphaug {
namespace {

template <typename T>
using Acc = StructureAcc<T>;

constexpr int64_t kChunk = 32;

// The element of some slices over their extended copies: the offset of each
// true position, and for a structure (Weighted) the weight of each as added
// (structure_weight) and of the first in float64 (structure_first).
template <typename T>
struct SliceElement {
  std::vector<int64_t> offsets;
  std::vector<Acc<T>> weights;
  double first = 0;
};

// out[at + j], j in [0, m), m <= kChunk: the accumulator stays in registers
// when m is the constant kChunk. `count` >= 1 true positions at `offsets`,
// with `weights` (Weighted; `first` for the first one).
template <typename T, bool Max, bool Weighted>
inline void element_chunk(const T* ext, const int64_t* offsets, const Acc<T>* weights, double first,
                          size_t count, int64_t at, int64_t m, T* out) {
  using A = std::conditional_t<Weighted, Acc<T>, T>;
  A acc[kChunk];
  const T* source = ext + offsets[0] + at;
  for (int64_t j = 0; j < m; ++j) {
    if constexpr (Weighted) {
      acc[j] = structure_first<T>(source[j], first);
    } else {
      acc[j] = source[j];
    }
  }
  for (size_t t = 1; t < count; ++t) {
    source = ext + offsets[t] + at;
    if constexpr (Weighted) {
      const A w = weights[t];
      for (int64_t j = 0; j < m; ++j) acc[j] = pick<A, Max>(acc[j], structure_candidate<T>(source[j], w));
    } else {
      for (int64_t j = 0; j < m; ++j) acc[j] = pick<A, Max>(acc[j], source[j]);
    }
  }
  for (int64_t j = 0; j < m; ++j) {
    if constexpr (Weighted) {
      out[at + j] = structure_finish<T>(acc[j]);
    } else {
      out[at + j] = acc[j];
    }
  }
}

// One output line of n values; `ext` is the extended voxel its first value reads.
template <typename T, bool Max, bool Weighted>
MORPHAUG_CPU_CLONES MORPHAUG_NO_JAM void element_line(const T* ext, const int64_t* offsets,
                                                      const Acc<T>* weights, double first, size_t count,
                                                      T* out, int64_t n) {
  if (count == 0) {  // no true position: the identity
    using A = std::conditional_t<Weighted, Acc<T>, T>;
    std::fill(out, out + n, Weighted ? structure_finish<T>(extremum_identity<A, Max>()) : extremum_identity<T, Max>());
    return;
  }
  int64_t at = 0;
  for (; at + kChunk <= n; at += kChunk) {
    element_chunk<T, Max, Weighted>(ext, offsets, weights, first, count, at, kChunk, out);
  }
  if (at < n) element_chunk<T, Max, Weighted>(ext, offsets, weights, first, count, at, n - at, out);
}

// Every slice extended by its borders (ExtendedShape) into `ext`, line by line.
template <typename T>
void extend_slices(const T* in, T* ext, int64_t slices, const ExtendedShape& shape, T cval) {
  const int last = shape.rank - 1;
  const int64_t n = shape.size[last], e = shape.extended[last], left = shape.left[last];
  int64_t rows = 1, ext_rows = 1;
  for (int d = 0; d < last; ++d) {
    rows *= shape.size[d];
    ext_rows *= shape.extended[d];
  }
  parallel_over(slices * ext_rows, e, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      T* target = ext + line * e;
      const int64_t row = extended_source_row(shape, line % ext_rows);
      if (row < 0) {
        std::fill(target, target + e, cval);
        continue;
      }
      const T* source = in + line / ext_rows * rows * n + row * n;
      for (int64_t j = 0; j < e; ++j) {
        const int64_t i = border_index(j - left, n, shape.mode[last]);
        target[j] = i < 0 ? cval : source[i];
      }
    }
  });
}

// The filter of every slice by elements[element_of(slice)], over the slices
// extended into `ext` (scratch).
template <typename T, bool Max, bool Weighted, typename ElementOf>
void element_filter(const T* in, T* out, T* ext, int64_t slices, const ExtendedShape& shape, T cval,
                    const std::vector<SliceElement<T>>& elements, const ElementOf& element_of) {
  extend_slices(in, ext, slices, shape, cval);
  const int last = shape.rank - 1;
  const int64_t n = shape.size[last];
  int64_t rows = 1;  // lines per slice
  for (int d = 0; d < last; ++d) rows *= shape.size[d];
  const int64_t ext_numel = extended_numel(shape);
  size_t most = 1;
  for (const SliceElement<T>& e : elements) most = std::max(most, e.offsets.size());
  parallel_over(slices * rows, n * static_cast<int64_t>(most), [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      // Output line -> its first extended voxel (same position on every axis).
      const int64_t slice = line / rows, base = extended_position(shape, line % rows * n);
      const SliceElement<T>& e = elements[element_of(slice)];
      element_line<T, Max, Weighted>(ext + slice * ext_numel + base, e.offsets.data(), e.weights.data(), e.first,
                                     e.offsets.size(), out + line * n, n);
    }
  });
}

// run(std::integral_constant<bool, maximum>{}).
template <typename Run>
void with_maximum(bool maximum, const Run& run) {
  if (maximum) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
}

// The elements of grey_element, read from the CPU tensors of `s`: element
// (b, c) for b < batch, c < channels takes the rows (b, c) of both tensors.
template <typename T>
std::vector<SliceElement<T>> slice_elements(const ElementSetup& s, int64_t batch, int64_t channels,
                                            bool maximum) {
  const std::vector<int64_t>& offsets = s.element.offsets;
  const int64_t count = static_cast<int64_t>(offsets.size());
  const bool* flags = s.footprint.defined() ? s.footprint.data_ptr<bool>() : nullptr;
  const double* values = s.structure.defined() ? s.structure.data_ptr<double>() : nullptr;
  std::vector<SliceElement<T>> elements(batch * channels);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      SliceElement<T>& e = elements[b * channels + c];
      const bool* f = flags ? flags + s.footprint_rows.row(b, c) * count : nullptr;
      const double* w = values ? values + s.structure_rows.row(b, c) * count : nullptr;
      for (int64_t t = 0; t < count; ++t) {
        if (f && !f[t]) continue;
        if (w) {
          // The minimum subtracts the structure, the maximum adds it.
          const double weight = maximum ? w[t] : -w[t];
          if (e.offsets.empty()) e.first = weight;
          e.weights.push_back(structure_weight<T>(weight));
        }
        e.offsets.push_back(offsets[t]);
      }
    }
  }
  return elements;
}

}  // namespace

void grey_structure_out_cpu(const at::Tensor& input, at::IntArrayRef shape,
                            at::ArrayRef<double> structure, at::IntArrayRef footprint,
                            at::IntArrayRef origin, at::IntArrayRef mode,
                            const at::Scalar& cval, bool maximum, at::Tensor& out) {
  const StructureSetup s =
      grey_structure_setup(input, shape, structure, footprint, origin, mode, maximum);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_structure");
  if (x.numel() == 0) return;
  const int64_t slices = x.size(0) * x.size(1);
  at::Tensor ext = at::empty({slices * extended_numel(s.element.shape)}, x.options());
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, x.scalar_type(),
                             "morphaug::grey_structure (CPU)", [&] {
    const std::vector<SliceElement<scalar_t>> shared = {
        SliceElement<scalar_t>{s.element.offsets, structure_weights<scalar_t>(s), s.weights[0]}};
    with_maximum(maximum, [&](auto max) {
      element_filter<scalar_t, decltype(max)::value, true>(
          x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), ext.data_ptr<scalar_t>(), slices,
          s.element.shape, box_fill<scalar_t>(cval, "grey_structure"), shared, [](int64_t) { return 0; });
    });
  });
}

at::Tensor grey_structure_cpu(const at::Tensor& input, at::IntArrayRef shape,
                              at::ArrayRef<double> structure, at::IntArrayRef footprint,
                              at::IntArrayRef origin, at::IntArrayRef mode, const at::Scalar& cval,
                              bool maximum) {
  at::Tensor out = fresh_empty(input.sizes(), input.options());
  grey_structure_out_cpu(input, shape, structure, footprint, origin, mode, cval, maximum, out);
  return out;
}

void grey_element_out_cpu(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                          const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                          at::IntArrayRef mode, const at::Scalar& cval, bool maximum, at::Tensor& out) {
  const ElementSetup s = grey_element_setup(input, footprint, structure, origin, mode);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_element");
  if (x.numel() == 0) return;
  const int64_t batch = x.size(0), channels = x.size(1), slices = batch * channels;
  // One element per (b, c) that the rows tell apart.
  const bool by_batch = s.footprint_rows.batch || s.structure_rows.batch;
  const bool by_channel = s.footprint_rows.channel || s.structure_rows.channel;
  const int64_t element_batch = by_batch ? batch : 1, element_channels = by_channel ? channels : 1;
  at::Tensor ext = at::empty({slices * extended_numel(s.element.shape)}, x.options());
  MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_element (CPU)", [&] {
    const std::vector<SliceElement<scalar_t>> elements =
        slice_elements<scalar_t>(s, element_batch, element_channels, maximum);
    const auto element_of = [&](int64_t slice) {
      return (by_batch ? slice / channels : 0) * element_channels + (by_channel ? slice % channels : 0);
    };
    const scalar_t fill = box_fill<scalar_t>(cval, "grey_element");
    with_maximum(maximum, [&](auto max) {
      auto run = [&](auto weighted) {
        element_filter<scalar_t, decltype(max)::value, decltype(weighted)::value>(
            x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), ext.data_ptr<scalar_t>(), slices,
            s.element.shape, fill, elements, element_of);
      };
      if (s.structure.defined()) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
    });
  });
}

at::Tensor grey_element_cpu(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                            const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                            at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  at::Tensor out = fresh_empty(input.sizes(), input.options());
  grey_element_out_cpu(input, footprint, structure, origin, mode, cval, maximum, out);
  return out;
}

}  // namespace morphaug
