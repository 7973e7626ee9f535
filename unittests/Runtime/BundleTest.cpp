//===- BundleTest.cpp - tests of the bundle manifest and packing ----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The manifest parser on the contract's example and on one broken variant per
// rule (each error must name the line), the printer (parse(print(m)) == m and
// print(parse(text)) == text for every kernel set, storage, layout and
// dtype), the spellings (fromString / toString of every enumerator), role
// shapes of both layouts and both storages, grid resolution, and the
// memref-descriptor parameter packing. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Bundle.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <random>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace pa::rt;

namespace {

/// The example manifest of the bundle contract (docs/Runtime.md), one entry
/// per line; line i + 1 of the text is kExample[i].
const std::vector<std::string> kExample = {
    "pa-bundle 1",                                                         // 1
    "config head_dim 128 page_size 16 kv_heads 8 group 4 layout nhd dtype "
    "f16 kv joint",                                                        // 2
    "kernel decode decode.cubin pa_decode",                                // 3
    "arg q memref 3 f16",                                                  // 4
    "arg kv memref 5 f16",                                                 // 5
    "arg kv_indptr memref 1 i32",                                          // 6
    "arg kv_indices memref 1 i32",                                         // 7
    "arg kv_last_page_len memref 1 i32",                                   // 8
    "arg o memref 3 f16",                                                  // 9
    "arg lse memref 2 f32",                                                // 10
    "launch grid batch kv_heads 1 block 128 1 1 smem 0",                   // 11
    "kernel decode_partial decode_partial.cubin pa_decode_partial",        // 12
    "arg q memref 3 f16",                                                  // 13
    "arg kv memref 5 f16",                                                 // 14
    "arg kv_indptr memref 1 i32",                                          // 15
    "arg kv_indices memref 1 i32",                                         // 16
    "arg kv_last_page_len memref 1 i32",                                   // 17
    "arg work_indptr memref 1 i32",                                        // 18
    "arg work_request memref 1 i32",                                       // 19
    "arg work_start memref 1 i32",                                         // 20
    "arg work_end memref 1 i32",                                           // 21
    "arg o_part memref 3 f32",                                             // 22
    "arg lse_part memref 2 f32",                                           // 23
    "launch grid work_capacity kv_heads 1 block 128 1 1 smem 0",           // 24
    "kernel merge_segments merge_segments.cubin pa_merge_segments",        // 25
    "arg o_part memref 3 f32",                                             // 26
    "arg lse_part memref 2 f32",                                           // 27
    "arg work_indptr memref 1 i32",                                        // 28
    "arg o memref 3 f16",                                                  // 29
    "arg lse memref 2 f32",                                                // 30
    "launch grid batch 1 1 block 128 1 1 smem 0",                          // 31
    "end",                                                                 // 32
};

std::string join(const std::vector<std::string> &lines) {
  std::string s;
  for (const std::string &l : lines)
    s += l + "\n";
  return s;
}

/// The example with 1-based line `line` replaced by `text`.
std::string replaced(int line, const std::string &text) {
  std::vector<std::string> lines = kExample;
  lines[line - 1] = text;
  return join(lines);
}

/// The example without 1-based line `line`.
std::string removed(int line) {
  std::vector<std::string> lines = kExample;
  lines.erase(lines.begin() + (line - 1));
  return join(lines);
}

/// The example with `text` inserted before 1-based line `line`.
std::string inserted(int line, const std::string &text) {
  std::vector<std::string> lines = kExample;
  lines.insert(lines.begin() + (line - 1), text);
  return join(lines);
}

/// Parses `text`, expecting failure with a message that names `line` and
/// contains `fragment`.
void expectError(const std::string &text, int line,
                 const std::string &fragment) {
  Manifest m;
  Status s = parseManifest(text, m, "bundle.manifest");
  ASSERT_FALSE(s.ok) << "expected an error containing '" << fragment << "'";
  std::string where = "bundle.manifest:" + std::to_string(line) + ":";
  EXPECT_NE(s.message.find(where), std::string::npos)
      << "message does not name line " << line << ": " << s.message;
  EXPECT_NE(s.message.find(fragment), std::string::npos)
      << "message lacks '" << fragment << "': " << s.message;
}

TEST(BundleManifest, ParsesTheContractExample) {
  Manifest m;
  Status s = parseManifest(join(kExample), m);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.config.headDim, 128);
  EXPECT_EQ(m.config.pageSize, 16);
  EXPECT_EQ(m.config.kvHeads, 8);
  EXPECT_EQ(m.config.group, 4);
  EXPECT_EQ(m.config.numQHeads(), 32);
  EXPECT_EQ(m.config.layout, CacheLayout::NHD);
  EXPECT_EQ(m.config.dtype, DType::F16);
  EXPECT_EQ(m.config.kv, KVStorage::Joint);
  EXPECT_EQ(m.config.str(), "D128 P16 Hkv8 g4 nhd f16 joint");
  ASSERT_EQ(m.kernels.size(), 3u);
  EXPECT_TRUE(m.hasSplitKernels());

  const KernelSpec *d = m.find(KernelKind::Decode);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->file, "decode.cubin");
  EXPECT_EQ(d->symbol, "pa_decode");
  EXPECT_EQ(d->line, 3);
  ASSERT_EQ(d->args.size(), 7u);
  EXPECT_EQ(d->args[0].role, ArgRole::Q);
  EXPECT_EQ(d->args[0].rank, 3);
  EXPECT_EQ(d->args[0].type, ElemType::F16);
  EXPECT_EQ(d->args[1].role, ArgRole::KV);
  EXPECT_EQ(d->args[1].rank, 5);
  EXPECT_EQ(d->args[6].role, ArgRole::LSE);
  EXPECT_EQ(d->args[6].type, ElemType::F32);
  // 3 + 2R per memref: q 9, kv 13, three rank-1 arrays 5 each, o 9, lse 7.
  EXPECT_EQ(d->numParams(), 9 + 13 + 5 * 3 + 9 + 7);
  EXPECT_EQ(d->launch.grid[0].symbol, GridSymbol::Batch);
  EXPECT_EQ(d->launch.grid[1].symbol, GridSymbol::KVHeads);
  EXPECT_EQ(d->launch.grid[2].symbol, GridSymbol::Literal);
  EXPECT_EQ(d->launch.grid[2].value, 1);
  EXPECT_EQ(d->launch.block[0], 128);
  EXPECT_EQ(d->launch.sharedBytes, 0);

  const KernelSpec *p = m.find(KernelKind::DecodePartial);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->args.size(), 11u);
  EXPECT_EQ(p->launch.grid[0].symbol, GridSymbol::WorkCapacity);
  const KernelSpec *g = m.find(KernelKind::MergeSegments);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->args[0].role, ArgRole::OPart);
  EXPECT_EQ(g->symbol, "pa_merge_segments");
}

/// A decode bundle whose split-KV decode is one kernel (pa-compile's
/// default): decode and decode_split; `dropRole` leaves one of
/// decode_split's arguments out.
std::string fusedSplitManifest(const std::string &dropRole = "") {
  std::string decode = "kernel decode k.cubin pa_decode\n"
                       "arg q memref 3 f16\n"
                       "arg kv memref 5 f16\n"
                       "arg kv_indptr memref 1 i32\n"
                       "arg kv_indices memref 1 i32\n"
                       "arg kv_last_page_len memref 1 i32\n"
                       "arg o memref 3 f16\n"
                       "arg lse memref 2 f32\n"
                       "launch grid batch kv_heads 1 block 128 1 1 smem 0\n";
  std::string split = "kernel decode_split k.cubin pa_decode_split\n";
  for (const char *arg :
       {"q memref 3 f16", "kv memref 5 f16", "kv_indptr memref 1 i32",
        "kv_indices memref 1 i32", "kv_last_page_len memref 1 i32",
        "work_indptr memref 1 i32", "work_request memref 1 i32",
        "work_start memref 1 i32", "work_end memref 1 i32",
        "o_part memref 3 f32", "lse_part memref 2 f32", "o memref 3 f16",
        "lse memref 2 f32", "merge_counters memref 2 i32"}) {
    std::string a = arg;
    if (!dropRole.empty() && a.rfind(dropRole + " ", 0) == 0)
      continue;
    split += "arg " + a + "\n";
  }
  split += "launch grid work_capacity kv_heads 1 block 128 1 1 smem 0\n";
  return "pa-bundle 1\n"
         "config head_dim 128 page_size 16 kv_heads 8 group 4 layout nhd "
         "dtype f16 kv joint\n" +
         decode + split + "end\n";
}

TEST(BundleManifest, DecodeSplitIsSplitKVInOneKernel) {
  Manifest m;
  Status s = parseManifest(fusedSplitManifest(), m);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_TRUE(m.hasSplitKernels());
  EXPECT_EQ(m.find(KernelKind::DecodePartial), nullptr);
  EXPECT_EQ(m.find(KernelKind::MergeSegments), nullptr);
  const KernelSpec *k = m.find(KernelKind::DecodeSplit);
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->args.size(), 14u);
  EXPECT_EQ(k->args[13].role, ArgRole::MergeCounters);
  EXPECT_EQ(k->args[13].rank, 2);
  EXPECT_EQ(k->args[13].type, ElemType::I32);
  EXPECT_EQ(k->launch.grid[0].symbol, GridSymbol::WorkCapacity);
  // The counters are one per (request, query head).
  ProblemDims d;
  d.batch = 5;
  EXPECT_EQ(roleShape(m.config, ArgRole::MergeCounters, d),
            (std::vector<int64_t>{5, 32}));
  // Round trip.
  Manifest again;
  ASSERT_TRUE(parseManifest(printManifest(m), again).ok);
  EXPECT_EQ(again, m);
}

TEST(BundleManifest, DecodeSplitMergeTogetherLine) {
  // decode_split may merge its splits together (the counters' value at
  // launch); decode, which has no splits, may not.
  std::string text = fusedSplitManifest();
  std::string launch = "launch grid work_capacity kv_heads 1 block 128 1 1 "
                       "smem 0\n";
  size_t at = text.find(launch);
  ASSERT_NE(at, std::string::npos);
  std::string with = text;
  with.insert(at + launch.size(), "merge together 1073741824\n");
  Manifest m;
  Status s = parseManifest(with, m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::DecodeSplit);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->mergeTogether.has_value());
  EXPECT_EQ(*k->mergeTogether, int64_t(1) << 30);
  Manifest again;
  ASSERT_TRUE(parseManifest(printManifest(m), again).ok);
  EXPECT_EQ(again, m);
  Manifest plain;
  ASSERT_TRUE(parseManifest(text, plain).ok);
  EXPECT_FALSE(plain.find(KernelKind::DecodeSplit)->mergeTogether);
  std::string onDecode = text;
  std::string decodeLaunch = "launch grid batch kv_heads 1 block 128 1 1 "
                             "smem 0\n";
  onDecode.insert(onDecode.find(decodeLaunch) + decodeLaunch.size(),
                  "merge together 1073741824\n");
  Manifest bad;
  s = parseManifest(onDecode, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("a 'merge' line belongs to a split-KV kernel that "
                           "merges its splits itself"),
            std::string::npos)
      << s.message;
}

TEST(BundleManifest, DecodeSplitNeedsItsRoles) {
  for (const char *role : {"merge_counters", "o", "lse_part", "work_end"}) {
    Manifest m;
    Status s = parseManifest(fusedSplitManifest(role), m);
    EXPECT_FALSE(s.ok) << "decode_split without '" << role << "' parsed";
    EXPECT_NE(s.message.find(role), std::string::npos) << s.message;
  }
}

