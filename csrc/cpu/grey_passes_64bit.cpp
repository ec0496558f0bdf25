// The flat grey passes (grey_passes.h) for the 64-bit dtypes (int64, uint64, float64).
#include "grey_box_loops.h"
#include "grey_footprint_loops.h"

namespace morphaug {

MORPHAUG_DEFINE_GREY_BOX_PASSES(int64_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(int64_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(uint64_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(uint64_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(double)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(double)

}  // namespace morphaug
