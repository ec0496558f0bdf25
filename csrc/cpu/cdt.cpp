// CPU launcher of morphaug::cdt: SciPy's two raster passes, slices in parallel.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../core/cdt.h"
#include "../launch.h"

namespace morphaug {
namespace {

// Padded position of the first voxel of raster row `row` (rows run along the last axis).
int64_t row_start(const CdtSetup& s, int64_t row) {
  int64_t p = 1;  // last coordinate 0, padded stride 1
  for (int k = s.rank - 2; k >= 0; --k) {
    p += (row % s.size[k] + 1) * s.pstride[k];
    row /= s.size[k];
  }
  return p;
}

// Work buffers of one slice, padded by one voxel on every side and reused
// across the slices of a thread: every pass writes a row before reading it,
// so the padding and the rows not yet written stay unreached throughout.
struct SliceBuffers {
  std::vector<int32_t> value, feature, triple, triple_feature;
};

// In-row predecessor (step 2) along the row at `first`, in processing order.
template <bool Features>
void fold_row(int32_t* value, int32_t* feature, int64_t first, int64_t n, int sign) {
  const int64_t start = sign > 0 ? first : first + n - 1;
  CdtCandidate carry{kCdtUnreached, 0};
  for (int64_t t = 0; t < n; ++t) {
    const int64_t p = start + sign * t;
    carry = cdt_combine(carry, cdt_key(value[p], Features ? feature[p] : 0, t));
    value[p] = cdt_distance(carry.distance, t);
    if (Features) feature[p] = carry.feature;
  }
}

// One slice: the forward pass starts each row from the mask, the backward pass
// writes each finished row out. With the cube metric the earlier rows are read
// through their triples.
void cdt_slice(const CdtSetup& s, const bool* mask, int32_t* distances, int32_t* indices,
               int64_t plane, SliceBuffers& buffers) {
  const int64_t n = s.size[s.rank - 1];
  const int64_t rows = s.slice_numel / n;
  const CdtNeighbours& nb = s.neighbours;
  int32_t* value = buffers.value.data();
  int32_t* feature = indices ? buffers.feature.data() : nullptr;
  int32_t* triple = nb.cube ? buffers.triple.data() : nullptr;
  int32_t* triple_feature = nb.cube && indices ? buffers.triple_feature.data() : nullptr;
  // Features back to coordinates: q = trunc((rest + 0.5) * (1 / size)) is
  // rest / size exactly for rest < 2^31, and cheaper than integer division.
  std::vector<double> inverse(s.rank);
  for (int k = 0; k < s.rank; ++k) inverse[k] = 1.0 / static_cast<double>(s.size[k]);
  for (const int sign : {+1, -1}) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = sign > 0 ? r : rows - 1 - r;
      const int64_t first = row_start(s, row);
      const int64_t v0 = row * n;  // unpadded index of the row's first voxel
      if (sign > 0) {
        const uint8_t* foreground = reinterpret_cast<const uint8_t*>(mask + v0);
        for (int64_t x = 0; x < n; ++x) value[first + x] = kCdtUnreached * foreground[x];
        if (feature) {
          for (int64_t x = 0; x < n; ++x) feature[first + x] = static_cast<int32_t>(v0 + x);
        }
      }
      if (triple) {
        cdt_previous_rows_cube(value, feature, triple, triple_feature, first, n, nb, sign);
      } else {
        cdt_previous_rows(value, feature, first, n, nb, sign);
      }
      if (nb.has_left) {
        if (feature) {
          fold_row<true>(value, feature, first, n, sign);
        } else {
          fold_row<false>(value, feature, first, n, sign);
        }
      }
      if (triple) {  // constant signs, so that the loops vectorise
        if (sign > 0) {
          cdt_row_triples(value, feature, triple, triple_feature, first, n, +1);
        } else {
          cdt_row_triples(value, feature, triple, triple_feature, first, n, -1);
        }
      }
      if (sign > 0) continue;
      for (int64_t x = 0; x < n; ++x) {
        distances[v0 + x] = value[first + x] >= kCdtUnreached ? -1 : value[first + x];
      }
      if (!feature) continue;
      for (int64_t x = 0; x < n; ++x) {
        int64_t rest = feature[first + x];
        for (int k = s.rank - 1; k >= 0; --k) {
          const int64_t q = static_cast<int64_t>((static_cast<double>(rest) + 0.5) * inverse[k]);
          indices[k * plane + v0 + x] = static_cast<int32_t>(rest - q * s.size[k]);
          rest = q;
        }
      }
    }
  }
}

std::tuple<at::Tensor, at::Tensor> cdt_cpu(const at::Tensor& mask, at::IntArrayRef metric,
                                           bool return_indices) {
  const CdtSetup setup = cdt_setup(mask, metric);
  at::Tensor distances = at::empty(mask.sizes(), mask.options().dtype(at::kInt));
  std::vector<int64_t> index_shape{setup.rank};
  index_shape.insert(index_shape.end(), mask.sizes().begin(), mask.sizes().end());
  if (!return_indices) index_shape = {0};
  at::Tensor indices = at::empty(index_shape, mask.options().dtype(at::kInt));
  if (mask.numel() == 0) return {distances, indices};
  const at::Tensor contiguous = mask.contiguous();
  const bool* m = contiguous.data_ptr<bool>();
  int32_t* dist = distances.data_ptr<int32_t>();
  int32_t* idx = return_indices ? indices.data_ptr<int32_t>() : nullptr;
  const int64_t plane = mask.numel();
  at::parallel_for(0, setup.slices, 1, [&](int64_t begin, int64_t end) {
    SliceBuffers buffers;
    buffers.value.assign(setup.padded_numel, kCdtUnreached);
    buffers.feature.resize(idx ? setup.padded_numel : 0);
    buffers.triple.assign(setup.neighbours.cube ? setup.padded_numel : 0, kCdtUnreached);
    buffers.triple_feature.resize(setup.neighbours.cube && idx ? setup.padded_numel : 0);
    for (int64_t slice = begin; slice < end; ++slice) {
      const int64_t o = slice * setup.slice_numel;
      cdt_slice(setup, m + o, dist + o, idx ? idx + o : nullptr, plane, buffers);
    }
  });
  return {distances, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(morphaug, CPU, m) { m.impl("cdt", &cdt_cpu); }

}  // namespace morphaug
