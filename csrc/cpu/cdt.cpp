// CPU launcher of morphaug::cdt: SciPy's two raster passes, slices in parallel;
// taxicab and chessboard distances without indices by separable passes
// (core/cdt_separable.h).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../core/cdt.h"
#include "../core/cdt_separable.h"
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

// Distances along the last axis of `lines` lines of n from the mask: 0 on
// background, else to the nearest background on the line (kCdtUnreached if
// none). kGroup lines side by side: independent dependency chains, so that the
// sequential sweeps run at throughput rather than latency.
void mask_line_distances(const uint8_t* in, int32_t* d, int64_t lines, int64_t n) {
  constexpr int64_t kGroup = 8;
  int64_t line = 0;
  for (; line + kGroup <= lines; line += kGroup) {
    const uint8_t* src = in + line * n;
    int32_t* v = d + line * n;
    int32_t carry[kGroup];
    for (int64_t l = 0; l < kGroup; ++l) carry[l] = kCdtUnreached;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t l = 0; l < kGroup; ++l) {
        const int32_t c = std::min(kCdtUnreached * src[l * n + i], carry[l] + 1);
        v[l * n + i] = c;
        carry[l] = c;
      }
    }
    for (int64_t i = n - 2; i >= 0; --i) {
      for (int64_t l = 0; l < kGroup; ++l) {
        const int32_t c = std::min(v[l * n + i], carry[l] + 1);
        v[l * n + i] = c;
        carry[l] = c;
      }
    }
  }
  for (; line < lines; ++line) {
    int32_t* v = d + line * n;
    for (int64_t i = 0; i < n; ++i) v[i] = kCdtUnreached * in[line * n + i];
    cdt_line_sweeps(v, n, 1);
  }
}

// Unreached (>= kCdtUnreached) to SciPy's -1.
void unreached_to_minus_one(int32_t* d, int64_t count) {
  for (int64_t i = 0; i < count; ++i) d[i] = d[i] >= kCdtUnreached ? -1 : d[i];
}

// Distances only, taxicab: separable 1-D passes, slices in parallel and each
// slice done whole while it sits in cache: the last (contiguous) axis line by
// line from the mask, then each other axis as sweeps over whole rows.
void cdt_taxicab(const at::Tensor& mask, int32_t* dist) {
  const int rank = static_cast<int>(mask.dim() - 2);
  const bool* m = mask.data_ptr<bool>();
  const int64_t slices = mask.size(0) * mask.size(1);
  const int64_t numel = slices == 0 ? 0 : mask.numel() / slices;
  const int64_t n = mask.size(-1);
  at::parallel_for(0, slices, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slice = begin; slice < end; ++slice) {
      const uint8_t* in = reinterpret_cast<const uint8_t*>(m + slice * numel);
      int32_t* d = dist + slice * numel;
      mask_line_distances(in, d, numel / n, n);
      int64_t stride = n;  // product of the sizes after `axis`
      for (int axis = rank - 2; axis >= 0; --axis) {
        const int64_t length = mask.size(axis + 2);
        const int64_t outer = numel / (length * stride);
        for (int64_t o = 0; o < outer; ++o) {
          int32_t* base = d + o * length * stride;
          for (int64_t i = 1; i < length; ++i) {
            int32_t* __restrict__ row = base + i * stride;
            const int32_t* __restrict__ prev = row - stride;
            for (int64_t x = 0; x < stride; ++x) row[x] = std::min(row[x], prev[x] + 1);
          }
          for (int64_t i = length - 2; i >= 0; --i) {
            int32_t* __restrict__ row = base + i * stride;
            const int32_t* __restrict__ next = row + stride;
            for (int64_t x = 0; x < stride; ++x) row[x] = std::min(row[x], next[x] + 1);
          }
        }
        stride *= length;
      }
      unreached_to_minus_one(d, numel);
    }
  });
}

// Distances only, chessboard: the separable sweeps of core/cdt_separable.h.
// A slice is done by recursion over its axes, each hyperplane finished over
// the later axes just before its forward step, so that it is still in cache.
struct Chessboard {
  int rank;
  std::vector<int64_t> size, stride;  // spatial sizes; products of the sizes after each axis
  std::vector<int32_t> box, spare;    // a hyperplane's box (and a second for middle axes)
};

