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

#include "../core/edt.h"
#include "../core/signed_edt.h"
#include "../launch.h"
#include "fresh.h"
#include "parallel.h"

namespace morphaug {
namespace {

// sedt_parabola on Vectors x 32 bytes of neighbouring voxels at once (GCC
// vector extensions: AVX2 registers, or pairs of SSE2 ones): the same taps,
// with one stopping test for the whole pack every kPackSteps taps (a few
// taps more, far fewer tests). On 96^3 labels, 2 to 4 vectors and 3 to 6
// taps measure within 10%, one vector or one tap 1.5x to 2x slower.
constexpr int kPackVectors = 3;
constexpr int kPackSteps = 4;

// Taps before a chunk gives up and its lines take the lower envelope of
// parabolas (core/edt.h) instead, whose cost does not grow with the
// distances, on axes longer than 2 kTapCap (shorter ones always finish).
// A tap costs about 1/70 of the envelope per voxel here, so a voxel costs
// at most about twice the envelope's (EDT) cost either way.
constexpr int64_t kTapCap = 64;

// The taps a chunk on an axis of length n may take.
inline int64_t tap_cap(int64_t n) { return n <= 2 * kTapCap ? n : kTapCap; }

template <typename W>
struct Pack {
  typedef W Vector __attribute__((vector_size(32), aligned(1)));  // unaligned loads
  typedef uint64_t Words __attribute__((vector_size(32)));
  static constexpr int64_t kNarrow = 32 / sizeof(W);        // voxels of a vector
  static constexpr int64_t kWide = kPackVectors * kNarrow;  // voxels of a pack
};

// `live` (per voxel of the pack): 0 where the voxel's whole line has no
// value below `none` (its result is `none`, whatever the taps), else `none`.
// Such voxels start at 0 instead, so that they never keep the taps going
// (a tap gives them >= none), and get `none` at the end. Returns whether
// the pack finished within `cap` taps.
template <typename W, int Vectors>
inline MORPHAUG_CLONE_INLINE bool parabola_pack(const W* src, int64_t step, int64_t before,
                                                 int64_t after, int64_t cap, const W* live, W none,
                                                 W* out) {
  using Vector = typename Pack<W>::Vector;
  constexpr int64_t per = Pack<W>::kNarrow;
  Vector best[Vectors];
  for (int k = 0; k < Vectors; ++k) {
    const Vector value = *reinterpret_cast<const Vector*>(src + k * per);
    const Vector cap = *reinterpret_cast<const Vector*>(live + k * per);
    best[k] = value < cap ? value : cap;
  }
  const int64_t reach = before > after ? before : after;
  bool finished = true;
  for (int64_t t = 1; t <= reach; t += kPackSteps) {
    const W square = static_cast<W>(t * t);
    Vector above = best[0] > square;
    for (int k = 1; k < Vectors; ++k) above |= best[k] > square;
    const auto words = reinterpret_cast<typename Pack<W>::Words>(above);
    if ((words[0] | words[1] | words[2] | words[3]) == 0) break;
    if (t > cap) {
      finished = false;
      break;
    }
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
  return finished;
}

// sedt_parabola on a chunk of `width` neighbouring voxels (a pack, a vector
// or one voxel; see for_chunks), `live` as for parabola_pack. Returns whether
// it finished within `cap` taps.
template <typename W>
inline MORPHAUG_CLONE_INLINE bool parabola_chunk(int64_t width, const W* src, int64_t step,
                                                  int64_t before, int64_t after, int64_t cap,
                                                  const W* live, W none, W* out) {
  if (width == Pack<W>::kWide) {
    return parabola_pack<W, kPackVectors>(src, step, before, after, cap, live, none, out);
  }
  if (width == Pack<W>::kNarrow) {
    return parabola_pack<W, 1>(src, step, before, after, cap, live, none, out);
  }
  bool finished = true;
  *out = *live ? sedt_parabola<SedtOneLane<W>>(src, step, before, after, cap, &finished) : none;
  return finished;
}

// Cuts a row of `width` voxels into chunks(first, chunk width): packs, the
// last one overlapping the one before; vectors on rows too short for a pack;
// single voxels on rows shorter than a vector.
template <typename Chunk>
inline MORPHAUG_CLONE_INLINE void for_chunks(int64_t width, int64_t wide, int64_t narrow,
                                             const Chunk& chunk) {
  const int64_t size = width >= wide ? wide : width >= narrow ? narrow : 1;
  for (int64_t c = 0; c < width; c += size) chunk(std::min(c, width - size), size);
}

// The exact lower envelope of one line of n values `stride` apart, in
// double (integers, exact) by core/edt.h, for chunks that gave up.
template <typename W>
struct EnvelopeLine {
  std::vector<double> line;
  std::vector<EdtParabola<int64_t>> hull;

  explicit EnvelopeLine(int64_t n) : line(n), hull(n) {}

  void operator()(const W* in, W* out, int64_t n, int64_t stride, W none) {
    for (int64_t i = 0; i < n; ++i) {
      const W v = in[i * stride];
      line[i] = v < none ? static_cast<double>(v) : static_cast<double>(INFINITY);
    }
    edt_envelope_line_unit<int64_t, double>(line.data(), 1, n, line.data(), 1, nullptr, hull.data(),
                                            1, false);
    for (int64_t i = 0; i < n; ++i) {
      out[i * stride] = line[i] < static_cast<double>(none) ? static_cast<W>(line[i]) : none;
    }
  }
};

// Runs body(begin, end) over [0, count), items of `item_work` voxel-operations each, split
// over torch's threads if `parallel` (parallel.h).
template <typename Body>
void for_range(bool parallel, int64_t count, int64_t item_work, const Body& body) {
  if (parallel) {
    parallel_over(count, item_work, body);
  } else {
    body(0, count);
  }
}

template <typename W>
MORPHAUG_CPU_CLONES void seed_rows(const uint8_t* mask, const Geometry& g, const int64_t* stride,
                                   int64_t begin, int64_t end, W far, W* v, std::atomic<bool>& found) {
  bool any = false;
  for (int64_t row = begin; row < end; ++row) {
    any = sedt_seed_row<W>(mask, g, stride, row, far, v) || any;
  }
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
// of `lanes` voxels, a chunk of lanes at a time down the block. A line
// without any value below `none` (no boundary voxel in the plane it spans
// with the axes before) stays `none` at once.
template <typename W>
MORPHAUG_CPU_CLONES void strided_axis(const W* in, W* out, int64_t n, int64_t lanes, int64_t begin,
                                      int64_t end, W none) {
  std::vector<W> live(lanes);
  EnvelopeLine<W> envelope(n);
  for (int64_t outer = begin; outer < end; ++outer) {
    const int64_t base = outer * n * lanes;
    std::fill(live.begin(), live.end(), W(0));
    for (int64_t i = 0; i < n; ++i) {
      const W* __restrict__ row = in + base + i * lanes;
      W* __restrict__ mark = live.data();
      for (int64_t l = 0; l < lanes; ++l) mark[l] |= static_cast<W>(row[l] < none ? none : 0);
    }
    const auto column = [&](int64_t at, int64_t width) MORPHAUG_CLONE_INLINE {
      bool finished = true;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t o = base + i * lanes + at;
        finished &= parabola_chunk<W>(width, in + o, lanes, i, n - 1 - i, tap_cap(n), live.data() + at,
                                      none, out + o);
      }
      if (finished) return;
      for (int64_t l = at; l < at + width; ++l) envelope(in + base + l, out + base + l, n, lanes, none);
    };
    for_chunks(lanes, Pack<W>::kWide, Pack<W>::kNarrow, column);
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
  EnvelopeLine<W> envelope(n);
  W* line = padded.data() + n;
  for (int64_t index = begin; index < end; ++index) {
    const int64_t o = index * n;
    std::copy(in + o, in + o + n, line);
    bool finished = true;
    const auto chunk = [&](int64_t at, int64_t width) MORPHAUG_CLONE_INLINE {
      finished &= parabola_chunk<W>(width, line + at, 1, n - 1, n - 1, tap_cap(n), live.data() + at,
                                    none, best.data() + at);
    };
    for_chunks(n, Pack<W>::kWide, Pack<W>::kNarrow, chunk);
    if (!finished) envelope(in + o, best.data(), n, 1, none);
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
  for_range(parallel, rows, g.size[rank - 1], [&](int64_t s, int64_t e) {
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
  for_range(parallel, lanes0, n0, [&](int64_t s, int64_t e) {
    first_axis<W>(a, n0, lanes0, s, e, far, none);
  });
  if (rank == 1) {
    for (int64_t p = 0; p < numel; ++p) out[p] = sedt_signed<W>(a[p], mask[p]);
    return;
  }
  for (int k = 1; k < rank - 1; ++k) {
    const int64_t n = g.size[k], lanes = stride[k];
    for_range(parallel, numel / (n * lanes), n * lanes, [&](int64_t s, int64_t e) {
      strided_axis<W>(a, b, n, lanes, s, e, none);
    });
    std::swap(a, b);
  }
  const int64_t n = g.size[rank - 1];
  for_range(parallel, rows, n, [&](int64_t s, int64_t e) {
    last_axis<W>(a, mask, out, n, s, e, none);
  });
}

template <typename W>
void signed_volumes(const uint8_t* mask, float* out, const Geometry& g, int64_t volumes, int64_t numel) {
  if (volumes >= at::get_num_threads()) {
    parallel_over(volumes, numel, [&](int64_t begin, int64_t end) {
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
  at::Tensor out = fresh_empty(x.sizes(), x.options().dtype(at::kFloat));
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
