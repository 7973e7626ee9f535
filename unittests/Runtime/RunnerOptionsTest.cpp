//===- RunnerOptionsTest.cpp - tests of pa-gpu-runner's option parser -----===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// tools/pa-gpu-runner/Options.cpp, the one parser of `check` and `bench`:
// every kind of value, and a clear message for every kind of bad flag
// (unknown, missing value, malformed, out of range, wrong operand count).
// Pure C++: the runner needs a GPU, its option parser does not.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace pa::runner;

namespace {

/// The options of a test command, one of each kind.
struct Opts {
  bool quick = false;
  int64_t chunk = 0;
  uint32_t seed = 7;
  int device = 0;
  double gib = 4;
  int64_t pool = 0;
  std::string out;
  std::string flush = "dirty";
  std::vector<int64_t> lens = {512};
  std::vector<std::string> dirs;
};

struct Parsed {
  bool ok;
  std::string error;
  bool help;
};

/// Parses `args` (after the command) with the test command's parser.
Parsed parse(Opts &o, const std::vector<std::string> &args,
             size_t maxOperands = 3, OptionParser *out = nullptr) {
  OptionParser local("test");
  OptionParser &p = out ? *out : local;
  p.flag("--quick", o.quick, "quick");
  p.integer("--chunk", o.chunk, 1, INT64_MAX, "chunk");
  p.integer("--seed", o.seed, 0, UINT32_MAX, "seed");
  p.integer("--device", o.device, 0, 7, "device");
  p.positiveReal("--gib", o.gib, "GiB");
  p.count("--pool", o.pool, 1, int64_t(1) << 40, "pool elements");
  p.text("--out", "FILE", o.out, "report");
  p.positiveList("--lens", o.lens, "lengths");
  p.choice("--flush", o.flush, {"dirty", "clean"}, "flush");
  p.operands("DIR", o.dirs, 1, maxOperands);
  std::vector<const char *> argv = {"pa-gpu-runner", "test"};
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  std::string error;
  bool ok = p.parse(static_cast<int>(argv.size()), argv.data(), 2, error);
  return {ok, error, p.helpRequested()};
}

/// Expects `args` to be rejected with exactly `message`.
void expectRejected(const std::vector<std::string> &args,
                    const std::string &message, size_t maxOperands = 3) {
  Opts o;
  Parsed r = parse(o, args, maxOperands);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, message);
}

TEST(RunnerOptions, EveryKindOfValue) {
  Opts o;
  OptionParser p("test");
  Parsed r = parse(o,
                   {"a", "--quick", "--chunk", "48", "--seed", "4294967295",
                    "--device", "7", "--gib", "0.5", "--out", "r.md", "--lens",
                    "1,16,32768", "b"},
                   3, &p);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.help);
  EXPECT_TRUE(o.quick);
  EXPECT_EQ(o.chunk, 48);
  EXPECT_EQ(o.seed, 4294967295u);
  EXPECT_EQ(o.device, 7);
  EXPECT_EQ(o.gib, 0.5);
  EXPECT_EQ(o.out, "r.md");
  EXPECT_EQ(o.lens, (std::vector<int64_t>{1, 16, 32768}));
  EXPECT_EQ(o.dirs, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(p.seen("--seed"));
  EXPECT_TRUE(p.seen("--quick"));
}

TEST(RunnerOptions, DefaultsStayWhenAbsent) {
  Opts o;
  OptionParser p("test");
  ASSERT_TRUE(parse(o, {"dir"}, 3, &p).ok);
  EXPECT_FALSE(o.quick);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.lens, (std::vector<int64_t>{512}));
  EXPECT_FALSE(p.seen("--seed"));
}

TEST(RunnerOptions, DoubleDashEndsTheFlags) {
  Opts o;
  ASSERT_TRUE(parse(o, {"--quick", "--", "--odd-dir", "-"}).ok);
  EXPECT_EQ(o.dirs, (std::vector<std::string>{"--odd-dir", "-"}));
}

TEST(RunnerOptions, Help) {
  Opts o;
  Parsed r = parse(o, {"--help"});
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.help);
  r = parse(o, {"-h", "--bogus"});
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.help);
}

TEST(RunnerOptions, UnknownFlag) {
  expectRejected({"dir", "--sed", "3"},
                 "pa-gpu-runner test: unknown option '--sed'");
  expectRejected({"-q", "dir"}, "pa-gpu-runner test: unknown option '-q'");
}

TEST(RunnerOptions, MissingValue) {
  expectRejected({"dir", "--seed"},
                 "pa-gpu-runner test: --seed needs a value (--seed N)");
  expectRejected({"--out", "--quick", "dir"},
                 "pa-gpu-runner test: --out needs a value (--out FILE)");
}

