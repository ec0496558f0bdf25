// CPU launcher of morphaug::signed_edt (core/signed_edt.h): one volume per
// task when there are enough of them, else the rows of each pass in
// parallel; uint16 values where they fit (16 lanes to an AVX2 register).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "../core/signed_edt.h"
#include "../launch.h"

namespace morphaug {
namespace {

// sedt_parabola on Vectors x 32 bytes of neighbouring voxels at once (GCC
// vector extensions: AVX2 registers, or pairs of SSE2 ones): the same taps,
// with one stopping test for the whole pack every kPackSteps taps (a few
// taps more, far fewer tests). On 96^3 labels, 2 to 4 vectors and 3 to 6
// taps measure within 10%, one vector or one tap 1.5x to 2x slower.
constexpr int kPackVectors = 3;

// Inlined into the AVX2 and baseline clones of their callers: out of line,
// they would be compiled for the baseline only.
#define kInlined inline __attribute__((always_inline))
constexpr int kPackSteps = 4;

template <typename W>
struct Pack {
  typedef W Vector __attribute__((vector_size(32), aligned(1)));  // unaligned loads
  typedef uint64_t Words __attribute__((vector_size(32)));
  static constexpr int64_t kPerVector = 32 / sizeof(W);
};

// `live` (per voxel of the pack): 0 where the voxel's whole line has no
// value below `none` (its result is `none`, whatever the taps), else `none`.
// Such voxels start at 0 instead, so that they never keep the taps going
// (a tap gives them >= none), and get `none` at the end.
template <typename W, int Vectors>
kInlined void parabola_pack(const W* src, int64_t step, int64_t before, int64_t after, const W* live,
                          W none, W* out) {
  using Vector = typename Pack<W>::Vector;
  constexpr int64_t per = Pack<W>::kPerVector;
  Vector best[Vectors];
  for (int k = 0; k < Vectors; ++k) {
    const Vector value = *reinterpret_cast<const Vector*>(src + k * per);
    const Vector cap = *reinterpret_cast<const Vector*>(live + k * per);
    best[k] = value < cap ? value : cap;
  }
  const int64_t reach = before > after ? before : after;
  for (int64_t t = 1; t <= reach; t += kPackSteps) {
    const W square = static_cast<W>(t * t);
    Vector above = best[0] > square;
    for (int k = 1; k < Vectors; ++k) above |= best[k] > square;
    const auto words = reinterpret_cast<typename Pack<W>::Words>(above);
    if ((words[0] | words[1] | words[2] | words[3]) == 0) break;
    for (int64_t tap = t; tap < t + kPackSteps && tap <= reach; ++tap) {
      const W tap_square = static_cast<W>(tap * tap);
      for (const int64_t shift : {-tap, tap}) {
        if (shift < -before || shift > after) continue;
        const W* near = src + shift * step;
        for (int k = 0; k < Vectors; ++k) {
          const Vector candidate = *reinterpret_cast<const Vector*>(near + k * per) + tap_square;
          best[k] = candidate < best[k] ? candidate : best[k];
        }
      }
    }
  }
  for (int k = 0; k < Vectors; ++k) {
    const Vector cap = *reinterpret_cast<const Vector*>(live + k * per);
    const Vector result = cap == 0 ? none : best[k];
    *reinterpret_cast<Vector*>(out + k * per) = result;
  }
}

// sedt_parabola on `width` voxels side by side (at src[0 .. width)), into
// out[0 .. width), `live` as for parabola_pack: packs of kPackVectors
// vectors, the last one overlapping the one before; single vectors on runs
// too short for a pack; one voxel at a time on runs shorter than a vector.
template <typename W>
kInlined void parabola_run(const W* src, int64_t step, int64_t before, int64_t after, int64_t width,
                         const W* live, W none, W* out) {
  constexpr int64_t narrow = Pack<W>::kPerVector, wide = kPackVectors * narrow;
  if (width >= wide) {
    for (int64_t c = 0; c < width; c += wide) {
      const int64_t at = std::min(c, width - wide);
      parabola_pack<W, kPackVectors>(src + at, step, before, after, live + at, none, out + at);
    }
  } else if (width >= narrow) {
    for (int64_t c = 0; c < width; c += narrow) {
      const int64_t at = std::min(c, width - narrow);
      parabola_pack<W, 1>(src + at, step, before, after, live + at, none, out + at);
    }
  } else {
    for (int64_t l = 0; l < width; ++l) {
      out[l] = live[l] ? sedt_parabola<SedtOneLane<W>>(src + l, step, before, after) : src[l];
    }
  }
}

// Runs body(begin, end) over [0, count), split over torch's threads if `parallel`.
template <typename Body>
void for_range(bool parallel, int64_t count, int64_t grain, const Body& body) {
  if (parallel) {
    at::parallel_for(0, count, grain, body);
  } else {
    body(0, count);
  }
}

template <typename W>
MORPHAUG_CPU_CLONES void seed_rows(const uint8_t* mask, const Geometry& g, const int64_t* stride,
                                   int64_t begin, int64_t end, W far, W* v, std::atomic<bool>& found) {
  bool any = false;
  for (int64_t row = begin; row < end; ++row) any = sedt_seed_row<W>(mask, g, stride, row, far, v) || any;
  if (any) found.store(true, std::memory_order_relaxed);
}

// The first axis on the voxel columns [begin, end) of a volume with `lanes` voxels per row.
template <typename W>
MORPHAUG_CPU_CLONES void first_axis(W* v, int64_t n, int64_t lanes, int64_t begin, int64_t end,
                                    W far, W none) {
  ball_unit_sweep<W>(v + begin, n, end - begin, lanes, false);
  ball_unit_sweep<W>(v + begin, n, end - begin, lanes, true);
  for (int64_t i = 0; i < n; ++i) sedt_square_steps<W>(v + i * lanes + begin, end - begin, far, none);
}

// A strided axis of length n on the outer blocks [begin, end), each n rows
// of `lanes` voxels. A line without any value below `none` (no boundary
// voxel in the plane it spans with the axes before) stays `none` at once.
template <typename W>
MORPHAUG_CPU_CLONES void strided_axis(const W* in, W* out, int64_t n, int64_t lanes, int64_t begin,
                                      int64_t end, W none) {
  std::vector<W> live(lanes);
  for (int64_t outer = begin; outer < end; ++outer) {
    const W* block = in + outer * n * lanes;
    std::fill(live.begin(), live.end(), W(0));
    for (int64_t i = 0; i < n; ++i) {
      const W* __restrict__ row = block + i * lanes;
      W* __restrict__ mark = live.data();
      for (int64_t l = 0; l < lanes; ++l) mark[l] |= static_cast<W>(row[l] < none ? none : 0);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = (outer * n + i) * lanes;
      parabola_run<W>(in + at, lanes, i, n - 1 - i, lanes, live.data(), none, out + at);
    }
  }
}

// The last (contiguous) axis of length n on lines [begin, end): each line is
// copied between runs of `none` (so that every tap up to n - 1 away exists),
// then written as signed float32. Every voxel is live: the volume has a
// boundary voxel, so every such line has some value below `none`.
template <typename W>
MORPHAUG_CPU_CLONES void last_axis(const W* in, const uint8_t* mask, float* out, int64_t n,
                                   int64_t begin, int64_t end, W none) {
  std::vector<W> padded(3 * n, none), best(n), live(n, none);
  W* line = padded.data() + n;
  for (int64_t index = begin; index < end; ++index) {
    const int64_t o = index * n;
    std::copy(in + o, in + o + n, line);
    parabola_run<W>(line, 1, n - 1, n - 1, n, live.data(), none, best.data());
    const uint8_t* __restrict__ m = mask + o;
    float* __restrict__ result = out + o;
    for (int64_t i = 0; i < n; ++i) result[i] = sedt_signed<W>(best[i], m[i]);
  }
}

// One volume: `a`, `b` scratch for its values.
template <typename W>
void signed_volume(const uint8_t* mask, float* out, const Geometry& g, W* a, W* b, bool parallel) {
  const int rank = g.rank;
  int64_t numel = 1;
  int64_t stride[kMaxRank];
  for (int k = rank - 1; k >= 0; --k) {
    stride[k] = numel;
    numel *= g.size[k];
  }
  const int64_t n0 = g.size[0];
  const W far = static_cast<W>(n0), none = sedt_none<W>(g);
  std::atomic<bool> found{false};
  const int64_t rows = numel / g.size[rank - 1];
  for_range(parallel, rows, std::max<int64_t>(1, 16384 / g.size[rank - 1]), [&](int64_t s, int64_t e) {
    seed_rows<W>(mask, g, stride, s, e, far, a, found);
  });
  if (!found.load()) {  // empty (+D) or full (-D): no boundary
    double diagonal = 0.0;
    for (int k = 0; k < rank; ++k) diagonal += static_cast<double>(g.size[k]) * g.size[k];
    const float value = static_cast<float>(std::sqrt(diagonal));
    std::fill(out, out + numel, mask[0] ? -value : value);
    return;
  }
  const int64_t lanes0 = numel / n0;
  for_range(parallel, lanes0, 1024, [&](int64_t s, int64_t e) { first_axis<W>(a, n0, lanes0, s, e, far, none); });
  if (rank == 1) {
    for (int64_t p = 0; p < numel; ++p) out[p] = sedt_signed<W>(a[p], mask[p]);
    return;
  }
  for (int k = 1; k < rank - 1; ++k) {
    const int64_t n = g.size[k], lanes = stride[k];
    for_range(parallel, numel / (n * lanes), 1, [&](int64_t s, int64_t e) {
      strided_axis<W>(a, b, n, lanes, s, e, none);
    });
    std::swap(a, b);
  }
  const int64_t n = g.size[rank - 1];
  for_range(parallel, rows, std::max<int64_t>(1, 4096 / n), [&](int64_t s, int64_t e) {
    last_axis<W>(a, mask, out, n, s, e, none);
  });
}

template <typename W>
void signed_volumes(const uint8_t* mask, float* out, const Geometry& g, int64_t volumes, int64_t numel) {
  if (volumes >= at::get_num_threads()) {
    at::parallel_for(0, volumes, 1, [&](int64_t begin, int64_t end) {
      std::vector<W> a(numel), b(numel);
      for (int64_t v = begin; v < end; ++v) {
        signed_volume<W>(mask + v * numel, out + v * numel, g, a.data(), b.data(), false);
      }
    });
    return;
  }
  std::vector<W> a(numel), b(numel);
  for (int64_t v = 0; v < volumes; ++v) {
    signed_volume<W>(mask + v * numel, out + v * numel, g, a.data(), b.data(), true);
  }
}

at::Tensor signed_edt_cpu(const at::Tensor& mask) {
  check_mask(mask, "signed_edt");
  Geometry g{};
  g.rank = static_cast<int>(mask.dim() - 2);
  for (int k = 0; k < g.rank; ++k) {
    g.size[k] = mask.size(k + 2);
    g.sampling[k] = 1.0;
  }
  const bool narrow = sedt_fits<uint16_t>(g);
  TORCH_CHECK(narrow || sedt_fits<uint32_t>(g), "morphaug::signed_edt: spatial shape ",
              mask.sizes().slice(2), " is too large for 32-bit squared distances");
  const at::Tensor x = mask.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  const int64_t volumes = x.size(0) * x.size(1);
  if (x.numel() == 0) return out;
  const int64_t numel = x.numel() / volumes;
  const uint8_t* m = reinterpret_cast<const uint8_t*>(x.data_ptr<bool>());
  if (narrow) {
    signed_volumes<uint16_t>(m, out.data_ptr<float>(), g, volumes, numel);
  } else {
    signed_volumes<uint32_t>(m, out.data_ptr<float>(), g, volumes, numel);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(morphaug, CPU, m) { m.impl("signed_edt", &signed_edt_cpu); }

}  // namespace morphaug
