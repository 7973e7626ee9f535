//===- Bundle.cpp - kernel bundle manifest and kernel parameters ----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The manifest spellings, the strict line-based manifest parser and its
// printer, role shapes, grid resolution and memref-descriptor parameter
// packing. Pure C++ (no CUDA), no exceptions.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Bundle.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>

using namespace pa::rt;

namespace {

/// Looks `name` up in `table` (pairs of spelling and value).
template <typename T, size_t N>
bool lookup(const std::pair<const char *, T> (&table)[N], std::string_view name,
            T &out) {
  for (const auto &[spelling, value] : table)
    if (name == spelling) {
      out = value;
      return true;
    }
  return false;
}

/// The spelling of `v` in `table`, or "?".
template <typename T, size_t N>
const char *spellingOf(const std::pair<const char *, T> (&table)[N], T v) {
  for (const auto &[spelling, value] : table)
    if (value == v)
      return spelling;
  return "?";
}

/// The spellings of `table`, as "'a', 'b', 'c'".
template <typename T, size_t N>
std::string spellings(const std::pair<const char *, T> (&table)[N]) {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    if (i)
      s += ", ";
    s += "'";
    s += table[i].first;
    s += "'";
  }
  return s;
}

const std::pair<const char *, DType> kDTypes[] = {
    {"f16", DType::F16}, {"bf16", DType::BF16}, {"f32", DType::F32}};
const std::pair<const char *, CacheLayout> kLayouts[] = {
    {"nhd", CacheLayout::NHD}, {"hnd", CacheLayout::HND}};
const std::pair<const char *, KVStorage> kStorages[] = {
    {"joint", KVStorage::Joint}, {"split", KVStorage::Split}};
const std::pair<const char *, ElemType> kElemTypes[] = {{"f16", ElemType::F16},
                                                        {"bf16", ElemType::BF16},
                                                        {"f32", ElemType::F32},
                                                        {"i32", ElemType::I32},
                                                        {"i8", ElemType::I8},
                                                        {"f8E4M3FN", ElemType::F8E4M3FN},
                                                        {"f8E5M2", ElemType::F8E5M2}};
const std::pair<const char *, KVDType> kKVDTypes[] = {{"e4m3", KVDType::E4M3},
                                                      {"e5m2", KVDType::E5M2}};
const std::pair<const char *, KVScale> kKVScales[] = {
    {"tensor", KVScale::Tensor}, {"head", KVScale::Head}};
const std::pair<const char *, KernelKind> kKernelKinds[] = {
    {"decode", KernelKind::Decode},
    {"decode_partial", KernelKind::DecodePartial},
    {"merge_segments", KernelKind::MergeSegments},
    {"prefill", KernelKind::Prefill},
    {"prefill_short", KernelKind::PrefillShort},
    {"prefill_partial", KernelKind::PrefillPartial},
    {"decode_split", KernelKind::DecodeSplit},
    {"append_kv_slots", KernelKind::AppendKVSlots},
    {"merge", KernelKind::Merge},
    {"merge_states", KernelKind::MergeStates},
    {"append_kv", KernelKind::AppendKV},
    {"scatter_kv", KernelKind::ScatterKV},
    {"kv_deviation", KernelKind::KVDeviation},
    {"select_topk", KernelKind::SelectTopK},
    {"pack_mask", KernelKind::PackMask},
    {"plan_split_kv", KernelKind::PlanSplitKV},
    {"mla_decode", KernelKind::MLADecode},
    {"mla_decode_small", KernelKind::MLADecodeSmall}};
const std::pair<const char *, ArgRole> kRoles[] = {
    {"q", ArgRole::Q},
    {"kv", ArgRole::KV},
    {"k", ArgRole::K},
    {"v", ArgRole::V},
    {"kv_indptr", ArgRole::KVIndptr},
    {"kv_indices", ArgRole::KVIndices},
    {"kv_last_page_len", ArgRole::KVLastPageLen},
    {"o", ArgRole::O},
    {"lse", ArgRole::LSE},
    {"work_indptr", ArgRole::WorkIndptr},
    {"work_request", ArgRole::WorkRequest},
    {"work_start", ArgRole::WorkStart},
    {"work_end", ArgRole::WorkEnd},
    {"o_part", ArgRole::OPart},
    {"lse_part", ArgRole::LSEPart},
    {"qo_indptr", ArgRole::QOIndptr},
    {"q_positions", ArgRole::QPositions},
    {"custom_mask", ArgRole::CustomMask},
    {"mask_indptr", ArgRole::MaskIndptr},
    {"alibi_slopes", ArgRole::AlibiSlopes},
    {"work_qo_start", ArgRole::WorkQOStart},
    {"work_qo_end", ArgRole::WorkQOEnd},
    {"work_kv_start", ArgRole::WorkKVStart},
    {"work_kv_end", ArgRole::WorkKVEnd},
    {"work_partial_row", ArgRole::WorkPartialRow},
    {"work_partial_stride", ArgRole::WorkPartialStride},
    {"k_scale", ArgRole::KScale},
    {"v_scale", ArgRole::VScale},
    {"merge_counters", ArgRole::MergeCounters},
    {"k_new", ArgRole::KNew},
    {"v_new", ArgRole::VNew},
    {"slot_mapping", ArgRole::SlotMapping},
    {"o_0", ArgRole::StateO0},
    {"lse_0", ArgRole::StateLSE0},
    {"o_1", ArgRole::StateO1},
    {"lse_1", ArgRole::StateLSE1},
    {"o_states", ArgRole::OStates},
    {"lse_states", ArgRole::LSEStates},
    {"append_indptr", ArgRole::AppendIndptr},
    {"rows_indptr", ArgRole::RowsIndptr},
    {"positions", ArgRole::Positions},
    {"new_rows", ArgRole::NewRows},
    {"cached_rows", ArgRole::CachedRows},
    {"deviation", ArgRole::Deviation},
    {"dev_indptr", ArgRole::DevIndptr},
    {"out_indptr", ArgRole::OutIndptr},
    {"mask", ArgRole::Mask},
    {"mask_segments", ArgRole::MaskSegments},
    {"q_nope", ArgRole::QNope},
    {"q_pe", ArgRole::QPe},
    {"ckv_kpe", ArgRole::CkvKpe}};
/// Grid symbols as a manifest spells them (a literal is its number).
const std::pair<const char *, GridSymbol> kGridSymbols[] = {
    {"batch", GridSymbol::Batch},
    {"kv_heads", GridSymbol::KVHeads},
    {"num_q_heads", GridSymbol::NumQHeads},
    {"work_capacity", GridSymbol::WorkCapacity},
    {"q_tiles", GridSymbol::QTiles},
    {"kv_splits", GridSymbol::KVSplits}};

