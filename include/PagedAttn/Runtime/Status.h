//===- Status.h - success-or-message result of runtime calls ----*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The runtime compiles with -fno-exceptions: every call that can reject its
// input returns a Status naming the broken invariant instead of throwing.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_RUNTIME_STATUS_H
#define PAGEDATTN_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace pa::rt {

/// Result of a runtime call: ok, or an error with a human-readable message.
struct Status {
  bool ok = true;
  std::string message;

  /// A successful status (empty message).
  static Status success() { return Status{true, std::string()}; }
  /// A failed status carrying `message`.
  static Status error(std::string message) {
    return Status{false, std::move(message)};
  }

  /// True on success.
  explicit operator bool() const { return ok; }
};

} // namespace pa::rt

#endif // PAGEDATTN_RUNTIME_STATUS_H
