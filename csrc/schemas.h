// Schemas of every morphaug native op, defined in the namespace of the
// library that includes this: morphaug (ops.cpp, the extension morphaug._C)
// and morphaug_emu (emu/emulator.cpp, the CUDA launchers emulated on the CPU).
// Python contracts: morphaug/_ops/kernels.py; fake (meta) kernels:
// morphaug/_ops/_fakes.py.
#pragma once

#include <torch/library.h>

namespace morphaug {

inline void define_schemas(torch::Library& m) {

  // Exact Euclidean distance transform of a bool mask (B, C, *spatial), true =
  // foreground: (distances, indices), squared unless squared = false; indices
  // (S, B, C, *spatial) int32 if return_indices, else an empty tensor.
  // edt.out writes the distances alone into `out` (contiguous, float32 or
  // float64, of the mask's shape and device).
  m.def(
      "edt(Tensor mask, float[]? sampling, bool return_indices, ScalarType dtype, bool squared) "
      "-> (Tensor, Tensor)");
  m.def("edt.out(Tensor mask, float[]? sampling, bool squared, *, Tensor(a!) out) -> ()");
  // skimage's expand_labels of each slice of bool or integer labels: every 0
  // within Euclidean `distance` (sqrt of the squared distance <= distance, in
  // double) of a labelled voxel takes the label of the EDT's feature.
  m.def("expand_labels(Tensor labels, float[]? sampling, float distance) -> Tensor");
  // skimage's find_boundaries of each slice of bool or integer labels, modes
  // 0 thick, 1 inner, 2 outer (core/find_boundaries.h), SciPy's float64
  // store of 64-bit labels included: a new bool tensor. connectivity: 1 .. S
  // orthogonal hops (at most 8 axes); background: read in the labels' width
  // (its low bits), None where their dtype cannot hold it.
  m.def("find_boundaries(Tensor labels, int connectivity, int boundary_mode, int? background) -> Tensor");
  // monai.metrics.compute_panoptic_quality's confusion matrix (core/panoptic.h)
  // of each (b, c) slice of instance maps pred and ref (B, C, *spatial), of one
  // integer or bool dtype, 0 the background, for match_iou_threshold in
  // [0.5, 1]: (B, C, 4) float32 [tp, fp, fn, the matched IoUs' sum].
  m.def("panoptic_confusion(Tensor pred, Tensor ref, float threshold) -> Tensor");
  // scikit-image's euler_number of each slice of a bool (B, C, H, W) or (B, C,
  // D, H, W) mask, before its division: (B, C) int64, the sum of `table` (16
  // or 256 int8 values, core/euler.h) over the configuration code of every
  // 2 x 2 (x 2) window of the slice padded with background.
  m.def("euler_number(Tensor mask, int[] table) -> Tensor");
  // SciPy's brute-force distance transform (core/distance_bf.h) of a bool mask
  // (B, C, *spatial), 1 to 6 axes, true = foreground: (distances, indices).
  // metric: 0 Euclidean (distances float32 or float64 as dtype says, sampling
  // per axis or None), 1 taxicab, 2 chessboard (int32); indices (S, B, C,
  // *spatial) int32 if return_indices, else an empty tensor.
  m.def(
      "distance_bf(Tensor mask, int metric, float[]? sampling, bool return_indices, ScalarType dtype) "
      "-> (Tensor, Tensor)");
  // Chamfer distance transform with SciPy's raster passes: int32 distances and,
  // if return_indices, (S, B, C, *spatial) int32 indices, else an empty tensor.
  // metric: the 3^S flags of the (3,) * S structure in C order.
  m.def("cdt(Tensor mask, int[] metric, bool return_indices) -> (Tensor, Tensor)");
  // The minimum (maximum = true: the maximum) filter of grey_erosion with a box
  // `size` and its origin, in erosion form (grey_dilation passes the reflected
  // origin: the element is reflected once, in Python); modes: one border code
  // per spatial axis, 0 reflect, 1 mirror, 2 nearest, 3 wrap, 4 constant (cval).
  // Each grey op's .out variant writes its result into `out` (contiguous, of
  // the input's shape, dtype and device, sharing no memory with the input).
  // (An argument named `mode` would break the functionalisation of the .out
  // variants: torch's auto_functionalized takes `mode` itself.)
  m.def(
      "grey_box(Tensor input, int[] size, int[] origin, int[] modes, Scalar cval, bool maximum) "
      "-> Tensor");
  m.def(
      "grey_box.out(Tensor input, int[] size, int[] origin, int[] modes, Scalar cval, "
      "bool maximum, *, Tensor(a!) out) -> ()");
  // The same with a flat footprint shared by every slice, in erosion form:
  // `shape` its extent per spatial axis, `footprint` its prod(shape) flags (0 or
  // 1, at least one 1) in C order; origin and modes as for grey_box.
  m.def(
      "grey_footprint(Tensor input, int[] shape, int[] footprint, int[] origin, int[] modes, "
      "Scalar cval, bool maximum) -> Tensor");
  m.def(
      "grey_footprint.out(Tensor input, int[] shape, int[] footprint, int[] origin, "
      "int[] modes, Scalar cval, bool maximum, *, Tensor(a!) out) -> ()");
  // The same with a non-flat element shared by every slice, in erosion form:
  // `structure` its prod(shape) float64 values (the minimum subtracts them,
  // the maximum adds them) and `footprint` its flags (as for grey_footprint),
  // both in C order; origin and modes as for grey_box.
  m.def(
      "grey_structure(Tensor input, int[] shape, float[] structure, int[] footprint, int[] origin, "
      "int[] modes, Scalar cval, bool maximum) -> Tensor");
  m.def(
      "grey_structure.out(Tensor input, int[] shape, float[] structure, int[] footprint, "
      "int[] origin, int[] modes, Scalar cval, bool maximum, *, Tensor(a!) out) -> ()");
  // The same with an element per slice given as tensors on the input's device
  // (never read on the host): `footprint` bool and `structure` float64 (as for
  // grey_structure), each (B or 1, C or 1, *shape) or None (every position;
  // flat), at least one given, one spatial shape; slice (b, c) takes row (b, c)
  // (row 0 along an axis of 1). A slice whose footprint is all false gets the
  // identity of the min / max (the dtype's extreme, or an infinity).
  m.def(
      "grey_element(Tensor input, Tensor? footprint, Tensor? structure, int[] origin, int[] modes, "
      "Scalar cval, bool maximum) -> Tensor");
  m.def(
      "grey_element.out(Tensor input, Tensor? footprint, Tensor? structure, int[] origin, "
      "int[] modes, Scalar cval, bool maximum, *, Tensor(a!) out) -> ()");
  // binary_dilation(input, element, iterations = -1, mask, border_value) of a bool
  // (B, C, *spatial) tensor for an element that holds its centre (symmetric or not):
  // `offsets` holds rank displacements per element offset (relative to the
  // centre, every spatial axis), `weights` (B, C, offsets) bool which of them
  // each slice's element holds; mask (input's shape, bool) or None (everywhere).
  m.def("propagate(Tensor input, Tensor? mask, Tensor weights, int[] offsets, bool border) -> Tensor");
  // binary_fill_holes of a bool (B, C, *spatial) tensor, element as for propagate:
  // ~propagate(zeros, mask = ~input, border = true).
  m.def("fill_holes(Tensor input, Tensor weights, int[] offsets) -> Tensor");
  // Binary dilation (erode false) or erosion (border_value = 0) of each slice
  // of a bool (B, C, *spatial) tensor by the ball of its own radius (B, C)
  // int64 (CPU: 0 .. 127, checked; CUDA: not read on the host, clamped to
  // 0 .. 2^15 - 1) and metric (B, C) int64: 0 euclidean (x^2 + ... <= r^2),
  // 1 taxicab, 2 chessboard; erode (B, C) bool.
  // Its .out variant writes the result into `out`, as the grey ops' do.
  m.def("ball_morphology(Tensor mask, Tensor radius, Tensor metric, Tensor erode) -> Tensor");
  m.def(
      "ball_morphology.out(Tensor mask, Tensor radius, Tensor metric, Tensor erode, *, "
      "Tensor(a!) out) -> ()");
  // `iterations` (>= 1) steps of SciPy's _binary_erosion of a bool (B, C, *spatial)
  // tensor by any element: `offsets` holds rank displacements per element
  // offset (every spatial axis, each within +-127; at most 256 offsets, 8
  // axes), `hit` and `miss` (B, C, offsets) bool which of them each slice
  // reads as foreground and as background. A step's r(p): the AND over hit
  // d of v(p + d) and over miss d of not v(p + d), v the step's input
  // inside the slice and `border` outside; its output r xor invert where mask
  // (input's shape, bool; None: everywhere) holds, else v(p). Erosion: hit;
  // dilation by the reflected element: miss with invert; hit-or-miss: both.
  m.def(
      "binary_erosion(Tensor input, Tensor? mask, Tensor hit, Tensor miss, int[] offsets, int iterations, "
      "bool border, bool invert) -> Tensor");
  // Signed Euclidean distance (unit sampling, float32) of each slice of a bool
  // (B, C, *spatial) mask to its boundary voxels (mask voxels with a face
  // neighbour outside the mask): -distance strictly inside the mask, +0 on the
  // boundary, +distance outside; a slice without boundary (empty or full)
  // is +D or -D, D = sqrt(sum n_k^2).
  m.def("signed_edt(Tensor mask) -> Tensor");
  // A real (B, C, *spatial) input's voxels equal to 1, as a bool mask, and
  // how many voxels hold neither 0 nor 1 (an int64 scalar tensor).
  m.def("binary_values(Tensor input) -> (Tensor, Tensor)");
  // MONAI's surface distance lists of bool (B, C, *spatial) masks pred and
  // ref (1 to 3 spatial axes): (sources, distances, counts). sources: the
  // flat indices (int64) into (2, B, C, *spatial), pred then ref, of the
  // surface voxels (mask ^ binary_erosion(mask), the cross, border 0) of
  // both, or of pred's only with symmetric=false, in raster order;
  // distances: the float32 Euclidean distance (distance_transform_edt's, bit
  // for bit) from each one to the other mask's surface in the same slice,
  // searched up to `reach` voxels along every axis but the last, with at
  // most `budget` line offsets visited per voxel of that slice by all the
  // voxels measuring to it: -1 where the search had to stop (at the reach,
  // or the budget spent), +inf where that surface is empty; counts: (2, B, C)
  // int64, the surface voxels of every slice.
  m.def("surface_distance_lists(Tensor pred, Tensor ref, float[]? sampling, int reach, float budget, "
        "bool symmetric) -> (Tensor, Tensor, Tensor)");
  // SciPy's label of each slice of a bool (B, C, *spatial) mask, true =
  // foreground: (labels, counts). Labels of `dtype` (int32, for slices under
  // 2^31 voxels, or int64): 0 on the background, 1 .. n on the components in
  // raster order of their first voxel; counts (B, C) int64, the n of each
  // slice. structure: the 3^S flags of a centrosymmetric (3,) * S structure
  // in C order (its centre is not read).
  m.def("label(Tensor mask, int[] structure, ScalarType dtype) -> (Tensor, Tensor)");
  // scikit-image's measure.label of each slice of an integer (B, C, *spatial)
  // value map (any integer dtype but bool): label's labels and counts, two
  // neighbours joined when they hold the same value; voxels holding
  // `background` (read in the values' width, its low bits) are 0, every
  // voxel is labelled without one.
  m.def("label_values(Tensor values, int[] structure, int? background, ScalarType dtype) -> (Tensor, Tensor)");
  // scikit-image's skeletonize(method="lee") of each slice of a bool (B, C,
  // D, H, W) mask (a 2-D image as D = 1), bit for bit: a new bool tensor.
  // euler_changes: the 128 changes of 8 x the Euler characteristic of a
  // 2 x 2 x 2 window when its corner 0 goes, by the code of its other corners.
  m.def("skeletonize_lee(Tensor mask, int[] euler_changes) -> Tensor");
  // The 2-D table thinnings of scikit-image (skeletonize "zhang", thin) of each slice of a bool
  // (B, C, H, W) mask: at most `iterations` iterations of two parallel sub-iterations, each
  // deleting the foreground pixels whose 8-neighbour code (core/thinning2d.h) its table flags
  // (tables: 2 x 256 flags); a slice stops once an iteration deletes nothing. Returns the
  // thinned masks and an int64 scalar: the pixels that each slice's last iteration deleted, summed
  // (0: every slice at its fixpoint).
  m.def("thinning2d(Tensor mask, int[] tables, int iterations) -> (Tensor, Tensor)");
  // skeletonize(method="parallel") of each slice of a bool (B, C, D, H, W)
  // mask whose flag in the bool (B, C) active is set (the others are copied):
  // at most `rounds` rounds of the six (four where D = 1) border directions
  // (rounds < 1: until a round deletes nothing). Returns (thinned, still):
  // still (B, C) bool, whether a slice's last round deleted something.
  m.def("skeletonize_parallel(Tensor mask, Tensor active, int[] euler_changes, int rounds) -> (Tensor, Tensor)");
  // The component filters of the transforms (KeepLargestComponents,
  // RemoveSmallComponents): the voxels of the components of label(mask,
  // structure) that go, in some channel: (B, 1, *spatial) bool. A component
  // goes when it has fewer than min_size voxels or, with keep >= 1, when it is
  // not among the keep largest of its slice (the higher label first on ties).
  m.def("filter_components(Tensor mask, int[] structure, int keep, int min_size) -> Tensor");
  // RandRemoveComponent's draw: of the components of label(mask, structure) in
  // each (b, c) slice with fewer than max_size voxels (in label order), the one
  // of rank floor(draw[b, c] * their number) (at most the last; none for a
  // negative draw or no such component): its voxels, (B, C, *spatial) bool.
  m.def("pick_component(Tensor mask, int[] structure, Tensor draw, int max_size) -> Tensor");
  // The voxels of each label of each slice of int32 / int64 labels (B, C,
  // *spatial) whose values lie in [0, width): (B, C, width) int64, column v
  // the count of value v (column 0 the background's).
  m.def("label_sizes(Tensor labels, int width) -> Tensor");
  // scipy.ndimage.value_indices of the whole (B, C, *spatial) array of int8,
  // uint8, int16, int32 or int64 values, each in lowest .. lowest + span - 1
  // (CPU only): (counts, coords), counts[j] the voxels of value lowest + j (0
  // for `ignore`), coords (2 + S, total) int64 the coordinates of the others,
  // grouped by value, each group in C order.
  m.def("value_indices(Tensor values, int lowest, int span, int? ignore) -> (Tensor, Tensor)");
  // The segmented reductions of the measurements (morphaug/ndimage/_regions.py):
  // each voxel of input (B, C, *spatial) goes to a column of its slice's row of
  // (B * C, slots) tables by its label (labels: the input's spatial shape, B and
  // C or 1; integer or bool) and rule = [mode, low, high, first] (mode 0: column
  // 0, no labels; 1: the label key clamped to [low, high], less first; 2: the
  // first equal key of the sorted int64 `table`, else column table.numel()).
  // `what` ORs the tables wanted (core/region_stats.h, kRegion*; the count
  // always): the results are those tables, in the flags' order.
  m.def("region_stats(Tensor input, Tensor? labels, Tensor? table, int[] rule, int slots, int what) -> Tensor[]");
  // The histogram of each region (morphaug/ndimage/_statistics.py): region_stats'
  // columns, each voxel counted in np.histogram's bin over the non-decreasing
  // `edges` (the last bin closed; outside them and NaN: none): int64 (B * C,
  // slots, len(edges) - 1).
  m.def("region_histogram(Tensor input, Tensor? labels, Tensor? table, int[] rule, int slots, float[] edges) -> Tensor");
  // The middle values of each region (morphaug/ndimage/_statistics.py, median):
  // region_stats' columns; (B * C, slots) int64 counts and the keys of the lower
  // and upper middle values (region_stats' keys, NaN the greatest), and (B * C,)
  // the least value key of each slice's least label (0 without labels).
  m.def("region_median(Tensor input, Tensor? labels, Tensor? table, int[] rule, int slots) -> Tensor[]");
  // Convolutional Wasserstein barycenters (morphaug/ot/_grid.py): log of the
  // histograms (B, N, *spatial), weights (B, N), one Gibbs kernel (n_d, n_d)
  // per spatial axis; each problem stops on its own (POT's rule, checked at
  // iterations check_every - 1, 2 check_every - 1, ...). Returns log(bar)
  // (B, *spatial).
  m.def(
      "grid_barycenter(Tensor log_hists, Tensor weights, Tensor[] kernels, int max_iter, float tol, "
      "int check_every) -> Tensor");
  // POT's Sinkhorn-Knopp matrix scaling on a batch of problems a (B, n), b
  // (B, m) with one kernel K (n, m) = exp((min C - C) / reg), every problem
  // stopping on its own once ||P^T 1 - b||_2 < tol (checked at iterations 0,
  // check_every, ...): (q_f = K v (B, n), q_g = K^T u (B, m), u (B, n) scaled
  // by its row maximum `scale` (B, 1), n_iter (B,) int64); see
  // morphaug/ot/_dense.py scaling_iterations.
  m.def(
      "sinkhorn_scaling(Tensor a, Tensor b, Tensor kernel, int max_iter, float tol, int check_every) "
      "-> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // SciPy's watershed_ift of each slice of uint8 or uint16 input (B, C, *spatial)
  // from signed integer markers of its shape (read as C int): the labels, of
  // signed integer `dtype`. offsets: the flat offsets of the structure's
  // neighbours in C order, wrapping across rows as SciPy's do (at most 80).
  m.def("watershed_ift(Tensor input, Tensor markers, int[] offsets, ScalarType dtype) -> Tensor");
}

}  // namespace morphaug
