// Host-side argument checks and set-up shared by the CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/binary_erosion.h"
#include "core/cdt.h"
#include "core/cdt_separable.h"
#include "core/common.h"
#include "core/grey.h"
#include "core/label.h"
#include "core/propagate.h"
#include "core/thinning2d.h"
#include "grey_setup.h"

namespace morphaug {

inline void check_batched(const at::Tensor& x, const char* op) {
  TORCH_CHECK(x.dim() >= 3, "morphaug::", op,
              ": expected a (B, C, *spatial) tensor with at least one spatial axis, got shape ",
              x.sizes());
  TORCH_CHECK(x.dim() - 2 <= kMaxRank, "morphaug::", op, ": at most ", kMaxRank,
              " spatial axes are supported natively, got ", x.dim() - 2);
  for (int64_t d = 2; d < x.dim(); ++d) {
    TORCH_CHECK(x.size(d) < (int64_t{1} << 31), "morphaug::", op, ": spatial size ", x.size(d),
                " does not fit the int32 indices");
  }
}

inline void check_mask(const at::Tensor& mask, const char* op) {
  check_batched(mask, op);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "morphaug::", op,
              ": expected a bool mask (true = foreground), got ", mask.scalar_type());
}

// The `out` of an op's out variant, written in place of a new result like
// x: contiguous, of x's shape, dtype and device, sharing no memory with x.
inline void check_out(const at::Tensor& out, const at::Tensor& x, const char* op,
                      std::optional<at::ScalarType> dtype = std::nullopt) {
  const at::ScalarType expected = dtype.value_or(x.scalar_type());
  TORCH_CHECK(out.sizes() == x.sizes() && out.scalar_type() == expected &&
                  out.device() == x.device(),
              "morphaug::", op, ".out: expected out of the input's shape and device and dtype ",
              expected, " (", x.sizes(), ", ", x.device(), "), got ", out.sizes(), ", ",
              out.scalar_type(), ", ", out.device());
  TORCH_CHECK(out.is_contiguous(), "morphaug::", op, ".out: expected a contiguous out");
  at::assert_no_overlap(out, x);
}

// Lines along spatial axis `axis` of a contiguous (B, C, *spatial) tensor.
inline Lines lines_along(const at::Tensor& x, int axis) {
  const int64_t dim = axis + 2;
  int64_t stride = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) stride *= x.size(d);
  const int64_t length = x.size(dim);
  return Lines{x.numel() / length, length, stride};
}

// Ping-pong buffers across passes: pass p of `passes` writes `final` when an
// even number of passes follows it, so the last pass always lands there.
inline const at::Tensor& pass_target(int pass, int passes, const at::Tensor& final,
                                     const at::Tensor& scratch) {
  return (passes - 1 - pass) % 2 == 0 ? final : scratch;
}

// --- edt -------------------------------------------------------------------

struct EdtSetup {
  Geometry geometry;
  at::Tensor distances;  // result, dtype float32 or float64
  at::Tensor indices;    // (S, B, C, *spatial) int32, or an empty tensor
  bool unit;             // unit sampling on every axis: exact integer arithmetic
};

// `out`: the distances tensor of edt.out, checked here; else a new one.
inline EdtSetup edt_setup(const at::Tensor& mask, std::optional<at::ArrayRef<double>> sampling,
                          bool return_indices, at::ScalarType dtype,
                          const at::Tensor* out = nullptr) {
  check_mask(mask, "edt");
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble,
              "morphaug::edt: distances dtype must be float32 or float64, got ", dtype);
  const int rank = static_cast<int>(mask.dim() - 2);
  EdtSetup setup;
  setup.geometry.rank = rank;
  if (sampling.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(sampling->size()) == rank,
                "morphaug::edt: sampling needs one value per spatial axis (", rank, "), got ",
                sampling->size());
  }
  for (int k = 0; k < rank; ++k) {
    setup.geometry.size[k] = mask.size(k + 2);
    TORCH_CHECK(mask.size(k + 2) < (int64_t{1} << 24), "morphaug::edt: spatial size ",
                mask.size(k + 2), " on axis ", k, " exceeds the native limit 2^24 - 1");
    const double s = sampling.has_value() ? (*sampling)[k] : 1.0;
    TORCH_CHECK(s > 0.0 && s < INFINITY, "morphaug::edt: sampling must be positive and finite, got ",
                s, " for spatial axis ", k);
    setup.geometry.sampling[k] = s;
  }
  const auto options = mask.options();
  if (out != nullptr) check_out(*out, mask, "edt", dtype);
  setup.distances = out != nullptr ? *out : at::empty(mask.sizes(), options.dtype(dtype));
  std::vector<int64_t> index_shape{rank};
  index_shape.insert(index_shape.end(), mask.sizes().begin(), mask.sizes().end());
  setup.indices = return_indices ? at::empty(index_shape, options.dtype(at::kInt))
                                 : at::empty({0}, options.dtype(at::kInt));
  setup.unit = true;
  for (int k = 0; k < rank; ++k) setup.unit = setup.unit && setup.geometry.sampling[k] == 1.0;
  return setup;
}