TEST(RunnerOptions, MalformedOrOutOfRange) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--chunk", "12x"}, "--chunk '12x': expected an integer >= 1"},
      {{"--chunk", "0"}, "--chunk '0': expected an integer >= 1"},
      {{"--chunk", "99999999999999999999"},
       "--chunk '99999999999999999999': expected an integer >= 1"},
      {{"--seed", "-1"}, "--seed '-1': expected an integer in [0, 4294967295]"},
      {{"--seed", "4294967296"},
       "--seed '4294967296': expected an integer in [0, 4294967295]"},
      {{"--device", "8"}, "--device '8': expected an integer in [0, 7]"}};
  for (const auto &[args, message] : cases) {
    std::vector<std::string> all = {"dir"};
    all.insert(all.end(), args.begin(), args.end());
    expectRejected(all, "pa-gpu-runner test: " + message);
  }
  for (const char *bad : {"0", "-1", "abc", "inf", "nan", "1e999", ""})
    expectRejected({"dir", "--gib", bad},
                   std::string("pa-gpu-runner test: --gib '") + bad +
                       "': expected a number > 0");
  for (const char *bad : {"", "1,,2", "1,2,", ",1", "0", "3,-4", "a"})
    expectRejected({"dir", "--lens", bad},
                   std::string("pa-gpu-runner test: --lens '") + bad +
                       "': expected a comma-separated list of integers >= 1");
  expectRejected({"dir", "--out", ""},
                 "pa-gpu-runner test: --out '': expected a non-empty value");
}

TEST(RunnerOptions, Choice) {
  Opts o;
  ASSERT_TRUE(parse(o, {"dir"}).ok);
  EXPECT_EQ(o.flush, "dirty");
  ASSERT_TRUE(parse(o, {"dir", "--flush", "clean"}).ok);
  EXPECT_EQ(o.flush, "clean");
  for (const char *bad : {"", "Clean", "dirt", "clean,dirty"})
    expectRejected({"dir", "--flush", bad},
                   std::string("pa-gpu-runner test: --flush '") + bad +
                       "': expected one of dirty|clean");
  OptionParser p("test");
  parse(o, {"dir"}, 3, &p);
  EXPECT_NE(p.usage().find("--flush dirty|clean"), std::string::npos)
      << p.usage();
}

TEST(RunnerOptions, Counts) {
  // --pool-elements of check / check-prefill / check-append: digits with an
  // optional binary suffix.
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"1", 1},
      {"4096", 4096},
      {"5G", int64_t(5) << 30},
      {"5g", int64_t(5) << 30},
      {"5Gi", int64_t(5) << 30},
      {"512M", int64_t(512) << 20},
      {"3k", 3072},
      {"1T", int64_t(1) << 40}};
  for (const auto &[text, value] : good) {
    Opts o;
    Parsed r = parse(o, {"dir", "--pool", text});
    ASSERT_TRUE(r.ok) << text << ": " << r.error;
    EXPECT_EQ(o.pool, value) << text;
  }
  for (const char *bad :
       {"0", "-5", "", "5X", "5i", "i", "G", "5Gx", "1.5G", " 5G", "5 G",
        "+5G", "2T", "1025G", "99999999999999999T", "0x10"})
    expectRejected({"dir", "--pool", bad},
                   std::string("pa-gpu-runner test: --pool '") + bad +
                       "': expected a count in [1, 1099511627776] (digits, "
                       "optionally with a suffix K, M, G or T: powers of "
                       "1024, e.g. 5G)");
  int64_t v = 0;
  EXPECT_TRUE(parseCount("0", v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(parseCount("8388607T", v));
  EXPECT_EQ(v, int64_t(8388607) << 40);
  EXPECT_FALSE(parseCount("8388608T", v)) << "2^23 * 2^40 overflows int64";
  EXPECT_EQ(v, int64_t(8388607) << 40) << "untouched on failure";
}

TEST(RunnerOptions, RejectedValuesLeaveTheOptionAlone) {
  Opts o;
  EXPECT_FALSE(parse(o, {"dir", "--lens", "1,x"}).ok);
  EXPECT_EQ(o.lens, (std::vector<int64_t>{512}));
}

TEST(RunnerOptions, OperandCount) {
  expectRejected({}, "pa-gpu-runner test: expected 1 to 3 DIRs, got 0");
  expectRejected({"a", "b", "c", "d"},
                 "pa-gpu-runner test: expected 1 to 3 DIRs, got 4 ('a' 'b' "
                 "'c' 'd')");
  expectRejected({"a", "b"},
                 "pa-gpu-runner test: expected 1 DIR, got 2 ('a' "
                 "'b')",
                 1);
  expectRejected({"--quick"},
                 "pa-gpu-runner test: expected at least 1 DIRs, "
                 "got 0",
                 SIZE_MAX);
}

TEST(RunnerOptions, UsageListsEveryFlag) {
  Opts o;
  OptionParser p("test");
  parse(o, {"dir"}, SIZE_MAX, &p);
  std::string u = p.usage();
  EXPECT_NE(u.find("pa-gpu-runner test [options] DIR..."), std::string::npos)
      << u;
  for (const char *flag : {"--quick", "--chunk N", "--seed N", "--device N",
                           "--gib X", "--pool N", "--out FILE",
                           "--lens a,b,.."})
    EXPECT_NE(u.find(flag), std::string::npos) << flag << " in\n" << u;
}

TEST(RunnerOptions, ParseHelpers) {
  int64_t v = 0;
  EXPECT_TRUE(parseInt64("-42", v));
  EXPECT_EQ(v, -42);
  EXPECT_FALSE(parseInt64("", v));
  EXPECT_FALSE(parseInt64("4 ", v));
  EXPECT_FALSE(parseInt64("0x10", v));
  std::vector<int64_t> l;
  EXPECT_TRUE(parsePositiveList("3", l));
  EXPECT_EQ(l, (std::vector<int64_t>{3}));
  EXPECT_FALSE(parsePositiveList("", l));
  EXPECT_EQ(l, (std::vector<int64_t>{3})) << "untouched on failure";
}

} // namespace
