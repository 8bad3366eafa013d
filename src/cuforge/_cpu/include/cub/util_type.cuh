// cuforge CPU backend: the part of <cub/util_type.cuh> that device code uses with CUB's block and
// warp collectives: cub::KeyValuePair (an arg-min's key and value), with NullType and
// Uninitialized (cub/detail/cuforge_cpu.cuh).
#pragma once
#include "detail/cuforge_cpu.cuh"

namespace cub {

template <typename _Key, typename _Value> struct KeyValuePair {
    using Key = _Key;
    using Value = _Value;
    Key key;
    Value value;
    KeyValuePair() = default;
    CF_CUB_INLINE KeyValuePair(Key const& key, Value const& value) : key(key), value(value) {}
    CF_CUB_INLINE bool operator==(const KeyValuePair& b) const { return (value == b.value) && (key == b.key); }
    CF_CUB_INLINE bool operator!=(const KeyValuePair& b) const { return (value != b.value) || (key != b.key); }
};

}  // namespace cub