// --- ball_morphology ---------------------------------------------------------

// Shapes, dtypes and devices of ball_morphology's per-slice arguments.
inline void check_ball_arguments(const at::Tensor& mask, const at::Tensor& radius,
                                 const at::Tensor& metric, const at::Tensor& erode) {
  check_mask(mask, "ball_morphology");
  for (const at::Tensor* t : {&radius, &metric, &erode}) {
    const at::ScalarType expected = t == &erode ? at::kBool : at::kLong;
    TORCH_CHECK(t->scalar_type() == expected && t->dim() == 2 && t->size(0) == mask.size(0) &&
                    t->size(1) == mask.size(1),
                "morphaug::ball_morphology: radius and metric (int64) and erode (bool) must have "
                "shape (", mask.size(0), ", ", mask.size(1), "), got ", t->scalar_type(), " ",
                t->sizes());
    TORCH_CHECK(t->device() == mask.device(), "morphaug::ball_morphology: radius, metric and erode "
                "must be on ", mask.device(), ", got ", t->device());
  }
}

// --- cdt -------------------------------------------------------------------

struct CdtSetup {
  int rank;
  int64_t slices;        // B * C
  int64_t slice_numel;   // product of the spatial sizes
  int64_t padded_numel;  // product of (size + 2)
  std::vector<int64_t> size, pstride;  // spatial sizes, padded strides
  CdtNeighbours neighbours;
};

inline CdtSetup cdt_setup(const at::Tensor& mask, at::IntArrayRef metric) {
  check_mask(mask, "cdt");
  CdtSetup setup;
  setup.rank = static_cast<int>(mask.dim() - 2);
  TORCH_CHECK(setup.rank <= 6, "morphaug::cdt: at most 6 spatial axes are supported natively, got ",
              setup.rank);
  int64_t elements = 1;
  for (int k = 0; k < setup.rank; ++k) elements *= 3;
  TORCH_CHECK(static_cast<int64_t>(metric.size()) == elements,
              "morphaug::cdt: metric must hold the ", elements, " flags of a (3,) * ", setup.rank,
              " structure in C order, got ", metric.size());
  std::vector<bool> flags(metric.size());
  for (size_t e = 0; e < metric.size(); ++e) {
    TORCH_CHECK(metric[e] == 0 || metric[e] == 1, "morphaug::cdt: metric flags must be 0 or 1, got ",
                metric[e], " at position ", e);
    flags[e] = metric[e] == 1;
  }
  setup.slices = mask.size(0) * mask.size(1);
  setup.size.resize(setup.rank);
  setup.pstride.resize(setup.rank);
  setup.slice_numel = 1;
  setup.padded_numel = 1;
  for (int k = setup.rank - 1; k >= 0; --k) {
    setup.size[k] = mask.size(k + 2);
    setup.pstride[k] = setup.padded_numel;
    setup.slice_numel *= setup.size[k];
    setup.padded_numel *= setup.size[k] + 2;
  }
  TORCH_CHECK(setup.padded_numel < (int64_t{1} << 31), "morphaug::cdt: a padded slice of ",
              setup.padded_numel, " voxels does not fit int32 offsets");
  setup.neighbours = cdt_neighbours(flags, setup.rank, setup.pstride.data());
  return setup;
}

// Which passes a cdt call takes, on CPU and CUDA alike: taxicab and chessboard
// distances without indices separate into passes along each axis
// (core/cdt_separable.h; their values stay below 2^31 while the sides sum
// below 2^30); indices and other metrics take SciPy's raster passes.
enum class CdtPath { raster, taxicab, chessboard };

inline CdtPath cdt_path(const CdtSetup& setup, at::IntArrayRef metric, bool return_indices) {
  int64_t sides = 0;
  for (const int64_t size : setup.size) sides += size;
  if (return_indices || sides >= (int64_t{1} << 30)) return CdtPath::raster;
  std::vector<bool> flags(metric.size());
  for (size_t e = 0; e < metric.size(); ++e) flags[e] = metric[e] == 1;
  if (cdt_is_taxicab(flags, setup.rank)) return CdtPath::taxicab;
  return setup.neighbours.cube ? CdtPath::chessboard : CdtPath::raster;
}

