// cuforge::complex<T>: what cf.complex64 and cf.complex128 are in the kernels cuforge writes.
//
// The layout of NumPy's complex64/complex128, cuComplex's float2/double2 and
// cuda::std::complex<T> (real, then imaginary; aligned to twice the part), with arithmetic.
// A few dozen lines rather than <cuda/std/complex>, whose include costs NVRTC about 2.5 s
// against 0.1 s for this. Kernels written for cuComplex keep working: its parts are .x and
// .y, as float2's are, and it converts to and from float2/double2, so cuComplex's functions
// (cuCmulf, cuCabs, ...) take it and give it back.
#pragma once
#include <cuComplex.h>

namespace cuforge {

template <typename T> struct vec2_of;
template <> struct vec2_of<float> { typedef float2 type; };
template <> struct vec2_of<double> { typedef double2 type; };

template <typename T>
struct __align__(2 * sizeof(T)) complex {
    typedef T value_type;
    T x, y;  // real and imaginary parts, named as float2's

    complex() = default;
    __host__ __device__ constexpr complex(T real, T imag = T(0)) : x(real), y(imag) {}
    template <typename U>
    __host__ __device__ constexpr explicit complex(const complex<U>& z) : x(T(z.x)), y(T(z.y)) {}
    __host__ __device__ constexpr complex(typename vec2_of<T>::type v) : x(v.x), y(v.y) {}
    __host__ __device__ constexpr operator typename vec2_of<T>::type() const { return {x, y}; }

    __host__ __device__ constexpr T real() const { return x; }
    __host__ __device__ constexpr T imag() const { return y; }

    __host__ __device__ complex& operator+=(const complex& z) { x += z.x; y += z.y; return *this; }
    __host__ __device__ complex& operator-=(const complex& z) { x -= z.x; y -= z.y; return *this; }
    __host__ __device__ complex& operator*=(const complex& z) { return *this = *this * z; }
    __host__ __device__ complex& operator/=(const complex& z) { return *this = *this / z; }

    friend __host__ __device__ constexpr complex operator+(const complex& z) { return z; }
    friend __host__ __device__ constexpr complex operator-(const complex& z) { return complex(-z.x, -z.y); }
    friend __host__ __device__ constexpr complex operator+(const complex& a, const complex& b) {
        return complex(a.x + b.x, a.y + b.y);
    }
    friend __host__ __device__ constexpr complex operator-(const complex& a, const complex& b) {
        return complex(a.x - b.x, a.y - b.y);
    }
    friend __host__ __device__ constexpr complex operator*(const complex& a, const complex& b) {
        return complex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
    }
    friend __host__ __device__ constexpr complex operator/(const complex& a, const complex& b) {
        return complex((a.x * b.x + a.y * b.y) / (b.x * b.x + b.y * b.y),
                       (a.y * b.x - a.x * b.y) / (b.x * b.x + b.y * b.y));
    }
    // with a real scalar on either side (T, so that 2.0f * z and z * 0.5 both read naturally)
    friend __host__ __device__ constexpr complex operator+(const complex& a, T b) { return complex(a.x + b, a.y); }
    friend __host__ __device__ constexpr complex operator+(T a, const complex& b) { return complex(a + b.x, b.y); }
    friend __host__ __device__ constexpr complex operator-(const complex& a, T b) { return complex(a.x - b, a.y); }
    friend __host__ __device__ constexpr complex operator-(T a, const complex& b) { return complex(a - b.x, -b.y); }
    friend __host__ __device__ constexpr complex operator*(const complex& a, T b) { return complex(a.x * b, a.y * b); }
    friend __host__ __device__ constexpr complex operator*(T a, const complex& b) { return complex(a * b.x, a * b.y); }
    friend __host__ __device__ constexpr complex operator/(const complex& a, T b) { return complex(a.x / b, a.y / b); }
    friend __host__ __device__ constexpr complex operator/(T a, const complex& b) { return complex(a) / b; }
    friend __host__ __device__ constexpr bool operator==(const complex& a, const complex& b) {
        return a.x == b.x && a.y == b.y;
    }
    friend __host__ __device__ constexpr bool operator!=(const complex& a, const complex& b) { return !(a == b); }
};

template <typename T> __host__ __device__ constexpr T real(const complex<T>& z) { return z.x; }
template <typename T> __host__ __device__ constexpr T imag(const complex<T>& z) { return z.y; }
template <typename T> __host__ __device__ constexpr complex<T> conj(const complex<T>& z) { return complex<T>(z.x, -z.y); }
template <typename T> __host__ __device__ constexpr T norm(const complex<T>& z) { return z.x * z.x + z.y * z.y; }
__device__ inline float abs(const complex<float>& z) { return hypotf(z.x, z.y); }
__device__ inline double abs(const complex<double>& z) { return hypot(z.x, z.y); }
__device__ inline float arg(const complex<float>& z) { return atan2f(z.y, z.x); }
__device__ inline double arg(const complex<double>& z) { return atan2(z.y, z.x); }
__device__ inline complex<float> exp(const complex<float>& z) {
    float s, c;
    sincosf(z.y, &s, &c);
    float m = expf(z.x);
    return complex<float>(m * c, m * s);
}
__device__ inline complex<double> exp(const complex<double>& z) {
    double s, c;
    sincos(z.y, &s, &c);
    double m = ::exp(z.x);
    return complex<double>(m * c, m * s);
}

}  // namespace cuforge