TEST(BundleManifest, MergeKernels) {
  std::string fused = fusedSplitManifest();
  std::string merges = "kernel merge k.cubin pa_merge\n"
                       "arg o_0 memref 3 f16\n"
                       "arg lse_0 memref 2 f32\n"
                       "arg o_1 memref 3 f16\n"
                       "arg lse_1 memref 2 f32\n"
                       "arg o memref 3 f16\n"
                       "arg lse memref 2 f32\n"
                       "launch grid batch 1 1 block 128 1 1 smem 0\n"
                       "kernel merge_states k.cubin pa_merge_states\n"
                       "arg o_states memref 4 f16\n"
                       "arg lse_states memref 3 f32\n"
                       "arg o memref 3 f16\n"
                       "arg lse memref 2 f32\n"
                       "launch grid batch 1 1 block 128 1 1 smem 0\n";
  std::string text = fused.substr(0, fused.size() - 4) + merges + "end\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  ASSERT_NE(m.find(KernelKind::Merge), nullptr);
  ASSERT_NE(m.find(KernelKind::MergeStates), nullptr);
  EXPECT_EQ(m.find(KernelKind::Merge)->args[2].role, ArgRole::StateO1);
  // The states have the outputs' shapes; merge_states stacks S of them.
  ProblemDims d;
  d.batch = 5;
  d.numQueryRows = 5;
  d.numStates = 3;
  EXPECT_EQ(roleShape(m.config, ArgRole::StateO0, d),
            (std::vector<int64_t>{5, 32, 128}));
  EXPECT_EQ(roleShape(m.config, ArgRole::StateLSE1, d),
            (std::vector<int64_t>{5, 32}));
  EXPECT_EQ(roleShape(m.config, ArgRole::OStates, d),
            (std::vector<int64_t>{5, 3, 32, 128}));
  EXPECT_EQ(roleShape(m.config, ArgRole::LSEStates, d),
            (std::vector<int64_t>{5, 3, 32}));
  // Round trip.
  Manifest again;
  ASSERT_TRUE(parseManifest(printManifest(m), again).ok);
  EXPECT_EQ(again, m);
  // The role sets are fixed: a merge without its second state, or an lse
  // state of the wrong rank, is an error naming the role.
  Manifest bad;
  std::string noSecond = text;
  noSecond.erase(noSecond.find("arg o_1 memref 3 f16\n"), 21);
  s = parseManifest(noSecond, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("o_1"), std::string::npos) << s.message;
  std::string rank = text;
  rank.replace(rank.find("arg lse_states memref 3"), 23,
               "arg lse_states memref 2");
  s = parseManifest(rank, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("lse_states"), std::string::npos) << s.message;
}

TEST(BundleManifest, PlanSplitKVKernel) {
  std::string fused = fusedSplitManifest();
  std::string plan = "kernel plan_split_kv k.cubin pa_plan_split_kv\n"
                     "plan chunk 256\n"
                     "arg kv_indptr memref 1 i32\n"
                     "arg kv_last_page_len memref 1 i32\n"
                     "arg work_indptr memref 1 i32\n"
                     "arg work_request memref 1 i32\n"
                     "arg work_start memref 1 i32\n"
                     "arg work_end memref 1 i32\n"
                     "launch grid batch 1 1 block 128 1 1 smem 0\n";
  std::string text = fused.substr(0, fused.size() - 4) + plan + "end\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::PlanSplitKV);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->planChunk.has_value());
  EXPECT_EQ(*k->planChunk, 256);
  EXPECT_FALSE(m.find(KernelKind::Decode)->planChunk.has_value());
  // Round trip through the printer.
  std::string printed = printManifest(m);
  EXPECT_NE(printed.find("plan chunk 256\n"), std::string::npos) << printed;
  Manifest again;
  ASSERT_TRUE(parseManifest(printed, again).ok);
  EXPECT_EQ(again, m);
  // Without its chunk, a chunk below 1, a plan line on another kernel and
  // a missing work-list role are errors that say so.
  Manifest bad;
  std::string noChunk = text;
  noChunk.erase(noChunk.find("plan chunk 256\n"), 15);
  s = parseManifest(noChunk, bad);
  EXPECT_NE(s.message.find("missing the 'plan chunk C' line"),
            std::string::npos)
      << s.message;
  std::string zero = text;
  zero.replace(zero.find("plan chunk 256"), 14, "plan chunk 0");
  s = parseManifest(zero, bad);
  EXPECT_NE(s.message.find("must be an integer >= 1"), std::string::npos)
      << s.message;
  std::string elsewhere = text;
  elsewhere.insert(elsewhere.find("kernel plan_split_kv"), "plan chunk 8\n");
  s = parseManifest(elsewhere, bad);
  EXPECT_NE(s.message.find("belongs to kernel 'plan_split_kv'"),
            std::string::npos)
      << s.message;
  std::string noRole = text;
  noRole.erase(noRole.find("arg work_end memref 1 i32\n"), 26);
  s = parseManifest(noRole, bad);
  EXPECT_NE(s.message.find("missing argument role 'work_end'"),
            std::string::npos)
      << s.message;
}

TEST(BundleManifest, CacheBlendKernels) {
  std::string fused = fusedSplitManifest();
  std::string blend = "kernel scatter_kv k.cubin pa_scatter_kv\n"
                      "arg k_new memref 3 f16\n"
                      "arg v_new memref 3 f16\n"
                      "arg rows_indptr memref 1 i32\n"
                      "arg positions memref 1 i32\n"
                      "arg kv_indptr memref 1 i32\n"
                      "arg kv_indices memref 1 i32\n"
                      "arg kv_last_page_len memref 1 i32\n"
                      "arg kv memref 5 f16\n"
                      "launch grid batch 1 1 block 128 1 1 smem 0\n"
                      "kernel select_topk k.cubin pa_select_topk\n"
                      "topk ratio 0.15\n"
                      "arg deviation memref 1 f32\n"
                      "arg dev_indptr memref 1 i32\n"
                      "arg positions memref 1 i32\n"
                      "arg out_indptr memref 1 i32\n"
                      "launch grid batch 1 1 block 512 1 1 smem 0\n";
  std::string text = fused.substr(0, fused.size() - 4) + blend + "end\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *topk = m.find(KernelKind::SelectTopK);
  ASSERT_NE(topk, nullptr);
  ASSERT_TRUE(topk->topkRatio.has_value());
  EXPECT_EQ(*topk->topkRatio, 0.15);
  EXPECT_FALSE(m.find(KernelKind::ScatterKV)->topkRatio.has_value());
  // Rows (the dims' query rows) and requests (batch) are apart.
  ProblemDims d;
  d.batch = 3;
  d.numQueryRows = 40;
  EXPECT_EQ(roleShape(m.config, ArgRole::KNew, d),
            (std::vector<int64_t>{40, 8, 128}));
  EXPECT_EQ(roleShape(m.config, ArgRole::RowsIndptr, d),
            (std::vector<int64_t>{4}));
  EXPECT_EQ(roleShape(m.config, ArgRole::Positions, d),
            (std::vector<int64_t>{40}));
  EXPECT_EQ(roleShape(m.config, ArgRole::OutIndptr, d),
            (std::vector<int64_t>{4}));
  // The ratio survives the printer (shortest round-tripping decimal).
  std::string printed = printManifest(m);
  EXPECT_NE(printed.find("topk ratio 0.15\n"), std::string::npos) << printed;
  Manifest again;
  ASSERT_TRUE(parseManifest(printed, again).ok);
  EXPECT_EQ(again, m);
  // A select_topk without its ratio, a ratio out of (0, 1], and a topk line
  // on another kernel are errors.
  Manifest bad;
  std::string noRatio = text;
  noRatio.erase(noRatio.find("topk ratio 0.15\n"), 16);
  s = parseManifest(noRatio, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("missing the 'topk ratio R' line"),
            std::string::npos)
      << s.message;
  for (const char *r : {"0", "1.5", "nan", "x"}) {
    std::string badRatio = text;
    badRatio.replace(badRatio.find("topk ratio 0.15"), 15,
                     std::string("topk ratio ") + r);
    s = parseManifest(badRatio, bad);
    EXPECT_FALSE(s.ok) << r;
    EXPECT_NE(s.message.find("must be a number in (0, 1]"), std::string::npos)
        << s.message;
  }
  std::string misplaced = text;
  misplaced.insert(misplaced.find("arg rows_indptr"), "topk ratio 0.5\n");
  s = parseManifest(misplaced, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("belongs to kernel 'select_topk'"),
            std::string::npos)
      << s.message;
}

TEST(BundleManifest, AppendKVSlotsKernel) {
  std::string fused = fusedSplitManifest();
  std::string append = "kernel append_kv_slots k.cubin pa_append_kv_slots\n"
                       "arg k_new memref 3 f16\n"
                       "arg v_new memref 3 f16\n"
                       "arg slot_mapping memref 1 i32\n"
                       "arg kv memref 5 f16\n"
                       "launch grid batch 1 1 block 128 1 1 smem 0\n";
  std::string text = fused.substr(0, fused.size() - 4) + append + "end\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::AppendKVSlots);
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->args.size(), 4u);
  EXPECT_EQ(k->args[2].role, ArgRole::SlotMapping);
  // The append's rows are its `batch`.
  ProblemDims d;
  d.batch = 77;
  EXPECT_EQ(roleShape(m.config, ArgRole::KNew, d),
            (std::vector<int64_t>{77, 8, 128}));
  EXPECT_EQ(roleShape(m.config, ArgRole::SlotMapping, d),
            (std::vector<int64_t>{77}));
  // Its role set is fixed: no slot mapping, or a query, is an error.
  std::string noSlots = text;
  noSlots.erase(noSlots.find("arg slot_mapping memref 1 i32\n"), 30);
  Manifest bad;
  s = parseManifest(noSlots, bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("slot_mapping"), std::string::npos) << s.message;
  std::string withQ = text;
  withQ.insert(withQ.find("arg k_new"), "arg q memref 3 f16\n");
  s = parseManifest(withQ, bad);
  EXPECT_FALSE(s.ok) << "append_kv_slots accepted a q argument";
}

TEST(BundleManifest, CommentsBlankLinesAndSpacing) {
  std::string text = "# a bundle\n\n  pa-bundle   1   # version\n";
  for (size_t i = 1; i < kExample.size(); ++i)
    text += "\t" + kExample[i] + "  # line " + std::to_string(i) + "\r\n\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(m.kernels.size(), 3u);
}

TEST(BundleManifest, DecodeOnlySplitStorageHnd) {
  std::string text = "pa-bundle 1\n"
                     "config kv split dtype bf16 layout hnd group 1 kv_heads "
                     "32 page_size 64 head_dim 64\n"
                     "kernel decode d.ptx my_decode\n"
                     "arg q memref 3 bf16\n"
                     "arg k memref 4 bf16\n"
                     "arg v memref 4 bf16\n"
                     "arg kv_indptr memref 1 i32\n"
                     "arg kv_indices memref 1 i32\n"
                     "arg kv_last_page_len memref 1 i32\n"
                     "arg o memref 3 bf16\n"
                     "arg lse memref 2 f32\n"
                     "launch grid batch num_q_heads 2 block 32 4 1 smem 65536\n"
                     "end\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(m.config.kv, KVStorage::Split);
  EXPECT_EQ(m.config.layout, CacheLayout::HND);
  EXPECT_EQ(m.config.dtype, DType::BF16);
  EXPECT_FALSE(m.hasSplitKernels());
  const KernelSpec *d = m.find(KernelKind::Decode);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->launch.grid[1].symbol, GridSymbol::NumQHeads);
  EXPECT_EQ(d->launch.grid[2].value, 2);
  EXPECT_EQ(d->launch.block[1], 4);
  EXPECT_EQ(d->launch.sharedBytes, 65536);
}

TEST(BundleManifest, HeaderErrors) {
  expectError("", 0, "empty manifest");
  expectError("# nothing\n", 1, "empty manifest");
  expectError(removed(1), 1, "expected the header 'pa-bundle 1'");
  expectError(replaced(1, "pa-bundle 2"), 1, "unsupported bundle version 2");
  expectError(replaced(1, "pa-bundle one"), 1, "not an integer");
  expectError(replaced(1, "pa-bundle 1 extra"), 1, "pa-bundle VERSION");
  expectError(inserted(2, "pa-bundle 1"), 2, "duplicate 'pa-bundle'");
}

TEST(BundleManifest, ConfigErrors) {
  const std::string base = "config head_dim 128 page_size 16 kv_heads 8 "
                           "group 4 layout nhd dtype f16";
  expectError(replaced(2, base + " kv joint color red"), 2,
              "unknown config key 'color'");
  expectError(replaced(2, base + " kv joint head_dim 64"), 2,
              "duplicate config key 'head_dim'");
  expectError(replaced(2, base), 2, "missing key 'kv'");
  expectError(replaced(2, base + " kv"), 2, "KEY VALUE pairs");
  expectError(replaced(2, base + " kv fused"), 2, "unknown kv storage 'fused'");
  expectError(replaced(2, "config head_dim 128 page_size 16 kv_heads 8 group "
                          "4 layout nhdd dtype f16 kv joint"),
              2, "unknown layout 'nhdd'");
  expectError(replaced(2, "config head_dim 128 page_size 16 kv_heads 8 group "
                          "4 layout nhd dtype fp8 kv joint"),
              2, "unknown dtype 'fp8'");
  expectError(replaced(2, "config head_dim 0 page_size 16 kv_heads 8 group "
                          "4 layout nhd dtype f16 kv joint"),
              2, "head_dim = 0");
  expectError(replaced(2, "config head_dim 12x page_size 16 kv_heads 8 group "
                          "4 layout nhd dtype f16 kv joint"),
              2, "not an integer");
  expectError(inserted(3, kExample[1]), 3, "duplicate 'config'");
  expectError(removed(2), 2, "'kernel' before the 'config' line");
  expectError(inserted(12, kExample[1]), 12, "before the first kernel");
}

