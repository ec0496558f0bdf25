// CPU launcher of morphaug::cdt: SciPy's two raster passes, slices in parallel;
// taxicab and chessboard distances without indices by separable passes
// (core/cdt_separable.h).
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../core/cdt.h"
#include "../core/cdt_separable.h"
#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "parallel.h"

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
// background, else to the nearest background on the line (unreached if none).
// kGroup lines side by side: independent dependency chains, so that the
// sequential sweeps run at throughput rather than latency.
template <typename T>
void mask_line_distances(const uint8_t* in, T* d, int64_t lines, int64_t n) {
  constexpr int32_t unreached = CdtUnreached<T>::value;
  constexpr int64_t kGroup = 8;
  int64_t line = 0;
  for (; line + kGroup <= lines; line += kGroup) {
    const uint8_t* src = in + line * n;
    T* v = d + line * n;
    int32_t carry[kGroup];
    for (int64_t l = 0; l < kGroup; ++l) carry[l] = unreached;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t l = 0; l < kGroup; ++l) {
        const int32_t c = std::min(unreached * src[l * n + i], carry[l] + 1);
        v[l * n + i] = static_cast<T>(c);
        carry[l] = c;
      }
    }
    for (int64_t i = n - 2; i >= 0; --i) {
      for (int64_t l = 0; l < kGroup; ++l) {
        const int32_t c = std::min(static_cast<int32_t>(v[l * n + i]), carry[l] + 1);
        v[l * n + i] = static_cast<T>(c);
        carry[l] = c;
      }
    }
  }
  for (; line < lines; ++line) {
    const uint8_t* src = in + line * n;
    T* v = d + line * n;
    int32_t carry = unreached;
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(carry = std::min(unreached * src[i], carry + 1));
    for (int64_t i = n - 2; i >= 0; --i) {
      v[i] = static_cast<T>(carry = std::min(static_cast<int32_t>(v[i]), carry + 1));
    }
  }
}

#if defined(__SSE2__)
// The same for int16_t with SSE2, a line at a time, 8 voxels a vector: the
// nearest background at or before x is a prefix max of (background ? x + U :
// 0) (U = unreached, so 0 means none), within the vector by shifts and across
// vectors by a carry, and the distance min(x + U - max, U); the nearest
// background at or after x likewise with reversed positions and a suffix max.
// Positions past the end read as foreground. Needs n < U (x + U fits).
template <>
void mask_line_distances<int16_t>(const uint8_t* in, int16_t* d, int64_t lines, int64_t n) {
  constexpr int16_t unreached = CdtUnreached<int16_t>::value;
  const __m128i zero = _mm_setzero_si128(), all_unreached = _mm_set1_epi16(unreached);
  const __m128i iota = _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7), eight = _mm_set1_epi16(8);
  const int64_t vectors = (n + 7) / 8;
  for (int64_t line = 0; line < lines; ++line) {
    const uint8_t* src = in + line * n;
    int16_t* v = d + line * n;
    alignas(16) uint8_t tail_mask[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    alignas(16) int16_t tail[8];
    for (int64_t x = 8 * (vectors - 1); x < n; ++x) tail_mask[x % 8] = src[x];
    // background lanes of vector j, as all ones
    auto background = [&](int64_t j) {
      const uint8_t* p = j + 1 < vectors ? src + 8 * j : tail_mask;
      const __m128i m = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      return _mm_cmpeq_epi16(_mm_unpacklo_epi8(m, zero), zero);
    };
    auto store = [&](int64_t j, __m128i value) {
      if (j + 1 < vectors) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(v + 8 * j), value);
      } else {
        _mm_store_si128(reinterpret_cast<__m128i*>(tail), value);
        for (int64_t x = 8 * j; x < n; ++x) v[x] = tail[x - 8 * j];
      }
    };
    // forward: prefix max of x + U on background
    __m128i position = _mm_add_epi16(iota, all_unreached), carry = zero;
    for (int64_t j = 0; j < vectors; ++j) {
      __m128i w = _mm_and_si128(background(j), position);
      w = _mm_max_epi16(w, _mm_slli_si128(w, 2));
      w = _mm_max_epi16(w, _mm_slli_si128(w, 4));
      w = _mm_max_epi16(w, _mm_slli_si128(w, 8));
      w = _mm_max_epi16(w, carry);
      carry = _mm_shuffle_epi32(_mm_shufflehi_epi16(w, 0xFF), 0xFF);  // lane 7 everywhere
      store(j, _mm_min_epi16(_mm_sub_epi16(position, w), all_unreached));
      position = _mm_add_epi16(position, eight);
    }
    // backward: suffix max of (n - 1 - x) + U on background, min with the forward distance
    const __m128i reversed_iota = _mm_sub_epi16(_mm_set1_epi16(static_cast<int16_t>(n - 1)), iota);
    carry = zero;
    for (int64_t j = vectors - 1; j >= 0; --j) {
      const __m128i reversed =
          _mm_add_epi16(_mm_sub_epi16(reversed_iota, _mm_set1_epi16(static_cast<int16_t>(8 * j))),
                        all_unreached);
      __m128i w = _mm_and_si128(background(j), reversed);
      w = _mm_max_epi16(w, _mm_srli_si128(w, 2));
      w = _mm_max_epi16(w, _mm_srli_si128(w, 4));
      w = _mm_max_epi16(w, _mm_srli_si128(w, 8));
      w = _mm_max_epi16(w, carry);
      carry = _mm_shuffle_epi32(_mm_shufflelo_epi16(w, 0), 0);  // lane 0 everywhere
      const __m128i forward = j + 1 < vectors
                                  ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 8 * j))
                                  : _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
      store(j, _mm_min_epi16(_mm_sub_epi16(reversed, w), forward));
    }
  }
}
#endif

