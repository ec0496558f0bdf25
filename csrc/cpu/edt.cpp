// CPU launcher of morphaug::edt: one pass per spatial axis, in place, lines in parallel.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "../core/edt.h"
#include "../launch.h"
#include "launchers.h"
#include "clones.h"
#include "fresh.h"
#include "parabola_taps.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kLanes = 64;  // neighbouring lines of pass 0 done together
constexpr int64_t kCompactLength = 4096;  // longest lines of pass 0 with a compact buffer
// Voxel-operations (parallel.h) a voxel counts in pass 0 and in an envelope
// pass, which cost about 4 and 10 ns on one thread, against ~1 ns for the
// operations of the other kernels. Counted as one, a 64^3 volume stayed on
// one thread.
constexpr int64_t kBinaryPassWork = 4, kEnvelopeWork = 8;

template <typename T>
void binary_pass(const bool* mask, const Lines& lines, double s, T* out, int32_t* idx,
                 const EdtSetup& setup, bool root) {
  // bundles of up to kLanes lines that are neighbours in memory
  const int64_t per_outer = (lines.stride + kLanes - 1) / kLanes;
  const int64_t bundles = lines.count / lines.stride * per_outer;
  // The previous background positions go to a compact buffer (kept in cache,
  // unlike rows of `out` one stride apart) unless the lines are very long.
  const bool compact = lines.length <= kCompactLength;
  parallel_over(bundles, lines.length * kLanes * kBinaryPassWork, [&](int64_t begin, int64_t end) {
    int32_t previous[kLanes], next[kLanes];
    std::vector<int32_t> before(compact ? lines.length * kLanes : 0);
    for (int64_t bundle = begin; bundle < end; ++bundle) {
      const int64_t outer = bundle / per_outer;
      const int64_t first = (bundle - outer * per_outer) * kLanes;
      const int64_t lanes = std::min(kLanes, lines.stride - first);
      const int64_t o = outer * lines.length * lines.stride + first;
      int32_t* arg = idx ? idx + o : nullptr;
      const bool found =
          compact ? edt_binary_lines(mask + o, lines.length, lines.stride, lanes, s, out + o, arg,
                                     before.data(), kLanes, previous, next, root)
                  : edt_binary_lines(mask + o, lines.length, lines.stride, lanes, s, out + o, arg,
                                     out + o, lines.stride, previous, next, root);
      if (setup.geometry.rank == 1 && !found) {
        edt_no_background_line(setup.geometry, o, out + o, idx ? idx + o : nullptr,
                               lines.count * lines.length, root);
      }
    }
  });
}

// Pass d > 0 on one line with unit sampling and no indices by the taps of
// parabola_taps.h: branch-free and vectorised along the line, they beat the
// envelope's hull (about 10 ns a voxel, mostly mispredicted branches) where
// distances are short, and give the same values (exact integer sums, rounded
// once to T: min and rounding commute). `line` holds the line's n values
// after n of +inf, followed by n more; `live` n values of +inf (every voxel
// live). Writes the line's results to `best` and returns true, or false
// when a chunk gave up (tap_cap) or the line has no finite value: the caller
// then takes the envelope.
constexpr int64_t kTapsBackoff = 63;

template <typename T>
MORPHAUG_CPU_CLONES bool tapped_line(const T* line, int64_t n, const T* live, T* best) {
  bool finished = true;
  const auto chunk = [&](int64_t at, int64_t width) MORPHAUG_CLONE_INLINE {
    if (!finished) return;
    finished = parabola_chunk<T>(width, line + at, 1, n - 1, n - 1, tap_cap(n), live + at,
                                 static_cast<T>(INFINITY), best + at);
  };
  for_chunks(n, Pack<T>::kWide, Pack<T>::kNarrow, chunk);
  // A line without any finite value "finishes" where the taps reach across it
  // (n <= 2 kTapCap): the envelope takes it, to say so to the last pass.
  return finished && best[0] < static_cast<T>(INFINITY);
}