// --- grey_box --------------------------------------------------------------

// The box in erosion form: a dilation's box arrives reflected (origin
// -origin, minus 1 on even sizes: morphaug/ndimage/_grey_filter.py).
inline std::vector<BoxAxis> grey_box_axes(const at::Tensor& input, at::IntArrayRef size,
                                          at::IntArrayRef origin, at::IntArrayRef mode) {
  check_batched(input, "grey_box");
  TORCH_CHECK(!input.is_complex(), "morphaug::grey_box: expected a real tensor, got ",
              input.scalar_type());
  const int64_t rank = input.dim() - 2;
  TORCH_CHECK(static_cast<int64_t>(size.size()) == rank &&
                  static_cast<int64_t>(origin.size()) == rank &&
                  static_cast<int64_t>(mode.size()) == rank,
              "morphaug::grey_box: size, origin and mode need one value per spatial axis (", rank,
              "), got ", size.size(), ", ", origin.size(), " and ", mode.size());
  std::vector<BoxAxis> axes;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t k = size[d];
    TORCH_CHECK(k >= 1, "morphaug::grey_box: size must be >= 1, got ", k, " for spatial axis ", d);
    TORCH_CHECK(origin[d] >= -(k / 2) && origin[d] <= (k - 1) / 2, "morphaug::grey_box: origin ",
                origin[d], " is out of range for size ", k, " on spatial axis ", d,
                " (allowed: ", -(k / 2), " to ", (k - 1) / 2, ")");
    TORCH_CHECK(mode[d] >= kReflect && mode[d] <= kConstant, "morphaug::grey_box: mode code ",
                mode[d], " on spatial axis ", d,
                " is not 0 (reflect), 1 (mirror), 2 (nearest), 3 (wrap) or 4 (constant)");
    if (k == 1) continue;
    axes.push_back(BoxAxis{static_cast<int>(d), k, k / 2 + origin[d], static_cast<int>(mode[d])});
  }
  return axes;
}

// cval in the input dtype. Like SciPy, which compares against cval in double
// and casts the result, a fractional cval is truncated for integer dtypes;
// a value out of the dtype's range is an error (Scalar::to wraps uint8).
template <typename T>
T box_fill(const at::Scalar& cval, const char* op = "grey_box") {
  const T fill = cval.to<T>();
  if (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
    const double value = cval.to<double>();
    TORCH_CHECK(std::trunc(value) == static_cast<double>(fill), "morphaug::", op, ": cval ", cval,
                " is out of range for the input dtype");
  }
  return fill;
}

// --- grey_footprint --------------------------------------------------------

// Per-axis placement of an element shared by every slice, in erosion form
// (a dilation's element arrives reflected): input size, extent k and
// extension before the line, with the argument checks common to
// grey_footprint and grey_structure.
struct ElementAxes {
  std::vector<int64_t> size, k, left;
  std::vector<int> mode;
  int64_t count = 1;  // prod(k)
};

inline ElementAxes element_axes(const at::Tensor& input, at::IntArrayRef shape,
                                at::IntArrayRef origin, at::IntArrayRef mode, const char* op) {
  check_batched(input, op);
  TORCH_CHECK(!input.is_complex(), "morphaug::", op, ": expected a real tensor, got ",
              input.scalar_type());
  const int64_t rank = input.dim() - 2;
  TORCH_CHECK(static_cast<int64_t>(shape.size()) == rank &&
                  static_cast<int64_t>(origin.size()) == rank &&
                  static_cast<int64_t>(mode.size()) == rank,
              "morphaug::", op, ": shape, origin and mode need one value per spatial axis (", rank,
              "), got ", shape.size(), ", ", origin.size(), " and ", mode.size());
  ElementAxes a;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t k = shape[d];
    TORCH_CHECK(k >= 1, "morphaug::", op, ": shape must be >= 1, got ", k, " for spatial axis ", d);
    TORCH_CHECK(origin[d] >= -(k / 2) && origin[d] <= (k - 1) / 2, "morphaug::", op, ": origin ",
                origin[d], " is out of range for extent ", k, " on spatial axis ", d,
                " (allowed: ", -(k / 2), " to ", (k - 1) / 2, ")");
    TORCH_CHECK(mode[d] >= kReflect && mode[d] <= kConstant, "morphaug::", op, ": mode code ",
                mode[d], " on spatial axis ", d,
                " is not 0 (reflect), 1 (mirror), 2 (nearest), 3 (wrap) or 4 (constant)");
    a.size.push_back(input.size(d + 2));
    a.k.push_back(k);
    a.left.push_back(k / 2 + origin[d]);
    a.mode.push_back(static_cast<int>(mode[d]));
    a.count *= k;
  }
  return a;
}

