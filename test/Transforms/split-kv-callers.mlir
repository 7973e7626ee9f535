// RUN: pa-opt %s --pa-split-kv="work-list=true" -split-input-file -verify-diagnostics

// work-list=true appends the work list to the function's arguments; a
// function pass cannot update the callers, so a function with uses is
// rejected, naming its users, with a note at every use.

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// expected-error @below {{pa-split-kv{work-list=true} would add the work list to the arguments of @decode, but it is used by @caller, @other_caller and those uses would no longer match its signature}}
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

func.func @caller(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-note @below {{@decode is used here}}
  %r:2 = func.call @decode(%q, %kv, %ip, %ix, %lp, %o, %l) : (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  // expected-note @below {{@decode is used here}}
  %s:2 = func.call @decode(%q, %kv, %ip, %ix, %lp, %r#0, %r#1) : (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  return %s#0, %s#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

func.func @other_caller(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-note @below {{@decode is used here}}
  %r:2 = func.call @decode(%q, %kv, %ip, %ix, %lp, %o, %l) : (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// A recursive function is its own user.

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// expected-error @below {{would add the work list to the arguments of @recursive, but it is used by @recursive and those uses}}
func.func @recursive(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>, %again: i1) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  %s:2 = scf.if %again -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
    %false = arith.constant false
    // expected-note @below {{@recursive is used here}}
    %t:2 = func.call @recursive(%q, %kv, %ip, %ix, %lp, %r#0, %r#1, %false) : (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?x32xf32>, i1) -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
    scf.yield %t#0, %t#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
  } else {
    scf.yield %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
  }
  return %s#0, %s#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