// Pass d > 0 in place. With unit sampling and no indices each line is
// copied and taken by the taps (tapped_line), or by the envelope from the
// copy; with unit sampling and indices the envelope reads the line where it
// is (I: the integer type of its arithmetic); otherwise the line is first
// copied to a contiguous buffer. With indices, the feature coordinates < d
// of the line are copied too.
template <typename T, typename I>
void envelope_pass(int d, const Lines& lines, const EdtSetup& setup, T* f, int32_t* idx,
                   bool root) {
  const int64_t n = lines.length, stride = lines.stride;
  const int64_t plane = lines.count * n;
  const double s = setup.geometry.sampling[d];
  const bool last = d == setup.geometry.rank - 1;
  parallel_over(lines.count, n * kEnvelopeWork, [&](int64_t begin, int64_t end) {
    std::vector<T> line(setup.unit ? 0 : n);
    std::vector<int32_t> line_idx(idx ? d * n : 0), hull_pos(setup.unit ? 0 : n);
    std::vector<EdtParabola<I>> parabolas(setup.unit ? n : 0);
    std::vector<double> hull_real(setup.unit ? 0 : n);
    const bool taps = setup.unit && !idx;
    std::vector<T> padded(taps ? 3 * n : 0, static_cast<T>(INFINITY)), live(taps ? n : 0,
                          static_cast<T>(INFINITY)), best(taps ? n : 0);
    // After a line the taps could not finish, the next 1, 3, 7, ... up to
    // kTapsBackoff lines go straight to the envelope: neighbouring lines tend
    // to need the same, and taps that give up are work lost.
    int64_t backoff = 0, wait = 0;
    for (int64_t index = begin; index < end; ++index) {
      const int64_t o = lines.offset(index);
      int32_t* arg = idx ? idx + d * plane + o : nullptr;
      // The envelope's input: the line in place, or its copy in `padded`.
      const T* source = f + o;
      int64_t source_stride = stride;
      bool found = false;
      if (taps && wait > 0) {
        --wait;
      } else if (taps) {
        T* copy = padded.data() + n;
        for (int64_t i = 0; i < n; ++i) copy[i] = f[o + i * stride];
        source = copy;
        source_stride = 1;
        found = tapped_line(copy, n, live.data(), best.data());
        backoff = found ? 0 : std::min(2 * backoff + 1, kTapsBackoff);
        wait = backoff;
        if (found) {
          for (int64_t i = 0; i < n; ++i) f[o + i * stride] = root ? square_root(best[i]) : best[i];
        }
      }
      if (!found && setup.unit) {
        // its one call site: a second one would take its hull loops out of line
        found = edt_envelope_line_unit(source, source_stride, n, f + o, stride, arg,
                                       parabolas.data(), 1, root);
      } else if (!found) {
        for (int64_t i = 0; i < n; ++i) line[i] = f[o + i * stride];
        found = edt_envelope_line(line.data(), 1, n, s, f + o, stride, arg, hull_pos.data(),
                                  hull_real.data(), 1, root);
      }
      if (idx) {
        for (int k = 0; k < d; ++k)
          for (int64_t i = 0; i < n; ++i) line_idx[k * n + i] = idx[k * plane + o + i * stride];
        edt_gather_indices(line_idx.data(), n, 1, idx + o, plane, stride, d, n);
      }
      if (last && !found) {
        edt_no_background_line(setup.geometry, o, f + o, idx ? idx + o : nullptr, plane, root);
      }
    }
  });
}

template <typename T>
void edt_passes(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const int rank = setup.geometry.rank;
  T* f = setup.distances.data_ptr<T>();
  int32_t* idx = setup.indices.numel() > 0 ? setup.indices.data_ptr<int32_t>() : nullptr;
  for (int d = 0; d < rank; ++d) {
    const Lines lines = lines_along(mask, d);
    const bool root = d == rank - 1 && !squared;
    if (d == 0) {
      binary_pass(mask.data_ptr<bool>(), lines, setup.geometry.sampling[0], f, idx, setup, root);
      continue;
    }
    if (setup.unit && edt_unit_int32(setup.geometry, d)) {
      envelope_pass<T, int32_t>(d, lines, setup, f, idx, root);
    } else {
      envelope_pass<T, int64_t>(d, lines, setup, f, idx, root);
    }
  }
}

void run_edt(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const at::Tensor contiguous = mask.contiguous();
  AT_DISPATCH_FLOATING_TYPES(setup.distances.scalar_type(), "morphaug::edt (CPU)",
                             [&] { edt_passes<scalar_t>(contiguous, setup, squared); });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> edt_cpu(const at::Tensor& mask,
                                           std::optional<at::ArrayRef<double>> sampling,
                                           bool return_indices, at::ScalarType dtype, bool squared) {
  const EdtSetup setup = edt_setup(mask, sampling, return_indices, dtype);
  if (mask.numel() == 0) return {setup.distances, setup.indices};
  fault_in_huge_pages(setup.distances);
  fault_in_huge_pages(setup.indices);
  run_edt(mask, setup, squared);
  return {setup.distances, setup.indices};
}

void edt_out_cpu(const at::Tensor& mask, std::optional<at::ArrayRef<double>> sampling, bool squared,
                 at::Tensor& out) {
  const EdtSetup setup = edt_setup(mask, sampling, false, out.scalar_type(), &out);
  if (mask.numel() > 0) run_edt(mask, setup, squared);
}

}  // namespace morphaug
