//===- IRFuzz.cpp - libFuzzer target: text -> pa-lower-to-cpu ---------------===//
//
// One input is the text of an MLIR module. The target parses it (the parser
// verifies), and runs pa-lower-to-cpu on what verified, up to the LLVM
// dialect (nothing is executed). A parse or verification error, or a pass
// failure with a diagnostic, is a normal outcome; a crash, a hang, a
// sanitizer report, a pass that succeeds but leaves IR that does not verify
// (checked after every pass) or a pass failure without an error diagnostic
// is a finding.
//
// The pipeline's options come from a hash of the input, so that every input
// always takes the same path (a reproducer reproduces):
//   0: the defaults, 1: cascade-decompose + tile-attention (tile 16 x 16),
//   2: split-kv-chunk=64, 3: split-kv-work-list.
//
// Bounds (docs/Fuzzing.md): inputs above 4 KiB and inputs nesting brackets
// deeper than 32 are skipped (the parser recurses per level: a deep nest is
// a stack overflow in upstream code, not in ours), and so are inputs naming
// a dialect that a pa program on the CPU path does not use (the rest of
// upstream's dialects are upstream's surface, not this project's).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace mlir;

namespace {

constexpr size_t kMaxInputBytes = 4096;
constexpr int kMaxNesting = 32;
/// A fresh context after this many inputs: the uniquer keeps every type and
/// attribute it ever saw.
constexpr int kInputsPerContext = 2000;

/// The dialects of pa programs on the CPU path (the examples and the lit
/// tests of that path): what the target parses.
const char *const kAllowedDialects[] = {
    "builtin", "func", "arith", "tensor", "memref", "scf", "cf",
    "math",    "bufferization", "index", "pa"};

struct State {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  llvm::StringSet<> excluded; ///< registered but not allowed namespaces
  int inputs = 0;
  bool verbose = false;

  State() {
    pa::registerPAPipelines();
    pa::registerPipelineDialects(registry);
    llvm::StringSet<> allowed;
    for (const char *d : kAllowedDialects)
      allowed.insert(d);
    for (llvm::StringRef name : registry.getDialectNames())
      if (!allowed.contains(name))
        excluded.insert(name);
    verbose = std::getenv("PA_FUZZ_VERBOSE") != nullptr;
    renew();
  }

  void renew() {
    context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
    inputs = 0;
  }
};

State &state() {
  static State *s = new State; // never destroyed: no teardown order issues
  return *s;
}

/// The pass manager's verifier, as an instrumentation that tells a pass
/// that succeeded but left invalid IR (a finding: abort, naming the pass)
/// from a pass that failed (a normal outcome when it says why).
struct VerifyAfterEachPass final : public PassInstrumentation {
  void runAfterPass(Pass *pass, Operation *op) override {
    if (succeeded(verify(op)))
      return;
    llvm::errs() << "pa-ir-fuzz: " << pass->getName()
                 << " succeeded but left IR that does not verify\n";
    std::abort();
  }
};

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/// Whether `text` nests brackets deeper than kMaxNesting, or names an
/// excluded dialect: a word `name.` (op names, generic op names in quotes,
/// `!name.type`, `#name.attr`) that does not follow `%`, `@`, `^` or a
/// word character (SSA values, symbols and blocks may hold dots).
bool outOfScope(llvm::StringRef text, const llvm::StringSet<> &excluded) {
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxNesting)
        return true;
    } else if (c == ')' || c == ']' || c == '}' || c == '>') {
      if (depth > 0)
        --depth;
    }
  }
  for (size_t i = 0; i < text.size();) {
    if (!isIdentChar(text[i]) || (text[i] >= '0' && text[i] <= '9')) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && isIdentChar(text[i]))
      ++i;
    char before = start ? text[start - 1] : ' ';
    if (i < text.size() && text[i] == '.' && before != '%' && before != '@' &&
        before != '^' && before != '.' &&
        excluded.contains(text.slice(start, i)))
      return true;
  }
  return false;
}

/// Whether `text` holds a dense array attribute of `index` elements
/// (`array<index`, spaces allowed): MLIR 22's parser crashes on any
/// (docs/Fuzzing.md, "Upstream crashes").
bool indexDenseArray(llvm::StringRef text) {
  for (size_t at = text.find("array"); at != llvm::StringRef::npos;
       at = text.find("array", at + 5)) {
    llvm::StringRef rest = text.drop_front(at + 5).ltrim();
    if (!rest.consume_front("<"))
      continue;
    if (rest.ltrim().starts_with("index"))
      return true;
  }
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1; // not added to the corpus
  State &s = state();
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (outOfScope(text, s.excluded) || indexDenseArray(text))
    return -1;
  if (++s.inputs > kInputsPerContext)
    s.renew();
  MLIRContext *ctx = s.context.get();

  // Diagnostics are the normal outcome of bad input: count them, print them
  // only with PA_FUZZ_VERBOSE.
  int errors = 0;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    if (s.verbose)
      llvm::errs() << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  // The parser keeps pointers into the buffer: a copy that outlives parsing
  // and ends in NUL, as a file's contents would.
  std::string buffer(text);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(buffer, ctx);
  if (!module)
    return 0;

  uint32_t hash = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 16777619u;
  pa::LowerToCPUOptions opts;
  switch (hash % 4) {
  case 1:
    opts.cascadeDecompose = true;
    opts.tileAttention = true;
    opts.tileQ = 16;
    opts.tileKV = 16;
    break;
  case 2:
    opts.splitKVChunk = 64;
    break;
  case 3:
    opts.splitKVWorkList = true;
    break;
  default:
    break;
  }
  PassManager pm(ctx);
  pm.enableVerifier(false); // VerifyAfterEachPass verifies instead
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>());
  pa::buildLowerToCPUPipeline(pm, opts);
  if (failed(pm.run(*module)) && errors == 0) {
    // A pass that fails must say why: a silent failure is a bug.
    llvm::errs() << "pa-ir-fuzz: pa-lower-to-cpu failed (options " << hash % 4
                 << ") without an error diagnostic\n";
    std::abort();
  }
  return 0;
}