TEST(BundleManifest, KernelErrors) {
  expectError(replaced(3, "kernel append p.cubin pa_append"), 3,
              "unknown kernel 'append'");
  expectError(replaced(3, "kernel decode decode.cubin"), 3,
              "kernel NAME FILE SYMBOL");
  expectError(replaced(12, "kernel decode d2.cubin pa_decode2"), 12,
              "duplicate kernel 'decode'");
  expectError(replaced(3, "kernel decode /tmp/decode.cubin pa_decode"), 3,
              "relative");
  expectError(replaced(3, "kernel decode ../x/decode.cubin pa_decode"), 3,
              "'..'");
  expectError(inserted(3, "arg q memref 3 f16"), 3, "'arg' outside a kernel");
  expectError(inserted(3, "launch grid 1 1 1 block 1 1 1 smem 0"), 3,
              "'launch' outside a kernel");
  expectError(inserted(3, "frobnicate"), 3, "unknown directive 'frobnicate'");
  // Missing launch: reported at the kernel's line.
  expectError(removed(11), 3, "missing 'launch'");
  expectError(inserted(12, kExample[10]), 12, "duplicate 'launch'");
  expectError(inserted(12, "arg q memref 3 f16"), 12,
              "after the kernel's 'launch'");
  // Missing role: reported at the kernel's line.
  expectError(removed(10), 3, "missing argument role 'lse'");
}

TEST(BundleManifest, ArgErrors) {
  expectError(replaced(4, "arg query memref 3 f16"), 4,
              "unknown argument role 'query'");
  expectError(replaced(4, "arg q tensor 3 f16"), 4,
              "unknown argument kind 'tensor'");
  expectError(replaced(4, "arg q memref 2 f16"), 4,
              "must be a memref of rank 3, got 2");
  expectError(replaced(4, "arg q memref three f16"), 4, "not an integer");
  expectError(replaced(4, "arg q memref 3 f32"), 4,
              "must have element type f16");
  expectError(replaced(4, "arg q memref 3 f64"), 4,
              "unknown element type 'f64'");
  expectError(replaced(6, "arg kv_indptr memref 1 i64"), 6,
              "unknown element type 'i64'");
  expectError(replaced(6, "arg kv_indptr memref 1 f32"), 6,
              "must have element type i32");
  expectError(replaced(10, "arg lse memref 2 f16"), 10,
              "must have element type f32");
  expectError(replaced(5, "arg k memref 4 f16"), 5,
              "role 'k' is not an argument of kernel 'decode' with kv joint");
  expectError(replaced(10, "arg work_indptr memref 1 i32"), 10,
              "not an argument of kernel 'decode'");
  expectError(replaced(5, "arg q memref 3 f16"), 5,
              "duplicate argument role 'q' (first on line 4)");
  expectError(replaced(4, "arg q memref 3"), 4, "arg ROLE memref RANK TYPE");
}

TEST(BundleManifest, LaunchErrors) {
  expectError(replaced(11, "launch grid batch heads 1 block 128 1 1 smem 0"),
              11, "grid extent 'heads'");
  expectError(replaced(11, "launch grid batch kv_heads 0 block 128 1 1 smem 0"),
              11, "grid extent 0 must be positive");
  expectError(replaced(11, "launch grid batch kv_heads 1 block 2048 1 1 smem 0"),
              11, "block extent 2048");
  expectError(replaced(11, "launch grid batch kv_heads 1 block 64 32 1 smem 0"),
              11, "2048 threads exceeds 1024");
  expectError(replaced(11, "launch grid batch kv_heads 1 block 128 1 1"), 11,
              "launch grid X Y Z block X Y Z smem BYTES");
  expectError(replaced(11, "launch grid batch kv_heads 1 block 128 1 1 smem -4"),
              11, "smem -4");
  expectError(replaced(11, "launch grid batch kv_heads 1 threads 128 1 1 smem 0"),
              11, "launch grid X Y Z");
}

TEST(BundleManifest, StructureErrors) {
  expectError(removed(32), 31, "missing 'end'");
  expectError(join(kExample) + "kernel decode x.cubin x\n", 33,
              "text after 'end'");
  expectError(replaced(32, "end now"), 32, "'end' takes no operands");
  // No decode kernel.
  {
    std::vector<std::string> lines(kExample.begin() + 11, kExample.end());
    lines.insert(lines.begin(), kExample.begin(), kExample.begin() + 2);
    expectError(join(lines), 23, "no 'decode' kernel");
  }
  // decode_partial without merge_segments.
  {
    std::vector<std::string> lines(kExample.begin(), kExample.begin() + 24);
    lines.push_back("end");
    expectError(join(lines), 25,
                "'decode_partial' and 'prefill_partial' need "
                "'merge_segments'");
  }
  // A kernel's missing role is found when 'end' closes it.
  expectError(removed(30), 25, "missing argument role 'lse'");
}

TEST(BundleManifest, ReadManifestNamesTheFile) {
  Manifest m;
  Status s = readManifest("/nonexistent-pa-bundle-dir", m);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("/nonexistent-pa-bundle-dir/bundle.manifest"),
            std::string::npos)
      << s.message;
}

//===----------------------------------------------------------------------===//
// Spellings
//===----------------------------------------------------------------------===//

/// Every enumerator of E (values 0 .. n-1) spells a distinct name that
/// fromString maps back; other text (also in another case) is rejected and
/// leaves `out` alone.
template <typename E> void expectSpellingsRoundTrip(int n, const char *what) {
  std::vector<std::string> seen;
  for (int i = 0; i < n; ++i) {
    E e = static_cast<E>(i);
    std::string name = toString(e);
    SCOPED_TRACE(std::string(what) + " '" + name + "'");
    EXPECT_NE(name, "?");
    EXPECT_EQ(std::find(seen.begin(), seen.end(), name), seen.end())
        << "spelled twice";
    seen.push_back(name);
    E back = static_cast<E>((i + 1) % n);
    ASSERT_TRUE(fromString(name, back));
    EXPECT_EQ(back, e);
    std::string upper = name;
    for (char &c : upper)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    E untouched = e;
    EXPECT_FALSE(fromString(upper, untouched));
    EXPECT_FALSE(fromString(name + " ", untouched));
    EXPECT_FALSE(fromString(name + "x", untouched));
    EXPECT_EQ(untouched, e);
  }
  E untouched = static_cast<E>(0);
  EXPECT_FALSE(fromString("", untouched));
  EXPECT_FALSE(fromString("bogus", untouched));
  EXPECT_EQ(untouched, static_cast<E>(0));
}

TEST(BundleSpellings, EveryEnumeratorRoundTrips) {
  expectSpellingsRoundTrip<DType>(3, "dtype");
  expectSpellingsRoundTrip<CacheLayout>(2, "layout");
  expectSpellingsRoundTrip<KVStorage>(2, "kv storage");
  expectSpellingsRoundTrip<ElemType>(7, "element type");
  expectSpellingsRoundTrip<KVScale>(2, "kv_scale");
  // KVDType::Data is the absence of kv_dtype: never spelled.
  for (KVDType t : {KVDType::E4M3, KVDType::E5M2}) {
    KVDType back = KVDType::Data;
    EXPECT_TRUE(fromString(toString(t), back)) << toString(t);
    EXPECT_EQ(back, t) << toString(t);
  }
  KVDType data = KVDType::E4M3;
  EXPECT_FALSE(fromString("data", data));
  expectSpellingsRoundTrip<KernelKind>(kNumKernelKinds, "kernel kind");
  expectSpellingsRoundTrip<ArgRole>(kNumArgRoles, "argument role");
  expectSpellingsRoundTrip<GridSymbol>(kNumGridSymbols, "grid symbol");
}

/// Expects `name` to spell `value`.
template <typename E> void expectSpelled(const char *name, E value) {
  E e = value == static_cast<E>(0) ? static_cast<E>(1) : static_cast<E>(0);
  ASSERT_TRUE(fromString(name, e)) << name;
  EXPECT_EQ(e, value) << name;
}

TEST(BundleSpellings, ManifestNames) {
  expectSpelled("decode_partial", KernelKind::DecodePartial);
  expectSpelled("kv_last_page_len", ArgRole::KVLastPageLen);
  expectSpelled("work_capacity", GridSymbol::WorkCapacity);
  expectSpelled("bf16", DType::BF16);
  expectSpelled("i32", ElemType::I32);
  expectSpelled("hnd", CacheLayout::HND);
  expectSpelled("split", KVStorage::Split);
  DType d = DType::F16;
  EXPECT_FALSE(fromString("i32", d)) << "i32 is an element type, not a dtype";
  // "literal" names GridSymbol::Literal but is not a grid extent.
  expectError(replaced(11, "launch grid batch literal 1 block 128 1 1 smem 0"),
              11, "grid extent 'literal' is neither an integer nor one of");
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// Canonical manifest text of one configuration: the kernels in `order`
/// (decode_partial and merge_segments only when `split`), each with the
/// roles its kind takes for `storage`, in the order pa-compile writes them.
std::string canonicalManifest(CacheLayout layout, DType dtype,
                              KVStorage storage, bool split,
                              const std::vector<KernelKind> &order) {
  std::string dt = toString(dtype);
  std::string cache =
      storage == KVStorage::Joint
          ? "arg kv memref 5 " + dt + "\n"
          : "arg k memref 4 " + dt + "\narg v memref 4 " + dt + "\n";
  std::string pages = "arg kv_indptr memref 1 i32\n"
                      "arg kv_indices memref 1 i32\n"
                      "arg kv_last_page_len memref 1 i32\n";
  std::string text = "pa-bundle 1\nconfig head_dim 64 page_size 32 kv_heads "
                     "2 group 6 layout " +
                     std::string(toString(layout)) + " dtype " + dt + " kv " +
                     toString(storage) + "\n";
  for (KernelKind k : order) {
    if (!split && k != KernelKind::Decode)
      continue;
    switch (k) {
    case KernelKind::Decode:
      text += "kernel decode k.cubin pa_decode\narg q memref 3 " + dt + "\n" +
              cache + pages + "arg o memref 3 " + dt +
              "\narg lse memref 2 f32\n"
              "launch grid batch kv_heads 1 block 128 1 1 smem 0\n";
      break;
    case KernelKind::DecodePartial:
      text += "kernel decode_partial sub/k2.ptx pa_decode_partial\n"
              "arg q memref 3 " +
              dt + "\n" + cache + pages +
              "arg work_indptr memref 1 i32\narg work_request memref 1 i32\n"
              "arg work_start memref 1 i32\narg work_end memref 1 i32\n"
              "arg o_part memref 3 f32\narg lse_part memref 2 f32\n"
              "launch grid work_capacity num_q_heads 3 block 32 4 2 smem "
              "65536\n";
      break;
    case KernelKind::MergeSegments:
      text += "kernel merge_segments k.cubin pa_merge_segments\n"
              "arg lse_part memref 2 f32\narg o_part memref 3 f32\n"
              "arg work_indptr memref 1 i32\narg o memref 3 " +
              dt +
              "\narg lse memref 2 f32\n"
              "launch grid 7 batch 1 block 1024 1 1 smem 48\n";
      break;
    default:
      ADD_FAILURE() << "canonicalManifest has no text for kernel '"
                    << toString(k) << "'";
    }
  }
  return text + "end\n";
}

TEST(BundlePrint, RoundTripsEveryConfiguration) {
  using K = KernelKind;
  const std::vector<std::vector<K>> orders = {
      {K::Decode, K::DecodePartial, K::MergeSegments},
      {K::MergeSegments, K::Decode, K::DecodePartial}};
  int checked = 0;
  for (CacheLayout layout : {CacheLayout::NHD, CacheLayout::HND})
    for (DType dtype : {DType::F16, DType::BF16, DType::F32})
      for (KVStorage storage : {KVStorage::Joint, KVStorage::Split})
        for (bool split : {false, true})
          for (const std::vector<K> &order : orders) {
            std::string text =
                canonicalManifest(layout, dtype, storage, split, order);
            SCOPED_TRACE(text);
            Manifest m;
            Status s = parseManifest(text, m);
            ASSERT_TRUE(s) << s.message;
            ASSERT_EQ(m.hasSplitKernels(), split);
            EXPECT_EQ(printManifest(m), text);
            Manifest again;
            s = parseManifest(printManifest(m), again);
            ASSERT_TRUE(s) << s.message;
            EXPECT_EQ(again, m);
            ++checked;
          }
  EXPECT_EQ(checked, 2 * 3 * 2 * 2 * 2);
}

TEST(BundlePrint, TheContractExampleIsCanonical) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kExample), m));
  EXPECT_EQ(printManifest(m), join(kExample));
}

