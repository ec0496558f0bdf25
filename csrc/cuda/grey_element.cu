// CUDA launchers of morphaug::grey_footprint, morphaug::grey_structure and
// morphaug::grey_element: every slice is copied, extended by its borders on
// every axis, into one buffer (ExtendedShape in core/grey.h); then a thread
// per output voxel takes the extremum over the element's true positions, one
// read of the extended copy each (plus the position's weight for a
// structure, with the CPU kernel's arithmetic). grey_element reads its
// slice's flags and weights on the device, for every position of the box.
#include <ATen/Dispatch.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/grey.h"
#include "../grey_dispatch.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

// launch(std::true_type{}) for the maximum, else launch(std::false_type{}).
template <typename Launch>
void with_extremum(bool maximum, const Launch& launch) {
  if (maximum) {
    launch(std::true_type{});
  } else {
    launch(std::false_type{});
  }
}

// The extended copy of every slice: `ext_numel` values per slice.
template <typename T>
__global__ void extend_kernel(const T* in, T* ext, int64_t total, ExtendedShape s,
                              int64_t slice_numel, int64_t ext_numel, T cval) {
  for (int64_t v = grid_start(); v < total; v += grid_step()) {
    const int64_t slice = v / ext_numel;
    const int64_t source = extended_source(s, v - slice * ext_numel);
    ext[v] = source < 0 ? cval : in[slice * slice_numel + source];
  }
}

// The extended voxel that output voxel v reads at offset 0.
__device__ __forceinline__ int64_t extended_base(const ExtendedShape& s, int64_t v,
                                                 int64_t slice_numel, int64_t ext_numel) {
  const int64_t slice = v / slice_numel;
  return slice * ext_numel + extended_position(s, v - slice * slice_numel);
}

template <typename T, bool Max>
__global__ void footprint_kernel(const T* ext, T* out, int64_t numel, ExtendedShape s,
                                 int64_t slice_numel, int64_t ext_numel, const int64_t* offsets,
                                 int64_t count) {
  for (int64_t v = grid_start(); v < numel; v += grid_step()) {
    const T* at = ext + extended_base(s, v, slice_numel, ext_numel);
    T acc = at[offsets[0]];
    for (int64_t t = 1; t < count; ++t) acc = pick<T, Max>(acc, at[offsets[t]]);
    out[v] = acc;
  }
}

template <typename T, bool Max>
__global__ void structure_kernel(const T* ext, T* out, int64_t numel, ExtendedShape s,
                                 int64_t slice_numel, int64_t ext_numel, const int64_t* offsets,
                                 const StructureAcc<T>* weights, double first, int64_t count) {
  for (int64_t v = grid_start(); v < numel; v += grid_step()) {
    const T* at = ext + extended_base(s, v, slice_numel, ext_numel);
    StructureAcc<T> acc = structure_first<T>(at[offsets[0]], first);
    for (int64_t t = 1; t < count; ++t) {
      acc = pick<StructureAcc<T>, Max>(acc, structure_candidate<T>(at[offsets[t]], weights[t]));
    }
    out[v] = structure_finish<T>(acc);
  }
}

