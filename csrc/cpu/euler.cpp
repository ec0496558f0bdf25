// CPU launcher of morphaug::euler_number (core/euler.h): the window rows of
// every slice in parallel, each thread adding its rows' sums to their slice's.
#include <ATen/core/Tensor.h>

#include <algorithm>

#include "../euler_setup.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {

at::Tensor euler_number_cpu(const at::Tensor& mask, at::IntArrayRef table) {
  const EulerSetup setup = euler_setup(mask, table);
  const EulerShape s = setup.shape;
  const int64_t per_slice = s.rows(), voxels = s.voxels();
  if (setup.mask.numel() == 0) return setup.out;  // (a 3-D slice of depth 0 is no 2-D slice)
  const uint8_t* v = reinterpret_cast<const uint8_t*>(setup.mask.data_ptr<bool>());
  int64_t* out = setup.out.data_ptr<int64_t>();
  parallel_over(setup.slices * per_slice, s.width + 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end;) {  // a slice's rows at a time, added once
      const int64_t slice = w / per_slice, stop = std::min(end, (slice + 1) * per_slice);
      int64_t sum = 0;
      for (; w < stop; ++w) {
        const uint8_t* rows[4];
        euler_rows(v + slice * voxels, s, w - slice * per_slice, rows);
        sum += euler_row_sum(rows, s.width, setup.table.value);
      }
      __atomic_fetch_add(out + slice, sum, __ATOMIC_RELAXED);
    }
  });
  return setup.out;
}

}  // namespace morphaug
