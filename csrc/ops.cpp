// The Python module `morphaug._C` and the schemas of torch.ops.morphaug.
//
// Importing morphaug._C loads this library, which registers the schemas
// (schemas.h), the CPU kernels of csrc/cpu (here) and the CUDA kernels of
// csrc/cuda (each launcher's file).
#include <Python.h>
#include <torch/library.h>

#include "cpu/launchers.h"
#include "schemas.h"

TORCH_LIBRARY(morphaug, m) { morphaug::define_schemas(m); }

TORCH_LIBRARY_IMPL(morphaug, CPU, m) {
  using namespace morphaug;
  m.impl("ball_morphology", &ball_morphology_cpu);
  m.impl("ball_morphology.out", &ball_morphology_out_cpu);
  m.impl("binary_erosion", &binary_erosion_cpu);
  m.impl("binary_values", &binary_values_cpu);
  m.impl("cdt", &cdt_cpu);
  m.impl("distance_bf", &distance_bf_cpu);
  m.impl("edt", &edt_cpu);
  m.impl("edt.out", &edt_out_cpu);
  m.impl("euler_number", &euler_number_cpu);
  m.impl("expand_labels", &expand_labels_cpu);
  m.impl("fill_holes", &fill_holes_cpu);
  m.impl("filter_components", &filter_components_cpu);
  m.impl("pick_component", &pick_component_cpu);
  m.impl("panoptic_confusion", &panoptic_confusion_cpu);
  m.impl("find_boundaries", &find_boundaries_cpu);
  m.impl("grey_box", &grey_box_cpu);
  m.impl("grey_box.out", &grey_box_out_cpu);
  m.impl("grey_element", &grey_element_cpu);
  m.impl("grey_element.out", &grey_element_out_cpu);
  m.impl("grey_footprint", &grey_footprint_cpu);
  m.impl("grey_footprint.out", &grey_footprint_out_cpu);
  m.impl("grey_structure", &grey_structure_cpu);
  m.impl("grey_structure.out", &grey_structure_out_cpu);
  m.impl("grid_barycenter", &grid_barycenter_cpu);
  m.impl("label", &label_cpu);
  m.impl("label_values", &label_values_cpu);
  m.impl("label_sizes", &label_sizes_cpu);
  m.impl("propagate", &propagate_cpu);
  m.impl("region_stats", &region_stats_cpu);
  m.impl("region_histogram", &region_histogram_cpu);
  m.impl("region_median", &region_median_cpu);
  m.impl("signed_edt", &signed_edt_cpu);
  m.impl("sinkhorn_scaling", &sinkhorn_scaling_cpu);
  m.impl("skeletonize_lee", &skeletonize_lee_cpu);
  m.impl("skeletonize_parallel", &skeletonize_parallel_cpu);
  m.impl("surface_distance_lists", &surface_distance_lists_cpu);
  m.impl("thinning2d", &thinning2d_cpu);
  m.impl("value_indices", &value_indices_cpu);
  m.impl("watershed_ift", &watershed_ift_cpu);
}

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "morphaug native kernels", -1, nullptr};
  return PyModule_Create(&module);
}