/// The rank and element type the ABI fixes for role `r`.
void expectedArg(const BundleConfig &c, ArgRole r, int64_t &rank,
                 ElemType &type) {
  switch (r) {
  case ArgRole::Q:
  case ArgRole::O:
  case ArgRole::KNew:
  case ArgRole::VNew:
  case ArgRole::StateO0:
  case ArgRole::StateO1:
  case ArgRole::NewRows:
  case ArgRole::CachedRows:
  case ArgRole::QNope:
  case ArgRole::QPe:
  case ArgRole::CkvKpe:
    rank = 3;
    type = toElemType(c.dtype);
    return;
  case ArgRole::AppendIndptr:
  case ArgRole::RowsIndptr:
  case ArgRole::Positions:
  case ArgRole::DevIndptr:
  case ArgRole::OutIndptr:
  case ArgRole::MaskSegments:
    rank = 1;
    type = ElemType::I32;
    return;
  case ArgRole::Mask:
    rank = 1;
    type = ElemType::I8;
    return;
  case ArgRole::Deviation:
    rank = 1;
    type = ElemType::F32;
    return;
  case ArgRole::OStates:
    rank = 4;
    type = toElemType(c.dtype);
    return;
  case ArgRole::LSEStates:
    rank = 3;
    type = ElemType::F32;
    return;
  case ArgRole::KV:
    rank = 5;
    type = c.cacheElemType();
    return;
  case ArgRole::K:
  case ArgRole::V:
    rank = 4;
    type = c.cacheElemType();
    return;
  case ArgRole::KVIndptr:
  case ArgRole::KVIndices:
  case ArgRole::KVLastPageLen:
  case ArgRole::WorkIndptr:
  case ArgRole::WorkRequest:
  case ArgRole::WorkStart:
  case ArgRole::WorkEnd:
  case ArgRole::QOIndptr:
  case ArgRole::QPositions:
  case ArgRole::MaskIndptr:
  case ArgRole::WorkQOStart:
  case ArgRole::WorkQOEnd:
  case ArgRole::WorkKVStart:
  case ArgRole::WorkKVEnd:
  case ArgRole::WorkPartialRow:
  case ArgRole::WorkPartialStride:
  case ArgRole::SlotMapping:
    rank = 1;
    type = ElemType::I32;
    return;
  case ArgRole::CustomMask:
    rank = 1;
    type = ElemType::I8;
    return;
  case ArgRole::MergeCounters:
    rank = 2;
    type = ElemType::I32;
    return;
  case ArgRole::AlibiSlopes:
  case ArgRole::KScale:
  case ArgRole::VScale:
    rank = 1;
    type = ElemType::F32;
    return;
  case ArgRole::LSE:
  case ArgRole::LSEPart:
  case ArgRole::StateLSE0:
  case ArgRole::StateLSE1:
    rank = 2;
    type = ElemType::F32;
    return;
  case ArgRole::OPart:
    rank = 3;
    type = ElemType::F32;
    return;
  }
  rank = 0;
  type = ElemType::F32;
}

/// The roles kernel kind `k` takes, for the bundle's KV storage and cache
/// type (order-free).
std::vector<ArgRole> requiredRoles(KernelKind k, const BundleConfig &c) {
  KVStorage s = c.kv;
  std::vector<ArgRole> roles;
  roles.reserve(12);
  if (k == KernelKind::Merge)
    return {ArgRole::StateO0, ArgRole::StateLSE0, ArgRole::StateO1,
            ArgRole::StateLSE1, ArgRole::O, ArgRole::LSE};
  if (k == KernelKind::MergeStates)
    return {ArgRole::OStates, ArgRole::LSEStates, ArgRole::O, ArgRole::LSE};
  if (k == KernelKind::KVDeviation)
    return {ArgRole::NewRows, ArgRole::CachedRows, ArgRole::Deviation};
  if (k == KernelKind::PackMask)
    return {ArgRole::Mask, ArgRole::MaskSegments, ArgRole::CustomMask,
            ArgRole::MaskIndptr};
  if (k == KernelKind::SelectTopK)
    return {ArgRole::Deviation, ArgRole::DevIndptr, ArgRole::Positions,
            ArgRole::OutIndptr};
  if (k == KernelKind::PlanSplitKV)
    return {ArgRole::KVIndptr,    ArgRole::KVLastPageLen, ArgRole::WorkIndptr,
            ArgRole::WorkRequest, ArgRole::WorkStart,     ArgRole::WorkEnd};
  if (k == KernelKind::MLADecode || k == KernelKind::MLADecodeSmall)
    return {ArgRole::QNope,     ArgRole::QPe,           ArgRole::CkvKpe,
            ArgRole::KVIndptr,  ArgRole::KVIndices,     ArgRole::KVLastPageLen,
            ArgRole::O,         ArgRole::LSE,           ArgRole::OPart,
            ArgRole::LSEPart,   ArgRole::MergeCounters};
  // The cache writes: their rows, how the rows find their tokens, then an
  // fp8 cache's scales and the cache.
  if (k == KernelKind::AppendKV || k == KernelKind::ScatterKV ||
      k == KernelKind::AppendKVSlots) {
    roles = {ArgRole::KNew, ArgRole::VNew};
    if (k == KernelKind::AppendKVSlots) {
      roles.push_back(ArgRole::SlotMapping);
    } else {
      roles.insert(roles.end(), {ArgRole::KVIndptr, ArgRole::KVIndices,
                                 ArgRole::KVLastPageLen});
      if (k == KernelKind::AppendKV)
        roles.push_back(ArgRole::AppendIndptr);
      else
        roles.insert(roles.end(), {ArgRole::RowsIndptr, ArgRole::Positions});
    }
    if (c.fp8()) {
      roles.push_back(ArgRole::KScale);
      roles.push_back(ArgRole::VScale);
    }
    if (s == KVStorage::Joint) {
      roles.push_back(ArgRole::KV);
    } else {
      roles.push_back(ArgRole::K);
      roles.push_back(ArgRole::V);
    }
    return roles;
  }
  bool cache = k != KernelKind::MergeSegments;
  if (cache) {
    roles.push_back(ArgRole::Q);
    if (isPrefillKind(k))
      roles.push_back(ArgRole::QOIndptr);
    if (s == KVStorage::Joint) {
      roles.push_back(ArgRole::KV);
    } else {
      roles.push_back(ArgRole::K);
      roles.push_back(ArgRole::V);
    }
    if (c.fp8()) {
      roles.push_back(ArgRole::KScale);
      roles.push_back(ArgRole::VScale);
    }
    roles.push_back(ArgRole::KVIndptr);
    roles.push_back(ArgRole::KVIndices);
    roles.push_back(ArgRole::KVLastPageLen);
  }
  bool decodeSplit = k == KernelKind::DecodeSplit;
  if (k == KernelKind::DecodePartial || k == KernelKind::MergeSegments ||
      decodeSplit) {
    roles.push_back(ArgRole::WorkIndptr);
    if (k != KernelKind::MergeSegments) {
      roles.push_back(ArgRole::WorkRequest);
      roles.push_back(ArgRole::WorkStart);
      roles.push_back(ArgRole::WorkEnd);
    }
  }
  if (k == KernelKind::PrefillPartial)
    for (ArgRole r : {ArgRole::WorkRequest, ArgRole::WorkQOStart,
                      ArgRole::WorkQOEnd, ArgRole::WorkKVStart,
                      ArgRole::WorkKVEnd, ArgRole::WorkPartialRow,
                      ArgRole::WorkPartialStride})
      roles.push_back(r);
  bool partial = k == KernelKind::DecodePartial ||
                 k == KernelKind::PrefillPartial;
  if (partial || k == KernelKind::MergeSegments || decodeSplit) {
    roles.push_back(ArgRole::OPart);
    roles.push_back(ArgRole::LSEPart);
  }
  if (!partial) {
    roles.push_back(ArgRole::O);
    roles.push_back(ArgRole::LSE);
  }
  if (decodeSplit)
    roles.push_back(ArgRole::MergeCounters);
  return roles;
}