// Unreached to SciPy's -1, into the int32 output (may be `values` itself).
template <typename T>
void unreached_to_minus_one(const T* values, int32_t* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    out[i] = cdt_reported(values[i]);
  }
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
  parallel_over(slices, numel, [&](int64_t begin, int64_t end) {
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
            for (int64_t x = 0; x < stride; ++x) row[x] = cdt_sweep(row[x], prev[x]);
          }
          for (int64_t i = length - 2; i >= 0; --i) {
            int32_t* __restrict__ row = base + i * stride;
            const int32_t* __restrict__ next = row + stride;
            for (int64_t x = 0; x < stride; ++x) row[x] = cdt_sweep(row[x], next[x]);
          }
        }
        stride *= length;
      }
      unreached_to_minus_one(d, d, numel);
    }
  });
}

// Distances only, chessboard: the separable sweeps of core/cdt_separable.h.
// A slice is done by recursion over its axes, each hyperplane finished over
// the later axes just before its forward step, so that it is still in cache.
// Values in T (int16_t where the sizes allow, see CdtUnreached).
template <typename T>
struct Chessboard {
  int rank;
  std::vector<int64_t> size, stride;  // spatial sizes; products of the sizes after each axis
  std::vector<T> values;              // the slice (unless T is int32_t: the output itself)
  std::vector<T> box, spare;          // a hyperplane's box (and a second for middle axes)
};

// Step of a sweep along axis k: hyperplane = min(hyperplane, box(near) + 1),
// the box over the axes after k, separable: 3-wide along the last axis, then
// along each middle axis, the axis after k fused with the step.
template <typename T>
void chessboard_step(Chessboard<T>& c, int k, T* plane, const T* near) {
  const int64_t n = c.size[c.rank - 1];
  if (k == c.rank - 2) {
    cdt_box3_row_step(plane, near, n);
    return;
  }
  const int64_t numel = c.stride[k];
  T* a = c.box.data();
  T* b = c.spare.data();
  for (int64_t l = 0; l < numel; l += n) cdt_box3_row(a + l, near + l, n);
  for (int j = c.rank - 2; j > k + 1; --j) {  // middle axes, a to b
    const int64_t length = c.size[j], stride = c.stride[j];
    for (int64_t o = 0; o < numel; o += length * stride) {
      for (int64_t i = 0; i < length; ++i) {
        const T* mid = a + o + i * stride;
        cdt_min3(b + o + i * stride, i > 0 ? mid - stride : mid, mid,
                 i + 1 < length ? mid + stride : mid, stride);
      }
    }
    std::swap(a, b);
  }
  const int64_t length = c.size[k + 1], stride = c.stride[k + 1];
  for (int64_t i = 0; i < length; ++i) {
    const T* mid = a + i * stride;
    cdt_min3_step(plane + i * stride, i > 0 ? mid - stride : mid, mid,
                  i + 1 < length ? mid + stride : mid, stride);
  }
}

