// The flat grey passes (grey_passes.h) for the 8-bit dtypes (bool, uint8, int8).
#include "grey_box_loops.h"
#include "grey_footprint_loops.h"

namespace morphaug {

MORPHAUG_DEFINE_GREY_BOX_PASSES(bool)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(bool)
MORPHAUG_DEFINE_GREY_BOX_PASSES(uint8_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(uint8_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(int8_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(int8_t)

}  // namespace morphaug