// The footprint's `count` flags (0 or 1, at least one 1) in C order.
inline std::vector<bool> element_flags(at::IntArrayRef footprint, int64_t count, const char* op) {
  TORCH_CHECK(static_cast<int64_t>(footprint.size()) == count, "morphaug::", op, ": footprint ",
              "must hold the ", count, " flags of the element shape in C order, got ", footprint.size());
  std::vector<bool> flags(footprint.size());
  for (size_t e = 0; e < footprint.size(); ++e) {
    TORCH_CHECK(footprint[e] == 0 || footprint[e] == 1, "morphaug::", op,
                ": footprint flags must be 0 or 1, got ", footprint[e], " at position ", e);
    flags[e] = footprint[e] == 1;
  }
  TORCH_CHECK(std::find(flags.begin(), flags.end(), true) != flags.end(), "morphaug::", op,
              ": footprint must have at least one true element");
  return flags;
}

inline FootprintSetup grey_footprint_setup(const at::Tensor& input, at::IntArrayRef shape,
                                           at::IntArrayRef footprint, at::IntArrayRef origin,
                                           at::IntArrayRef mode) {
  const ElementAxes a = element_axes(input, shape, origin, mode, "grey_footprint");
  const std::vector<bool> flags = element_flags(footprint, a.count, "grey_footprint");
  FootprintSetup f;
  if (a.size.size() == 1) {  // a leading axis of 1, so that every input has rows
    f.size.push_back(1);
    f.k.push_back(1);
    f.left.push_back(0);
    f.mode.push_back(kNearest);
  }
  f.size.insert(f.size.end(), a.size.begin(), a.size.end());
  f.k.insert(f.k.end(), a.k.begin(), a.k.end());
  f.left.insert(f.left.end(), a.left.begin(), a.left.end());
  f.mode.insert(f.mode.end(), a.mode.begin(), a.mode.end());
  const int64_t count = a.count;

  const int axes = static_cast<int>(f.size.size());
  const int64_t kl = f.k[axes - 1];
  std::vector<std::pair<int64_t, int64_t>> runs;  // (flat row, start), then width
  std::vector<int64_t> run_width;
  for (int64_t row = 0; row < count / kl; ++row) {
    for (int64_t j = 0; j < kl; ++j) {
      if (!flags[row * kl + j] || (j > 0 && flags[row * kl + j - 1])) continue;
      int64_t end = j;
      while (end < kl && flags[row * kl + end]) ++end;
      runs.emplace_back(row, j);
      run_width.push_back(end - j);
      f.widths.push_back(end - j);
    }
  }
  std::sort(f.widths.begin(), f.widths.end());
  f.widths.erase(std::unique(f.widths.begin(), f.widths.end()), f.widths.end());
  for (size_t r = 0; r < runs.size(); ++r) {
    // Split the flat row into axis 0 and the middle axes, which are strided
    // by the extended sizes.
    int64_t rest = runs[r].first, row = 0, stride = 1;
    for (int d = axes - 2; d >= 1; --d) {
      row += rest % f.k[d] * stride;
      rest /= f.k[d];
      stride *= f.size[d] + f.k[d] - 1;
    }
    const int64_t slot =
        std::lower_bound(f.widths.begin(), f.widths.end(), run_width[r]) - f.widths.begin();
    f.runs.push_back(FootprintRun{rest, row, slot, runs[r].second});
  }
  return f;
}

// --- elements over a border-extended copy ----------------------------------

// A shared element over border-extended slices (ExtendedShape in core/grey.h):
// output voxel i reads extended voxel extended_position(i) + offsets[t] for
// each true position t (C order of the placed element).
struct ExtendedElement {
  ElementAxes axes;
  ExtendedShape shape;
  std::vector<int64_t> offsets;
  std::vector<int64_t> positions;  // flat index in the placed element, per offset
};

