// The flat grey passes (grey_passes.h) for the 32-bit dtypes (int32, uint32, float32).
#include "grey_box_loops.h"
#include "grey_footprint_loops.h"

namespace morphaug {

MORPHAUG_DEFINE_GREY_BOX_PASSES(int32_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(int32_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(uint32_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(uint32_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(float)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(float)

}  // namespace morphaug
