// CPU launcher of morphaug::expand_labels: the EDT's passes (edt.cpp) carrying
// one flat feature index, the last pass writing the labels (core/expand_labels.h).
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

#include "../core/expand_labels.h"
#include "../expand_setup.h"
#include "fresh.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kLanes = 64;  // neighbouring lines of pass 0 done together
constexpr int64_t kCompactLength = 4096;  // longest lines of pass 0 with a compact buffer
constexpr int64_t kBinaryPassWork = 4, kEnvelopeWork = 8;  // as edt.cpp's

// Pass 0 along axis 0; on a rank-1 slice it is also the last and writes `out`.
template <typename T, typename L>
void first_pass(const ExpandSetup& setup, T* f, int32_t* feature, L* out) {
  const Lines lines = lines_along(setup.mask, 0);
  const bool* mask = setup.mask.data_ptr<bool>();
  const L* labels = static_cast<const L*>(setup.labels.data_ptr());
  const double s = setup.edt.geometry.sampling[0];
  const bool last = setup.edt.geometry.rank == 1;
  const int64_t per_outer = (lines.stride + kLanes - 1) / kLanes;
  const int64_t bundles = lines.count / lines.stride * per_outer;
  const int64_t slice = lines.length * lines.stride;
  parallel_over(bundles, lines.length * kLanes * kBinaryPassWork, [&](int64_t begin, int64_t end) {
    int32_t previous[kLanes], next[kLanes];
    // the previous background positions: a compact buffer, or f for very long lines (as edt.cpp)
    const bool compact = lines.length <= kCompactLength;
    std::vector<int32_t> before(compact ? lines.length * kLanes : 0);
    for (int64_t bundle = begin; bundle < end; ++bundle) {
      const int64_t outer = bundle / per_outer;
      const int64_t first = (bundle - outer * per_outer) * kLanes;
      const int64_t lanes = std::min(kLanes, lines.stride - first);
      const int64_t o = outer * slice + first;
      if (compact) {
        edt_binary_lines(mask + o, lines.length, lines.stride, lanes, s, f + o, feature + o,
                         before.data(), kLanes, previous, next, false);
      } else {
        edt_binary_lines(mask + o, lines.length, lines.stride, lanes, s, f + o, feature + o, f + o,
                         lines.stride, previous, next, false);
      }
      if (last) {  // lanes == 1: the line is the slice
        expand_emit_line(lines.length, feature + o, static_cast<const int32_t*>(nullptr), f + o,
                         labels + o, out + o, 1, setup.distance);
      } else {
        expand_first_features(lines.length, lines.stride, lanes, first, f + o, feature + o,
                              setup.cut);
      }
    }
  });
}

// Pass d > 0 in place in f and feature; the last one writes `out` instead of
// the features. I: the integer type of the unit envelope.
template <typename T, typename I, typename L>
void envelope_pass(const ExpandSetup& setup, int d, T* f, int32_t* feature, L* out) {
  const Lines lines = lines_along(setup.mask, d);
  const int64_t n = lines.length, stride = lines.stride;
  const int64_t slice = setup.mask.numel() / (setup.mask.size(0) * setup.mask.size(1));
  const L* labels = static_cast<const L*>(setup.labels.data_ptr());
  const bool unit = setup.edt.unit, last = d == setup.edt.geometry.rank - 1;
  const double s = setup.edt.geometry.sampling[d];
  parallel_over(lines.count, n * kEnvelopeWork, [&](int64_t begin, int64_t end) {
    // the envelope reads the line in place and writes its values and choices here, contiguous
    std::vector<T> values(n);
    std::vector<int32_t> chosen(n), hull_pos(unit ? 0 : n);
    std::vector<EdtParabola<I>> parabolas(unit ? n : 0);
    std::vector<double> hull_real(unit ? 0 : n);
    for (int64_t index = begin; index < end; ++index) {
      const int64_t o = lines.offset(index);
      // A line without a feature keeps its +inf and -1 (lines beyond every label, after the cut).
      bool any = false;
      for (int64_t i = 0; i < n; ++i) any |= f[o + i * stride] != static_cast<T>(INFINITY);
      if (!any) {
        if (last) std::fill(out + o, out + o + n, L(0));
        continue;
      }
      if (unit) {
        edt_envelope_line_unit(f + o, stride, n, values.data(), 1, chosen.data(), parabolas.data(),
                               1, false);
      } else {
        edt_envelope_line(f + o, stride, n, s, values.data(), 1, chosen.data(), hull_pos.data(),
                          hull_real.data(), 1, false);
      }
      if (last) {  // contiguous lines
        const int64_t base = o / slice * slice;
        expand_emit_line(n, chosen.data(), feature + o, values.data(), labels + base, out + o, 1,
                         setup.distance);
      } else {
        for (int64_t i = 0; i < n; ++i) f[o + i * stride] = values[i];
        expand_carry_line(n, chosen.data(), 1, f + o, feature + o, stride, setup.cut);
      }
    }
  });
}

template <typename T, typename L>
void expand_passes(const ExpandSetup& setup) {
  T* f = setup.edt.distances.data_ptr<T>();
  int32_t* feature = setup.features.data_ptr<int32_t>();
  L* out = static_cast<L*>(setup.out.data_ptr());
  first_pass<T, L>(setup, f, feature, out);
  for (int d = 1; d < setup.edt.geometry.rank; ++d) {
    if (setup.edt.unit && edt_unit_int32(setup.edt.geometry, d)) {
      envelope_pass<T, int32_t, L>(setup, d, f, feature, out);
    } else {
      envelope_pass<T, int64_t, L>(setup, d, f, feature, out);
    }
  }
}

}  // namespace

at::Tensor expand_labels_cpu(const at::Tensor& labels, std::optional<at::ArrayRef<double>> sampling,
                             double distance) {
  const ExpandSetup setup = expand_setup(labels, sampling, distance);
  if (labels.numel() == 0) return setup.out;
  for (const at::Tensor* fresh : {&setup.edt.distances, &setup.features, &setup.out}) {
    fault_in_huge_pages(*fresh);
  }
  dispatch_expand(setup, [&](auto real, auto label) {
    expand_passes<decltype(real), decltype(label)>(setup);
  });
  return setup.out;
}

}  // namespace morphaug