inline ExtendedElement extended_element(const ElementAxes& axes, const std::vector<bool>& flags) {
  ExtendedElement x;
  x.axes = axes;
  const int rank = static_cast<int>(axes.size.size());
  x.shape.rank = rank;
  std::vector<int64_t> stride(rank, 1);
  for (int d = 0; d < rank; ++d) {
    x.shape.size[d] = axes.size[d];
    x.shape.extended[d] = axes.size[d] + axes.k[d] - 1;
    x.shape.left[d] = axes.left[d];
    x.shape.mode[d] = axes.mode[d];
  }
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * x.shape.extended[d + 1];
  for (int64_t e = 0; e < axes.count; ++e) {
    if (!flags[e]) continue;
    int64_t rest = e, offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += rest % axes.k[d] * stride[d];
      rest /= axes.k[d];
    }
    x.offsets.push_back(offset);
    x.positions.push_back(e);
  }
  return x;
}

// Elements in an extended slice: prod(extended).
inline int64_t extended_numel(const ExtendedShape& s) {
  int64_t numel = 1;
  for (int d = 0; d < s.rank; ++d) numel *= s.extended[d];
  return numel;
}

// grey_footprint as an extended element (the CUDA kernel).
inline ExtendedElement grey_footprint_element(const at::Tensor& input, at::IntArrayRef shape,
                                              at::IntArrayRef footprint, at::IntArrayRef origin,
                                              at::IntArrayRef mode) {
  const ElementAxes a = element_axes(input, shape, origin, mode, "grey_footprint");
  return extended_element(a, element_flags(footprint, a.count, "grey_footprint"));
}

// --- grey_structure --------------------------------------------------------

// A shared non-flat element over border-extended slices, with the weight
// added at each true position (core/grey.h).
struct StructureSetup {
  ExtendedElement element;
  std::vector<double> weights;  // per offset: added to the input value
};

inline StructureSetup grey_structure_setup(const at::Tensor& input, at::IntArrayRef shape,
                                           at::ArrayRef<double> structure, at::IntArrayRef footprint,
                                           at::IntArrayRef origin, at::IntArrayRef mode,
                                           bool maximum) {
  const ElementAxes a = element_axes(input, shape, origin, mode, "grey_structure");
  const int64_t count = a.count;
  StructureSetup s;
  s.element = extended_element(a, element_flags(footprint, count, "grey_structure"));
  TORCH_CHECK(static_cast<int64_t>(structure.size()) == count, "morphaug::grey_structure: ",
              "structure must hold the ", count, " values of the element shape in C order, got ",
              structure.size());
  for (const int64_t e : s.element.positions) {
    // The minimum subtracts the structure, the maximum (a dilation's, given
    // the reflected structure) adds it.
    s.weights.push_back(maximum ? structure[e] : -structure[e]);
  }
  return s;
}

// The weights of every true position as added (structure_weight): the first
// one is added in float64 instead (structure_first, s.weights[0]).
template <typename T>
std::vector<StructureAcc<T>> structure_weights(const StructureSetup& s) {
  std::vector<StructureAcc<T>> weights;
  for (const double w : s.weights) weights.push_back(structure_weight<T>(w));
  return weights;
}

// --- grey_element ------------------------------------------------------------

// Which row of a (B or 1, C or 1, *shape) element tensor slice (b, c) takes:
// b * batch + c * channel.
struct ElementRows {
  int64_t batch = 0, channel = 0;
  MORPHAUG_HD int64_t row(int64_t b, int64_t c) const { return b * batch + c * channel; }
};

// Elements per slice over border-extended slices: `element` holds every
// position of the box (C order), `footprint` (bool) and `structure` (float64)
// the per-slice rows, contiguous, or undefined (every position; flat).
struct ElementSetup {
  ExtendedElement element;
  at::Tensor footprint, structure;
  ElementRows footprint_rows, structure_rows;
};

// Checks one element tensor (`dtype`, (B or 1, C or 1, *shape) on the input's
// device) and returns its rows.
inline ElementRows element_rows(const at::Tensor& input, const at::Tensor& e, at::ScalarType dtype,
                                const char* what) {
  TORCH_CHECK(e.scalar_type() == dtype && e.device() == input.device() && e.dim() == input.dim() &&
                  (e.size(0) == 1 || e.size(0) == input.size(0)) &&
                  (e.size(1) == 1 || e.size(1) == input.size(1)),
              "morphaug::grey_element: ", what, " must be ", dtype, " (B or 1, C or 1, *shape) on the ",
              "input's device, got ", e.scalar_type(), " ", e.sizes(), " on ", e.device());
  ElementRows rows;
  rows.batch = e.size(0) > 1 ? e.size(1) : 0;
  rows.channel = e.size(1) > 1 ? 1 : 0;
  return rows;
}