// grey_element: slice (b, c) takes row (b, c) of the footprint (flags per box
// position; nullptr: every position) and of the structure (Weighted). The
// first true position of a slice's footprint adds its weight in float64, as
// for grey_structure; a slice without one gets the identity.
template <typename T, bool Max, bool Weighted>
__global__ void element_kernel(const T* ext, T* out, int64_t numel, ExtendedShape s, int64_t slice_numel,
                               int64_t ext_numel, int64_t channels, const int64_t* offsets, int64_t count,
                               const bool* footprint, ElementRows footprint_rows, const double* structure,
                               ElementRows structure_rows) {
  using A = std::conditional_t<Weighted, StructureAcc<T>, T>;
  for (int64_t v = grid_start(); v < numel; v += grid_step()) {
    const T* at = ext + extended_base(s, v, slice_numel, ext_numel);
    const int64_t slice = v / slice_numel, b = slice / channels, c = slice - b * channels;
    const bool* flags = footprint ? footprint + footprint_rows.row(b, c) * count : nullptr;
    const double* weights = Weighted ? structure + structure_rows.row(b, c) * count : nullptr;
    A acc = extremum_identity<A, Max>();
    bool first = true;
    for (int64_t t = 0; t < count; ++t) {
      if (flags && !flags[t]) continue;
      const T x = at[offsets[t]];
      if constexpr (Weighted) {
        // The minimum subtracts the structure, the maximum adds it.
        const double w = Max ? weights[t] : -weights[t];
        acc = pick<A, Max>(acc, first ? structure_first<T>(x, w)
                                      : structure_candidate<T>(x, structure_weight<T>(w)));
      } else {
        acc = pick<A, Max>(acc, x);
      }
      first = false;
    }
    if constexpr (Weighted) {
      out[v] = structure_finish<T>(acc);
    } else {
      out[v] = acc;
    }
  }
}

// The extended copy of x, for the element's shape.
template <typename T>
at::Tensor extend(const at::Tensor& x, const ExtendedShape& s, T cval, cudaStream_t stream) {
  const int64_t slices = x.size(0) * x.size(1), ext_numel = extended_numel(s);
  at::Tensor ext = at::empty({slices * ext_numel}, x.options());
  cuda::launch<extend_kernel<T>>(blocks_for(ext.numel()), kThreads, stream,
      x.data_ptr<T>(), ext.data_ptr<T>(), ext.numel(), s, x.numel() / slices, ext_numel, cval);
  return ext;
}

void grey_footprint_out_cuda(const at::Tensor& input, at::IntArrayRef shape,
                             at::IntArrayRef footprint, at::IntArrayRef origin,
                             at::IntArrayRef mode, const at::Scalar& cval, bool maximum,
                             at::Tensor& out) {
  const cuda::DeviceGuard guard(input.device());
  const ExtendedElement e = grey_footprint_element(input, shape, footprint, origin, mode);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_footprint");
  if (x.numel() == 0) return;
  const at::Tensor offsets = to_device(e.offsets, at::kLong, x.device());
  const int64_t numel = x.numel(), slice_numel = numel / (x.size(0) * x.size(1));
  const int64_t count = offsets.numel(), ext_numel = extended_numel(e.shape);
  const cudaStream_t stream = cuda::current_stream();
  MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_footprint (CUDA)", [&] {
    const at::Tensor ext = extend<scalar_t>(x, e.shape, box_fill<scalar_t>(cval, "grey_footprint"),
                                            stream);
    with_extremum(maximum, [&](auto max) {
      cuda::launch<footprint_kernel<scalar_t, decltype(max)::value>>(
          blocks_for(numel), kThreads, stream, ext.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
          numel, e.shape, slice_numel, ext_numel, offsets.data_ptr<int64_t>(), count);
    });
  });
}

void grey_structure_out_cuda(const at::Tensor& input, at::IntArrayRef shape,
                             at::ArrayRef<double> structure, at::IntArrayRef footprint,
                             at::IntArrayRef origin, at::IntArrayRef mode,
                             const at::Scalar& cval, bool maximum, at::Tensor& out) {
  const cuda::DeviceGuard guard(input.device());
  const StructureSetup s =
      grey_structure_setup(input, shape, structure, footprint, origin, mode, maximum);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_structure");
  if (x.numel() == 0) return;
  const ExtendedElement& e = s.element;
  const at::Tensor offsets = to_device(e.offsets, at::kLong, x.device());
  const int64_t numel = x.numel(), slice_numel = numel / (x.size(0) * x.size(1));
  const int64_t count = offsets.numel(), ext_numel = extended_numel(e.shape);
  const cudaStream_t stream = cuda::current_stream();
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, x.scalar_type(),
                             "morphaug::grey_structure (CUDA)", [&] {
    using Acc = StructureAcc<scalar_t>;
    const at::Tensor weights =
        to_device(structure_weights<scalar_t>(s), c10::CppTypeToScalarType<Acc>::value, x.device());
    const at::Tensor ext = extend<scalar_t>(x, e.shape, box_fill<scalar_t>(cval, "grey_structure"),
                                            stream);
    with_extremum(maximum, [&](auto max) {
      cuda::launch<structure_kernel<scalar_t, decltype(max)::value>>(
          blocks_for(numel), kThreads, stream, ext.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
          numel, e.shape, slice_numel, ext_numel, offsets.data_ptr<int64_t>(),
          weights.data_ptr<Acc>(), s.weights[0], count);
    });
  });
}