/// The roles kernel kind `k` may take besides requiredRoles (prefill only:
/// q_positions, custom_mask, mask_indptr, alibi_slopes).
std::vector<ArgRole> optionalRoles(KernelKind k) {
  if (!isPrefillKind(k))
    return {};
  return {ArgRole::QPositions, ArgRole::CustomMask, ArgRole::MaskIndptr,
          ArgRole::AlibiSlopes};
}

/// Splits `line` at whitespace, dropping everything from '#' on.
std::vector<std::string_view> tokenize(std::string_view line) {
  if (size_t hash = line.find('#'); hash != std::string_view::npos)
    line = line.substr(0, hash);
  std::vector<std::string_view> tokens;
  size_t i = 0;
  auto isSpace = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
  };
  while (i < line.size()) {
    while (i < line.size() && isSpace(line[i]))
      ++i;
    size_t j = i;
    while (j < line.size() && !isSpace(line[j]))
      ++j;
    if (j > i)
      tokens.push_back(line.substr(i, j - i));
    i = j;
  }
  return tokens;
}

/// Parses a decimal int64 (optional leading '-'); the whole token must match.
bool parseInt(std::string_view tok, int64_t &out) {
  if (tok.empty())
    return false;
  const char *first = tok.data(), *last = tok.data() + tok.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

/// Parses a finite float (decimal or exponent form); the whole token must
/// match.
bool parseFloat(std::string_view tok, float &out) {
  if (tok.empty())
    return false;
  const char *first = tok.data(), *last = tok.data() + tok.size();
  float v = 0;
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

/// The shortest text "%.9g" gives for `v`: enough digits that the float
/// reads back exactly.
std::string printFloat(float v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

/// The manifest parser: one instance per parse.
class Parser {
public:
  Parser(std::string_view text, std::string_view source)
      : text(text), source(source) {}

  Status run(Manifest &out);

private:
  /// "<source>:<line>: <msg> (in '<text>')".
  template <typename... Ts> Status lineError(const Ts &...parts) {
    std::ostringstream os;
    os << source << ":" << lineNo << ": ";
    (os << ... << parts);
    os << " (in '" << lineText << "')";
    return Status::error(os.str());
  }

  Status parseHeader(const std::vector<std::string_view> &t);
  Status parseConfig(const std::vector<std::string_view> &t);
  Status parseKernel(const std::vector<std::string_view> &t);
  Status parseArg(const std::vector<std::string_view> &t);
  Status parseLaunch(const std::vector<std::string_view> &t);
  Status parsePrefill(const std::vector<std::string_view> &t);
  Status parseTopK(const std::vector<std::string_view> &t);
  Status parsePlan(const std::vector<std::string_view> &t);
  Status parseMerge(const std::vector<std::string_view> &t);
  Status closeKernel();
  Status finish();
  /// The prefill_short kernel `s` agrees with the prefill kernel.
  Status checkPrefillVariant(const KernelSpec &s) const;

  std::string_view text, source;
  int lineNo = 0;
  std::string_view lineText;

  Manifest m;
  bool haveHeader = false, haveConfig = false, haveEnd = false;
  /// The kernel being read (last of m.kernels), if any.
  bool inKernel = false, kernelHasLaunch = false;
};

Status Parser::run(Manifest &out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(
        pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++lineNo;
    std::vector<std::string_view> t = tokenize(line);
    if (t.empty())
      continue;
    // The line as shown in messages: without the comment and outer blanks.
    lineText = line.substr(0, line.find('#'));
    while (!lineText.empty() &&
           (lineText.back() == ' ' || lineText.back() == '\t' ||
            lineText.back() == '\r'))
      lineText.remove_suffix(1);
    while (!lineText.empty() &&
           (lineText.front() == ' ' || lineText.front() == '\t'))
      lineText.remove_prefix(1);

    if (haveEnd)
      return lineError("text after 'end'");
    if (!haveHeader) {
      if (Status s = parseHeader(t); !s)
        return s;
      continue;
    }
    Status s = Status::success();
    if (t[0] == "config")
      s = parseConfig(t);
    else if (t[0] == "kernel")
      s = parseKernel(t);
    else if (t[0] == "arg")
      s = parseArg(t);
    else if (t[0] == "launch")
      s = parseLaunch(t);
    else if (t[0] == "prefill")
      s = parsePrefill(t);
    else if (t[0] == "topk")
      s = parseTopK(t);
    else if (t[0] == "plan")
      s = parsePlan(t);
    else if (t[0] == "merge")
      s = parseMerge(t);
    else if (t[0] == "end") {
      if (t.size() != 1)
        return lineError("'end' takes no operands");
      s = closeKernel();
      haveEnd = true;
    } else if (t[0] == "pa-bundle")
      s = lineError("duplicate 'pa-bundle' header");
    else
      s = lineError("unknown directive '", t[0],
                    "' (expected config, kernel, arg, launch, prefill, "
                    "topk, plan, merge or end)");
    if (!s)
      return s;
  }
  if (Status s = finish(); !s)
    return s;
  out = std::move(m);
  return Status::success();
}

Status Parser::parseHeader(const std::vector<std::string_view> &t) {
  if (t[0] != "pa-bundle")
    return lineError("expected the header 'pa-bundle 1' before '", t[0], "'");
  if (t.size() != 2)
    return lineError("expected 'pa-bundle VERSION'");
  int64_t v = 0;
  if (!parseInt(t[1], v))
    return lineError("bundle version '", t[1], "' is not an integer");
  if (v != kManifestVersion)
    return lineError("unsupported bundle version ", v,
                     " (this runtime reads version ", kManifestVersion, ")");
  m.version = v;
  haveHeader = true;
  return Status::success();
}

Status Parser::parseConfig(const std::vector<std::string_view> &t) {
  if (inKernel || !m.kernels.empty())
    return lineError("'config' must come before the first kernel");
  if (haveConfig)
    return lineError("duplicate 'config' line");
  if ((t.size() - 1) % 2 != 0)
    return lineError("'config' expects KEY VALUE pairs");
  BundleConfig c;
  enum Key {
    HeadDim,
    PageSize,
    KVHeads,
    Group,
    Layout,
    Dtype,
    Kv,
    KvDtype,
    KvScale,
    Kpe,
    NumKeys
  };
  const std::pair<const char *, Key> keys[] = {
      {"head_dim", HeadDim}, {"page_size", PageSize}, {"kv_heads", KVHeads},
      {"group", Group},      {"layout", Layout},      {"dtype", Dtype},
      {"kv", Kv},            {"kv_dtype", KvDtype},   {"kv_scale", KvScale},
      {"kpe", Kpe}};
  bool seen[NumKeys] = {};
  for (size_t i = 1; i + 1 < t.size(); i += 2) {
    Key key;
    if (!lookup(keys, t[i], key))
      return lineError("unknown config key '", t[i], "' (expected one of ",
                       spellings(keys), ")");
    if (seen[key])
      return lineError("duplicate config key '", t[i], "'");
    seen[key] = true;
    std::string_view val = t[i + 1];
    int64_t *intField = nullptr;
    switch (key) {
    case HeadDim:
      intField = &c.headDim;
      break;
    case PageSize:
      intField = &c.pageSize;
      break;
    case KVHeads:
      intField = &c.kvHeads;
      break;
    case Group:
      intField = &c.group;
      break;
    case Kpe:
      intField = &c.kpeDim;
      break;
    case Layout:
      if (!fromString(val, c.layout))
        return lineError("unknown layout '", val, "' (expected ",
                         spellings(kLayouts), ")");
      break;
    case Dtype:
      if (!fromString(val, c.dtype))
        return lineError("unknown dtype '", val, "' (expected ",
                         spellings(kDTypes), ")");
      break;
    case Kv:
      if (!fromString(val, c.kv))
        return lineError("unknown kv storage '", val, "' (expected ",
                         spellings(kStorages), ")");
      break;
    case KvDtype:
      if (!fromString(val, c.kvDtype))
        return lineError("unknown kv_dtype '", val, "' (expected ",
                         spellings(kKVDTypes), ")");
      break;
    case KvScale:
      if (!fromString(val, c.kvScale))
        return lineError("unknown kv_scale '", val, "' (expected ",
                         spellings(kKVScales), ")");
      break;
    case NumKeys:
      break;
    }
    if (intField) {
      if (!parseInt(val, *intField))
        return lineError("config ", t[i], " '", val, "' is not an integer");
      if (*intField <= 0 || *intField > kMaxConfigValue)
        return lineError("config ", t[i], " = ", *intField,
                         " must be in [1, 2^20]");
    }
  }
  // kv_dtype (an fp8 cache) and kv_scale come together, or neither.
  for (const auto &[spelling, key] : keys)
    if (!seen[key] && key != KvDtype && key != KvScale && key != Kpe)
      return lineError("config is missing key '", spelling, "'");
  if (seen[KvDtype] != seen[KvScale])
    return lineError(seen[KvDtype] ? "config kv_dtype needs kv_scale"
                                   : "config kv_scale needs kv_dtype");
  if (c.fp8() && c.dtype == DType::F32)
    return lineError("an fp8 cache (kv_dtype) needs dtype f16 or bf16");
  if (c.mla() && (c.kvHeads != 1 || c.layout != CacheLayout::NHD ||
                  c.kv != KVStorage::Joint || c.fp8()))
    return lineError("an MLA bundle (kpe) has kv_heads 1, layout nhd, kv "
                     "joint and no kv_dtype (the latent cache [N, P, head_dim "
                     "+ kpe])");
  m.config = c;
  haveConfig = true;
  return Status::success();
}

Status Parser::parseKernel(const std::vector<std::string_view> &t) {
  if (!haveConfig)
    return lineError("'kernel' before the 'config' line");
  if (Status s = closeKernel(); !s)
    return s;
  if (t.size() != 4)
    return lineError("expected 'kernel NAME FILE SYMBOL'");
  KernelSpec k;
  if (!fromString(t[1], k.kind))
    return lineError("unknown kernel '", t[1], "' (expected one of ",
                     spellings(kKernelKinds), ")");
  if (m.find(k.kind))
    return lineError("duplicate kernel '", t[1], "'");
  std::string_view file = t[2];
  if (file.front() == '/')
    return lineError("kernel file '", file,
                     "' must be relative to the bundle directory");
  for (size_t i = 0; i <= file.size();) {
    size_t j = std::min(file.find('/', i), file.size());
    if (file.substr(i, j - i) == "..")
      return lineError("kernel file '", file, "' must not contain '..'");
    i = j + 1;
  }
  k.file = std::string(file);
  k.symbol = std::string(t[3]);
  k.line = lineNo;
  m.kernels.push_back(std::move(k));
  inKernel = true;
  kernelHasLaunch = false;
  return Status::success();
}

Status Parser::parseArg(const std::vector<std::string_view> &t) {
  if (!inKernel)
    return lineError("'arg' outside a kernel");
  if (kernelHasLaunch)
    return lineError("'arg' after the kernel's 'launch' line");
  if (t.size() != 5)
    return lineError("expected 'arg ROLE memref RANK TYPE'");
  KernelSpec &k = m.kernels.back();
  ArgSpec a;
  a.line = lineNo;
  if (!fromString(t[1], a.role))
    return lineError("unknown argument role '", t[1], "' (expected one of ",
                     spellings(kRoles), ")");
  if (t[2] != "memref")
    return lineError("unknown argument kind '", t[2],
                     "' (only 'memref' is supported)");
  if (!parseInt(t[3], a.rank))
    return lineError("memref rank '", t[3], "' is not an integer");
  if (!fromString(t[4], a.type))
    return lineError("unknown element type '", t[4], "' (expected ",
                     spellings(kElemTypes), ")");
  std::vector<ArgRole> allowed = requiredRoles(k.kind, m.config);
  for (ArgRole r : optionalRoles(k.kind))
    allowed.push_back(r);
  if (std::find(allowed.begin(), allowed.end(), a.role) == allowed.end())
    return lineError("role '", t[1], "' is not an argument of kernel '",
                     toString(k.kind), "' with kv ", toString(m.config.kv));
  for (const ArgSpec &prev : k.args)
    if (prev.role == a.role)
      return lineError("duplicate argument role '", t[1], "' (first on line ",
                       prev.line, ")");
  int64_t rank;
  ElemType type;
  expectedArg(m.config, a.role, rank, type);
  if (a.rank != rank)
    return lineError("role '", t[1], "' must be a memref of rank ", rank,
                     ", got ", a.rank);
  if (a.type != type)
    return lineError("role '", t[1], "' must have element type ",
                     toString(type), " (bundle dtype ",
                     toString(m.config.dtype), "), got ", t[4]);
  k.args.push_back(a);
  return Status::success();
}

Status Parser::parseLaunch(const std::vector<std::string_view> &t) {
  if (!inKernel)
    return lineError("'launch' outside a kernel");
  if (kernelHasLaunch)
    return lineError("duplicate 'launch' line for kernel '",
                     toString(m.kernels.back().kind), "'");
  if (t.size() != 11 || t[1] != "grid" || t[5] != "block" || t[9] != "smem")
    return lineError("expected 'launch grid X Y Z block X Y Z smem BYTES'");
  LaunchSpec l;
  for (int i = 0; i < 3; ++i) {
    std::string_view tok = t[2 + i];
    GridExtent &g = l.grid[i];
    if (fromString(tok, g.symbol) && g.symbol != GridSymbol::Literal)
      continue;
    g.symbol = GridSymbol::Literal;
    if (!parseInt(tok, g.value))
      return lineError("grid extent '", tok,
                       "' is neither an integer nor one of ",
                       spellings(kGridSymbols));
    if (g.value <= 0)
      return lineError("grid extent ", g.value, " must be positive");
  }
  for (int i = 0; i < 3; ++i) {
    std::string_view tok = t[6 + i];
    if (!parseInt(tok, l.block[i]))
      return lineError("block extent '", tok, "' is not an integer");
    if (l.block[i] <= 0 || l.block[i] > 1024)
      return lineError("block extent ", l.block[i], " must be in [1, 1024]");
  }
  if (l.block[0] * l.block[1] * l.block[2] > 1024)
    return lineError("block of ", l.block[0] * l.block[1] * l.block[2],
                     " threads exceeds 1024");
  if (l.block[2] > 64)
    return lineError("block z extent ", l.block[2], " exceeds 64");
  if (!parseInt(t[10], l.sharedBytes))
    return lineError("smem '", t[10], "' is not an integer");
  if (l.sharedBytes < 0 || l.sharedBytes > (int64_t(1) << 30))
    return lineError("smem ", l.sharedBytes, " out of range");
  m.kernels.back().launch = l;
  kernelHasLaunch = true;
  return Status::success();
}

Status Parser::parsePrefill(const std::vector<std::string_view> &t) {
  if (!inKernel)
    return lineError("'prefill' outside a kernel");
  KernelSpec &k = m.kernels.back();
  if (!isPrefillKind(k.kind) && k.kind != KernelKind::MLADecode &&
      k.kind != KernelKind::MLADecodeSmall)
    return lineError("a 'prefill' line belongs to a prefill or mla_decode "
                     "kernel, not to kernel '",
                     toString(k.kind), "'");
  if (k.prefill)
    return lineError("duplicate 'prefill' line (first on line ",
                     k.prefill->line, ")");
  if ((t.size() - 1) % 2 != 0)
    return lineError("'prefill' expects KEY VALUE pairs");
  enum Key { QPerTile, Causal, Window, SoftCap, SmScale, LseBase2, NumKeys };
  const std::pair<const char *, Key> keys[] = {
      {"queries_per_tile", QPerTile}, {"causal", Causal},
      {"window", Window},             {"soft_cap", SoftCap},
      {"sm_scale", SmScale},          {"lse_base2", LseBase2}};
  bool seen[NumKeys] = {};
  PrefillSpec p;
  p.line = lineNo;
  for (size_t i = 1; i + 1 < t.size(); i += 2) {
    Key key;
    if (!lookup(keys, t[i], key))
      return lineError("unknown prefill key '", t[i], "' (expected one of ",
                       spellings(keys), ")");
    if (seen[key])
      return lineError("duplicate prefill key '", t[i], "'");
    seen[key] = true;
    std::string_view val = t[i + 1];
    switch (key) {
    case QPerTile:
      if (!parseInt(val, p.queriesPerTile) || p.queriesPerTile <= 0 ||
          p.queriesPerTile > kMaxConfigValue)
        return lineError("prefill queries_per_tile '", val,
                         "' must be an integer in [1, 2^20]");
      break;
    case Window:
      if (!parseInt(val, p.window) || p.window < 0 ||
          p.window > std::numeric_limits<int32_t>::max())
        return lineError("prefill window '", val,
                         "' must be an integer in [0, 2^31-1] (0: none)");
      break;
    case Causal:
    case LseBase2: {
      bool &flag = key == Causal ? p.causal : p.lseBase2;
      if (val != "0" && val != "1")
        return lineError("prefill ", t[i], " '", val, "' must be 0 or 1");
      flag = val == "1";
      break;
    }
    case SoftCap:
    case SmScale: {
      float &f = key == SoftCap ? p.softCap : p.smScale;
      if (!parseFloat(val, f) || f < 0)
        return lineError("prefill ", t[i], " '", val,
                         "' must be a finite number >= 0 (0: ",
                         key == SoftCap ? "none" : "1/sqrt(head_dim)", ")");
      break;
    }
    case NumKeys:
      break;
    }
  }
  for (const auto &[spelling, key] : keys)
    if (!seen[key])
      return lineError("prefill line is missing key '", spelling, "'");
  k.prefill = p;
  return Status::success();
}

Status Parser::parseTopK(const std::vector<std::string_view> &t) {
  if (!inKernel)
    return lineError("'topk' outside a kernel");
  KernelSpec &k = m.kernels.back();
  if (k.kind != KernelKind::SelectTopK)
    return lineError("a 'topk' line belongs to kernel 'select_topk', not to "
                     "kernel '",
                     toString(k.kind), "'");
  if (k.topkRatio)
    return lineError("duplicate 'topk' line");
  if (t.size() != 3 || t[1] != "ratio")
    return lineError("expected 'topk ratio R'");
  std::string text(t[2]);
  char *end = nullptr;
  double r = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(r > 0) ||
      r > 1)
    return lineError("topk ratio '", t[2], "' must be a number in (0, 1]");
  k.topkRatio = r;
  return Status::success();
}

Status Parser::parsePlan(const std::vector<std::string_view> &t) {
  if (!inKernel)
    return lineError("'plan' outside a kernel");
  KernelSpec &k = m.kernels.back();
  if (k.kind != KernelKind::PlanSplitKV)
    return lineError("a 'plan' line belongs to kernel 'plan_split_kv', not "
                     "to kernel '",
                     toString(k.kind), "'");
  if (k.planChunk)
    return lineError("duplicate 'plan' line");
  if (t.size() != 3 || t[1] != "chunk")
    return lineError("expected 'plan chunk C'");
  int64_t c = 0;
  if (!parseInt(t[2], c) || c < 1)
    return lineError("plan chunk '", t[2], "' must be an integer >= 1");
  k.planChunk = c;
  return Status::success();
}

Status Parser::parseMerge(const std::vector<std::string_view> &t) {
  if (!inKernel)
    return lineError("'merge' outside a kernel");
  KernelSpec &k = m.kernels.back();
  if (k.kind != KernelKind::MLADecode &&
      k.kind != KernelKind::MLADecodeSmall &&
      k.kind != KernelKind::DecodeSplit)
    return lineError("a 'merge' line belongs to a split-KV kernel that "
                     "merges its splits itself (mla_decode, "
                     "mla_decode_small, decode_split), not to kernel '",
                     toString(k.kind), "'");
  if (k.mergeTogether)
    return lineError("duplicate 'merge' line");
  if (t.size() != 3 || t[1] != "together")
    return lineError("expected 'merge together V'");
  int64_t v = 0;
  if (!parseInt(t[2], v) || v < 1 || v > INT32_MAX)
    return lineError("merge together '", t[2],
                     "' must be a counter value in [1, 2^31)");
  k.mergeTogether = v;
  return Status::success();
}

Status Parser::closeKernel() {
  if (!inKernel)
    return Status::success();
  inKernel = false;
  const KernelSpec &k = m.kernels.back();
  auto kernelError = [&](const std::string &msg) {
    std::ostringstream os;
    os << source << ":" << k.line << ": kernel '" << toString(k.kind)
       << "': " << msg;
    return Status::error(os.str());
  };
  if (!kernelHasLaunch)
    return kernelError("missing 'launch' line");
  for (ArgRole r : requiredRoles(k.kind, m.config)) {
    bool found = false;
    for (const ArgSpec &a : k.args)
      found |= a.role == r;
    if (!found)
      return kernelError(std::string("missing argument role '") + toString(r) +
                         "'");
  }
  if (k.kind == KernelKind::SelectTopK && !k.topkRatio)
    return kernelError("missing the 'topk ratio R' line");
  if (k.kind == KernelKind::PlanSplitKV && !k.planChunk)
    return kernelError("missing the 'plan chunk C' line");
  if (k.kind == KernelKind::MLADecode ||
      k.kind == KernelKind::MLADecodeSmall) {
    // The options the kernel was compiled with (sm_scale, soft_cap,
    // lse_base2), which a caller needs to know.
    if (!k.prefill)
      return kernelError("missing the 'prefill queries_per_tile 1 causal 0 "
                         "window 0 soft_cap C sm_scale S lse_base2 0|1' line "
                         "(the options it was compiled with)");
    if (k.prefill->queriesPerTile != 1 || k.prefill->causal ||
        k.prefill->window != 0 || !(k.prefill->smScale > 0))
      return kernelError("an mla_decode kernel's prefill line has "
                         "queries_per_tile 1, causal 0, window 0 and a "
                         "sm_scale > 0");
    return Status::success();
  }
  if (!isPrefillKind(k.kind))
    return Status::success();
  if (!k.prefill)
    return kernelError("missing the 'prefill queries_per_tile N causal 0|1 "
                       "window W soft_cap C sm_scale S lse_base2 0|1' line");
  bool mask = k.hasRole(ArgRole::CustomMask);
  if (mask != k.hasRole(ArgRole::MaskIndptr))
    return kernelError("'custom_mask' and 'mask_indptr' come together");
  if (mask && k.prefill->causal)
    return kernelError("a custom mask excludes causal (prefill line says "
                       "causal 1)");
  if (mask && k.prefill->window > 0)
    return kernelError("a custom mask excludes a window (prefill line says "
                       "window " +
                       std::to_string(k.prefill->window) + ")");
  return Status::success();
}

Status Parser::finish() {
  std::ostringstream os;
  os << source << ":" << lineNo << ": ";
  if (!haveHeader)
    return Status::error(os.str() + "empty manifest (expected 'pa-bundle 1')");
  if (!haveConfig)
    return Status::error(os.str() + "missing 'config' line");
  if (!haveEnd)
    return Status::error(os.str() +
                         "missing 'end' (truncated manifest?)");
  bool decode = m.find(KernelKind::Decode) != nullptr;
  if (m.config.mla()) {
    // An MLA bundle: mla_decode, and only the kernels that take no cache
    // of the GQA form.
    if (!m.find(KernelKind::MLADecode))
      return Status::error(os.str() + "an MLA bundle (config kpe) needs an "
                                      "'mla_decode' kernel");
    for (const KernelSpec &k : m.kernels)
      if (k.kind != KernelKind::MLADecode &&
          k.kind != KernelKind::MLADecodeSmall &&
          k.kind != KernelKind::MergeStates && k.kind != KernelKind::Merge)
        return Status::error(os.str() + "kernel '" + toString(k.kind) +
                             "' does not belong in an MLA bundle (config "
                             "kpe): it takes no latent cache");
    // mla_decode_small serves the same pa_mla_decode calls.
    const KernelSpec *big = m.find(KernelKind::MLADecode);
    if (const KernelSpec *small = m.find(KernelKind::MLADecodeSmall);
        small && (small->args != big->args ||
                  !(*small->prefill == *big->prefill)))
      return Status::error(os.str() +
                           "kernel 'mla_decode_small' must take the arguments "
                           "of kernel 'mla_decode' and carry its prefill line "
                           "(it is a form of that kernel)");
    return Status::success();
  }
  for (KernelKind k : {KernelKind::MLADecode, KernelKind::MLADecodeSmall})
    if (m.find(k))
      return Status::error(os.str() + "kernel '" + toString(k) +
                           "' needs an MLA bundle (config key kpe)");
  if (!decode && !m.find(KernelKind::Prefill))
    return Status::error(os.str() + "the bundle has no 'decode' kernel and "
                                    "no 'prefill' kernel (it needs one)");
  bool partial = m.find(KernelKind::DecodePartial) != nullptr;
  bool prefillPartial = m.find(KernelKind::PrefillPartial) != nullptr;
  bool merge = m.find(KernelKind::MergeSegments) != nullptr;
  if ((partial || prefillPartial) != merge)
    return Status::error(
        os.str() + (merge ? "'merge_segments' needs 'decode_partial' or "
                            "'prefill_partial' (it merges their states)"
                          : "'decode_partial' and 'prefill_partial' need "
                            "'merge_segments' (split-KV merges their "
                            "states)"));
  if (partial && !decode)
    return Status::error(os.str() +
                         "'decode_partial' needs a 'decode' kernel (split-KV "
                         "decode)");
  if (m.find(KernelKind::DecodeSplit) && !decode)
    return Status::error(os.str() +
                         "'decode_split' needs a 'decode' kernel (split-KV "
                         "decode)");
  if (prefillPartial && !m.find(KernelKind::Prefill))
    return Status::error(os.str() +
                         "'prefill_partial' needs a 'prefill' kernel (split-KV "
                         "prefill)");
  for (KernelKind k : {KernelKind::PrefillShort, KernelKind::PrefillPartial})
    if (const KernelSpec *s = m.find(k))
      if (Status st = checkPrefillVariant(*s); !st)
        return st;
  return Status::success();
}

/// prefill_short and prefill_partial serve the arguments of a
/// pa_prefill_run of the bundle's `prefill` kernel: short takes exactly its
/// arguments, partial the same optional inputs (and its split-KV roles).
Status Parser::checkPrefillVariant(const KernelSpec &s) const {
  std::string name = toString(s.kind);
  auto variantError = [&](const std::string &msg) {
    std::ostringstream os;
    os << source << ":" << s.line << ": kernel '" << name << "': " << msg;
    return Status::error(os.str());
  };
  const KernelSpec *p = m.find(KernelKind::Prefill);
  if (!p)
    return variantError("needs a 'prefill' kernel (it is a form of that "
                        "kernel)");
  if (s.kind == KernelKind::PrefillShort) {
    // The same roles in the same order (ranks and types follow from the
    // config).
    if (s.args.size() != p->args.size())
      return variantError("takes " + std::to_string(s.args.size()) +
                          " arguments, kernel 'prefill' (line " +
                          std::to_string(p->line) + ") takes " +
                          std::to_string(p->args.size()) +
                          " (both kernels must take the same arguments)");
    for (size_t i = 0; i < s.args.size(); ++i)
      if (s.args[i] != p->args[i])
        return variantError("argument " + std::to_string(i) + " is '" +
                            toString(s.args[i].role) + "' (line " +
                            std::to_string(s.args[i].line) +
                            "), kernel 'prefill' has '" +
                            toString(p->args[i].role) + "' (line " +
                            std::to_string(p->args[i].line) +
                            ") (both kernels must take the same arguments)");
  } else {
    for (ArgRole r : optionalRoles(KernelKind::Prefill))
      if (s.hasRole(r) != p->hasRole(r))
        return variantError(std::string(s.hasRole(r) ? "takes" : "lacks") +
                            " '" + toString(r) + "' but kernel 'prefill' " +
                            (p->hasRole(r) ? "takes" : "lacks") +
                            " it (both must take the same optional inputs)");
  }
  // The same attention: only the tile may differ.
  PrefillSpec a = *s.prefill, b = *p->prefill;
  a.queriesPerTile = b.queriesPerTile;
  if (a != b)
    return variantError("its prefill line (line " +
                      std::to_string(s.prefill->line) +
                      ") differs from kernel 'prefill''s (line " +
                      std::to_string(p->prefill->line) +
                      ") in more than queries_per_tile (causal, window, "
                      "soft_cap, sm_scale and lse_base2 must agree)");
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

int64_t pa::rt::elementBytes(DType t) { return t == DType::F32 ? 4 : 2; }
const char *pa::rt::toString(DType t) { return spellingOf(kDTypes, t); }
const char *pa::rt::toString(CacheLayout l) { return spellingOf(kLayouts, l); }
const char *pa::rt::toString(KVStorage s) { return spellingOf(kStorages, s); }
const char *pa::rt::toString(ElemType t) { return spellingOf(kElemTypes, t); }
const char *pa::rt::toString(KVDType t) {
  return t == KVDType::Data ? "data" : spellingOf(kKVDTypes, t);
}
const char *pa::rt::toString(KVScale s) { return spellingOf(kKVScales, s); }
const char *pa::rt::toString(KernelKind k) {
  return spellingOf(kKernelKinds, k);
}
const char *pa::rt::toString(ArgRole r) { return spellingOf(kRoles, r); }
const char *pa::rt::toString(GridSymbol s) {
  if (s == GridSymbol::Literal)
    return "literal";
  return spellingOf(kGridSymbols, s);
}

bool pa::rt::fromString(std::string_view s, DType &out) {
  return lookup(kDTypes, s, out);
}
bool pa::rt::fromString(std::string_view s, CacheLayout &out) {
  return lookup(kLayouts, s, out);
}
bool pa::rt::fromString(std::string_view s, KVStorage &out) {
  return lookup(kStorages, s, out);
}
bool pa::rt::fromString(std::string_view s, ElemType &out) {
  return lookup(kElemTypes, s, out);
}
bool pa::rt::fromString(std::string_view s, KVDType &out) {
  return lookup(kKVDTypes, s, out);
}
bool pa::rt::fromString(std::string_view s, KVScale &out) {
  return lookup(kKVScales, s, out);
}
bool pa::rt::fromString(std::string_view s, KernelKind &out) {
  return lookup(kKernelKinds, s, out);
}
bool pa::rt::fromString(std::string_view s, ArgRole &out) {
  return lookup(kRoles, s, out);
}
bool pa::rt::fromString(std::string_view s, GridSymbol &out) {
  if (s == "literal") {
    out = GridSymbol::Literal;
    return true;
  }
  return lookup(kGridSymbols, s, out);
}

ElemType pa::rt::toElemType(DType t) {
  switch (t) {
  case DType::F16:
    return ElemType::F16;
  case DType::BF16:
    return ElemType::BF16;
  case DType::F32:
    return ElemType::F32;
  }
  return ElemType::F32;
}

ElemType BundleConfig::cacheElemType() const {
  switch (kvDtype) {
  case KVDType::E4M3:
    return ElemType::F8E4M3FN;
  case KVDType::E5M2:
    return ElemType::F8E5M2;
  case KVDType::Data:
    break;
  }
  return toElemType(dtype);
}

std::string BundleConfig::str() const {
  std::ostringstream os;
  if (mla()) {
    os << "MLA ckv" << headDim << " kpe" << kpeDim << " H" << numQHeads()
       << " P" << pageSize << " " << toString(dtype);
    return os.str();
  }
  os << "D" << headDim << " P" << pageSize << " Hkv" << kvHeads << " g"
     << group << " " << toString(layout) << " " << toString(dtype) << " "
     << toString(kv);
  if (fp8())
    os << " " << toString(kvDtype) << " scale per " << toString(kvScale);
  return os.str();
}

int64_t KernelSpec::numParams() const {
  int64_t n = 0;
  for (const ArgSpec &a : args)
    n += 3 + 2 * a.rank;
  return n;
}

bool KernelSpec::hasRole(ArgRole r) const {
  for (const ArgSpec &a : args)
    if (a.role == r)
      return true;
  return false;
}

const KernelSpec *Manifest::find(KernelKind k) const {
  for (const KernelSpec &s : kernels)
    if (s.kind == k)
      return &s;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Reading and writing
//===----------------------------------------------------------------------===//

Status pa::rt::parseManifest(std::string_view text, Manifest &out,
                             std::string_view source) {
  return Parser(text, source).run(out);
}

std::string pa::rt::printManifest(const Manifest &m) {
  std::ostringstream os;
  const BundleConfig &c = m.config;
  os << "pa-bundle " << m.version << "\n";
  os << "config head_dim " << c.headDim << " page_size " << c.pageSize
     << " kv_heads " << c.kvHeads << " group " << c.group << " layout "
     << toString(c.layout) << " dtype " << toString(c.dtype) << " kv "
     << toString(c.kv);
  if (c.fp8())
    os << " kv_dtype " << toString(c.kvDtype) << " kv_scale "
       << toString(c.kvScale);
  if (c.mla())
    os << " kpe " << c.kpeDim;
  os << "\n";
  for (const KernelSpec &k : m.kernels) {
    os << "kernel " << toString(k.kind) << " " << k.file << " " << k.symbol
       << "\n";
    if (const std::optional<PrefillSpec> &p = k.prefill)
      os << "prefill queries_per_tile " << p->queriesPerTile << " causal "
         << (p->causal ? 1 : 0) << " window " << p->window << " soft_cap "
         << printFloat(p->softCap) << " sm_scale " << printFloat(p->smScale)
         << " lse_base2 " << (p->lseBase2 ? 1 : 0) << "\n";
    if (k.planChunk)
      os << "plan chunk " << *k.planChunk << "\n";
    if (k.mergeTogether)
      os << "merge together " << *k.mergeTogether << "\n";
    if (k.topkRatio) {
      // The shortest decimal that reads back as the same double.
      char buf[64];
      for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof(buf), "%.*g", digits, *k.topkRatio);
        if (std::strtod(buf, nullptr) == *k.topkRatio)
          break;
      }
      os << "topk ratio " << buf << "\n";
    }
    for (const ArgSpec &a : k.args)
      os << "arg " << toString(a.role) << " memref " << a.rank << " "
         << toString(a.type) << "\n";
    const LaunchSpec &l = k.launch;
    os << "launch grid";
    for (const GridExtent &g : l.grid) {
      if (g.symbol == GridSymbol::Literal)
        os << " " << g.value;
      else
        os << " " << toString(g.symbol);
    }
    os << " block " << l.block[0] << " " << l.block[1] << " " << l.block[2]
       << " smem " << l.sharedBytes << "\n";
  }
  os << "end\n";
  return os.str();
}

Status pa::rt::readFile(const std::string &path, std::string &out) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return fail("cannot open '", path, "'");
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    data.append(buf, n);
  bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad)
    return fail("error reading '", path, "'");
  out = std::move(data);
  return Status::success();
}