inline ElementSetup grey_element_setup(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                                       const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                                       at::IntArrayRef mode) {
  check_batched(input, "grey_element");
  TORCH_CHECK(footprint.has_value() || structure.has_value(),
              "morphaug::grey_element: needs a footprint, a structure or both");
  ElementSetup s;
  if (footprint.has_value()) {
    s.footprint_rows = element_rows(input, *footprint, at::kBool, "footprint");
    s.footprint = footprint->contiguous();
  }
  if (structure.has_value()) {
    s.structure_rows = element_rows(input, *structure, at::kDouble, "structure");
    s.structure = structure->contiguous();
  }
  const at::Tensor& shaped = footprint.has_value() ? *footprint : *structure;
  const at::IntArrayRef shape = shaped.sizes().slice(2);
  TORCH_CHECK(!footprint.has_value() || !structure.has_value() || structure->sizes().slice(2) == shape,
              "morphaug::grey_element: footprint and structure need one shape, got ", footprint->sizes(),
              " and ", structure->sizes());
  const ElementAxes a = element_axes(input, shape, origin, mode, "grey_element");
  s.element = extended_element(a, std::vector<bool>(a.count, true));
  return s;
}

// --- propagate / fill_holes --------------------------------------------------

struct PropagateSetup {
  PaddedShape padded;  // each slice padded by the element's reach on each axis
  int64_t slices, slice_numel, padded_numel, count;  // count: element offsets
  std::vector<int32_t> offset;  // padded linear offset of each element offset
};

inline PropagateSetup propagate_setup(const at::Tensor& input, const std::optional<at::Tensor>& mask,
                                      const at::Tensor& weights, at::IntArrayRef offsets) {
  check_mask(input, "propagate");
  PropagateSetup s;
  const int rank = static_cast<int>(input.dim() - 2);
  s.padded.rank = rank;
  if (mask.has_value()) {
    TORCH_CHECK(mask->scalar_type() == at::kBool && mask->sizes() == input.sizes(),
                "morphaug::propagate: mask must be a bool tensor of the input's shape ",
                input.sizes(), ", got ", mask->scalar_type(), " of shape ", mask->sizes());
    TORCH_CHECK(mask->device() == input.device(), "morphaug::propagate: mask is on ",
                mask->device(), ", input on ", input.device());
  }
  TORCH_CHECK(static_cast<int64_t>(offsets.size()) % rank == 0,
              "morphaug::propagate: offsets must hold ", rank,
              " values per element offset, got ", offsets.size(), " values");
  s.count = static_cast<int64_t>(offsets.size()) / rank;
  TORCH_CHECK(weights.scalar_type() == at::kBool && weights.dim() == 3 &&
                  weights.size(0) == input.size(0) && weights.size(1) == input.size(1) &&
                  weights.size(2) == s.count,
              "morphaug::propagate: weights must be a bool (B, C, offsets) tensor of shape (",
              input.size(0), ", ", input.size(1), ", ", s.count, "), got ", weights.scalar_type(),
              " of shape ", weights.sizes());
  TORCH_CHECK(weights.device() == input.device(), "morphaug::propagate: weights are on ",
              weights.device(), ", input on ", input.device());
  s.slices = input.size(0) * input.size(1);
  int64_t* pad = s.padded.pad;
  std::fill(pad, pad + rank, 0);
  for (int64_t e = 0; e < s.count; ++e) {
    for (int k = 0; k < rank; ++k) {
      const int64_t d = offsets[e * rank + k];
      TORCH_CHECK(d > -(int64_t{1} << 20) && d < (int64_t{1} << 20),
                  "morphaug::propagate: element offset ", d, " is out of range");
      pad[k] = std::max(pad[k], d < 0 ? -d : d);
    }
  }
  s.slice_numel = 1;
  s.padded_numel = 1;
  for (int k = rank - 1; k >= 0; --k) {
    s.padded.size[k] = input.size(k + 2);
    s.padded.pstride[k] = s.padded_numel;
    s.slice_numel *= s.padded.size[k];
    s.padded_numel *= s.padded.size[k] + 2 * pad[k];
  }
  TORCH_CHECK(s.padded_numel < (int64_t{1} << 31), "morphaug::propagate: a padded slice of ",
              s.padded_numel, " voxels does not fit int32 offsets");
  s.offset.resize(s.count);
  for (int64_t e = 0; e < s.count; ++e) {
    int64_t o = 0;
    for (int k = 0; k < rank; ++k) o += offsets[e * rank + k] * s.padded.pstride[k];
    s.offset[e] = static_cast<int32_t>(o);
  }
  return s;
}

