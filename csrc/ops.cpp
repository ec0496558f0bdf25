// The Python module `morphaug._C` and the schemas of torch.ops.morphaug.
//
// Importing morphaug._C loads this library, which registers the schemas
// (schemas.h) and the CPU / CUDA kernels of csrc/cpu and csrc/cuda.
#include <Python.h>
#include <torch/library.h>

#include "schemas.h"

TORCH_LIBRARY(morphaug, m) { morphaug::define_schemas(m); }

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "morphaug native kernels", -1, nullptr};
  return PyModule_Create(&module);
}
