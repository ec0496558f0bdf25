// The segmented reductions of the measurements (morphaug/ndimage/_regions.py),
// shared by the CPU launcher (cpu/region_stats.cpp) and the CUDA launcher
// (cuda/region_stats.cu): each voxel's table column (slot), its value read as
// a float64, as a wrapping int64 and as int64 keys ordered as the values are,
// and the tables a call asks for (`what`, the kRegion* flags).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <cstring>

#include "common.h"

namespace morphaug {

// The tables of region_stats, in the order of its results (each (rows, slots),
// the moments and bounds (rows, slots, S)); `what` ORs the requested flags.
enum RegionTable : int64_t {
  kRegionCount = 1,     // int64 voxels
  kRegionSum = 2,       // float64 sum of the values
  kRegionWhole = 4,     // int64 sum of integer values, wrapping as NumPy's
  kRegionLow = 8,       // int64 key of the minimum
  kRegionHigh = 16,     // int64 key of the maximum
  kRegionLowAt = 32,    // int64 first raster index of the minimum (with kRegionLow)
  kRegionHighAt = 64,   // int64 first raster index of the maximum (with kRegionHigh)
  kRegionMoments = 128, // float64 sums of value * coordinate, per axis
  kRegionBounds = 256,  // int64 least and greatest coordinate, per axis (two tables)
  kRegionSquares = 512, // float64 sum of (value - the region's mean)^2 (with count and sum)
};

constexpr int64_t kKeyMax = INT64_MAX;
constexpr int64_t kKeyMin = INT64_MIN;

// The dtypes, by code (morphaug/ndimage/_regions.py, _CODES).
enum RegionDtype : int {
  kDBool, kDU8, kDI8, kDI16, kDI32, kDI64, kDU16, kDU32, kDU64, kDF16, kDBF16, kDF32, kDF64
};

// The key of a double ordered as the doubles (0.0 and -0.0 one key), NaN the
// key `nan` (the least key for a minimum, the greatest for a maximum: NaN wins).
MORPHAUG_HD int64_t double_key(double d, int64_t nan) {
  if (d != d) return nan;
  if (d == 0) d = 0;  // -0.0 as 0.0
  int64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return bits >= 0 ? bits : bits ^ kKeyMax;
}

// One voxel's value: as a float64, a wrapping int64 (integers) and its keys.
struct Sample {
  double real;
  int64_t whole;
  int64_t low, high;  // the keys for the minimum and the maximum (differ for NaN only)
};

MORPHAUG_HD Sample real_sample(double d) { return {d, 0, double_key(d, kKeyMin), double_key(d, kKeyMax)}; }

// Integers: the keys of _comparable (uint16 / uint32 / uint64 shifted to signed).
MORPHAUG_HD Sample int_sample(int64_t whole, int64_t key, double real) { return {real, whole, key, key}; }

template <typename T>
MORPHAUG_HD Sample small_int(const void* data, int64_t i, int64_t shift = 0) {
  const int64_t v = static_cast<const T*>(data)[i];
  return int_sample(v, v - shift, static_cast<double>(v));
}

MORPHAUG_HD Sample read_sample(const void* data, int code, int64_t i) {
  switch (code) {
    case kDBool: return small_int<bool>(data, i);
    case kDU8: return small_int<uint8_t>(data, i);
    case kDI8: return small_int<int8_t>(data, i);
    case kDI16: return small_int<int16_t>(data, i);
    case kDI32: return small_int<int32_t>(data, i);
    case kDI64: return small_int<int64_t>(data, i);
    case kDU16: return small_int<uint16_t>(data, i, int64_t{1} << 15);
    case kDU32: return small_int<uint32_t>(data, i, int64_t{1} << 31);
    case kDU64: {
      const uint64_t v = static_cast<const uint64_t*>(data)[i];
      return int_sample(static_cast<int64_t>(v), static_cast<int64_t>(v ^ (uint64_t{1} << 63)),
                        static_cast<double>(v));
    }
    case kDF16: return real_sample(static_cast<float>(static_cast<const c10::Half*>(data)[i]));
    case kDBF16: return real_sample(static_cast<float>(static_cast<const c10::BFloat16*>(data)[i]));
    case kDF32: return real_sample(static_cast<const float*>(data)[i]);
    default: return real_sample(static_cast<const double*>(data)[i]);
  }
}

// A label's key: _comparable's (integer labels, bool as 0 / 1).
MORPHAUG_HD int64_t read_label(const void* data, int code, int64_t i) { return read_sample(data, code, i).low; }

// Which column of its slice's row a voxel's label key goes to (_regions.py, Rule):
// mode 0 the whole slice (column 0); mode 1 the key clamped to [low, high], less
// `first`; mode 2 the first entry of the sorted `table` of `size` keys equal to
// the key, else column `size`.
struct SlotRule {
  const int64_t* table;
  int64_t size, low, high, first;
  int mode;
};

MORPHAUG_HD int64_t slot_of(const SlotRule& r, int64_t key) {
  if (r.mode == 1) return (key < r.low ? r.low : key > r.high ? r.high : key) - r.first;
  if (r.mode == 0) return 0;
  int64_t lo = 0, hi = r.size;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (r.table[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo < r.size && r.table[lo] == key ? lo : r.size;
}

// A voxel's bin of region_histogram: np.histogram's over `bins` + 1
// non-decreasing edges (the last bin closed), -1 outside them or NaN. `scale`
// (bins / the edges' width, 0 for no width) guesses the bin; comparisons with
// the edges then settle it, so the result is the last edge <= v.
MORPHAUG_HD int64_t histogram_bin(double v, const double* edges, int64_t bins, double scale) {
  if (!(v >= edges[0] && v <= edges[bins])) return -1;
  if (v == edges[bins]) return bins - 1;
  const double guess = (v - edges[0]) * scale;
  int64_t b = guess < static_cast<double>(bins) ? static_cast<int64_t>(guess) : bins - 1;  // NaN: bins - 1
  while (b > 0 && v < edges[b]) --b;
  while (b + 1 < bins && v >= edges[b + 1]) ++b;
  return b;
}

// The tables of region_stats (null where not asked for), row-major (rows,
// slots[, S]); `means` (squares only) the regions' means, same layout as `sum`.
struct RegionTables {
  int64_t* count;
  double* sum;
  int64_t* whole;
  int64_t* low;
  int64_t* high;
  int64_t* low_at;
  int64_t* high_at;
  double* moments;
  int64_t* lower;
  int64_t* upper;
  double* squares;
};

}  // namespace morphaug