// --- binary_erosion ------------------------------------------------------------

// Checks binary_erosion's arguments and returns its offsets (ErosionOffsets).
inline ErosionOffsets erosion_setup(const at::Tensor& input, const std::optional<at::Tensor>& mask,
                                    const at::Tensor& hit, const at::Tensor& miss, at::IntArrayRef offsets,
                                    int64_t iterations) {
  check_mask(input, "binary_erosion");
  const int rank = static_cast<int>(input.dim() - 2);
  TORCH_CHECK(rank <= kErosionMaxRank, "morphaug::binary_erosion: at most ", kErosionMaxRank,
              " spatial axes, got ", rank);
  TORCH_CHECK(iterations >= 1, "morphaug::binary_erosion: iterations must be >= 1, got ", iterations);
  if (mask.has_value()) {
    TORCH_CHECK(mask->scalar_type() == at::kBool && mask->sizes() == input.sizes() &&
                    mask->device() == input.device(),
                "morphaug::binary_erosion: mask must be a bool tensor of the input's shape ", input.sizes(),
                " on ", input.device(), ", got ", mask->scalar_type(), " ", mask->sizes(), " on ", mask->device());
  }
  TORCH_CHECK(static_cast<int64_t>(offsets.size()) % rank == 0, "morphaug::binary_erosion: offsets must hold ",
              rank, " values per element offset, got ", offsets.size(), " values");
  const int64_t count = static_cast<int64_t>(offsets.size()) / rank;
  TORCH_CHECK(count <= kErosionMaxOffsets, "morphaug::binary_erosion: at most ", kErosionMaxOffsets,
              " offsets, got ", count);
  for (const at::Tensor* t : {&hit, &miss}) {
    TORCH_CHECK(t->scalar_type() == at::kBool && t->dim() == 3 && t->size(0) == input.size(0) &&
                    t->size(1) == input.size(1) && t->size(2) == count && t->device() == input.device(),
                "morphaug::binary_erosion: hit and miss must be bool (B, C, offsets) tensors of shape (",
                input.size(0), ", ", input.size(1), ", ", count, ") on ", input.device(), ", got ",
                t->scalar_type(), " ", t->sizes(), " on ", t->device());
  }
  ErosionOffsets o{};
  o.rank = rank;
  o.count = static_cast<int32_t>(count);
  int64_t slice_numel = 1;
  for (int k = 0; k < rank; ++k) {
    o.size[k] = static_cast<int32_t>(input.size(k + 2));
    slice_numel *= input.size(k + 2);
  }
  TORCH_CHECK(slice_numel < (int64_t{1} << 31), "morphaug::binary_erosion: a slice of ", slice_numel,
              " voxels does not fit int32 offsets");
  for (int64_t e = 0; e < count; ++e) {
    int64_t delta = 0;
    for (int k = 0; k < rank; ++k) {
      const int64_t d = offsets[e * rank + k];
      TORCH_CHECK(d >= -kErosionMaxReach && d <= kErosionMaxReach, "morphaug::binary_erosion: element offset ",
                  d, " is out of range (at most ", kErosionMaxReach, " voxels along an axis)");
      o.step[e][k] = static_cast<int8_t>(d);
      delta = delta * input.size(k + 2) + d;
    }
    o.delta[e] = static_cast<int32_t>(delta);
  }
  return o;
}

// --- label -------------------------------------------------------------------

// A slice's geometry and the structure's backward half: the offsets whose
// first nonzero step is -1 (the neighbours before a voxel in raster order),
// leaving out those that step along an axis of size 1 (never inside).
// delta holds `rank` steps per offset, linear the offset in a slice.
struct LabelSetup {
  LabelShape shape;
  int64_t slices;
  std::vector<int8_t> delta;
  std::vector<int64_t> linear;
  int64_t count() const { return static_cast<int64_t>(linear.size()); }
};

