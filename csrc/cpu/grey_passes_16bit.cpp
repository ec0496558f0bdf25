// The flat grey passes (grey_passes.h) for the 16-bit dtypes (int16, uint16, float16, bfloat16).
#include "grey_box_loops.h"
#include "grey_footprint_loops.h"

namespace morphaug {

MORPHAUG_DEFINE_GREY_BOX_PASSES(int16_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(int16_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(uint16_t)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(uint16_t)
MORPHAUG_DEFINE_GREY_BOX_PASSES(c10::Half)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(c10::Half)
MORPHAUG_DEFINE_GREY_BOX_PASSES(c10::BFloat16)
MORPHAUG_DEFINE_GREY_FOOTPRINT_PASS(c10::BFloat16)

}  // namespace morphaug
