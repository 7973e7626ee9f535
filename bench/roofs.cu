//===- roofs.cu - read-roof and fill kernels of the benchmark -------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Built with nvcc -cubin -arch=sm_90 into pa-roofs.cubin (CMake target
// pa-roofs, beside pa-gpu-runner) and loaded with the driver API by
// `pa-gpu-runner bench`:
//
//   pa_read_roof,    the read-only ceiling: a grid-stride pass over a buffer
//   pa_read_roof_cs  with 16-byte loads (read-only path / streaming), four
//                    independent loads in flight per thread, folded into one
//                    sum per block that is added to one output word (so the
//                    loads cannot be optimized away); the bench reports the
//                    faster of the two;
//   pa_fill_uniform  hashed uniform random values (f16, bf16, f32; fp8
//                    e4m3 / e5m2 as dtype 3 / 4, saturated) to fill KV
//                    caches of tens of GiB on the device, not from the host.
//
//===----------------------------------------------------------------------===//

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

/// Reads n16 16-byte words of `src`; adds a checksum to *out. Streaming
/// selects evict-first loads (ld.global.cs) over plain ones.
template <bool Streaming>
__device__ __forceinline__ void readRoof(const uint4 *__restrict__ src,
                                         uint64_t n16,
                                         unsigned long long *out) {
  auto load = [](const uint4 *p) { return Streaming ? __ldcs(p) : __ldg(p); };
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = load(src + i);
    uint4 b = load(src + i + stride);
    uint4 c = load(src + i + 2 * stride);
    uint4 d = load(src + i + 3 * stride);
    acc += (a.x ^ a.y ^ a.z ^ a.w) + (b.x ^ b.y ^ b.z ^ b.w) +
           (c.x ^ c.y ^ c.z ^ c.w) + (d.x ^ d.y ^ d.z ^ d.w);
  }
  for (; i < n16; i += stride) {
    uint4 a = load(src + i);
    acc += a.x ^ a.y ^ a.z ^ a.w;
  }
  for (int off = 16; off > 0; off /= 2)
    acc += __shfl_xor_sync(0xffffffffu, acc, off);
  __shared__ uint32_t warpSums[32];
  if (threadIdx.x % 32 == 0)
    warpSums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t total = 0;
    for (int w = 0; w < (int)(blockDim.x / 32); ++w)
      total += warpSums[w];
    atomicAdd(out, (unsigned long long)total);
  }
}

/// The read roof with read-only-path loads (ld.global.nc.v4).
extern "C" __global__ void __launch_bounds__(256)
    pa_read_roof(const uint4 *__restrict__ src, uint64_t n16,
                 unsigned long long *out) {
  readRoof<false>(src, n16, out);
}

/// The read roof with streaming loads (ld.global.cs.v4).
extern "C" __global__ void __launch_bounds__(256)
    pa_read_roof_cs(const uint4 *__restrict__ src, uint64_t n16,
                    unsigned long long *out) {
  readRoof<true>(src, n16, out);
}

/// splitmix64-style hash.
__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// dst[i] = lo + (hi - lo) * u(i), u uniform in [0, 1); dtype 0 f16, 1 bf16,
/// 2 f32 (pa_runtime.h's PA_DTYPE_*).
extern "C" __global__ void pa_fill_uniform(void *dst, uint64_t count,
                                           int dtype, uint32_t seed, float lo,
                                           float hi) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const uint64_t key = (uint64_t)seed * 0x9e3779b97f4a7c15ull;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    float u = (float)(mix(key + i) >> 40) * (1.0f / 16777216.0f);
    float v = lo + (hi - lo) * u;
    if (dtype == 0)
      ((__half *)dst)[i] = __float2half_rn(v);
    else if (dtype == 1)
      ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(v);
    else if (dtype == 3 || dtype == 4)
      ((__nv_fp8_storage_t *)dst)[i] = __nv_cvt_float_to_fp8(
          v, __NV_SATFINITE, dtype == 3 ? __NV_E4M3 : __NV_E5M2);
    else
      ((float *)dst)[i] = v;
  }
}
