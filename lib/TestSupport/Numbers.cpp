//===- Numbers.cpp - 16-bit float formats and typed host buffers ----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The one home of the float <-> half / bf16 conversions of the tests, the
// runner and the CUDA mock. Bit manipulation only (no _Float16, which not
// every host compiler has); the unit tests check it against the compiler's
// _Float16 where there is one, over every half and a million floats.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/TestSupport/Numbers.h"

#include <cmath>
#include <cstring>

using namespace pa;

uint32_t pa::test::floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float pa::test::floatFromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t pa::test::floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx > 0x7F800000u) // NaN: keep it quiet, keep some payload
    return static_cast<uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x1FFu));
  if (absx >= 0x477FF000u) // rounds to >= 65520: inf
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (absx < 0x38800000u) { // below 2^-14: subnormal half (or zero)
    // absx * 2^24 (exact: a power of two), rounded to nearest even by the
    // default rounding mode, is the subnormal mantissa.
    float r = std::nearbyint(floatFromBits(absx) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  // Normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits.
  uint32_t mant = absx & 0x7FFFFFu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // may carry into the exponent, up to inf: correct
  return static_cast<uint16_t>(sign | h);
}

float pa::test::halfToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0) // zero or subnormal: mant * 2^-24
    return floatFromBits(sign |
                         floatBits(std::ldexp(static_cast<float>(mant), -24)));
  if (exp == 31) // inf or NaN
    return floatFromBits(sign | 0x7F800000u | (mant << 13));
  return floatFromBits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t pa::test::floatToBF16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) // NaN: set the quiet bit
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float pa::test::bf16ToFloat(uint16_t h) {
  return floatFromBits(static_cast<uint32_t>(h) << 16);
}

double pa::test::roundTo(rt::DType t, double v) {
  char element[4];
  return storeElement(element, 0, t, v);
}

double pa::test::storeElement(void *base, int64_t i, rt::DType t, double v) {
  char *p = static_cast<char *>(base);
  float f = static_cast<float>(v);
  switch (t) {
  case rt::DType::F16: {
    uint16_t h = floatToHalf(f);
    std::memcpy(p + 2 * i, &h, 2);
    return halfToFloat(h);
  }
  case rt::DType::BF16: {
    uint16_t h = floatToBF16(f);
    std::memcpy(p + 2 * i, &h, 2);
    return bf16ToFloat(h);
  }
  case rt::DType::F32:
    std::memcpy(p + 4 * i, &f, 4);
    return f;
  }
  return 0;
}

double pa::test::loadElement(const void *base, int64_t i, rt::DType t) {
  const char *p = static_cast<const char *>(base);
  switch (t) {
  case rt::DType::F16:
  case rt::DType::BF16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return t == rt::DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  case rt::DType::F32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  }
  return 0;
}

std::vector<uint8_t> pa::test::toBytes(rt::DType t,
                                       const std::vector<double> &values) {
  std::vector<uint8_t> bytes(values.size() *
                             static_cast<size_t>(rt::elementBytes(t)));
  for (size_t i = 0; i < values.size(); ++i)
    storeElement(bytes.data(), static_cast<int64_t>(i), t, values[i]);
  return bytes;
}

uint8_t pa::test::fp8Bits(double v, ref::FP8Format f) {
  const bool e4m3 = f == ref::FP8Format::E4M3FN;
  const int manBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  if (std::isnan(v))
    return e4m3 ? 0x7F : 0x7E;
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  double a = std::fabs(v);
  if (std::isinf(a))
    return static_cast<uint8_t>(sign | 0x7C); // e5m2 only
  if (a == 0)
    return sign;
  int e;
  double m = std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  int exp = e - 1 + bias;       // biased exponent of 1.f x 2^(e - 1)
  if (exp >= 1) {
    int man = static_cast<int>(std::lround((2 * m - 1) * (1 << manBits)));
    return static_cast<uint8_t>(sign | (exp << manBits) | man);
  }
  // Subnormal: a = man x 2^(1 - bias - manBits).
  int man = static_cast<int>(std::lround(std::ldexp(a, bias - 1 + manBits)));
  return static_cast<uint8_t>(sign | man);
}

pa::ref::FP8Format pa::test::fp8FormatOf(rt::KVDType t) {
  return t == rt::KVDType::E5M2 ? ref::FP8Format::E5M2
                                : ref::FP8Format::E4M3FN;
}