// Exact chessboard distances over axes k.. of the block at d (mask at in).
// On axis 0, `out` (the block in the output) takes each finished hyperplane
// with SciPy's -1; null on the other axes.
template <typename T>
void chessboard_block(Chessboard<T>& c, int k, const uint8_t* in, T* d, int32_t* out) {
  const int64_t n = c.size[c.rank - 1];
  if (k == c.rank - 1) {  // a 1-D slice
    mask_line_distances(in, d, 1, n);
    if (out) unreached_to_minus_one(d, out, n);
    return;
  }
  const int64_t length = c.size[k], stride = c.stride[k];
  if (k == c.rank - 2) mask_line_distances(in, d, length, n);
  for (int64_t i = 0; i < length; ++i) {
    if (k < c.rank - 2) chessboard_block(c, k + 1, in + i * stride, d + i * stride, nullptr);
    if (i > 0) chessboard_step(c, k, d + i * stride, d + (i - 1) * stride);
  }
  for (int64_t i = length - 2; i >= 0; --i) {
    chessboard_step(c, k, d + i * stride, d + (i + 1) * stride);
    if (out) unreached_to_minus_one(d + (i + 1) * stride, out + (i + 1) * stride, stride);
  }
  if (out) unreached_to_minus_one(d, out, stride);
}

template <typename T>
void cdt_chessboard(const CdtSetup& s, const bool* mask, int32_t* dist) {
  parallel_over(s.slices, s.padded_numel, [&](int64_t begin, int64_t end) {
    Chessboard<T> c;
    c.rank = s.rank;
    c.size = s.size;
    c.stride.assign(s.rank, 1);
    for (int k = s.rank - 2; k >= 0; --k) c.stride[k] = c.stride[k + 1] * s.size[k + 1];
    if (!std::is_same<T, int32_t>::value) c.values.resize(s.slice_numel);
    if (s.rank >= 3) c.box.resize(c.stride[0]);
    if (s.rank >= 4) c.spare.resize(c.stride[0]);
    for (int64_t slice = begin; slice < end; ++slice) {
      const int64_t o = slice * s.slice_numel;
      T* values = c.values.empty() ? reinterpret_cast<T*>(dist + o) : c.values.data();
      chessboard_block(c, 0, reinterpret_cast<const uint8_t*>(mask + o), values, dist + o);
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> cdt_cpu(const at::Tensor& mask, at::IntArrayRef metric,
                                           bool return_indices) {
  const CdtSetup setup = cdt_setup(mask, metric);
  at::Tensor distances = fresh_empty(mask.sizes(), mask.options().dtype(at::kInt));
  std::vector<int64_t> index_shape{setup.rank};
  index_shape.insert(index_shape.end(), mask.sizes().begin(), mask.sizes().end());
  if (!return_indices) index_shape = {0};
  at::Tensor indices = fresh_empty(index_shape, mask.options().dtype(at::kInt));
  if (mask.numel() == 0) return {distances, indices};
  const at::Tensor contiguous = mask.contiguous();
  const CdtPath path = cdt_path(setup, metric, return_indices);
  if (path == CdtPath::taxicab) {
    cdt_taxicab(contiguous, distances.data_ptr<int32_t>());
    return {distances, indices};
  }
  if (path == CdtPath::chessboard) {
    const int64_t largest = *std::max_element(setup.size.begin(), setup.size.end());
    if (largest < CdtUnreached<int16_t>::value) {
      cdt_chessboard<int16_t>(setup, contiguous.data_ptr<bool>(), distances.data_ptr<int32_t>());
    } else {
      cdt_chessboard<int32_t>(setup, contiguous.data_ptr<bool>(), distances.data_ptr<int32_t>());
    }
    return {distances, indices};
  }
  const bool* m = contiguous.data_ptr<bool>();
  int32_t* dist = distances.data_ptr<int32_t>();
  int32_t* idx = return_indices ? indices.data_ptr<int32_t>() : nullptr;
  const int64_t plane = mask.numel();
  parallel_over(setup.slices, setup.padded_numel, [&](int64_t begin, int64_t end) {
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

}  // namespace morphaug