Status pa::rt::readManifest(const std::string &dir, Manifest &out) {
  std::string path = dir.empty() ? "bundle.manifest" : dir + "/bundle.manifest";
  std::string text;
  if (Status s = readFile(path, text); !s)
    return s;
  return parseManifest(text, out, path);
}

//===----------------------------------------------------------------------===//
// Shapes, grids, packing
//===----------------------------------------------------------------------===//

std::vector<int64_t> pa::rt::roleShape(const BundleConfig &c, ArgRole r,
                                       const ProblemDims &d) {
  int64_t hq = c.numQHeads(), hkv = c.kvHeads, p = c.pageSize, hd = c.headDim;
  bool nhd = c.layout == CacheLayout::NHD;
  switch (r) {
  case ArgRole::Q:
  case ArgRole::O:
  case ArgRole::StateO0:
  case ArgRole::StateO1:
    return {d.queryRows(), hq, hd};
  case ArgRole::StateLSE0:
  case ArgRole::StateLSE1:
    return {d.queryRows(), hq};
  case ArgRole::OStates:
    return {d.queryRows(), d.numStates, hq, hd};
  case ArgRole::LSEStates:
    return {d.queryRows(), d.numStates, hq};
  case ArgRole::KV:
    return nhd ? std::vector<int64_t>{d.numPages, 2, p, hkv, hd}
               : std::vector<int64_t>{d.numPages, 2, hkv, p, hd};
  case ArgRole::K:
  case ArgRole::V:
    return nhd ? std::vector<int64_t>{d.numPages, p, hkv, hd}
               : std::vector<int64_t>{d.numPages, hkv, p, hd};
  case ArgRole::KVIndptr:
  case ArgRole::WorkIndptr:
  case ArgRole::QOIndptr:
  case ArgRole::MaskIndptr:
    return {d.batch + 1};
  case ArgRole::QPositions:
    return {d.queryRows()};
  case ArgRole::CustomMask:
    return {d.maskBytes};
  case ArgRole::AlibiSlopes:
    return {hq};
  case ArgRole::KScale:
  case ArgRole::VScale:
    return {c.kvScale == KVScale::Head ? hkv : 1};
  case ArgRole::KVIndices:
    return {d.nnz};
  case ArgRole::KVLastPageLen:
    return {d.batch};
  case ArgRole::LSE:
    return {d.queryRows(), hq};
  case ArgRole::WorkRequest:
  case ArgRole::WorkStart:
  case ArgRole::WorkEnd:
  case ArgRole::WorkQOStart:
  case ArgRole::WorkQOEnd:
  case ArgRole::WorkKVStart:
  case ArgRole::WorkKVEnd:
  case ArgRole::WorkPartialRow:
  case ArgRole::WorkPartialStride:
    return {d.workCapacity};
  case ArgRole::OPart:
    return {d.partialRows.value_or(d.workCapacity), hq, hd};
  case ArgRole::LSEPart:
    return {d.partialRows.value_or(d.workCapacity), hq};
  case ArgRole::MergeCounters:
    return {d.batch, hq};
  case ArgRole::KNew:
  case ArgRole::VNew:
  case ArgRole::NewRows:
  case ArgRole::CachedRows:
    return {d.queryRows(), hkv, hd};
  case ArgRole::AppendIndptr:
  case ArgRole::RowsIndptr:
  case ArgRole::DevIndptr:
  case ArgRole::OutIndptr:
  case ArgRole::MaskSegments:
    return {d.batch + 1};
  case ArgRole::Positions:
  case ArgRole::Deviation:
  case ArgRole::Mask:
    return {d.queryRows()};
  case ArgRole::SlotMapping:
    return {d.batch};
  case ArgRole::QNope:
    return {d.batch, hq, hd};
  case ArgRole::QPe:
    return {d.batch, hq, c.kpeDim};
  case ArgRole::CkvKpe:
    return {d.numPages, p, hd + c.kpeDim};
  }
  return {};
}

