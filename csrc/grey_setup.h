// The set-up of the flat grey kernels that launch.h works out from their
// arguments (grey_box's axes, grey_footprint's runs) and the launchers take:
// plain values, apart from ATen, so that the CPU files compiling the kernels
// per dtype (cpu/grey_passes.h) need not parse it.
#pragma once

#include <cstdint>
#include <vector>

namespace morphaug {

// --- grey_box ----------------------------------------------------------------

// One filtered axis: size k > 1 and the extension before the line.
struct BoxAxis {
  int axis;
  int64_t k, left;
  int mode;
};

// --- grey_footprint ----------------------------------------------------------

// A shared flat footprint as the union of runs of true values along its last
// axis (the row-segment decomposition), placed for a given input. The input
// is seen as (slices, size[0], ..., size[rank - 1]), rank >= 2 (a leading
// axis of 1 for 1-D input). Axis 0 is walked plane by plane, the middle axes
// are extended by their borders (size + k - 1 positions each, "inner rows"),
// and each run reads a running extremum of its width along the last axis.
struct FootprintRun {
  int64_t plane;  // footprint index along axis 0
  int64_t row;    // inner row offset in the extended middle axes
  int64_t slot;   // index of the run's width in `widths`
  int64_t start;  // first position along the last axis
};

struct FootprintSetup {
  std::vector<int64_t> size, k, left;  // per axis: input size, extent, extension before
  std::vector<int> mode;
  std::vector<int64_t> widths;  // distinct run lengths, increasing
  std::vector<FootprintRun> runs;
};

}  // namespace morphaug
