// The draw of pick_component (RandRemoveComponent), shared by its CPU and CUDA launchers.
#pragma once

#include <cmath>
#include <cstdint>

#include "common.h"

namespace morphaug {

// The rank, from 0, of the component that a slice with `eligible` components and the draw `u`
// loses: floor(u * eligible) (the float32 draw times the count in double, as the torch backend),
// at most eligible - 1; -1 for none (no eligible component, or a negative or NaN draw).
MORPHAUG_HD int64_t drawn_rank(float u, int64_t eligible) {
  if (!(u >= 0.0f) || eligible <= 0) return -1;
  const int64_t rank = static_cast<int64_t>(floor(static_cast<double>(u) * static_cast<double>(eligible)));
  return rank < eligible - 1 ? rank : eligible - 1;
}

}  // namespace morphaug
