// cuforge CPU backend: the reduction operators of <cub/thread/thread_operators.cuh> that device
// code passes to CUB's collectives: cub::ArgMax and cub::ArgMin over KeyValuePairs (the first
// occurrence wins a tie, as CUB's do), and InequalityWrapper.
#pragma once
#include "../util_type.cuh"

namespace cub {

template <typename EqualityOp> struct InequalityWrapper {
    EqualityOp op;
    template <class T, class U> CF_CUB_INLINE bool operator()(T&& t, U&& u) { return !op(static_cast<T&&>(t), static_cast<U&&>(u)); }
};

struct ArgMax {
    template <typename T, typename OffsetT>
    CF_CUB_INLINE KeyValuePair<OffsetT, T> operator()(const KeyValuePair<OffsetT, T>& a, const KeyValuePair<OffsetT, T>& b) const {
        return (b.value > a.value) || ((a.value == b.value) && (b.key < a.key)) ? b : a;
    }
};

struct ArgMin {
    template <typename T, typename OffsetT>
    CF_CUB_INLINE KeyValuePair<OffsetT, T> operator()(const KeyValuePair<OffsetT, T>& a, const KeyValuePair<OffsetT, T>& b) const {
        return (b.value < a.value) || ((a.value == b.value) && (b.key < a.key)) ? b : a;
    }
};

}  // namespace cub
