// CPU launcher of morphaug::signed_edt (core/signed_edt.h): one volume per
// task when there are enough of them, else the rows of each pass in
// parallel; uint16 values where they fit (16 lanes to an AVX2 register).
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "../core/edt.h"
#include "../core/signed_edt.h"
#include "../launch.h"
#include "launchers.h"
#include "clones.h"
#include "fresh.h"
#include "parabola_taps.h"
#include "parallel.h"

namespace morphaug {
namespace {

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

}  // namespace

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

}  // namespace morphaug
