//===- GpuUtil.cpp - helpers of pa-gpu-runner -----------------------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "GpuUtil.h"

#include "PagedAttn/Runtime/Bundle.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <unistd.h>

using namespace pa::runner;

void pa::runner::cuCheck(CUresult r, const char *what, const char *file,
                         int line) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
    text = "no description";
  std::ostringstream os;
  os << what << " failed: " << name << " (" << static_cast<int>(r)
     << "): " << text << " [" << file << ":" << line << "]";
  throw Failure(os.str());
}

void pa::runner::paCheck(int rc, const char *what) {
  if (rc == PA_SUCCESS)
    return;
  throw Failure(std::string(what) + ": " + pa_last_error());
}

void DeviceBuffer::allocate(size_t n) {
  reset();
  PA_CU(cuMemAlloc(&ptr, std::max<size_t>(n, 1)));
  bytes = n;
}

void DeviceBuffer::reset() {
  if (ptr)
    cuMemFree(ptr);
  ptr = 0;
  bytes = 0;
}

void DeviceBuffer::upload(const void *src, size_t n) {
  allocate(n);
  if (n)
    PA_CU(cuMemcpyHtoD(ptr, src, n));
}

void DeviceBuffer::download(void *dst, size_t n) const {
  if (n > bytes)
    throw Failure("DeviceBuffer::download of " + std::to_string(n) +
                  " bytes from a buffer of " + std::to_string(bytes));
  if (n)
    PA_CU(cuMemcpyDtoH(dst, ptr, n));
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

double pa::runner::median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

//===----------------------------------------------------------------------===//
// Device and roofs
//===----------------------------------------------------------------------===//

DeviceInfo pa::runner::queryDevice() {
  DeviceInfo info;
  CUdevice dev;
  PA_CU(cuCtxGetDevice(&dev));
  char name[256] = {0};
  PA_CU(cuDeviceGetName(name, sizeof(name) - 1, dev));
  info.name = name;
  PA_CU(cuDeviceGetAttribute(&info.smCount,
                             CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  PA_CU(cuDeviceGetAttribute(
      &info.ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  PA_CU(cuDeviceGetAttribute(
      &info.ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  int l2 = 0;
  PA_CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  info.l2Bytes = l2;
  PA_CU(cuMemGetInfo(&info.freeBytes, &info.totalBytes));
  PA_CU(cuDriverGetVersion(&info.driverVersion));
  return info;
}

void Roofs::load(const std::string &path) {
  std::string file = path;
  if (file.empty()) {
    if (const char *env = std::getenv("PA_ROOFS_CUBIN"))
      file = env;
  }
  if (file.empty()) {
    char exe[4096] = {0};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
    file = dir + "/pa-roofs.cubin";
  }
  std::string image;
  if (pa::rt::Status s = pa::rt::readFile(file, image); !s)
    throw Failure("roofs module: " + s.message +
                  " (build it with ninja pa-roofs, or pass --roofs)");
  PA_CU(cuModuleLoadData(&module, image.data()));
  PA_CU(cuModuleGetFunction(&readRoof, module, "pa_read_roof"));
  PA_CU(cuModuleGetFunction(&readRoofStreaming, module, "pa_read_roof_cs"));
  PA_CU(cuModuleGetFunction(&fill, module, "pa_fill_uniform"));
  // The read kernels' grids: as many 256-thread CTAs as fit the device.
  CUdevice dev;
  int sms = 0;
  PA_CU(cuCtxGetDevice(&dev));
  PA_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             dev));
  for (int v = 0; v < 2; ++v) {
    int perSM = 0;
    PA_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &perSM, v ? readRoofStreaming : readRoof, 256, 0));
    readGrid[v] = static_cast<unsigned>(std::max(perSM, 1) * sms);
  }
}

Roofs::~Roofs() {
  if (module)
    cuModuleUnload(module);
}

void Roofs::fillUniform(CUdeviceptr dst, uint64_t count, int dtype,
                        uint32_t seed, float lo, float hi,
                        CUstream stream) const {
  if (count == 0)
    return;
  void *params[] = {&dst, &count, &dtype, &seed, &lo, &hi};
  unsigned blocks = static_cast<unsigned>(
      std::min<uint64_t>((count + 255) / 256, 132u * 16u));
  PA_CU(cuLaunchKernel(fill, blocks, 1, 1, 256, 1, 1, 0, stream, params,
                       nullptr));
}

void Roofs::read(CUdeviceptr src, size_t bytes, CUdeviceptr sink,
                 CUstream stream, bool streaming) const {
  CUfunction fn = streaming ? readRoofStreaming : readRoof;
  uint64_t n16 = bytes / 16;
  void *params[] = {&src, &n16, &sink};
  PA_CU(cuLaunchKernel(fn, readGrid[streaming ? 1 : 0], 1, 1, 256, 1, 1, 0,
                       stream, params, nullptr));
}

L2Eviction::L2Eviction(const std::string &mode, const Roofs &r)
    : buf(kFlushBytes), sink(8) {
  if (mode == "clean")
    roofs = &r;
  else if (mode != "dirty")
    throw Failure("unknown L2 eviction '" + mode + "' (dirty or clean)");
}

void L2Eviction::evict(CUstream stream, unsigned salt) const {
  PA_CU(cuMemsetD8Async(buf.get(), static_cast<unsigned char>(salt),
                        kFlushBytes, stream));
  if (roofs)
    roofs->read(buf.get(), kFlushBytes, sink.get(), stream);
}

std::string L2Eviction::describe() const {
  std::string s = "L2 evicted before every call (cuMemsetD8Async of 256 MiB";
  return s + (roofs ? ", then a read pass over it: clean lines, `--l2-flush "
                      "clean`"
                    : ": dirty lines the call writes back, `--l2-flush "
                      "dirty`") +
         "; not timed)";
}

std::string pa::runner::utcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

int pa::runner::fillDtype(rt::DType t) {
  return t == rt::DType::F16    ? PA_DTYPE_F16
         : t == rt::DType::BF16 ? PA_DTYPE_BF16
                                : PA_DTYPE_F32;
}

int pa::runner::cacheFillDtype(const rt::BundleConfig &c, int dataDtype) {
  switch (c.kvDtype) {
  case rt::KVDType::E4M3:
    return kFillE4M3;
  case rt::KVDType::E5M2:
    return kFillE5M2;
  case rt::KVDType::Data:
    break;
  }
  return dataDtype;
}

DeviceBuffer pa::runner::benchScales(const rt::BundleConfig &c) {
  if (!c.fp8())
    return DeviceBuffer();
  return uploadVector(std::vector<float>(
      static_cast<size_t>(c.kvScale == rt::KVScale::Head ? c.kvHeads : 1),
      1.0f));
}

int64_t pa::runner::cacheElementBytes(const rt::BundleConfig &c) {
  return c.fp8() ? 1 : rt::elementBytes(c.dtype);
}

double pa::runner::kvSetBytes(const rt::BundleConfig &c, int64_t B,
                              int64_t L) {
  const int64_t P = c.pageSize;
  const int64_t kvEb = cacheElementBytes(c);
  return 2.0 * P * c.kvHeads * c.headDim * kvEb * (B * ((L + P - 1) / P));
}

DeviceBuffer pa::runner::allocKVArena(double needBytes, double keepFreeBytes) {
  size_t freeB = 0, totalB = 0;
  PA_CU(cuMemGetInfo(&freeB, &totalB));
  double avail = static_cast<double>(freeB) - keepFreeBytes;
  return DeviceBuffer(
      static_cast<size_t>(std::max(0.0, std::min(needBytes, avail))));
}