TEST(BundlePrint, OtherTextsPrintCanonically) {
  // Comments, blank lines, tabs, CRLF and another key order parse to the
  // same manifest as their canonical print.
  std::string spaced = "# a bundle\n\n  pa-bundle   1   # version\n";
  for (size_t i = 1; i < kExample.size(); ++i)
    spaced += "\t" + kExample[i] + "  # line " + std::to_string(i) + "\r\n\n";
  std::string reordered =
      "pa-bundle 1\n"
      "config kv split dtype bf16 layout hnd group 1 kv_heads 32 page_size 64 "
      "head_dim 64\n"
      "kernel decode d.ptx my_decode\n"
      "arg q memref 3 bf16\narg k memref 4 bf16\narg v memref 4 bf16\n"
      "arg kv_indptr memref 1 i32\narg kv_indices memref 1 i32\n"
      "arg kv_last_page_len memref 1 i32\narg o memref 3 bf16\n"
      "arg lse memref 2 f32\n"
      "launch grid batch num_q_heads 2 block 32 4 1 smem 65536\n"
      "end\n";
  for (const std::string &text : {spaced, reordered}) {
    Manifest m;
    ASSERT_TRUE(parseManifest(text, m));
    std::string printed = printManifest(m);
    EXPECT_NE(printed, text);
    Manifest again;
    Status s = parseManifest(printed, again);
    ASSERT_TRUE(s) << s.message;
    EXPECT_EQ(again, m);
    EXPECT_EQ(printManifest(again), printed);
  }
  Manifest m;
  ASSERT_TRUE(parseManifest(reordered, m));
  const std::string head = "pa-bundle 1\nconfig head_dim 64 page_size 64 "
                           "kv_heads 32 group 1 layout hnd dtype bf16 kv "
                           "split\n";
  EXPECT_EQ(printManifest(m).substr(0, head.size()), head);
}

TEST(BundlePrint, AManifestBuiltFromStrings) {
  // What a compiler does: every field from its spelling.
  Manifest m;
  ASSERT_TRUE(fromString("hnd", m.config.layout));
  ASSERT_TRUE(fromString("f32", m.config.dtype));
  ASSERT_TRUE(fromString("joint", m.config.kv));
  m.config.headDim = 32;
  m.config.pageSize = 1;
  m.config.kvHeads = 1;
  m.config.group = 8;
  KernelSpec k;
  ASSERT_TRUE(fromString("decode", k.kind));
  k.file = "kernels.cubin";
  k.symbol = "pa_decode";
  for (const char *role :
       {"q", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"}) {
    ArgSpec a;
    ASSERT_TRUE(fromString(role, a.role));
    a.rank = std::string(role) == "kv"                              ? 5
             : std::string(role) == "q" || std::string(role) == "o" ? 3
             : std::string(role) == "lse"                           ? 2
                                                                    : 1;
    ASSERT_TRUE(fromString(a.rank == 1 ? "i32" : "f32", a.type));
    k.args.push_back(a);
  }
  ASSERT_TRUE(fromString("batch", k.launch.grid[0].symbol));
  ASSERT_TRUE(fromString("kv_heads", k.launch.grid[1].symbol));
  k.launch.block = {256, 1, 1};
  m.kernels.push_back(k);
  EXPECT_EQ(m.version, kManifestVersion);

  std::string text = printManifest(m);
  EXPECT_EQ(text, "pa-bundle 1\n"
                  "config head_dim 32 page_size 1 kv_heads 1 group 8 layout "
                  "hnd dtype f32 kv joint\n"
                  "kernel decode kernels.cubin pa_decode\n"
                  "arg q memref 3 f32\narg kv memref 5 f32\n"
                  "arg kv_indptr memref 1 i32\narg kv_indices memref 1 i32\n"
                  "arg kv_last_page_len memref 1 i32\narg o memref 3 f32\n"
                  "arg lse memref 2 f32\n"
                  "launch grid batch kv_heads 1 block 256 1 1 smem 0\n"
                  "end\n");
  Manifest parsed;
  Status s = parseManifest(text, parsed);
  ASSERT_TRUE(s) << s.message;
  EXPECT_EQ(parsed, m);
}

TEST(BundlePrint, BrokenManifestsPrintAsTextTheParserRejects) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kExample), m));
  m.kernels[0].args.pop_back(); // decode without lse
  expectError(printManifest(m), 3, "missing argument role 'lse'");
  m.kernels.erase(m.kernels.begin()); // no decode kernel
  expectError(printManifest(m), 23, "no 'decode' kernel");
}

TEST(BundleEquality, ComparesEveryFieldButLines) {
  Manifest a;
  ASSERT_TRUE(parseManifest(join(kExample), a));
  Manifest b = a;
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a != b);
  // Line numbers are not part of a manifest's value.
  b.kernels[1].line = 99;
  b.kernels[1].args[3].line = 7;
  EXPECT_EQ(a, b);
  // Every other field is.
  auto differs = [&](const std::function<void(Manifest &)> &edit,
                     const char *what) {
    Manifest c = a;
    edit(c);
    EXPECT_NE(a, c) << what;
    EXPECT_FALSE(a == c) << what;
  };
  differs([](Manifest &m) { m.version = 2; }, "version");
  differs([](Manifest &m) { m.config.group = 2; }, "config");
  differs([](Manifest &m) { m.kernels.pop_back(); }, "kernel count");
  differs([](Manifest &m) { std::swap(m.kernels[1], m.kernels[2]); },
          "kernel order");
  differs([](Manifest &m) { m.kernels[0].kind = KernelKind::MergeSegments; },
          "kind");
  differs([](Manifest &m) { m.kernels[0].file = "x.cubin"; }, "file");
  differs([](Manifest &m) { m.kernels[0].symbol = "x"; }, "symbol");
  differs(
      [](Manifest &m) {
        std::swap(m.kernels[0].args[0], m.kernels[0].args[1]);
      },
      "argument order");
  differs([](Manifest &m) { m.kernels[0].args[0].rank = 4; }, "rank");
  differs([](Manifest &m) { m.kernels[0].args[0].type = ElemType::F32; },
          "type");
  differs([](Manifest &m) { m.kernels[0].args[0].role = ArgRole::O; }, "role");
  differs([](Manifest &m) { m.kernels[0].launch.block[2] = 2; }, "block");
  differs([](Manifest &m) { m.kernels[0].launch.sharedBytes = 16; }, "smem");
  differs([](Manifest &m) { m.kernels[0].launch.grid[2].value = 2; },
          "literal grid value");
  differs(
      [](Manifest &m) {
        m.kernels[0].launch.grid[0].symbol = GridSymbol::NumQHeads;
      },
      "grid symbol");

  // A symbol's unused value does not matter; a literal's does.
  GridExtent x, y;
  x.symbol = y.symbol = GridSymbol::Batch;
  x.value = 5;
  y.value = 9;
  EXPECT_EQ(x, y);
  x.symbol = y.symbol = GridSymbol::Literal;
  EXPECT_NE(x, y);
  y.value = 5;
  EXPECT_EQ(x, y);
}

//===----------------------------------------------------------------------===//
// Shapes and grids
//===----------------------------------------------------------------------===//

BundleConfig exampleConfig() {
  Manifest m;
  Status s = parseManifest(join(kExample), m);
  EXPECT_TRUE(s.ok) << s.message;
  return m.config;
}

TEST(BundleShapes, RoleShapes) {
  BundleConfig c = exampleConfig();
  ProblemDims d;
  d.batch = 7;
  d.numPages = 100;
  d.nnz = 42;
  d.workCapacity = 19;
  using V = std::vector<int64_t>;
  EXPECT_EQ(roleShape(c, ArgRole::Q, d), (V{7, 32, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::O, d), (V{7, 32, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::LSE, d), (V{7, 32}));
  EXPECT_EQ(roleShape(c, ArgRole::KV, d), (V{100, 2, 16, 8, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::K, d), (V{100, 16, 8, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::KVIndptr, d), (V{8}));
  EXPECT_EQ(roleShape(c, ArgRole::KVIndices, d), (V{42}));
  EXPECT_EQ(roleShape(c, ArgRole::KVLastPageLen, d), (V{7}));
  EXPECT_EQ(roleShape(c, ArgRole::WorkIndptr, d), (V{8}));
  EXPECT_EQ(roleShape(c, ArgRole::WorkRequest, d), (V{19}));
  EXPECT_EQ(roleShape(c, ArgRole::WorkStart, d), (V{19}));
  EXPECT_EQ(roleShape(c, ArgRole::WorkEnd, d), (V{19}));
  EXPECT_EQ(roleShape(c, ArgRole::OPart, d), (V{19, 32, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::LSEPart, d), (V{19, 32}));
  c.layout = CacheLayout::HND;
  EXPECT_EQ(roleShape(c, ArgRole::KV, d), (V{100, 2, 8, 16, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::V, d), (V{100, 8, 16, 128}));
}

TEST(BundleShapes, ContiguousStrides) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(contiguousStrides({100, 2, 16, 8, 128}),
            (V{2 * 16 * 8 * 128, 16 * 8 * 128, 8 * 128, 128, 1}));
  EXPECT_EQ(contiguousStrides({5}), (V{1}));
  EXPECT_EQ(contiguousStrides({0, 3}), (V{3, 1}));
  EXPECT_EQ(contiguousStrides({}), (V{}));
}

TEST(BundleShapes, ResolveGrid) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kExample), m).ok);
  ProblemDims d;
  d.batch = 33;
  d.workCapacity = 77;
  std::array<uint32_t, 3> g{};
  ASSERT_TRUE(resolveGrid(m.find(KernelKind::Decode)->launch, m.config, d, g));
  EXPECT_EQ(g, (std::array<uint32_t, 3>{33, 8, 1}));
  ASSERT_TRUE(
      resolveGrid(m.find(KernelKind::DecodePartial)->launch, m.config, d, g));
  EXPECT_EQ(g, (std::array<uint32_t, 3>{77, 8, 1}));
  ASSERT_TRUE(
      resolveGrid(m.find(KernelKind::MergeSegments)->launch, m.config, d, g));
  EXPECT_EQ(g, (std::array<uint32_t, 3>{33, 1, 1}));

  LaunchSpec l;
  l.grid[0].symbol = GridSymbol::NumQHeads;
  l.grid[1].symbol = GridSymbol::Batch;
  ASSERT_TRUE(resolveGrid(l, m.config, d, g));
  EXPECT_EQ(g, (std::array<uint32_t, 3>{32, 33, 1}));
  d.batch = 70000; // y is limited to 65535
  Status s = resolveGrid(l, m.config, d, g);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("grid y = batch = 70000 exceeds"),
            std::string::npos)
      << s.message;
  d.batch = 0;
  s = resolveGrid(l, m.config, d, g);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("grid y = batch = 0 is not positive"),
            std::string::npos)
      << s.message;
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

TEST(BundlePacking, DecodeDescriptors) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kExample), m).ok);
  const KernelSpec &k = *m.find(KernelKind::Decode);
  ProblemDims d;
  d.batch = 3;
  d.numPages = 10;
  d.nnz = 6;
  ArgBindings b;
  const uint64_t base = 0x7f0000000000ull;
  ArgRole roles[] = {ArgRole::Q,         ArgRole::KV,
                     ArgRole::KVIndptr,  ArgRole::KVIndices,
                     ArgRole::KVLastPageLen, ArgRole::O,
                     ArgRole::LSE};
  for (int i = 0; i < 7; ++i)
    b.bind(roles[i], base + 0x1000 * i, roleShape(m.config, roles[i], d));
  // Roles the kernel does not take may be bound too; they are ignored.
  b.bind(ArgRole::OPart, 0xdead, {1, 2, 3});

  PackedParams p;
  Status s = packParams(k, b, p);
  ASSERT_TRUE(s.ok) << s.message;
  ASSERT_EQ(static_cast<int64_t>(p.size()), k.numParams());
  std::vector<uint64_t> expected = {
      // q [3, 32, 128]
      base, base, 0, 3, 32, 128, 32 * 128, 128, 1,
      // kv [10, 2, 16, 8, 128]
      base + 0x1000, base + 0x1000, 0, 10, 2, 16, 8, 128, 2 * 16 * 8 * 128,
      16 * 8 * 128, 8 * 128, 128, 1,
      // kv_indptr [4], kv_indices [6], kv_last_page_len [3]
      base + 0x2000, base + 0x2000, 0, 4, 1, //
      base + 0x3000, base + 0x3000, 0, 6, 1, //
      base + 0x4000, base + 0x4000, 0, 3, 1,
      // o [3, 32, 128]
      base + 0x5000, base + 0x5000, 0, 3, 32, 128, 32 * 128, 128, 1,
      // lse [3, 32]
      base + 0x6000, base + 0x6000, 0, 3, 32, 32, 1};
  EXPECT_EQ(p.words(), expected);

  void **params = p.kernelParams();
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(*static_cast<uint64_t *>(params[i]), expected[i]) << i;
}

