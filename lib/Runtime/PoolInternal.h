//===- PoolInternal.h - helpers shared by the page pool sources -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Internal to PagePool.cpp, BatchTables.cpp and AutoCascade.cpp (not
// installed).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_RUNTIME_POOLINTERNAL_H
#define PAGEDATTN_LIB_RUNTIME_POOLINTERNAL_H

#include <cstdint>

namespace pa::rt::pool_detail {

/// ceil(a / b) for a >= 0, b >= 1.
inline int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

} // namespace pa::rt::pool_detail

#endif // PAGEDATTN_LIB_RUNTIME_POOLINTERNAL_H