// Step of a sweep along axis k: hyperplane = min(hyperplane, box(near) + 1),
// the box over the axes after k, separable: 3-wide along the last axis, then
// along each middle axis, the axis after k fused with the step.
void chessboard_step(Chessboard& c, int k, int32_t* plane, const int32_t* near) {
  const int64_t n = c.size[c.rank - 1];
  if (k == c.rank - 2) {
    cdt_box3_row_step(plane, near, n);
    return;
  }
  const int64_t numel = c.stride[k];
  int32_t* a = c.box.data();
  int32_t* b = c.spare.data();
  for (int64_t l = 0; l < numel; l += n) cdt_box3_row(a + l, near + l, n);
  for (int j = c.rank - 2; j > k + 1; --j) {  // middle axes, a to b
    const int64_t length = c.size[j], stride = c.stride[j];
    for (int64_t o = 0; o < numel; o += length * stride) {
      for (int64_t i = 0; i < length; ++i) {
        const int32_t* mid = a + o + i * stride;
        cdt_min3(b + o + i * stride, i > 0 ? mid - stride : mid, mid,
                 i + 1 < length ? mid + stride : mid, stride);
      }
    }
    std::swap(a, b);
  }
  const int64_t length = c.size[k + 1], stride = c.stride[k + 1];
  for (int64_t i = 0; i < length; ++i) {
    const int32_t* mid = a + i * stride;
    cdt_min3_step(plane + i * stride, i > 0 ? mid - stride : mid, mid,
                  i + 1 < length ? mid + stride : mid, stride);
  }
}

// Exact chessboard distances over axes k.. of the block at d (mask at in);
// `last` (axis 0) also turns each finished hyperplane to SciPy's -1.
void chessboard_block(Chessboard& c, int k, const uint8_t* in, int32_t* d, bool last) {
  const int64_t n = c.size[c.rank - 1];
  if (k == c.rank - 1) {  // a 1-D slice
    mask_line_distances(in, d, 1, n);
    if (last) unreached_to_minus_one(d, n);
    return;
  }
  const int64_t length = c.size[k], stride = c.stride[k];
  if (k == c.rank - 2) mask_line_distances(in, d, length, n);
  for (int64_t i = 0; i < length; ++i) {
    if (k < c.rank - 2) chessboard_block(c, k + 1, in + i * stride, d + i * stride, false);
    if (i > 0) chessboard_step(c, k, d + i * stride, d + (i - 1) * stride);
  }
  for (int64_t i = length - 2; i >= 0; --i) {
    chessboard_step(c, k, d + i * stride, d + (i + 1) * stride);
    if (last) unreached_to_minus_one(d + (i + 1) * stride, stride);
  }
  if (last) unreached_to_minus_one(d, stride);
}

void cdt_chessboard(const CdtSetup& s, const bool* mask, int32_t* dist) {
  at::parallel_for(0, s.slices, 1, [&](int64_t begin, int64_t end) {
    Chessboard c;
    c.rank = s.rank;
    c.size = s.size;
    c.stride.assign(s.rank, 1);
    for (int k = s.rank - 2; k >= 0; --k) c.stride[k] = c.stride[k + 1] * s.size[k + 1];
    if (s.rank >= 3) c.box.resize(c.stride[0]);
    if (s.rank >= 4) c.spare.resize(c.stride[0]);
    for (int64_t slice = begin; slice < end; ++slice) {
      const int64_t o = slice * s.slice_numel;
      chessboard_block(c, 0, reinterpret_cast<const uint8_t*>(mask + o), dist + o, true);
    }
  });
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
  if (!return_indices) {  // taxicab distances: separable (SciPy's values, see cdt_separable.h)
    std::vector<bool> flags(metric.size());
    for (size_t e = 0; e < metric.size(); ++e) flags[e] = metric[e] == 1;
    int64_t sides = 0;
    for (int k = 0; k < setup.rank; ++k) sides += setup.size[k];
    if (cdt_is_taxicab(flags, setup.rank) && sides < (int64_t{1} << 30)) {
      cdt_taxicab(contiguous, distances.data_ptr<int32_t>());
      return {distances, indices};
    }
    if (setup.neighbours.cube) {  // chessboard distances: separable (cdt_separable.h)
      cdt_chessboard(setup, contiguous.data_ptr<bool>(), distances.data_ptr<int32_t>());
      return {distances, indices};
    }
  }
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
