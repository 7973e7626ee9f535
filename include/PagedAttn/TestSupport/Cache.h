//===- Cache.h - host layout of paged KV cache buffers ----------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Where an element (page, K or V, slot, head, dim) of a paged KV cache lives
// in the buffers a kernel takes, for both layouts (NHD, HND) and both
// storages (joint: one [N, 2, ...] buffer; split: a K and a V buffer), and
// the conversion of a float64 reference cache (pa::ref::PagedKV) into those
// buffers. Part of PATestSupport.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TESTSUPPORT_CACHE_H
#define PAGEDATTN_TESTSUPPORT_CACHE_H

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"

#include <cstdint>
#include <vector>

namespace pa::test {

/// The shape of a paged cache's buffers (docs/Runtime.md, "Shapes"): joint
/// storage is one buffer [N, 2, P, Hkv, D] (NHD) or [N, 2, Hkv, P, D] (HND)
/// with K at index 0 and V at index 1 of dimension 1; split storage is a K
/// and a V buffer [N, P, Hkv, D] / [N, Hkv, P, D]. Within the K or V part of
/// a page, elements are in the order of pa::ref::PagedKV::offset (the
/// reference is the one home of that order).
struct CacheGeometry {
  rt::CacheLayout layout = rt::CacheLayout::NHD;
  rt::KVStorage storage = rt::KVStorage::Joint;
  int64_t pageSize = 1, kvHeads = 1, headDim = 1;

  /// The geometry of a bundle configuration's cache.
  static CacheGeometry of(const rt::BundleConfig &c);

  /// The reference's name of the layout.
  ref::KVLayout refLayout() const;
  /// 1 (joint) or 2 (split: K, then V).
  int numBuffers() const;
  /// P * Hkv * D: elements of K (or of V) in one page.
  int64_t pageElements() const;
  /// Elements of each buffer of a cache of `numPages` pages.
  int64_t bufferElements(int64_t numPages) const;
  /// The row-major shape of each buffer of a cache of `numPages` pages.
  std::vector<int64_t> bufferShape(int64_t numPages) const;
  /// The buffer that holds K (which = 0) or V (which = 1): 0, or 1 for V of
  /// split storage.
  int bufferOf(int64_t which) const;

  /// Element offset of (page, which = 0 K / 1 V, slot, head, d) in buffer
  /// bufferOf(which).
  int64_t offset(int64_t page, int64_t which, int64_t slot, int64_t head,
                 int64_t d) const;
  /// Element offset in buffer bufferOf(which) of element `refOffset` of the
  /// reference's K (which = 0) or V (which = 1) array.
  int64_t offsetOfRef(int64_t refOffset, int64_t which) const;
};

/// The buffers (numBuffers() of them, elements of `t`, bufferElements()
/// each) that hold K and V of `kv`, every value rounded to `t`; for an fp8
/// cache (kv.fp8) one byte per element, its fp8 code (fp8Bits), whatever
/// `t`. `kv` must have g's layout, page size, heads and head dim.
std::vector<std::vector<uint8_t>>
cacheBuffers(const CacheGeometry &g, rt::DType t, const ref::PagedKV &kv);

} // namespace pa::test

#endif // PAGEDATTN_TESTSUPPORT_CACHE_H