// label's setup; with `values`, label_values' (an integer map, not bool).
inline LabelSetup label_setup(const at::Tensor& mask, at::IntArrayRef structure,
                              at::ScalarType dtype, bool values = false) {
  if (values) {
    check_batched(mask, "label_values");
    TORCH_CHECK(at::isIntegralType(mask.scalar_type(), /*includeBool=*/false), "morphaug::label_values: ",
                "expected an integer value map, got ", mask.scalar_type());
  } else {
    check_mask(mask, "label");
  }
  const int rank = static_cast<int>(mask.dim() - 2);
  TORCH_CHECK(rank <= 8, "morphaug::label: at most 8 spatial axes are supported natively, got ", rank);
  int64_t elements = 1;
  for (int k = 0; k < rank; ++k) elements *= 3;
  TORCH_CHECK(static_cast<int64_t>(structure.size()) == elements, "morphaug::label: structure must ",
              "hold the ", elements, " flags of a (3,) * ", rank, " structure in C order, got ",
              structure.size());
  for (int64_t e = 0; e < elements; ++e) {
    TORCH_CHECK(structure[e] == 0 || structure[e] == 1, "morphaug::label: structure flags must be 0 ",
                "or 1, got ", structure[e], " at position ", e);
    TORCH_CHECK(structure[e] == structure[elements - 1 - e], "morphaug::label: structure must be ",
                "centrosymmetric, but positions ", e, " and ", elements - 1 - e, " differ");
  }
  TORCH_CHECK(dtype == at::kInt || dtype == at::kLong, "morphaug::label: labels dtype must be int32 ",
              "or int64, got ", dtype);
  LabelSetup s;
  s.slices = mask.size(0) * mask.size(1);
  s.shape.rank = rank;
  s.shape.numel = 1;
  for (int k = rank - 1; k >= 0; --k) {
    s.shape.size[k] = mask.size(k + 2);
    s.shape.stride[k] = s.shape.numel;
    s.shape.numel *= s.shape.size[k];
  }
  TORCH_CHECK(dtype == at::kLong || s.shape.numel < (int64_t{1} << 31), "morphaug::label: a slice of ",
              s.shape.numel, " voxels needs int64 labels");
  for (int64_t e = 0; e < elements / 2; ++e) {  // the first half in C order: backward offsets
    if (!structure[e]) continue;
    int8_t step[kMaxRank];
    int64_t rest = e, linear = 0;
    bool inside = true;
    for (int k = rank - 1; k >= 0; --k) {
      step[k] = static_cast<int8_t>(rest % 3 - 1);
      rest /= 3;
      inside = inside && (step[k] == 0 || s.shape.size[k] > 1);
      linear += step[k] * s.shape.stride[k];
    }
    if (!inside) continue;
    s.delta.insert(s.delta.end(), step, step + rank);
    s.linear.push_back(linear);
  }
  return s;
}

// thinning2d: a bool (B, C, H, W) mask, slices under 2**31 pixels, 512 table flags (sub-iteration
// 0's 256, then 1's) that never delete an interior pixel (code 255), at least one iteration.
inline ThinningTables thinning2d_setup(const at::Tensor& mask, at::IntArrayRef tables, int64_t iterations) {
  check_mask(mask, "thinning2d");
  TORCH_CHECK(mask.dim() == 4, "morphaug::thinning2d: expected (B, C, H, W), got shape ", mask.sizes());
  TORCH_CHECK(mask.size(2) * mask.size(3) < (int64_t{1} << 31), "morphaug::thinning2d: slices of ",
              mask.sizes().slice(2), " do not fit the int32 indices");
  TORCH_CHECK(tables.size() == 512, "morphaug::thinning2d: expected 512 table flags, got ", tables.size());
  TORCH_CHECK(iterations >= 1, "morphaug::thinning2d: expected iterations >= 1, got ", iterations);
  ThinningTables t{};
  for (int at = 0; at < 512; ++at) {
    TORCH_CHECK(tables[at] == 0 || tables[at] == 1, "morphaug::thinning2d: table flags are 0 or 1, got ",
                tables[at]);
    t.bits[at >> 5] |= static_cast<uint32_t>(tables[at]) << (at & 31);
  }
  TORCH_CHECK(!t.deletes(0, 255) && !t.deletes(1, 255),
              "morphaug::thinning2d: the tables may not delete a pixel whose 8 neighbours are foreground");
  return t;
}

// --- CUDA launchers ----------------------------------------------------------

// Host values as a tensor on `device`; for a GPU, copied from pinned memory
// without blocking the host.
template <typename V>
at::Tensor to_device(const std::vector<V>& values, at::ScalarType type, at::Device device) {
  const at::TensorOptions host = at::TensorOptions().dtype(type).pinned_memory(device.is_cuda());
  at::Tensor staged = at::empty({static_cast<int64_t>(values.size())}, host);
  TORCH_INTERNAL_ASSERT(staged.element_size() == static_cast<int64_t>(sizeof(V)));
  std::copy(values.begin(), values.end(), static_cast<V*>(staged.data_ptr()));
  return staged.to(device, /*non_blocking=*/true);
}

}  // namespace morphaug
