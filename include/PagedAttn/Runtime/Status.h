//===- Status.h - success-or-message result of runtime calls ----*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The runtime compiles with -fno-exceptions: every call that can reject its
// input returns a Status naming the broken invariant instead of throwing.
// fail() builds the error from message parts.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_RUNTIME_STATUS_H
#define PAGEDATTN_RUNTIME_STATUS_H

#include <sstream>
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

/// An error Status whose message is the concatenation of `parts`, each
/// written with operator<<, e.g. fail("kv_indices[", i, "] = ", v, " ...").
template <typename... Ts> Status fail(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status::error(os.str());
}

} // namespace pa::rt

#endif // PAGEDATTN_RUNTIME_STATUS_H
