//===- Cache.cpp - host layout of paged KV cache buffers ------------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/TestSupport/Cache.h"

#include "PagedAttn/TestSupport/Numbers.h"

#include <cassert>

using namespace pa;
using namespace pa::test;

CacheGeometry CacheGeometry::of(const rt::BundleConfig &c) {
  CacheGeometry g;
  g.layout = c.layout;
  g.storage = c.kv;
  g.pageSize = c.pageSize;
  g.kvHeads = c.kvHeads;
  g.headDim = c.headDim;
  return g;
}

ref::KVLayout CacheGeometry::refLayout() const {
  return layout == rt::CacheLayout::NHD ? ref::KVLayout::NHD
                                        : ref::KVLayout::HND;
}

int CacheGeometry::numBuffers() const {
  return storage == rt::KVStorage::Joint ? 1 : 2;
}

int64_t CacheGeometry::pageElements() const {
  return pageSize * kvHeads * headDim;
}

int64_t CacheGeometry::bufferElements(int64_t numPages) const {
  return numPages * pageElements() * (storage == rt::KVStorage::Joint ? 2 : 1);
}

std::vector<int64_t> CacheGeometry::bufferShape(int64_t numPages) const {
  // The runtime's role shapes are the one home of the buffer shapes.
  rt::BundleConfig c;
  c.headDim = headDim;
  c.pageSize = pageSize;
  c.kvHeads = kvHeads;
  c.group = 1;
  c.layout = layout;
  c.kv = storage;
  rt::ProblemDims dims;
  dims.numPages = numPages;
  return rt::roleShape(
      c, storage == rt::KVStorage::Joint ? rt::ArgRole::KV : rt::ArgRole::K,
      dims);
}

int CacheGeometry::bufferOf(int64_t which) const {
  return storage == rt::KVStorage::Split && which == 1 ? 1 : 0;
}

int64_t CacheGeometry::offset(int64_t page, int64_t which, int64_t slot,
                              int64_t head, int64_t d) const {
  // A shape-only reference cache (no storage) computes the in-page order.
  ref::PagedKV shape;
  shape.layout = refLayout();
  shape.pageSize = pageSize;
  shape.numHeads = kvHeads;
  shape.headDim = headDim;
  return offsetOfRef(shape.offset(page, slot, head, d), which);
}

int64_t CacheGeometry::offsetOfRef(int64_t refOffset, int64_t which) const {
  if (storage == rt::KVStorage::Split)
    return refOffset;
  int64_t pageElems = pageElements();
  int64_t page = refOffset / pageElems, inPage = refOffset % pageElems;
  return (page * 2 + which) * pageElems + inPage;
}

std::vector<std::vector<uint8_t>>
pa::test::cacheBuffers(const CacheGeometry &g, rt::DType t,
                       const ref::PagedKV &kv) {
  assert(kv.layout == g.refLayout() && kv.pageSize == g.pageSize &&
         kv.numHeads == g.kvHeads && kv.headDim == g.headDim &&
         "cacheBuffers: the cache does not have the geometry's shape");
  int64_t eb = kv.fp8 ? 1 : rt::elementBytes(t);
  size_t bytes = static_cast<size_t>(g.bufferElements(kv.numPages) * eb);
  std::vector<std::vector<uint8_t>> buffers(static_cast<size_t>(g.numBuffers()),
                                            std::vector<uint8_t>(bytes));
  for (int64_t which = 0; which < 2; ++which) {
    const std::vector<double> &src = which ? kv.v : kv.k;
    uint8_t *dst = buffers[static_cast<size_t>(g.bufferOf(which))].data();
    for (int64_t i = 0, n = kv.numElements(); i < n; ++i) {
      if (kv.fp8)
        dst[g.offsetOfRef(i, which)] = fp8Bits(src[i], kv.fp8->format);
      else
        storeElement(dst, g.offsetOfRef(i, which), t, src[i]);
    }
  }
  return buffers;
}