TEST(BundlePacking, ArgumentOrderFollowsTheManifest) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kExample), m).ok);
  const KernelSpec &k = *m.find(KernelKind::MergeSegments);
  ProblemDims d;
  d.batch = 2;
  d.workCapacity = 5;
  ArgBindings b;
  for (ArgRole r : {ArgRole::OPart, ArgRole::LSEPart, ArgRole::WorkIndptr,
                    ArgRole::O, ArgRole::LSE})
    b.bind(r, 100 + static_cast<uint64_t>(r), roleShape(m.config, r, d));
  PackedParams p;
  ASSERT_TRUE(packParams(k, b, p).ok);
  std::vector<uint64_t> expected = {
      113, 113, 0, 5, 32, 128, 32 * 128, 128, 1, // o_part
      114, 114, 0, 5, 32, 32, 1,                 // lse_part
      109, 109, 0, 3, 1,                         // work_indptr
      107, 107, 0, 2, 32, 128, 32 * 128, 128, 1, // o
      108, 108, 0, 2, 32, 32, 1};                // lse
  EXPECT_EQ(p.words(), expected);
}

TEST(BundlePacking, Errors) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kExample), m).ok);
  const KernelSpec &k = *m.find(KernelKind::MergeSegments);
  ArgBindings b;
  b.bind(ArgRole::OPart, 1, {5, 32, 128});
  b.bind(ArgRole::LSEPart, 2, {5, 32});
  b.bind(ArgRole::WorkIndptr, 3, {3});
  b.bind(ArgRole::O, 4, {2, 32, 128});
  PackedParams p;
  Status s = packParams(k, b, p);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("argument role 'lse' is not bound"),
            std::string::npos)
      << s.message;

  b.bind(ArgRole::LSE, 5, {2, 32, 1});
  s = packParams(k, b, p);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("'lse' is bound with rank 3, the manifest says 2"),
            std::string::npos)
      << s.message;

  b.bind(ArgRole::LSE, 5, {-2, 32});
  s = packParams(k, b, p);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("negative size -2"), std::string::npos)
      << s.message;

  b.bind(ArgRole::LSE, 5, {2, 32});
  s = packParams(k, b, p);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(static_cast<int64_t>(p.size()), k.numParams());
}

//===----------------------------------------------------------------------===//
// Prefill kernels
//===----------------------------------------------------------------------===//

/// A prefill-only bundle with every optional role but the custom mask, one
/// entry per line (line i + 1 is kPrefill[i]).
const std::vector<std::string> kPrefill = {
    "pa-bundle 1",                                                         // 1
    "config head_dim 128 page_size 16 kv_heads 8 group 4 layout nhd dtype "
    "f16 kv joint",                                                        // 2
    "kernel prefill kernels.cubin pa_prefill",                             // 3
    "prefill queries_per_tile 16 causal 1 window 0 soft_cap 0 sm_scale "
    "0.0883883461 lse_base2 0",                                            // 4
    "arg q memref 3 f16",                                                  // 5
    "arg qo_indptr memref 1 i32",                                          // 6
    "arg kv memref 5 f16",                                                 // 7
    "arg kv_indptr memref 1 i32",                                          // 8
    "arg kv_indices memref 1 i32",                                         // 9
    "arg kv_last_page_len memref 1 i32",                                   // 10
    "arg q_positions memref 1 i32",                                        // 11
    "arg alibi_slopes memref 1 f32",                                       // 12
    "arg o memref 3 f16",                                                  // 13
    "arg lse memref 2 f32",                                                // 14
    "launch grid q_tiles kv_heads batch block 128 1 1 smem 73728",         // 15
    "end",                                                                 // 16
};

/// kPrefill with 1-based line `line` replaced by `text` ("" removes it).
std::string prefillWith(int line, const std::string &text) {
  std::vector<std::string> lines = kPrefill;
  if (text.empty())
    lines.erase(lines.begin() + (line - 1));
  else
    lines[line - 1] = text;
  return join(lines);
}

/// kPrefill with `text` inserted before 1-based line `line`.
std::string prefillInserted(int line, const std::string &text) {
  std::vector<std::string> lines = kPrefill;
  lines.insert(lines.begin() + (line - 1), text);
  return join(lines);
}

/// kPrefill's prefill line with `rest` after "prefill ".
std::string prefillLine(const std::string &rest) {
  return prefillWith(4, "prefill " + rest);
}

TEST(BundlePrefill, ParsesAPrefillOnlyBundle) {
  Manifest m;
  Status s = parseManifest(join(kPrefill), m);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(m.find(KernelKind::Decode), nullptr);
  EXPECT_FALSE(m.hasSplitKernels());
  const KernelSpec *k = m.find(KernelKind::Prefill);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->prefill.has_value());
  EXPECT_EQ(k->prefill->queriesPerTile, 16);
  EXPECT_TRUE(k->prefill->causal);
  EXPECT_EQ(k->prefill->window, 0);
  EXPECT_EQ(k->prefill->softCap, 0.0f);
  EXPECT_EQ(k->prefill->smScale, 0.0883883461f);
  EXPECT_EQ(k->prefill->smScale, static_cast<float>(1.0 / std::sqrt(128.0)));
  EXPECT_FALSE(k->prefill->lseBase2);
  EXPECT_EQ(k->prefill->line, 4);
  ASSERT_EQ(k->args.size(), 10u);
  EXPECT_EQ(k->args[1].role, ArgRole::QOIndptr);
  EXPECT_EQ(k->args[6].role, ArgRole::QPositions);
  EXPECT_EQ(k->args[7].role, ArgRole::AlibiSlopes);
  EXPECT_EQ(k->args[7].type, ElemType::F32);
  EXPECT_TRUE(k->hasRole(ArgRole::QPositions));
  EXPECT_FALSE(k->hasRole(ArgRole::CustomMask));
  EXPECT_EQ(k->launch.grid[0].symbol, GridSymbol::QTiles);
  EXPECT_EQ(k->launch.grid[1].symbol, GridSymbol::KVHeads);
  EXPECT_EQ(k->launch.grid[2].symbol, GridSymbol::Batch);
  EXPECT_EQ(k->launch.sharedBytes, 73728);
  // The canonical text prints back byte for byte.
  EXPECT_EQ(printManifest(m), join(kPrefill));
}

TEST(BundlePrefill, CustomMaskSplitStorageAndDecodeBeside) {
  // Decode and prefill in one bundle; the prefill kernel with a custom mask,
  // split storage, keys in another order and no prefill line first.
  std::string text =
      "pa-bundle 1\n"
      "config head_dim 64 page_size 5 kv_heads 2 group 8 layout hnd dtype "
      "bf16 kv split\n"
      "kernel decode k.cubin pa_decode\n"
      "arg q memref 3 bf16\narg k memref 4 bf16\narg v memref 4 bf16\n"
      "arg kv_indptr memref 1 i32\narg kv_indices memref 1 i32\n"
      "arg kv_last_page_len memref 1 i32\narg o memref 3 bf16\n"
      "arg lse memref 2 f32\n"
      "launch grid batch kv_heads 1 block 128 1 1 smem 0\n"
      "kernel prefill k.cubin pa_prefill\n"
      "arg q memref 3 bf16\narg qo_indptr memref 1 i32\n"
      "arg k memref 4 bf16\narg v memref 4 bf16\n"
      "arg kv_indptr memref 1 i32\narg kv_indices memref 1 i32\n"
      "arg kv_last_page_len memref 1 i32\n"
      "arg custom_mask memref 1 i8\narg mask_indptr memref 1 i32\n"
      "arg o memref 3 bf16\narg lse memref 2 f32\n"
      "prefill lse_base2 1 sm_scale 0.125 soft_cap 30 window 0 causal 0 "
      "queries_per_tile 8\n"
      "launch grid q_tiles kv_heads batch block 256 1 1 smem 99000\n"
      "end\n";
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::Prefill);
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->hasRole(ArgRole::CustomMask));
  EXPECT_EQ(k->args[7].type, ElemType::I8);
  EXPECT_EQ(k->prefill->softCap, 30.0f);
  EXPECT_EQ(k->prefill->smScale, 0.125f);
  EXPECT_TRUE(k->prefill->lseBase2);
  EXPECT_EQ(k->prefill->queriesPerTile, 8);
  // The canonical print puts the prefill line right after the kernel line
  // with the keys in order, and parses back to the same manifest.
  std::string printed = printManifest(m);
  EXPECT_NE(printed.find("kernel prefill k.cubin pa_prefill\nprefill "
                         "queries_per_tile 8 causal 0 window 0 soft_cap 30 "
                         "sm_scale 0.125 lse_base2 1\narg q memref 3 bf16\n"),
            std::string::npos)
      << printed;
  Manifest again;
  s = parseManifest(printed, again);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(again, m);
  EXPECT_EQ(printManifest(again), printed);
}

TEST(BundlePrefill, FloatsRoundTripExactly) {
  // Random f32 values of every magnitude print (%.9g) and parse back to the
  // same float.
  const uint64_t seed = 20240611;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> mantissa(0.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kPrefill), m).ok);
  for (int i = 0; i < 2000; ++i) {
    PrefillSpec &p = *m.kernels[0].prefill;
    p.smScale = static_cast<float>(mantissa(gen) * std::pow(10.0, exponent(gen)));
    p.softCap = static_cast<float>(mantissa(gen) * std::pow(10.0, exponent(gen)));
    p.window = static_cast<int64_t>(gen() % 100000);
    p.causal = gen() % 2;
    p.lseBase2 = gen() % 2;
    p.queriesPerTile = 1 + static_cast<int64_t>(gen() % 256);
    std::string text = printManifest(m);
    Manifest back;
    Status s = parseManifest(text, back);
    ASSERT_TRUE(s.ok) << s.message << "\n" << text;
    ASSERT_EQ(back, m) << text;
    EXPECT_EQ(back.kernels[0].prefill->smScale, p.smScale);
    EXPECT_EQ(back.kernels[0].prefill->softCap, p.softCap);
  }
}

TEST(BundlePrefill, EqualityComparesThePrefillLine) {
  Manifest a;
  ASSERT_TRUE(parseManifest(join(kPrefill), a).ok);
  Manifest b = a;
  b.kernels[0].prefill->line = 77;
  EXPECT_EQ(a, b);
  auto differs = [&](const std::function<void(PrefillSpec &)> &edit,
                     const char *what) {
    Manifest c = a;
    edit(*c.kernels[0].prefill);
    EXPECT_NE(a, c) << what;
  };
  differs([](PrefillSpec &p) { p.queriesPerTile = 8; }, "queries_per_tile");
  differs([](PrefillSpec &p) { p.causal = false; }, "causal");
  differs([](PrefillSpec &p) { p.window = 4; }, "window");
  differs([](PrefillSpec &p) { p.softCap = 1; }, "soft_cap");
  differs([](PrefillSpec &p) { p.smScale = 1; }, "sm_scale");
  differs([](PrefillSpec &p) { p.lseBase2 = true; }, "lse_base2");
  Manifest c = a;
  c.kernels[0].prefill.reset();
  EXPECT_NE(a, c) << "prefill line present vs absent";
}