std::vector<int64_t>
pa::rt::contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Status pa::rt::resolveGrid(const LaunchSpec &l, const BundleConfig &c,
                           const ProblemDims &d,
                           std::array<uint32_t, 3> &grid) {
  static const char *axes[] = {"x", "y", "z"};
  const int64_t limits[] = {std::numeric_limits<int32_t>::max(), 65535, 65535};
  for (int i = 0; i < 3; ++i) {
    const GridExtent &g = l.grid[i];
    int64_t v = 0;
    switch (g.symbol) {
    case GridSymbol::Literal:
      v = g.value;
      break;
    case GridSymbol::Batch:
      v = d.batch;
      break;
    case GridSymbol::KVHeads:
      v = c.kvHeads;
      break;
    case GridSymbol::NumQHeads:
      v = c.numQHeads();
      break;
    case GridSymbol::WorkCapacity:
      v = d.workCapacity;
      break;
    case GridSymbol::QTiles:
      v = d.qTiles;
      break;
    case GridSymbol::KVSplits:
      v = d.kvSplits;
      break;
    }
    if (v <= 0)
      return fail("grid ", axes[i], " = ", toString(g.symbol), " = ", v,
                  " is not positive");
    if (v > limits[i])
      return fail("grid ", axes[i], " = ", toString(g.symbol), " = ", v,
                  " exceeds the limit ", limits[i]);
    grid[i] = static_cast<uint32_t>(v);
  }
  return Status::success();
}

