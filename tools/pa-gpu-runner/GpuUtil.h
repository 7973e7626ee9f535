//===- GpuUtil.h - helpers of pa-gpu-runner ---------------------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Checked CUDA driver calls (every failure carries cuGetErrorString's text),
// RAII device buffers and events, the median, and the roofs module
// (bench/roofs.cu: the read-roof and random-fill kernels). The runner is a
// tool, not the library: it reports failures by throwing pa::runner::Failure,
// caught per bundle.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_GPUUTIL_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_GPUUTIL_H

#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/pa_runtime.h"

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace pa::runner {
namespace rt = pa::rt;

/// Bytes in a GiB.
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// A failed check of the runner.
class Failure : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws Failure("<what> failed: NAME (code): text") unless r is success.
void cuCheck(CUresult r, const char *what, const char *file, int line);
/// Throws Failure("<what>: <pa_last_error()>") unless rc is PA_SUCCESS.
void paCheck(int rc, const char *what);

#define PA_CU(call) ::pa::runner::cuCheck((call), #call, __FILE__, __LINE__)
#define PA_RT(call) ::pa::runner::paCheck((call), #call)

/// An owned device allocation.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { allocate(bytes); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr(o.ptr), bytes(o.bytes) {
    o.ptr = 0;
    o.bytes = 0;
  }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    if (this != &o) {
      reset();
      ptr = o.ptr;
      bytes = o.bytes;
      o.ptr = 0;
      o.bytes = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// Frees the old allocation and allocates `n` bytes (at least 1).
  void allocate(size_t n);
  void reset();
  /// Allocates and copies `n` bytes from `src`.
  void upload(const void *src, size_t n);
  /// Copies size() bytes (or `n`) to `dst`.
  void download(void *dst, size_t n) const;

  CUdeviceptr get() const { return ptr; }
  size_t size() const { return bytes; }

private:
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

template <typename T> DeviceBuffer uploadVector(const std::vector<T> &v) {
  DeviceBuffer b;
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

/// Median of `v` (copied, sorted); 0 for an empty vector.
double median(std::vector<double> v);

//===----------------------------------------------------------------------===//
// Device and roofs module
//===----------------------------------------------------------------------===//

/// Name, SM count, L2 size, memory of the current device.
struct DeviceInfo {
  std::string name;
  int smCount = 0, ccMajor = 0, ccMinor = 0;
  int64_t l2Bytes = 0;
  size_t freeBytes = 0, totalBytes = 0;
  int driverVersion = 0;
};
DeviceInfo queryDevice();

/// A part of a device allocation the span does not own (a benchmark's KV
/// pools inside its arena).
struct DeviceSpan {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUdeviceptr get() const { return ptr; }
  size_t size() const { return bytes; }
};

/// Bytes of one cache element of `c`: 1 for an fp8 cache, else the
/// dtype's.
int64_t cacheElementBytes(const rt::BundleConfig &c);
/// Bytes of K and V of B requests of L tokens (whole pages) in the cache
/// of `c` (an fp8 cache: 1 byte per element).
double kvSetBytes(const rt::BundleConfig &c, int64_t B, int64_t L);
/// A benchmark's KV arena, allocated once for the pools of every row:
/// `needBytes`, at most the free memory less `keepFreeBytes`. Pools
/// allocated per row ran rows that came after the grid's large ones up to
/// 18% slower, with the same kernel (H100, 2026-11-25: GQA-4 f16 256 x
/// 2048 took 899 µs after the longer rows and 763 µs on its own;
/// docs/PERFORMANCE.md).
DeviceBuffer allocKVArena(double needBytes, double keepFreeBytes);

/// fillUniform's dtypes for fp8 caches (beside PA_DTYPE_*).
constexpr int kFillE4M3 = 3, kFillE5M2 = 4;
/// fillUniform's dtype (PA_DTYPE_*) for elements of `t`.
int fillDtype(rt::DType t);
/// fillUniform's dtype for the cache of `c`: its fp8 format, else
/// `dataDtype` (a PA_DTYPE_*).
int cacheFillDtype(const rt::BundleConfig &c, int dataDtype);
/// The benchmarks' K / V scales of an fp8 cache of `c` (all 1: their
/// values do not change the work), one buffer for both; empty otherwise.
DeviceBuffer benchScales(const rt::BundleConfig &c);

/// The kernels of bench/roofs.cu, loaded from pa-roofs.cubin.
struct Roofs {
  CUmodule module = nullptr;
  /// pa_read_roof (read-only path loads), pa_read_roof_cs (streaming loads),
  /// pa_fill_uniform.
  CUfunction readRoof = nullptr, readRoofStreaming = nullptr, fill = nullptr;
  /// CTAs of read()'s launches (read-only path, streaming), from the
  /// occupancy on the current device at load().
  unsigned readGrid[2] = {0, 0};

  /// Loads `path` (empty: $PA_ROOFS_CUBIN, then pa-roofs.cubin beside the
  /// executable) into the current context.
  void load(const std::string &path);
  ~Roofs();

  /// Fills `count` elements of `dtype` (PA_DTYPE_*, or kFillE4M3 /
  /// kFillE5M2: fp8 bytes) at `dst` with hashed uniform values in [lo, hi),
  /// on `stream`.
  void fillUniform(CUdeviceptr dst, uint64_t count, int dtype, uint32_t seed,
                   float lo, float hi, CUstream stream) const;

  /// One read pass over `bytes` (a multiple of 16) at `src` on `stream`
  /// with pa_read_roof (read-only path) or pa_read_roof_cs (`streaming`),
  /// 256 threads a CTA, as many CTAs as fit the device at once; the sum
  /// goes to the 8 bytes at `sink`.
  void read(CUdeviceptr src, size_t bytes, CUdeviceptr sink, CUstream stream,
            bool streaming = false) const;
};

/// Bytes of L2Eviction's buffer.
constexpr size_t kFlushBytes = size_t(256) << 20;

/// The L2 eviction before every timed call of the benchmarks (their
/// `--l2-flush` flag), over a buffer of kFlushBytes:
///   "dirty": cuMemsetD8Async of the buffer: the L2 is left full of dirty
///     lines, which the timed call writes back to device memory as its own
///     lines evict them, up to the L2's size on top of its own traffic (the
///     method of every figure recorded before 2026-11-27 and of the
///     FlashInfer kit's `fi_bench.py`, which zeroes a buffer);
///   "clean": the memset, then a read pass over the buffer (Roofs::read):
///     the L2 holds clean lines of the buffer, and the timed call starts
///     with a cold cache that owes device memory nothing.
/// Both leave none of the timed call's data in the L2.
class L2Eviction {
public:
  /// `mode`: "dirty" or "clean" (else throws Failure).
  L2Eviction(const std::string &mode, const Roofs &roofs);
  /// Enqueues the eviction on `stream` (`salt` varies the memset's byte).
  void evict(CUstream stream, unsigned salt) const;
  bool clean() const { return roofs != nullptr; }
  /// The method phrase of the reports ("a memset of 256 MiB ...").
  std::string describe() const;

private:
  DeviceBuffer buf, sink;
  /// Set in clean mode only.
  const Roofs *roofs = nullptr;
};

/// Current UTC time as "YYYY-MM-DD HH:MM UTC".
std::string utcNow();

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_GPUUTIL_H