TEST(BundlePrefill, PrefillLineErrors) {
  const std::string full = "queries_per_tile 16 causal 1 window 0 soft_cap 0 "
                           "sm_scale 0 lse_base2 0";
  expectError(prefillWith(4, ""), 3,
              "kernel 'prefill': missing the 'prefill queries_per_tile N");
  expectError(prefillInserted(5, "prefill " + full), 5,
              "duplicate 'prefill' line (first on line 4)");
  expectError(prefillLine("queries_per_tile 16 causal 1"), 4,
              "prefill line is missing key 'window'");
  expectError(prefillLine(full + " tile_kv 64"), 4,
              "unknown prefill key 'tile_kv'");
  expectError(prefillLine(full + " causal"), 4,
              "'prefill' expects KEY VALUE pairs");
  expectError(prefillLine(full + " causal 0"), 4,
              "duplicate prefill key 'causal'");
  expectError(prefillLine("queries_per_tile 0 causal 1 window 0 soft_cap 0 "
                          "sm_scale 0 lse_base2 0"),
              4, "prefill queries_per_tile '0' must be an integer in [1, 2^20]");
  expectError(prefillLine("queries_per_tile x causal 1 window 0 soft_cap 0 "
                          "sm_scale 0 lse_base2 0"),
              4, "prefill queries_per_tile 'x'");
  expectError(prefillLine("queries_per_tile 16 causal 2 window 0 soft_cap 0 "
                          "sm_scale 0 lse_base2 0"),
              4, "prefill causal '2' must be 0 or 1");
  expectError(prefillLine("queries_per_tile 16 causal 1 window 0 soft_cap 0 "
                          "sm_scale 0 lse_base2 yes"),
              4, "prefill lse_base2 'yes' must be 0 or 1");
  expectError(prefillLine("queries_per_tile 16 causal 1 window -1 soft_cap 0 "
                          "sm_scale 0 lse_base2 0"),
              4, "prefill window '-1' must be an integer in [0, 2^31-1]");
  expectError(prefillLine("queries_per_tile 16 causal 1 window 0 soft_cap -2 "
                          "sm_scale 0 lse_base2 0"),
              4, "prefill soft_cap '-2' must be a finite number >= 0");
  expectError(prefillLine("queries_per_tile 16 causal 1 window 0 soft_cap 0 "
                          "sm_scale nan lse_base2 0"),
              4, "prefill sm_scale 'nan' must be a finite number >= 0");
  expectError(prefillLine("queries_per_tile 16 causal 1 window 0 soft_cap 0 "
                          "sm_scale 1e99 lse_base2 0"),
              4, "prefill sm_scale '1e99' must be a finite number");
  expectError(prefillLine("queries_per_tile 16 causal 1 window 0 soft_cap 0x1 "
                          "sm_scale 0 lse_base2 0"),
              4, "prefill soft_cap '0x1'");
  // The line belongs to a prefill kernel.
  expectError(inserted(4, "prefill " + full), 4,
              "a 'prefill' line belongs to a prefill or mla_decode kernel, "
              "not to kernel 'decode'");
  {
    std::vector<std::string> lines = kPrefill;
    lines.insert(lines.begin() + 2, "prefill " + full);
    expectError(join(lines), 3, "'prefill' outside a kernel");
  }
}

TEST(BundlePrefill, RoleErrors) {
  expectError(prefillWith(6, ""), 3,
              "kernel 'prefill': missing argument role 'qo_indptr'");
  expectError(prefillWith(6, "arg qo_indptr memref 2 i32"), 6,
              "role 'qo_indptr' must be a memref of rank 1, got 2");
  expectError(prefillWith(11, "arg q_positions memref 1 i8"), 11,
              "role 'q_positions' must have element type i32");
  expectError(prefillWith(12, "arg alibi_slopes memref 1 f16"), 12,
              "role 'alibi_slopes' must have element type f32");
  expectError(prefillWith(12, "arg custom_mask memref 1 i32"), 12,
              "role 'custom_mask' must have element type i8");
  expectError(prefillWith(12, "arg work_indptr memref 1 i32"), 12,
              "role 'work_indptr' is not an argument of kernel 'prefill'");
  expectError(prefillWith(12, "arg q_positions memref 1 i32"), 12,
              "duplicate argument role 'q_positions' (first on line 11)");
  // Prefill roles are not decode arguments.
  expectError(inserted(5, "arg qo_indptr memref 1 i32"), 5,
              "role 'qo_indptr' is not an argument of kernel 'decode'");
  expectError(inserted(5, "arg alibi_slopes memref 1 f32"), 5,
              "role 'alibi_slopes' is not an argument of kernel 'decode'");
  // custom_mask and mask_indptr come together.
  expectError(prefillWith(12, "arg custom_mask memref 1 i8"), 3,
              "'custom_mask' and 'mask_indptr' come together");
  expectError(prefillWith(12, "arg mask_indptr memref 1 i32"), 3,
              "'custom_mask' and 'mask_indptr' come together");
  // A custom mask excludes causal and a window.
  {
    std::vector<std::string> lines = kPrefill;
    lines[11] = "arg custom_mask memref 1 i8";
    lines.insert(lines.begin() + 12, "arg mask_indptr memref 1 i32");
    expectError(join(lines), 3, "a custom mask excludes causal");
    lines[3] = "prefill queries_per_tile 16 causal 0 window 128 soft_cap 0 "
               "sm_scale 0 lse_base2 0";
    expectError(join(lines), 3, "a custom mask excludes a window (prefill "
                                "line says window 128)");
    lines[3] = "prefill queries_per_tile 16 causal 0 window 0 soft_cap 0 "
               "sm_scale 0 lse_base2 0";
    Manifest m;
    Status s = parseManifest(join(lines), m);
    EXPECT_TRUE(s.ok) << s.message;
  }
}

TEST(BundlePrefill, KernelSetErrors) {
  // Neither decode nor prefill.
  {
    std::vector<std::string> lines(kExample.begin() + 11, kExample.end());
    lines.insert(lines.begin(), kExample.begin(), kExample.begin() + 2);
    expectError(join(lines), 23,
                "the bundle has no 'decode' kernel and no 'prefill' kernel");
  }
  // Split kernels beside prefill but without decode.
  {
    std::vector<std::string> lines(kPrefill.begin(), kPrefill.end() - 1);
    lines.insert(lines.end(), kExample.begin() + 11, kExample.end());
    expectError(join(lines), 36,
                "'decode_partial' needs a 'decode' kernel");
  }
  // decode_split beside prefill but without decode.
  {
    std::string fused = fusedSplitManifest();
    std::vector<std::string> lines(kPrefill.begin(), kPrefill.end() - 1);
    Manifest m;
    Status s = parseManifest(
        join(lines) + fused.substr(fused.find("kernel decode_split")), m);
    ASSERT_FALSE(s.ok);
    EXPECT_NE(s.message.find("'decode_split' needs a 'decode' kernel"),
              std::string::npos)
        << s.message;
  }
  // Both kinds, each once.
  {
    std::vector<std::string> lines(kExample.begin(), kExample.end() - 1);
    lines.insert(lines.end(), kPrefill.begin() + 2, kPrefill.end());
    Manifest m;
    Status s = parseManifest(join(lines), m);
    ASSERT_TRUE(s.ok) << s.message;
    EXPECT_EQ(m.kernels.size(), 4u);
    lines.insert(lines.end() - 1, kPrefill.begin() + 2, kPrefill.end() - 1);
    expectError(join(lines), 45, "duplicate kernel 'prefill'");
  }
}

TEST(BundlePrefill, RoleShapesAndGrid) {
  BundleConfig c = exampleConfig();
  ProblemDims d;
  d.batch = 5;
  d.numPages = 100;
  d.nnz = 42;
  d.numQueryRows = 300;
  d.maskBytes = 999;
  d.qTiles = 19;
  using V = std::vector<int64_t>;
  EXPECT_EQ(d.queryRows(), 300);
  EXPECT_EQ(roleShape(c, ArgRole::Q, d), (V{300, 32, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::O, d), (V{300, 32, 128}));
  EXPECT_EQ(roleShape(c, ArgRole::LSE, d), (V{300, 32}));
  EXPECT_EQ(roleShape(c, ArgRole::QOIndptr, d), (V{6}));
  EXPECT_EQ(roleShape(c, ArgRole::MaskIndptr, d), (V{6}));
  EXPECT_EQ(roleShape(c, ArgRole::QPositions, d), (V{300}));
  EXPECT_EQ(roleShape(c, ArgRole::CustomMask, d), (V{999}));
  EXPECT_EQ(roleShape(c, ArgRole::AlibiSlopes, d), (V{32}));
  EXPECT_EQ(roleShape(c, ArgRole::KVLastPageLen, d), (V{5}));
  d.numQueryRows.reset(); // decode: one row per request
  EXPECT_EQ(roleShape(c, ArgRole::Q, d), (V{5, 32, 128}));

  Manifest m;
  ASSERT_TRUE(parseManifest(join(kPrefill), m).ok);
  const LaunchSpec &l = m.find(KernelKind::Prefill)->launch;
  std::array<uint32_t, 3> g{};
  ASSERT_TRUE(resolveGrid(l, m.config, d, g));
  EXPECT_EQ(g, (std::array<uint32_t, 3>{19, 8, 5}));
  d.qTiles = 0;
  Status s = resolveGrid(l, m.config, d, g);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("grid x = q_tiles = 0 is not positive"),
            std::string::npos)
      << s.message;
  d.qTiles = 3;
  d.batch = 65536; // z is limited to 65535
  s = resolveGrid(l, m.config, d, g);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find("grid z = batch = 65536 exceeds the limit 65535"),
            std::string::npos)
      << s.message;
}

TEST(BundlePrefill, PackingBindsEveryRoleInManifestOrder) {
  Manifest m;
  ASSERT_TRUE(parseManifest(join(kPrefill), m).ok);
  const KernelSpec &k = *m.find(KernelKind::Prefill);
  ProblemDims d;
  d.batch = 2;
  d.numPages = 10;
  d.nnz = 6;
  d.numQueryRows = 40;
  ArgBindings b;
  uint64_t ptr = 0x1000;
  for (const ArgSpec &a : k.args)
    b.bind(a.role, ptr += 0x100, roleShape(m.config, a.role, d));
  PackedParams p;
  Status s = packParams(k, b, p);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(static_cast<int64_t>(p.size()), k.numParams());
  // q first ([40, 32, 128]), then qo_indptr ([3]).
  EXPECT_EQ(p.words()[0], 0x1100u);
  EXPECT_EQ(p.words()[3], 40u);
  EXPECT_EQ(p.words()[9], 0x1200u);
  EXPECT_EQ(p.words()[12], 3u);
  EXPECT_EQ(p.words()[13], 1u);
}

//===----------------------------------------------------------------------===//
// prefill_short: the short-batch shape of the prefill kernel
//===----------------------------------------------------------------------===//

/// kPrefill (lines 1-15) plus a prefill_short kernel (lines 16-28) with the
/// same arguments and prefill line but queries_per_tile, then `end` (29).
std::vector<std::string> prefillShortLines() {
  std::vector<std::string> lines(kPrefill.begin(), kPrefill.end() - 1);
  lines.push_back("kernel prefill_short prefill_short.cubin pa_prefill"); // 16
  lines.push_back("prefill queries_per_tile 8 causal 1 window 0 soft_cap 0 "
                  "sm_scale 0.0883883461 lse_base2 0"); // 17
  for (int i = 5; i <= 14; ++i)                         // 18-27
    lines.push_back(kPrefill[i - 1]);
  lines.push_back(
      "launch grid q_tiles kv_heads batch block 128 1 1 smem 40960"); // 28
  lines.push_back("end");                                              // 29
  return lines;
}

/// prefillShortLines with 1-based line `line` replaced by `text` ("" removes
/// it).
std::string prefillShortWith(int line, const std::string &text) {
  std::vector<std::string> lines = prefillShortLines();
  if (text.empty())
    lines.erase(lines.begin() + (line - 1));
  else
    lines[line - 1] = text;
  return join(lines);
}

TEST(BundlePrefillShort, ParsesAndRoundTrips) {
  EXPECT_STREQ(toString(KernelKind::PrefillShort), "prefill_short");
  KernelKind kind;
  ASSERT_TRUE(fromString("prefill_short", kind));
  EXPECT_EQ(kind, KernelKind::PrefillShort);
  EXPECT_TRUE(isPrefillKind(KernelKind::Prefill));
  EXPECT_TRUE(isPrefillKind(KernelKind::PrefillShort));
  EXPECT_FALSE(isPrefillKind(KernelKind::Decode));

  std::string text = join(prefillShortLines());
  Manifest m;
  Status s = parseManifest(text, m);
  ASSERT_TRUE(s.ok) << s.message;
  ASSERT_EQ(m.kernels.size(), 2u);
  const KernelSpec *p = m.find(KernelKind::Prefill);
  const KernelSpec *k = m.find(KernelKind::PrefillShort);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->file, "prefill_short.cubin");
  EXPECT_EQ(k->symbol, "pa_prefill");
  EXPECT_EQ(k->line, 16);
  ASSERT_TRUE(k->prefill.has_value());
  EXPECT_EQ(k->prefill->queriesPerTile, 8);
  EXPECT_EQ(p->prefill->queriesPerTile, 16);
  EXPECT_EQ(k->args, p->args);
  EXPECT_TRUE(k->hasRole(ArgRole::QOIndptr));
  EXPECT_EQ(k->launch.block[0], 128);
  EXPECT_EQ(k->launch.sharedBytes, 40960);
  // Canonical text prints back byte for byte; the printed form parses back
  // to the same manifest.
  EXPECT_EQ(printManifest(m), text);
  Manifest again;
  ASSERT_TRUE(parseManifest(printManifest(m), again).ok);
  EXPECT_EQ(again, m);
  // prefill_short may come first, and beside decode kernels.
  std::vector<std::string> lines = prefillShortLines();
  std::vector<std::string> reordered(lines.begin(), lines.begin() + 2);
  reordered.insert(reordered.end(), lines.begin() + 15, lines.end() - 1);
  reordered.insert(reordered.end(), lines.begin() + 2, lines.begin() + 15);
  reordered.push_back("end");
  Manifest r;
  s = parseManifest(join(reordered), r);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(r.kernels[0].kind, KernelKind::PrefillShort);
  EXPECT_EQ(*r.find(KernelKind::PrefillShort), *k);
}

