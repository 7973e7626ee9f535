// Throughput of fp8 -> f16x2 conversions on the device (issue 9: the fp8
// decode's widening). Each thread converts N words in a dependent-free
// stream of 8 independent chains; the kernel reports conversions per SM
// per clock for:
//   cvt   : cvt.rn.f16x2.e4m3x2 (F2FP.F16.E4M3.UNPACK_B), one per 2 values
//   prmt  : the e5m2 widening as a byte permute (e5m2 is f16's high byte)
//   bits  : e4m3 by integer ops (sign | (magnitude >> 1)), the bias 2^8
//           left to a scale elsewhere
// nvcc -arch=sm_90a -O3 bench/micro/fp8_cvt_rate.cu -o /tmp/fp8_cvt_rate
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

constexpr int kIters = 4096;

__device__ __forceinline__ uint32_t cvt(uint32_t w) {
  uint32_t r;
  asm volatile("{ .reg .b16 lo; mov.b32 {lo, _}, %1; cvt.rn.f16x2.e4m3x2 %0, lo; }"
               : "=r"(r) : "r"(w));
  return r;
}
__device__ __forceinline__ uint32_t prmt(uint32_t w) {
  uint32_t r;
  asm volatile("prmt.b32 %0, %1, 0, 0x1404;" : "=r"(r) : "r"(w));
  return r;
}
__device__ __forceinline__ uint32_t bits(uint32_t w) {
  uint32_t x, r;
  asm volatile("prmt.b32 %0, %1, 0, 0x1404;" : "=r"(x) : "r"(w));
  asm volatile("{ .reg .b32 t; shr.b32 t, %1, 1; and.b32 t, t, 0x3F803F80;"
               " lop3.b32 %0, %1, 0x80008000, t, 0xEA; }" : "=r"(r) : "r"(x));
  return r;
}

template <int K>
__global__ void run(uint32_t *out, uint32_t seed) {
  uint32_t a[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = seed * (threadIdx.x + 1) + i * 0x01010101u;
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      uint32_t v = K == 0 ? cvt(a[i]) : K == 1 ? prmt(a[i]) : bits(a[i]);
      a[i] ^= v;  // keep a dependency so nothing is hoisted
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s ^= a[i];
  if (s == 0x12345678u) out[threadIdx.x] = s;
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  int clk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);  // kHz
  uint32_t *out;
  cudaMalloc(&out, 1024 * 4);
  const char *names[] = {"cvt e4m3x2 (F2FP)", "prmt (e5m2)", "bits e4m3 (prmt+shr+and+lop3)"};
  for (int k = 0; k < 3; ++k) {
    for (int threads : {256, 1024}) {
      int blocks = p.multiProcessorCount * (2048 / threads);
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0); cudaEventCreate(&e1);
      auto launch = [&] {
        if (k == 0) run<0><<<blocks, threads>>>(out, 7);
        else if (k == 1) run<1><<<blocks, threads>>>(out, 7);
        else run<2><<<blocks, threads>>>(out, 7);
      };
      launch();
      cudaEventRecord(e0);
      launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      double convs = double(blocks) * threads * kIters * 8;  // word ops (2 values each)
      double perSMclk = convs / (ms * 1e-3) / p.multiProcessorCount / (clk * 1e3);
      printf("%-34s threads %4d: %.3f ms, %.1f word conversions / SM / clock (at %d MHz nominal)\n",
             names[k], threads, ms, perSMclk, clk / 1000);
    }
  }
  return cudaGetLastError() != cudaSuccess;
}
