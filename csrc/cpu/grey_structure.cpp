// CPU launcher of morphaug::grey_structure: a non-flat element by direct loops
// (StructureSetup in launch.h, the arithmetic in core/grey.h).
//
// Every slice is first copied, extended by its borders on every axis, into
// one buffer; an output line is then the extremum, over the element's true
// positions, of one shifted extended line plus that position's weight.
// Lanes along the last axis go in chunks whose accumulators stay in
// registers, so that the loops vectorise.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <type_traits>
#include <vector>

#include "../core/grey.h"
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

// out[at + j], j in [0, m), m <= kChunk: the accumulator stays in registers
// when m is the constant kChunk.
template <typename T, bool Max>
inline void structure_chunk(const T* ext, const int64_t* offsets, const Acc<T>* weights,
                            double first, size_t count, int64_t at, int64_t m, T* out) {
  Acc<T> acc[kChunk];
  const T* source = ext + offsets[0] + at;
  for (int64_t j = 0; j < m; ++j) acc[j] = structure_first<T>(source[j], first);
  for (size_t t = 1; t < count; ++t) {
    source = ext + offsets[t] + at;
    const Acc<T> w = weights[t];
    for (int64_t j = 0; j < m; ++j) acc[j] = pick<Acc<T>, Max>(acc[j], structure_candidate<T>(source[j], w));
  }
  for (int64_t j = 0; j < m; ++j) out[at + j] = structure_finish<T>(acc[j]);
}

// One output line of n values; `ext` is the extended voxel its first value reads.
template <typename T, bool Max>
MORPHAUG_CPU_CLONES MORPHAUG_NO_JAM void structure_line(const T* ext, const int64_t* offsets,
                                                        const Acc<T>* weights, double first,
                                                        size_t count, T* out, int64_t n) {
  int64_t at = 0;
  for (; at + kChunk <= n; at += kChunk) {
    structure_chunk<T, Max>(ext, offsets, weights, first, count, at, kChunk, out);
  }
  if (at < n) structure_chunk<T, Max>(ext, offsets, weights, first, count, at, n - at, out);
}

template <typename T, bool Max>
void structure_filter(const T* in, T* out, T* ext, int64_t slices, const StructureSetup& s, T cval) {
  const ExtendedShape& shape = s.element.shape;
  const int last = shape.rank - 1;
  const int64_t n = shape.size[last], e = shape.extended[last], left = shape.left[last];
  int64_t rows = 1, ext_rows = 1;  // lines per slice, output and extended
  for (int d = 0; d < last; ++d) {
    rows *= shape.size[d];
    ext_rows *= shape.extended[d];
  }
  const int64_t slice_numel = rows * n, ext_numel = ext_rows * e;

  // The extended slices, line by line.
  parallel_over(slices * ext_rows, e, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      T* target = ext + line * e;
      const int64_t row = extended_source_row(shape, line % ext_rows);
      if (row < 0) {
        std::fill(target, target + e, cval);
        continue;
      }
      const T* source = in + line / ext_rows * slice_numel + row * n;
      for (int64_t j = 0; j < e; ++j) {
        const int64_t i = border_index(j - left, n, shape.mode[last]);
        target[j] = i < 0 ? cval : source[i];
      }
    }
  });

  const std::vector<Acc<T>> weights = structure_weights<T>(s);
  const size_t count = s.element.offsets.size();
  parallel_over(slices * rows, n * static_cast<int64_t>(count), [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      // Output line -> its first extended voxel (same position on every axis).
      const int64_t base = extended_position(shape, line % rows * n);
      structure_line<T, Max>(ext + line / rows * ext_numel + base, s.element.offsets.data(), weights.data(),
                             s.weights[0], count, out + line * n, n);
    }
  });
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
    const scalar_t fill = box_fill<scalar_t>(cval, "grey_structure");
    auto run = [&](auto max) {
      structure_filter<scalar_t, decltype(max)::value>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                                                        ext.data_ptr<scalar_t>(), slices, s, fill);
    };
    if (maximum) {
      run(std::true_type{});
    } else {
      run(std::false_type{});
    }
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

}  // namespace morphaug