TEST(BundlePrefillShort, NeedsThePrefillKernel) {
  // prefill_short alone.
  std::vector<std::string> lines = prefillShortLines();
  std::vector<std::string> alone(lines.begin(), lines.begin() + 2);
  alone.insert(alone.end(), lines.begin() + 15, lines.end());
  expectError(join(alone), 29 - 13, "no 'decode' kernel and no 'prefill'");
  // prefill_short beside decode but without prefill.
  std::vector<std::string> withDecode(kExample.begin(), kExample.end() - 1);
  withDecode.insert(withDecode.end(), lines.begin() + 15, lines.end());
  int n = static_cast<int>(withDecode.size());
  Manifest m;
  Status s = parseManifest(join(withDecode), m);
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.message.find(":" + std::to_string(n - 13) +
                           ": kernel 'prefill_short': needs a 'prefill' "
                           "kernel"),
            std::string::npos)
      << s.message;
}

TEST(BundlePrefillShort, MustAgreeWithPrefill) {
  // Its own checks, like any prefill kernel.
  expectError(prefillShortWith(17, ""), 16,
              "kernel 'prefill_short': missing the 'prefill queries_per_tile");
  expectError(prefillShortWith(18, ""), 16,
              "kernel 'prefill_short': missing argument role 'q'");
  expectError(prefillShortWith(28, ""), 16,
              "kernel 'prefill_short': missing 'launch' line");
  // A 'prefill' line only in prefill kernels: prefill_short's is accepted,
  // and it must be complete.
  expectError(prefillShortWith(17, "prefill queries_per_tile 0 causal 1 "
                                   "window 0 soft_cap 0 sm_scale 0 "
                                   "lse_base2 0"),
              17, "prefill queries_per_tile '0' must be an integer");
  // Different arguments: an optional role less (q_positions, line 24) ...
  expectError(prefillShortWith(24, ""), 16,
              "takes 9 arguments, kernel 'prefill' (line 3) takes 10 (both "
              "kernels must take the same arguments)");
  // ... or the same roles in another order.
  {
    std::vector<std::string> lines = prefillShortLines();
    std::swap(lines[23], lines[24]); // q_positions <-> alibi_slopes
    expectError(join(lines), 16,
                "argument 6 is 'alibi_slopes' (line 24), kernel 'prefill' has "
                "'q_positions' (line 11)");
  }
  // A different prefill line in anything but queries_per_tile.
  const char *diffs[] = {
      "prefill queries_per_tile 8 causal 0 window 0 soft_cap 0 sm_scale "
      "0.0883883461 lse_base2 0",
      "prefill queries_per_tile 8 causal 1 window 5 soft_cap 0 sm_scale "
      "0.0883883461 lse_base2 0",
      "prefill queries_per_tile 8 causal 1 window 0 soft_cap 30 sm_scale "
      "0.0883883461 lse_base2 0",
      "prefill queries_per_tile 8 causal 1 window 0 soft_cap 0 sm_scale 0 "
      "lse_base2 0",
      "prefill queries_per_tile 8 causal 1 window 0 soft_cap 0 sm_scale "
      "0.0883883461 lse_base2 1"};
  for (const char *d : diffs) {
    SCOPED_TRACE(d);
    expectError(prefillShortWith(17, d), 16,
                "its prefill line (line 17) differs from kernel 'prefill''s "
                "(line 4) in more than queries_per_tile");
  }
  // The same queries_per_tile is allowed (nothing requires a smaller tile).
  Manifest m;
  Status s = parseManifest(
      prefillShortWith(17, "prefill queries_per_tile 16 causal 1 window 0 "
                           "soft_cap 0 sm_scale 0.0883883461 lse_base2 0"),
      m);
  EXPECT_TRUE(s.ok) << s.message;
}

} // namespace

namespace {
/// kPrefill plus split-KV prefill: prefill_partial (the prefill's optional
/// inputs, the work list, the partial states) and merge_segments.
std::vector<std::string> prefillSplitLines() {
  std::vector<std::string> lines(kPrefill.begin(), kPrefill.end() - 1);
  std::vector<std::string> split = {
      "kernel prefill_partial prefill_short.cubin pa_prefill_partial", // 16
      "prefill queries_per_tile 8 causal 1 window 0 soft_cap 0 sm_scale "
      "0.0883883461 lse_base2 0",                                      // 17
      "arg q memref 3 f16",                                            // 18
      "arg qo_indptr memref 1 i32",                                    // 19
      "arg kv memref 5 f16",                                           // 20
      "arg kv_indptr memref 1 i32",                                    // 21
      "arg kv_indices memref 1 i32",                                   // 22
      "arg kv_last_page_len memref 1 i32",                             // 23
      "arg work_request memref 1 i32",                                 // 24
      "arg work_qo_start memref 1 i32",                                // 25
      "arg work_qo_end memref 1 i32",                                  // 26
      "arg work_kv_start memref 1 i32",                                // 27
      "arg work_kv_end memref 1 i32",                                  // 28
      "arg work_partial_row memref 1 i32",                             // 29
      "arg work_partial_stride memref 1 i32",                          // 30
      "arg q_positions memref 1 i32",                                  // 31
      "arg alibi_slopes memref 1 f32",                                 // 32
      "arg o_part memref 3 f32",                                       // 33
      "arg lse_part memref 2 f32",                                     // 34
      "launch grid work_capacity kv_heads q_tiles block 128 1 1 smem 0", // 35
      "kernel merge_segments prefill_short.cubin pa_merge_segments",   // 36
      "arg o_part memref 3 f32",                                       // 37
      "arg lse_part memref 2 f32",                                     // 38
      "arg work_indptr memref 1 i32",                                  // 39
      "arg o memref 3 f16",                                            // 40
      "arg lse memref 2 f32",                                          // 41
      "launch grid batch num_q_heads 1 block 128 1 1 smem 0",          // 42
      "end"};                                                          // 43
  lines.insert(lines.end(), split.begin(), split.end());
  return lines;
}
} // namespace

TEST(BundlePrefillSplit, ParsesWithItsRolesAndShapes) {
  Manifest m;
  Status s = parseManifest(join(prefillSplitLines()), m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::PrefillPartial);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->prefill.has_value());
  EXPECT_EQ(k->prefill->queriesPerTile, 8);
  EXPECT_TRUE(k->hasRole(ArgRole::WorkPartialStride));
  EXPECT_FALSE(k->hasRole(ArgRole::O));
  ASSERT_NE(m.find(KernelKind::MergeSegments), nullptr);
  // The work arrays have one entry per item, the partial states one row per
  // (query, chunk) when partialRows is set.
  ProblemDims d;
  d.workCapacity = 12;
  d.partialRows = 50;
  using V = std::vector<int64_t>;
  EXPECT_EQ(roleShape(m.config, ArgRole::WorkKVEnd, d), (V{12}));
  EXPECT_EQ(roleShape(m.config, ArgRole::OPart, d), (V{50, 32, 128}));
  EXPECT_EQ(roleShape(m.config, ArgRole::LSEPart, d), (V{50, 32}));
  d.partialRows.reset();
  EXPECT_EQ(roleShape(m.config, ArgRole::OPart, d), (V{12, 32, 128}));
}

TEST(BundlePrefillSplit, StructureErrors) {
  std::vector<std::string> lines = prefillSplitLines();
  auto without = [&](int from, int to) { // 1-based, inclusive
    std::vector<std::string> l = lines;
    l.erase(l.begin() + from - 1, l.begin() + to);
    return join(l);
  };
  // prefill_partial without merge_segments, and merge_segments alone.
  expectError(without(36, 42), 36, "need 'merge_segments'");
  expectError(without(16, 35), 23,
              "'merge_segments' needs 'decode_partial' or 'prefill_partial'");
  // Its roles: the work list and the partial states.
  expectError(without(30, 30), 16, "missing argument role "
                                   "'work_partial_stride'");
  expectError(without(33, 33), 16, "missing argument role 'o_part'");
  // The prefill kernel's optional inputs, no more and no fewer.
  expectError(without(31, 31), 16,
              "kernel 'prefill_partial': lacks 'q_positions' but kernel "
              "'prefill' takes it");
  // The same attention as prefill (only the tile may differ).
  std::vector<std::string> window = lines;
  window[16] = "prefill queries_per_tile 8 causal 1 window 7 soft_cap 0 "
               "sm_scale 0.0883883461 lse_base2 0";
  expectError(join(window), 16, "differs from kernel 'prefill''s");
}

//===----------------------------------------------------------------------===//
// FP8 caches
//===----------------------------------------------------------------------===//

/// A decode bundle over an fp8 cache: kv_dtype / kv_scale on the config
/// line, the cache arguments in the fp8 type, k_scale and v_scale.
std::vector<std::string> fp8Lines(const std::string &kvDtype,
                                  const std::string &kvScale) {
  std::string elem = kvDtype == "e4m3" ? "f8E4M3FN" : "f8E5M2";
  return {"pa-bundle 1",                                                 // 1
          "config head_dim 128 page_size 16 kv_heads 8 group 4 layout "
          "nhd dtype f16 kv joint kv_dtype " +
              kvDtype + " kv_scale " + kvScale,                          // 2
          "kernel decode decode.cubin pa_decode",                        // 3
          "arg q memref 3 f16",                                          // 4
          "arg kv memref 5 " + elem,                                     // 5
          "arg k_scale memref 1 f32",                                    // 6
          "arg v_scale memref 1 f32",                                    // 7
          "arg kv_indptr memref 1 i32",                                  // 8
          "arg kv_indices memref 1 i32",                                 // 9
          "arg kv_last_page_len memref 1 i32",                           // 10
          "arg o memref 3 f16",                                          // 11
          "arg lse memref 2 f32",                                        // 12
          "launch grid batch kv_heads 1 block 128 1 1 smem 76032",       // 13
          "end"};                                                        // 14
}

TEST(BundleFP8, ParsesPrintsAndShapesTheScales) {
  for (const char *dt : {"e4m3", "e5m2"})
    for (const char *sc : {"tensor", "head"}) {
      std::string text = join(fp8Lines(dt, sc));
      Manifest m;
      Status s = parseManifest(text, m);
      ASSERT_TRUE(s.ok) << s.message;
      EXPECT_TRUE(m.config.fp8());
      EXPECT_EQ(m.config.kvDtype,
                std::string(dt) == "e4m3" ? KVDType::E4M3 : KVDType::E5M2);
      EXPECT_EQ(m.config.kvScale, std::string(sc) == "head" ? KVScale::Head
                                                           : KVScale::Tensor);
      EXPECT_EQ(m.config.cacheElemType(), std::string(dt) == "e4m3"
                                              ? ElemType::F8E4M3FN
                                              : ElemType::F8E5M2);
      EXPECT_EQ(printManifest(m), text) << "the canonical text round-trips";
      EXPECT_NE(m.config.str().find(std::string(dt) + " scale per " + sc),
                std::string::npos)
          << m.config.str();
      ProblemDims d;
      d.batch = 3;
      d.numPages = 10;
      using V = std::vector<int64_t>;
      V scales = std::string(sc) == "head" ? V{8} : V{1};
      EXPECT_EQ(roleShape(m.config, ArgRole::KScale, d), scales);
      EXPECT_EQ(roleShape(m.config, ArgRole::VScale, d), scales);
      // The scales are parameters in manifest order (3 + 2 words each).
      EXPECT_EQ(m.find(KernelKind::Decode)->numParams(),
                9 + 13 + 5 + 5 + 5 + 5 + 5 + 9 + 7);
    }
  // A different cache type or scale granularity is a different config.
  Manifest a, b;
  ASSERT_TRUE(parseManifest(join(fp8Lines("e4m3", "head")), a).ok);
  ASSERT_TRUE(parseManifest(join(fp8Lines("e4m3", "tensor")), b).ok);
  EXPECT_NE(a.config, b.config);
  ASSERT_TRUE(parseManifest(join(fp8Lines("e5m2", "head")), b).ok);
  EXPECT_NE(a.config, b.config);
  BundleConfig data = a.config;
  data.kvDtype = KVDType::Data;
  EXPECT_FALSE(data.fp8());
  EXPECT_EQ(data.cacheElemType(), ElemType::F16);
  EXPECT_NE(data, a.config);
}

