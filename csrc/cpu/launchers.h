// The CPU launchers of the morphaug ops (one per file of csrc/cpu), registered
// for the CPU key in one place, ops.cpp. Declared here so that each launcher's
// file compiles without torch/library.h (several seconds of parsing per file).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>
#include <vector>

namespace morphaug {

// ball.cpp
at::Tensor ball_morphology_cpu(const at::Tensor& mask, const at::Tensor& radius, const at::Tensor& metric,
                               const at::Tensor& erode);
void ball_morphology_out_cpu(const at::Tensor& mask, const at::Tensor& radius, const at::Tensor& metric,
                             const at::Tensor& erode, at::Tensor& out);
// barycenter.cpp
at::Tensor grid_barycenter_cpu(const at::Tensor& log_hists, const at::Tensor& weights, at::TensorList kernels,
                               int64_t max_iter, double tol, int64_t check_every);
// binary_erosion.cpp
at::Tensor binary_erosion_cpu(const at::Tensor& input, const std::optional<at::Tensor>& mask, const at::Tensor& hit,
                              const at::Tensor& miss, at::IntArrayRef offsets, int64_t iterations, bool border,
                              bool invert);
// binary_values.cpp
std::tuple<at::Tensor, at::Tensor> binary_values_cpu(const at::Tensor& input);
// cdt.cpp
std::tuple<at::Tensor, at::Tensor> cdt_cpu(const at::Tensor& mask, at::IntArrayRef metric, bool return_indices);
// components.cpp
at::Tensor label_sizes_cpu(const at::Tensor& labels, int64_t width);
at::Tensor filter_components_cpu(const at::Tensor& mask, at::IntArrayRef structure, int64_t keep,
                                 int64_t min_size);
at::Tensor pick_component_cpu(const at::Tensor& mask, at::IntArrayRef structure, const at::Tensor& draw,
                              int64_t max_size);
// distance_bf.cpp
std::tuple<at::Tensor, at::Tensor> distance_bf_cpu(const at::Tensor& mask, int64_t metric,
                                                   std::optional<at::ArrayRef<double>> sampling,
                                                   bool return_indices, at::ScalarType dtype);
// edt.cpp
std::tuple<at::Tensor, at::Tensor> edt_cpu(const at::Tensor& mask, std::optional<at::ArrayRef<double>> sampling,
                                           bool return_indices, at::ScalarType dtype, bool squared);
void edt_out_cpu(const at::Tensor& mask, std::optional<at::ArrayRef<double>> sampling, bool squared,
                 at::Tensor& out);
// euler.cpp
at::Tensor euler_number_cpu(const at::Tensor& mask, at::IntArrayRef table);
// expand_labels.cpp
at::Tensor expand_labels_cpu(const at::Tensor& labels, std::optional<at::ArrayRef<double>> sampling,
                             double distance);
// find_boundaries.cpp
at::Tensor find_boundaries_cpu(const at::Tensor& labels, int64_t connectivity, int64_t mode,
                               std::optional<int64_t> background);
// grey.cpp
at::Tensor grey_box_cpu(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                        at::IntArrayRef mode, const at::Scalar& cval, bool maximum);
void grey_box_out_cpu(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                      at::IntArrayRef mode, const at::Scalar& cval, bool maximum, at::Tensor& out);
// grey_footprint.cpp
at::Tensor grey_footprint_cpu(const at::Tensor& input, at::IntArrayRef shape, at::IntArrayRef footprint,
                              at::IntArrayRef origin, at::IntArrayRef mode, const at::Scalar& cval, bool maximum);
void grey_footprint_out_cpu(const at::Tensor& input, at::IntArrayRef shape, at::IntArrayRef footprint,
                            at::IntArrayRef origin, at::IntArrayRef mode, const at::Scalar& cval, bool maximum,
                            at::Tensor& out);
// grey_structure.cpp
at::Tensor grey_structure_cpu(const at::Tensor& input, at::IntArrayRef shape, at::ArrayRef<double> structure,
                              at::IntArrayRef footprint, at::IntArrayRef origin, at::IntArrayRef mode,
                              const at::Scalar& cval, bool maximum);
void grey_structure_out_cpu(const at::Tensor& input, at::IntArrayRef shape, at::ArrayRef<double> structure,
                            at::IntArrayRef footprint, at::IntArrayRef origin, at::IntArrayRef mode,
                            const at::Scalar& cval, bool maximum, at::Tensor& out);
at::Tensor grey_element_cpu(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                            const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                            at::IntArrayRef mode, const at::Scalar& cval, bool maximum);
void grey_element_out_cpu(const at::Tensor& input, const std::optional<at::Tensor>& footprint,
                          const std::optional<at::Tensor>& structure, at::IntArrayRef origin,
                          at::IntArrayRef mode, const at::Scalar& cval, bool maximum, at::Tensor& out);
// label.cpp
std::tuple<at::Tensor, at::Tensor> label_cpu(const at::Tensor& mask, at::IntArrayRef structure,
                                             at::ScalarType dtype);
std::tuple<at::Tensor, at::Tensor> label_values_cpu(const at::Tensor& values, at::IntArrayRef structure,
                                                    std::optional<int64_t> background, at::ScalarType dtype);
// panoptic.cpp
at::Tensor panoptic_confusion_cpu(const at::Tensor& pred, const at::Tensor& ref, double threshold);
// propagate.cpp
at::Tensor propagate_cpu(const at::Tensor& input, const std::optional<at::Tensor>& mask, const at::Tensor& weights,
                         at::IntArrayRef offsets, bool border);
at::Tensor fill_holes_cpu(const at::Tensor& input, const at::Tensor& weights, at::IntArrayRef offsets);
// region_stats.cpp
std::vector<at::Tensor> region_stats_cpu(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                         const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                                         int64_t what);
at::Tensor region_histogram_cpu(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                                at::ArrayRef<double> edges);
std::vector<at::Tensor> region_median_cpu(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                          const std::optional<at::Tensor>& table, at::IntArrayRef rule,
                                          int64_t slots);
// signed_edt.cpp
at::Tensor signed_edt_cpu(const at::Tensor& mask);
// skeleton.cpp
at::Tensor skeletonize_lee_cpu(const at::Tensor& mask, at::IntArrayRef euler_changes);
// thinning3d.cpp
std::tuple<at::Tensor, at::Tensor> skeletonize_parallel_cpu(const at::Tensor& mask, const at::Tensor& active,
                                                            at::IntArrayRef euler_changes, int64_t rounds);
// sinkhorn.cpp
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> sinkhorn_scaling_cpu(
    const at::Tensor& a, const at::Tensor& b, const at::Tensor& kernel, int64_t max_iter, double tol,
    int64_t check_every);
// surface_distance_lists.cpp
std::tuple<at::Tensor, at::Tensor, at::Tensor> surface_distance_lists_cpu(
    const at::Tensor& pred, const at::Tensor& ref, std::optional<at::ArrayRef<double>> sampling, int64_t reach,
    double budget, bool symmetric);
// thinning2d.cpp
std::tuple<at::Tensor, at::Tensor> thinning2d_cpu(const at::Tensor& mask, at::IntArrayRef tables, int64_t iterations);
// value_indices.cpp
std::tuple<at::Tensor, at::Tensor> value_indices_cpu(const at::Tensor& values, int64_t lowest, int64_t span,
                                                     std::optional<int64_t> ignore);
// watershed_ift.cpp
at::Tensor watershed_ift_cpu(const at::Tensor& input, const at::Tensor& markers, at::IntArrayRef offsets,
                             at::ScalarType dtype);

}  // namespace morphaug
