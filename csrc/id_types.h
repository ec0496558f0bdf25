// The integer and bool dtypes of label and instance maps, as C types.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace morphaug {

// f(T{}): T the C type of `ids`' dtype (uint8_t for bool), signed as it is;
// `op` names the op in the error for any other dtype.
template <typename F>
void dispatch_ids(const at::Tensor& ids, const char* op, const F& f) {
  switch (ids.scalar_type()) {
    case at::kBool: case at::kByte: f(uint8_t{}); break;
    case at::kChar: f(int8_t{}); break;
    case at::kShort: f(int16_t{}); break;
    case at::kUInt16: f(uint16_t{}); break;
    case at::kInt: f(int32_t{}); break;
    case at::kUInt32: f(uint32_t{}); break;
    case at::kLong: f(int64_t{}); break;
    case at::kUInt64: f(uint64_t{}); break;
    default: TORCH_CHECK(false, "morphaug::", op, ": unexpected dtype ", ids.scalar_type());
  }
}

}  // namespace morphaug