TEST(BundleFP8, Errors) {
  std::vector<std::string> lines = fp8Lines("e4m3", "head");
  auto with = [&](int line, const std::string &text) {
    std::vector<std::string> l = lines;
    l[line - 1] = text;
    return join(l);
  };
  auto without = [&](int line) {
    std::vector<std::string> l = lines;
    l.erase(l.begin() + line - 1);
    return join(l);
  };
  const std::string base = "config head_dim 128 page_size 16 kv_heads 8 "
                           "group 4 layout nhd dtype f16 kv joint";
  expectError(with(2, base + " kv_dtype e4m3"), 2,
              "config kv_dtype needs kv_scale");
  expectError(with(2, base + " kv_scale head"), 2,
              "config kv_scale needs kv_dtype");
  expectError(with(2, base + " kv_dtype e3m4 kv_scale head"), 2,
              "unknown kv_dtype 'e3m4' (expected 'e4m3', 'e5m2')");
  expectError(with(2, base + " kv_dtype e4m3 kv_scale token"), 2,
              "unknown kv_scale 'token' (expected 'tensor', 'head')");
  expectError(with(2, "config head_dim 128 page_size 16 kv_heads 8 group 4 "
                      "layout nhd dtype f32 kv joint kv_dtype e5m2 kv_scale "
                      "tensor"),
              2, "an fp8 cache (kv_dtype) needs dtype f16 or bf16");
  // The cache arguments hold the fp8 type; the scales are required, f32,
  // rank 1, and only for an fp8 cache.
  expectError(with(5, "arg kv memref 5 f16"), 5,
              "role 'kv' must have element type f8E4M3FN");
  expectError(with(5, "arg kv memref 5 f8E5M2"), 5,
              "role 'kv' must have element type f8E4M3FN");
  expectError(without(6), 3, "missing argument role 'k_scale'");
  expectError(without(7), 3, "missing argument role 'v_scale'");
  expectError(with(6, "arg k_scale memref 1 f16"), 6,
              "role 'k_scale' must have element type f32");
  expectError(with(7, "arg v_scale memref 2 f32"), 7,
              "role 'v_scale' must be a memref of rank 1");
  expectError(inserted(5, "arg k_scale memref 1 f32"), 5,
              "role 'k_scale' is not an argument of kernel 'decode'");
}

//===----------------------------------------------------------------------===//
// MLA bundles (pa-compile --kernels mla)
//===----------------------------------------------------------------------===//

const std::vector<std::string> kMLA = {
    "pa-bundle 1",                                                        // 1
    "config head_dim 512 page_size 64 kv_heads 1 group 128 layout nhd "
    "dtype bf16 kv joint kpe 64",                                         // 2
    "kernel mla_decode kernels.cubin pa_mla_decode",                      // 3
    "prefill queries_per_tile 1 causal 0 window 0 soft_cap 0 sm_scale "
    "0.0721687824 lse_base2 0",                                           // 4
    "arg q_nope memref 3 bf16",                                           // 5
    "arg q_pe memref 3 bf16",                                             // 6
    "arg ckv_kpe memref 3 bf16",                                          // 7
    "arg kv_indptr memref 1 i32",                                         // 8
    "arg kv_indices memref 1 i32",                                        // 9
    "arg kv_last_page_len memref 1 i32",                                  // 10
    "arg o memref 3 bf16",                                                // 11
    "arg lse memref 2 f32",                                               // 12
    "arg o_part memref 3 f32",                                            // 13
    "arg lse_part memref 2 f32",                                          // 14
    "arg merge_counters memref 2 i32",                                    // 15
    "launch grid batch 4 kv_splits block 256 1 1 smem 192512",            // 16
    "end",                                                                // 17
};

std::string mlaWith(int line, const std::string &text) {
  std::vector<std::string> lines = kMLA;
  lines[line - 1] = text;
  return join(lines);
}

TEST(BundleMLA, ParsesPrintsShapesAndGrid) {
  Manifest m;
  Status s = parseManifest(join(kMLA), m);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_TRUE(m.config.mla());
  EXPECT_EQ(m.config.kpeDim, 64);
  EXPECT_EQ(m.config.numQHeads(), 128);
  EXPECT_EQ(m.config.str(), "MLA ckv512 kpe64 H128 P64 bf16");
  const KernelSpec *k = m.find(KernelKind::MLADecode);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->prefill.has_value());
  EXPECT_FLOAT_EQ(k->prefill->smScale, 0.0721687824f);
  Manifest again;
  ASSERT_TRUE(parseManifest(printManifest(m), again).ok) << printManifest(m);
  EXPECT_EQ(again, m);
  // Shapes of the MLA roles, and the split-KV grid.
  ProblemDims d;
  d.batch = 3;
  d.numPages = 10;
  d.kvSplits = 5;
  d.partialRows = 15;
  EXPECT_EQ(roleShape(m.config, ArgRole::QNope, d),
            (std::vector<int64_t>{3, 128, 512}));
  EXPECT_EQ(roleShape(m.config, ArgRole::QPe, d),
            (std::vector<int64_t>{3, 128, 64}));
  EXPECT_EQ(roleShape(m.config, ArgRole::CkvKpe, d),
            (std::vector<int64_t>{10, 64, 576}));
  EXPECT_EQ(roleShape(m.config, ArgRole::OPart, d),
            (std::vector<int64_t>{15, 128, 512}));
  std::array<uint32_t, 3> grid;
  ASSERT_TRUE(resolveGrid(k->launch, m.config, d, grid).ok);
  EXPECT_EQ(grid, (std::array<uint32_t, 3>{3, 4, 5}));
  d.kvSplits = 0;
  Status g = resolveGrid(k->launch, m.config, d, grid);
  EXPECT_NE(g.message.find("grid z = kv_splits = 0 is not positive"),
            std::string::npos)
      << g.message;
}

/// kMLA with an mla_decode_small kernel (the mma.sync form beside a wgmma
/// mla_decode) before `end` (lines 17-30): its prefill line `prefill`, its
/// arguments those of mla_decode, q_nope and q_pe swapped with `swapQ`.
std::string mlaWithSmall(const std::string &prefill, bool swapQ = false) {
  std::vector<std::string> lines = kMLA;
  std::vector<std::string> small(kMLA.begin() + 2, kMLA.end() - 1);
  small[0] = "kernel mla_decode_small mla_small.cubin pa_mla_decode";
  small[1] = prefill;
  if (swapQ)
    std::swap(small[2], small[3]);
  lines.insert(lines.end() - 1, small.begin(), small.end());
  return join(lines);
}

TEST(BundleMLA, SmallKernelBesideMLADecode) {
  Manifest m;
  Status s = parseManifest(mlaWithSmall(kMLA[3]), m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::MLADecodeSmall);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->file, "mla_small.cubin");
  EXPECT_EQ(k->args, m.find(KernelKind::MLADecode)->args);
  Manifest again;
  ASSERT_TRUE(parseManifest(printManifest(m), again).ok) << printManifest(m);
  EXPECT_EQ(again, m);
  // It serves the same calls: the same arguments in the same order and
  // the same options.
  const char *msg = "kernel 'mla_decode_small' must take the arguments of "
                    "kernel 'mla_decode' and carry its prefill line";
  expectError(mlaWithSmall(kMLA[3], /*swapQ=*/true), 31, msg);
  expectError(mlaWithSmall("prefill queries_per_tile 1 causal 0 window 0 "
                           "soft_cap 0 sm_scale 0.5 lse_base2 0"),
              31, msg);
  // Only in an MLA bundle.
  std::string text = mlaWithSmall(kMLA[3]);
  std::string mla = " kpe 64";
  text.erase(text.find(mla), mla.size());
  expectError(text, 31, "needs an MLA bundle (config key kpe)");
}

TEST(BundleMLA, MergeTogetherLine) {
  // The counter value that asks the kernel to merge with all its CTAs.
  std::vector<std::string> lines = kMLA;
  lines.insert(lines.begin() + 4, "merge together 1073741824");
  Manifest m;
  Status s = parseManifest(join(lines), m);
  ASSERT_TRUE(s.ok) << s.message;
  const KernelSpec *k = m.find(KernelKind::MLADecode);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->mergeTogether.has_value());
  EXPECT_EQ(*k->mergeTogether, int64_t(1) << 30);
  std::string printed = printManifest(m);
  EXPECT_NE(printed.find("merge together 1073741824\n"), std::string::npos)
      << printed;
  Manifest again;
  ASSERT_TRUE(parseManifest(printed, again).ok) << printed;
  EXPECT_EQ(again, m);
  // Without the line only the last CTA merges.
  Manifest plain;
  ASSERT_TRUE(parseManifest(join(kMLA), plain).ok);
  EXPECT_FALSE(plain.find(KernelKind::MLADecode)->mergeTogether.has_value());
  EXPECT_NE(plain, m);
  auto with = [&](const std::string &line) {
    std::vector<std::string> l = kMLA;
    l.insert(l.begin() + 4, line);
    return join(l);
  };
  expectError(with("merge together 0"), 5,
              "merge together '0' must be a counter value in [1, 2^31)");
  expectError(with("merge together 2147483648"), 5,
              "must be a counter value in [1, 2^31)");
  expectError(with("merge all 5"), 5, "expected 'merge together V'");
  std::vector<std::string> twice = kMLA;
  twice.insert(twice.begin() + 4, "merge together 7");
  twice.insert(twice.begin() + 4, "merge together 7");
  expectError(join(twice), 6, "duplicate 'merge' line");
}

TEST(BundleMLA, Errors) {
  // The latent cache has one head, NHD, joint, no fp8.
  expectError(mlaWith(2, "config head_dim 512 page_size 64 kv_heads 2 group "
                         "128 layout nhd dtype bf16 kv joint kpe 64"),
              2, "an MLA bundle (kpe) has kv_heads 1, layout nhd, kv joint");
  expectError(mlaWith(2, "config head_dim 512 page_size 64 kv_heads 1 group "
                         "128 layout nhd dtype bf16 kv joint kpe 0"),
              2, "config kpe = 0 must be in [1, 2^20]");
  // mla_decode needs an MLA bundle, and its options line.
  expectError(mlaWith(2, "config head_dim 512 page_size 64 kv_heads 1 group "
                         "128 layout nhd dtype bf16 kv joint"),
              17, "kernel 'mla_decode' needs an MLA bundle (config key kpe)");
  {
    std::vector<std::string> lines = kMLA;
    lines.erase(lines.begin() + 3);
    expectError(join(lines), 3,
                "missing the 'prefill queries_per_tile 1 causal 0");
  }
  expectError(mlaWith(4, "prefill queries_per_tile 1 causal 1 window 0 "
                         "soft_cap 0 sm_scale 0.07 lse_base2 0"),
              3, "an mla_decode kernel's prefill line has queries_per_tile "
                  "1, causal 0, window 0");
  // Its roles: the latent cache, not kv; the split-KV buffers.
  expectError(mlaWith(7, "arg kv memref 5 bf16"), 7,
              "role 'kv' is not an argument of kernel 'mla_decode'");
  {
    std::vector<std::string> lines = kMLA;
    lines.erase(lines.begin() + 14);
    expectError(join(lines), 3, "missing argument role 'merge_counters'");
  }
  // An MLA bundle holds no GQA attention kernel.
  {
    std::vector<std::string> lines = kMLA;
    lines.insert(lines.end() - 1,
                 {"kernel decode k.cubin pa_decode", "arg q memref 3 bf16",
                  "arg kv memref 5 bf16", "arg kv_indptr memref 1 i32",
                  "arg kv_indices memref 1 i32",
                  "arg kv_last_page_len memref 1 i32", "arg o memref 3 bf16",
                  "arg lse memref 2 f32",
                  "launch grid batch kv_heads 1 block 128 1 1 smem 0"});
    Manifest m;
    Status s = parseManifest(join(lines), m);
    EXPECT_FALSE(s.ok);
  }
}