void ArgBindings::bind(ArgRole r, uint64_t ptr, std::vector<int64_t> shape) {
  TensorArg &a = args[static_cast<size_t>(r)];
  a.ptr = ptr;
  a.shape = std::move(shape);
  a.bound = true;
}

const TensorArg *ArgBindings::get(ArgRole r) const {
  const TensorArg &a = args[static_cast<size_t>(r)];
  return a.bound ? &a : nullptr;
}

void **PackedParams::kernelParams() {
  pointers.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    pointers[i] = &values[i];
  return pointers.data();
}

Status pa::rt::packParams(const KernelSpec &k, const ArgBindings &b,
                          PackedParams &out) {
  out.clear();
  for (const ArgSpec &a : k.args) {
    const TensorArg *t = b.get(a.role);
    if (!t)
      return fail("kernel '", toString(k.kind), "': argument role '",
                  toString(a.role), "' is not bound");
    if (static_cast<int64_t>(t->shape.size()) != a.rank)
      return fail("kernel '", toString(k.kind), "': argument '",
                  toString(a.role), "' is bound with rank ", t->shape.size(),
                  ", the manifest says ", a.rank);
    for (size_t i = 0; i < t->shape.size(); ++i)
      if (t->shape[i] < 0)
        return fail("kernel '", toString(k.kind), "': argument '",
                    toString(a.role), "' has negative size ", t->shape[i],
                    " in dimension ", i);
    out.push(t->ptr); // allocated pointer
    out.push(t->ptr); // aligned pointer
    out.push(0);      // offset
    for (int64_t s : t->shape)
      out.push(static_cast<uint64_t>(s));
    for (int64_t s : contiguousStrides(t->shape))
      out.push(static_cast<uint64_t>(s));
  }
  return Status::success();
}
