// The 2-D table thinnings of scikit-image (skeletonize "zhang", thin's Guo-Hall), shared by the
// CPU and CUDA launchers: a pixel's 8-neighbour code and the table step of a sub-iteration.
//
// Each sub-iteration deletes, all at once, every foreground pixel whose code its table marks;
// an iteration is the two sub-iterations. Bits 0..7 of a code are the neighbours NW, N, NE, E, SE,
// S, SW, W (scikit-image's _fast_skeletonize order; pixels outside the image read as background).
// The tables come from Python (morphaug/morphology/_thinning.py) in this bit order, 256 flags per
// sub-iteration.
#pragma once

#include <cstdint>

#include "common.h"

namespace morphaug {

// The two deletion tables, bit (256 pass + code) set where sub-iteration `pass` deletes a pixel of
// that code; passed by value to the CUDA kernels.
struct ThinningTables {
  uint32_t bits[16];

  MORPHAUG_HD bool deletes(int pass, unsigned code) const {
    const unsigned at = (static_cast<unsigned>(pass) << 8) | code;
    return (bits[at >> 5] >> (at & 31u)) & 1u;
  }
};

// The code of the pixel at column x of w from its three rows (`above`, `row`, `below`: bit `bit`
// of each byte a pixel's value; nullptr: a row outside the image); columns outside [0, w) read as
// background.
MORPHAUG_HD unsigned thinning_code(const uint8_t* above, const uint8_t* row, const uint8_t* below, int32_t x,
                                   int32_t w, int bit) {
  const bool left = x > 0, right = x + 1 < w;
  auto at = [&](const uint8_t* r, int32_t dx) -> unsigned {
    if (r == nullptr || (dx < 0 && !left) || (dx > 0 && !right)) return 0u;
    return (r[x + dx] >> bit) & 1u;
  };
  return at(above, -1) | at(above, 0) << 1 | at(above, 1) << 2 | at(row, 1) << 3 | at(below, 1) << 4 |
         at(below, 0) << 5 | at(below, -1) << 6 | at(row, -1) << 7;
}

}  // namespace morphaug
