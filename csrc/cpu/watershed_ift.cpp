// CPU launcher of morphaug::watershed_ift: SciPy's flood (core/watershed_ift.h) per (b, c)
// slice, slices in parallel, each task with its own scratch.
#include <ATen/core/Tensor.h>

#include <vector>

#include "../watershed_setup.h"
#include "fresh.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {

at::Tensor watershed_ift_cpu(const at::Tensor& input, const at::Tensor& markers, at::IntArrayRef offsets,
                             at::ScalarType dtype) {
  const WatershedSetup s = watershed_setup(input, markers, offsets, dtype);
  at::Tensor out = fresh_empty(input.sizes(), input.options().dtype(dtype));
  if (input.numel() == 0) return out;
  const at::Tensor x = input.contiguous(), m = markers.contiguous();
  with_watershed_types(x.scalar_type(), m.scalar_type(), dtype, [&](auto v, auto mk, auto l) {
    using V = decltype(v);
    using M = decltype(mk);
    using L = decltype(l);
    const V* image = static_cast<const V*>(x.const_data_ptr());
    const M* seeds = static_cast<const M*>(m.const_data_ptr());
    L* labels = static_cast<L*>(out.data_ptr());
    parallel_over(s.slices, int64_t{s.size} * (s.offsets.count + 4), [&](int64_t begin, int64_t end) {
      std::vector<int32_t> voxels(3 * static_cast<size_t>(s.size)), levels(2 * static_cast<size_t>(s.levels));
      const WatershedScratch scratch{voxels.data(), voxels.data() + s.size, voxels.data() + 2 * int64_t{s.size},
                                     levels.data(), levels.data() + s.levels};
      for (int64_t slice = begin; slice < end; ++slice) {
        const int64_t o = slice * s.size;
        watershed_ift_slice(image + o, seeds + o, labels + o, s.size, s.offsets, scratch);
      }
    });
  });
  return out;
}

}  // namespace morphaug