void grey_element_out_cuda(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                           const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                           at::IntArrayRef mode, const at::Scalar& cval, bool maximum, at::Tensor& out) {
  const cuda::DeviceGuard guard(input.device());
  const ElementSetup e = grey_element_setup(input, footprint, structure, origin, mode);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_element");
  if (x.numel() == 0) return;
  const at::Tensor offsets = to_device(e.element.offsets, at::kLong, x.device());
  const int64_t numel = x.numel(), slice_numel = numel / (x.size(0) * x.size(1));
  const int64_t count = offsets.numel(), ext_numel = extended_numel(e.element.shape);
  const bool* flags = e.footprint.defined() ? e.footprint.data_ptr<bool>() : nullptr;
  const double* weights = e.structure.defined() ? e.structure.data_ptr<double>() : nullptr;
  const cudaStream_t stream = cuda::current_stream();
  MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_element (CUDA)", [&] {
    const at::Tensor ext = extend<scalar_t>(x, e.element.shape, box_fill<scalar_t>(cval, "grey_element"),
                                            stream);
    with_extremum(maximum, [&](auto max) {
      auto run = [&](auto weighted) {
        cuda::launch<element_kernel<scalar_t, decltype(max)::value, decltype(weighted)::value>>(
            blocks_for(numel), kThreads, stream, ext.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), numel,
            e.element.shape, slice_numel, ext_numel, x.size(1), offsets.data_ptr<int64_t>(), count, flags,
            e.footprint_rows, weights, e.structure_rows);
      };
      if (weights) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
    });
  });
}

at::Tensor grey_element_cuda(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                             const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                             at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  at::Tensor out = at::empty(input.sizes(), input.options());
  grey_element_out_cuda(input, footprint, structure, origin, mode, cval, maximum, out);
  return out;
}

at::Tensor grey_footprint_cuda(const at::Tensor& input, at::IntArrayRef shape,
                               at::IntArrayRef footprint, at::IntArrayRef origin,
                               at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  at::Tensor out = at::empty(input.sizes(), input.options());
  grey_footprint_out_cuda(input, shape, footprint, origin, mode, cval, maximum, out);
  return out;
}

at::Tensor grey_structure_cuda(const at::Tensor& input, at::IntArrayRef shape,
                               at::ArrayRef<double> structure, at::IntArrayRef footprint,
                               at::IntArrayRef origin, at::IntArrayRef mode, const at::Scalar& cval,
                               bool maximum) {
  at::Tensor out = at::empty(input.sizes(), input.options());
  grey_structure_out_cuda(input, shape, structure, footprint, origin, mode, cval, maximum, out);
  return out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("grey_footprint", &grey_footprint_cuda);
  m.impl("grey_footprint.out", &grey_footprint_out_cuda);
  m.impl("grey_structure", &grey_structure_cuda);
  m.impl("grey_structure.out", &grey_structure_out_cuda);
  m.impl("grey_element", &grey_element_cuda);
  m.impl("grey_element.out", &grey_element_out_cuda);
}

}  // namespace morphaug
