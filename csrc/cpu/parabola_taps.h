// The taps of core/signed_edt.h's sedt_parabola (min over t of f[i + t] + t^2,
// |t| = 1, 2, ... while some voxel is above t^2) on packs of neighbouring
// voxels, vectorised: shared by the CPU's signed EDT (signed_edt.cpp) and
// the EDT's passes d > 0 with unit sampling (edt.cpp), where every value is
// an exact integer, so that the taps give the envelope's values.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../core/signed_edt.h"
#include "../launch.h"
#include "clones.h"

namespace morphaug {

// sedt_parabola on Vectors x 32 bytes of neighbouring voxels at once (GCC
// vector extensions: AVX2 registers, or pairs of SSE2 ones): the same taps,
// with one stopping test for the whole pack every kPackSteps taps (a few
// taps more, far fewer tests). A few of each ran best; packs of one
// vector, or a test after every tap, markedly slower.
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
    auto above = best[0] > square;  // integer masks, whatever W
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

}  // namespace morphaug
