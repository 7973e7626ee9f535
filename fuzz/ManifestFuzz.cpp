//===- ManifestFuzz.cpp - libFuzzer target: the bundle manifest parser ----===//
//
// One input is the text of a bundle.manifest (docs/Runtime.md), the file the
// runtime reads from a bundle directory before it loads any kernel. The
// target parses it (parseManifest); what parses must print in canonical
// form (printManifest) and round-trip, as Bundle.h promises:
//   parseManifest(printManifest(m)) == m, and the canonical text reprints
//   byte for byte.
// A rejected manifest is a normal outcome (its message must name a line);
// a crash, a sanitizer report, a hang or a broken round trip is a finding.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Bundle.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace pa::rt;

namespace {
[[noreturn]] void finding(const char *what) {
  std::fprintf(stderr, "pa-manifest-fuzz: %s\n", what);
  std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384)
    return -1; // real manifests are a few KiB
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Manifest m;
  Status st = parseManifest(text, m, "fuzz.manifest");
  if (!st) {
    if (st.message.rfind("fuzz.manifest", 0) != 0)
      finding("an error message that does not name the source");
    return 0;
  }
  std::string canonical = printManifest(m);
  Manifest again;
  Status st2 = parseManifest(canonical, again, "canonical");
  if (!st2) {
    std::fprintf(stderr, "%s\n", st2.message.c_str());
    finding("the canonical text of a parsed manifest does not parse");
  }
  if (again != m)
    finding("parse(print(m)) != m");
  if (printManifest(again) != canonical)
    finding("the canonical text does not reprint byte for byte");
  return 0;
}
