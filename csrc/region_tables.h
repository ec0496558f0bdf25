// The checks and result tables of morphaug::region_stats, shared by its CPU
// and CUDA launchers (core/region_stats.h has the per-voxel rules).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <cmath>

#include <vector>

#include "core/region_stats.h"
#include "launch.h"

namespace morphaug {

inline int region_code(at::ScalarType t) {
  switch (t) {
    case at::kBool: return kDBool;
    case at::kByte: return kDU8;
    case at::kChar: return kDI8;
    case at::kShort: return kDI16;
    case at::kInt: return kDI32;
    case at::kLong: return kDI64;
    case at::kUInt16: return kDU16;
    case at::kUInt32: return kDU32;
    case at::kUInt64: return kDU64;
    case at::kHalf: return kDF16;
    case at::kBFloat16: return kDBF16;
    case at::kFloat: return kDF32;
    case at::kDouble: return kDF64;
    default: TORCH_CHECK(false, "morphaug::region_stats: unsupported dtype ", t);
  }
}

// What a call measures, checked: the input, its labels and slot rule.
struct RegionCall {
  at::Tensor input, labels, table;  // contiguous; labels / table undefined where not given
  SlotRule rule;
  int64_t slices, numel, slots, what, rank;
  int64_t label_b, label_c;  // label strides of the batch and channel axes, in slices (0: shared)
  int code, label_code;
};

inline RegionCall region_call(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                              const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                              int64_t what) {
  check_batched(input, "region_stats");
  TORCH_CHECK(rule.size() == 4 && rule[0] >= 0 && rule[0] <= 2, "morphaug::region_stats: bad rule ", rule);
  TORCH_CHECK(slots >= 1 && (what & kRegionCount) && what < 2 * kRegionSquares &&
                  (!(what & kRegionLowAt) || (what & kRegionLow)) &&
                  (!(what & kRegionHighAt) || (what & kRegionHigh)) &&
                  (!(what & kRegionSquares) || (what & kRegionSum)),
              "morphaug::region_stats: bad slots ", slots, " or tables ", what);
  RegionCall c;
  c.input = input.contiguous();
  c.code = region_code(input.scalar_type());
  c.slices = input.size(0) * input.size(1);
  c.numel = c.slices ? input.numel() / c.slices : 0;
  c.rank = input.dim() - 2;
  c.slots = slots;
  c.what = what;
  c.rule = SlotRule{nullptr, 0, rule[1], rule[2], rule[3], static_cast<int>(rule[0])};
  c.label_b = c.label_c = 0;
  c.label_code = kDI64;
  if (rule[0] != 0) {
    TORCH_CHECK(labels.has_value(), "morphaug::region_stats: the rule needs labels");
    const at::Tensor& l = *labels;
    TORCH_CHECK(l.dim() == input.dim() && l.device() == input.device() &&
                    (l.size(0) == 1 || l.size(0) == input.size(0)) &&
                    (l.size(1) == 1 || l.size(1) == input.size(1)) && l.sizes().slice(2) == input.sizes().slice(2),
                "morphaug::region_stats: labels of shape ", l.sizes(), " for input ", input.sizes());
    c.labels = l.contiguous();
    c.label_code = region_code(l.scalar_type());
    TORCH_CHECK(c.label_code <= kDU64, "morphaug::region_stats: integer or bool labels, got ", l.scalar_type());
    c.label_c = l.size(1) == 1 ? 0 : 1;
    c.label_b = l.size(0) == 1 ? 0 : l.size(1);
  }
  if (rule[0] == 2) {
    TORCH_CHECK(table.has_value() && table->scalar_type() == at::kLong && table->dim() == 1 &&
                    table->device() == input.device() && slots >= table->numel() + 1,
                "morphaug::region_stats: the rule needs a sorted int64 table of fewer than slots keys");
    c.table = table->contiguous();
    c.rule.table = c.table.data_ptr<int64_t>();
    c.rule.size = c.table.numel();
  }
  return c;
}

// region_histogram's call: region_stats' regions (its count table), the edges
// checked (at least 2, finite, non-decreasing), their bin guess, and the
// (slices, slots, bins) int64 counts, zeros.
struct HistogramCall {
  RegionCall regions;
  std::vector<double> edges;
  int64_t bins;
  double scale;
  at::Tensor counts;
};

inline HistogramCall histogram_call(const at::Tensor& input, const std::optional<at::Tensor>& labels,
                                    const std::optional<at::Tensor>& table, at::IntArrayRef rule, int64_t slots,
                                    at::ArrayRef<double> edges) {
  HistogramCall h{region_call(input, labels, table, rule, slots, kRegionCount), edges.vec(), 0, 0.0, at::Tensor()};
  TORCH_CHECK(edges.size() >= 2, "morphaug::region_histogram: edges must hold at least 2 values, got ", edges.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    TORCH_CHECK(std::isfinite(edges[e]) && (e == 0 || edges[e - 1] <= edges[e]),
                "morphaug::region_histogram: edges must be finite and non-decreasing, got ", edges[e], " at ", e);
  }
  h.bins = static_cast<int64_t>(edges.size()) - 1;
  const double width = edges.back() - edges.front();
  h.scale = width > 0 ? static_cast<double>(h.bins) / width : 0.0;
  h.counts = at::zeros({h.regions.slices, slots, h.bins}, input.options().dtype(at::kLong));
  return h;
}

// The label slice of input slice s.
inline int64_t label_slice(const RegionCall& c, int64_t s, int64_t channels) {
  return s / channels * c.label_b + s % channels * c.label_c;
}

// The requested tables of `rows` rows, initialised, in region_stats's result order.
inline std::vector<at::Tensor> region_tables(const RegionCall& c, int64_t rows) {
  const auto options = c.input.options();
  const auto i64 = options.dtype(at::kLong), f64 = options.dtype(at::kDouble);
  std::vector<at::Tensor> out;
  const std::vector<int64_t> flat{rows, c.slots}, axes{rows, c.slots, c.rank};
  out.push_back(at::full(flat, 0, i64));
  if (c.what & kRegionSum) out.push_back(at::full(flat, 0.0, f64));
  if (c.what & kRegionWhole) out.push_back(at::full(flat, 0, i64));
  if (c.what & kRegionLow) out.push_back(at::full(flat, kKeyMax, i64));
  if (c.what & kRegionHigh) out.push_back(at::full(flat, kKeyMin, i64));
  if (c.what & kRegionLowAt) out.push_back(at::full(flat, kKeyMax, i64));
  if (c.what & kRegionHighAt) out.push_back(at::full(flat, kKeyMax, i64));
  if (c.what & kRegionMoments) out.push_back(at::full(axes, 0.0, f64));
  if (c.what & kRegionBounds) {
    out.push_back(at::full(axes, kKeyMax, i64));
    out.push_back(at::full(axes, kKeyMin, i64));
  }
  if (c.what & kRegionSquares) out.push_back(at::full(flat, 0.0, f64));
  return out;
}

// Pointers to the tables of region_tables (null where not requested).
inline RegionTables table_pointers(const RegionCall& c, std::vector<at::Tensor>& out) {
  RegionTables t{};
  size_t k = 0;
  t.count = out[k++].data_ptr<int64_t>();
  if (c.what & kRegionSum) t.sum = out[k++].data_ptr<double>();
  if (c.what & kRegionWhole) t.whole = out[k++].data_ptr<int64_t>();
  if (c.what & kRegionLow) t.low = out[k++].data_ptr<int64_t>();
  if (c.what & kRegionHigh) t.high = out[k++].data_ptr<int64_t>();
  if (c.what & kRegionLowAt) t.low_at = out[k++].data_ptr<int64_t>();
  if (c.what & kRegionHighAt) t.high_at = out[k++].data_ptr<int64_t>();
  if (c.what & kRegionMoments) t.moments = out[k++].data_ptr<double>();
  if (c.what & kRegionBounds) {
    t.lower = out[k++].data_ptr<int64_t>();
    t.upper = out[k++].data_ptr<int64_t>();
  }
  if (c.what & kRegionSquares) t.squares = out[k++].data_ptr<double>();
  return t;
}

}  // namespace morphaug
