//===- Options.h - command-line options of pa-gpu-runner --------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The one option parser of pa-gpu-runner's commands (`check`, `bench`): each
// command declares its flags, bound to the fields of its options struct, and
// parse() walks argv. Every unknown flag, missing or malformed value, value
// out of range and wrong number of operands is an error message naming the
// command and the flag; the driver prints it with the usage and exits 2.
// Pure C++ (no CUDA): unittests/Runtime/RunnerOptionsTest.cpp tests it.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_OPTIONS_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_OPTIONS_H

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace pa::runner {

/// Parses a decimal integer; the whole of `s` must match and fit int64.
bool parseInt64(const std::string &s, int64_t &out);
/// Parses "a,b,c": one or more integers >= 1.
bool parsePositiveList(const std::string &s, std::vector<int64_t> &out);
/// Parses a count: a decimal integer >= 0 with an optional binary suffix
/// K, M, G or T (x 2^10, 2^20, 2^30, 2^40; either case, optionally
/// followed by 'i': "5G" = "5Gi" = 5368709120); the result must fit int64.
bool parseCount(const std::string &s, int64_t &out);

/// The flags and operands of one command.
class OptionParser {
public:
  /// `command` prefixes messages ("pa-gpu-runner check: ...").
  explicit OptionParser(std::string command);

  /// `--name` without a value: sets `out`.
  void flag(const std::string &name, bool &out, const std::string &help);
  /// `--name N`, an integer in [min, max], stored in `out` (any integer
  /// type that holds [min, max]).
  template <typename T>
  void integer(const std::string &name, T &out, int64_t min, int64_t max,
               const std::string &help) {
    addInteger(name, min, max, help,
               [&out](int64_t v) { out = static_cast<T>(v); });
  }
  /// `--name N`, a count (parseCount: 5G, 512M, 4096) in [min, max].
  void count(const std::string &name, int64_t &out, int64_t min, int64_t max,
             const std::string &help);
  /// `--name X`, a finite number > 0.
  void positiveReal(const std::string &name, double &out,
                    const std::string &help);
  /// `--name TEXT`, any non-empty text.
  void text(const std::string &name, const std::string &metavar,
            std::string &out, const std::string &help);
  /// `--name V`, one of `values` (the error lists them).
  void choice(const std::string &name, std::string &out,
              const std::vector<std::string> &values, const std::string &help);
  /// `--name a,b,..`, integers >= 1.
  void positiveList(const std::string &name, std::vector<int64_t> &out,
                    const std::string &help);
  /// The operands (arguments that are not flags, and everything after
  /// `--`): between `min` and `max` of them, called `metavar`.
  void operands(const std::string &metavar, std::vector<std::string> &out,
                size_t min, size_t max);

  /// Parses argv[first .. argc). Returns false with `error` set on the
  /// first problem; `-h` / `--help` stops parsing and sets helpRequested().
  bool parse(int argc, const char *const *argv, int first, std::string &error);
  /// True if `--name` was given (after parse()).
  bool seen(const std::string &name) const;
  bool helpRequested() const { return help; }

  /// "  pa-gpu-runner COMMAND [--flag ..] OPERANDS" and one line per flag.
  std::string usage() const;

private:
  struct Option {
    std::string name;
    /// "" for a flag without a value.
    std::string metavar;
    std::string help;
    /// Stores the value (ignored by flags), or returns false with `error`
    /// saying what the value must be.
    std::function<bool(const std::string &value, std::string &error)> set;
    bool seen = false;
  };
  void add(const std::string &name, const std::string &metavar,
           const std::string &help,
           std::function<bool(const std::string &, std::string &)> set);
  void addInteger(const std::string &name, int64_t min, int64_t max,
                  const std::string &help, std::function<void(int64_t)> store);
  Option *find(const std::string &name);

  std::string command;
  std::vector<Option> options;
  std::string operandName;
  std::vector<std::string> *operandsOut = nullptr;
  size_t minOperands = 0, maxOperands = 0;
  bool help = false;
};

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_OPTIONS_H
