//===- Numbers.h - 16-bit float formats and typed host buffers --*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The test-support library (`PATestSupport`, MLIR-free) serves the unit
// tests, pa-gpu-runner and the CUDA mock (bench/fixture/mock_cuda.cpp). This
// header: conversions between float and the IEEE binary16 / bfloat16 bit
// patterns, and element access to host buffers of a bundle dtype. Besides
// its own source it needs only lib/Runtime/Bundle.cpp (the mock compiles
// the two into its shared library).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TESTSUPPORT_NUMBERS_H
#define PAGEDATTN_TESTSUPPORT_NUMBERS_H

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"

#include <cstdint>
#include <vector>

namespace pa::test {

/// The IEEE binary32 bits of `f`, and the float of bits `x`.
uint32_t floatBits(float f);
float floatFromBits(uint32_t x);

/// IEEE binary16 bits of `f`, rounded to nearest even; values that round to
/// 65520 or more become inf; a NaN stays a quiet NaN (sign and the top
/// payload bits kept).
uint16_t floatToHalf(float f);
/// The value of binary16 bits `h` (exact: every half is a float).
float halfToFloat(uint16_t h);
/// bfloat16 bits of `f` (the top 16 bits of the float), rounded to nearest
/// even; a NaN stays a quiet NaN.
uint16_t floatToBF16(float f);
/// The value of bfloat16 bits `h` (exact).
float bf16ToFloat(uint16_t h);

/// `v` rounded to `t`: through float for F32, through the 16-bit format for
/// F16 and BF16.
double roundTo(rt::DType t, double v);

/// Stores `v` rounded to `t` as element `i` of the buffer at `base`
/// (elements of 2 or 4 bytes, rt::elementBytes(t)); returns the value
/// stored, i.e. roundTo(t, v).
double storeElement(void *base, int64_t i, rt::DType t, double v);
/// Element `i` of the buffer at `base`, which holds elements of `t`.
double loadElement(const void *base, int64_t i, rt::DType t);

/// The byte of fp8 value `v` of format `f` (a value of the format, as
/// pa::ref::quantizeFP8 gives; NaN: the format's quiet NaN, +-inf: e5m2's
/// infinities).
uint8_t fp8Bits(double v, ref::FP8Format f);
/// The fp8 format of a bundle's cache (kv_dtype e4m3 or e5m2).
ref::FP8Format fp8FormatOf(rt::KVDType t);

/// A buffer of `values`, each stored as an element of `t`.
std::vector<uint8_t> toBytes(rt::DType t, const std::vector<double> &values);

} // namespace pa::test

#endif // PAGEDATTN_TESTSUPPORT_NUMBERS_H
