/*===- pa_runtime.h - C API of the PagedAttn GPU runtime ----------*- C -*-===//
 *
 * Part of the PagedAttn project.
 *
 *===----------------------------------------------------------------------===//
 *
 * Loads kernel bundles written by pa-compile, plans split-KV decode steps,
 * batch prefills (ragged queries over a paged KV cache) and multi-level
 * cascades (shared prefixes), merges attention states, writes new K/V into
 * the cache, and launches all of it through the CUDA driver API only
 * (libcuda). C-compatible, so
 * that C, Python (ctypes, torch tensors by data_ptr()) and other engines can
 * call it.
 *
 * Conventions:
 *   - Every function that can fail returns PA_SUCCESS (0) or PA_ERROR (1);
 *     pa_last_error() then holds a message naming the failed check or CUDA
 *     call (with cuGetErrorString's text). The message is per thread.
 *   - Device pointers are CUdeviceptr values (pa_deviceptr), streams are
 *     CUstream handles (pa_stream; NULL = the legacy default stream).
 *   - All calls after pa_init() use the CUDA context current on the calling
 *     thread; pa_init() makes the device's primary context current.
 *   - Every buffer is row-major and contiguous; shapes are in
 *     docs/Runtime.md.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PAGEDATTN_RUNTIME_PA_RUNTIME_H
#define PAGEDATTN_RUNTIME_PA_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Return codes. */
#define PA_SUCCESS 0
#define PA_ERROR 1

/** A CUdeviceptr. */
typedef uint64_t pa_deviceptr;
/** A CUstream (NULL: the legacy default stream). */
typedef void *pa_stream;

/** A loaded bundle (its modules and functions). Opaque. */
typedef struct pa_bundle pa_bundle;
/** A decode plan: work list and split-KV workspace on the device. Opaque. */
typedef struct pa_plan pa_plan;
/** A prefill plan: the host-side lengths and the launch grid. Opaque. (The
 *  type has a _t suffix because the function that makes one is called
 *  pa_prefill_plan, like pa_decode_plan.) */
typedef struct pa_prefill_plan pa_prefill_plan_t;

/** Enumerations of pa_bundle_config (values of the manifest's spellings). */
enum { PA_DTYPE_F16 = 0, PA_DTYPE_BF16 = 1, PA_DTYPE_F32 = 2 };
enum { PA_LAYOUT_NHD = 0, PA_LAYOUT_HND = 1 };
enum { PA_KV_JOINT = 0, PA_KV_SPLIT = 1 };
/** The cache's element type: the bundle dtype, or an fp8 format. */
enum { PA_KV_DTYPE_DATA = 0, PA_KV_DTYPE_E4M3 = 1, PA_KV_DTYPE_E5M2 = 2 };
/** The K / V scales of an fp8 cache: [1] (per tensor) or [Hkv] float. */
enum { PA_KV_SCALE_TENSOR = 0, PA_KV_SCALE_HEAD = 1 };

/** The bundle's `config` line. */
typedef struct pa_bundle_config {
  int64_t head_dim, page_size, kv_heads, group;
  int64_t num_q_heads; /**< kv_heads * group */
  int dtype;           /**< PA_DTYPE_* */
  int layout;          /**< PA_LAYOUT_* */
  int kv_storage;      /**< PA_KV_JOINT or PA_KV_SPLIT */
  int has_split_kernels; /**< decode_split, or decode_partial +
                              merge_segments, present */
  int has_decode;        /**< a decode kernel is present */
  int has_prefill;       /**< a prefill kernel is present */
  /** PA_KV_DTYPE_*: DATA (elements of dtype) or an fp8 cache, whose value
   *  is scale * element; its kernels take k_scale / v_scale. */
  int kv_dtype;
  /** PA_KV_SCALE_* of an fp8 cache (TENSOR for other caches). */
  int kv_scale;
  /** An append_kv_slots kernel is present (pa_append_kv_slots). */
  int has_append;
  /** A merge kernel is present (pa_merge; pa_cascade_run merges levels
   *  with it). */
  int has_merge;
  /** A merge_states kernel is present (pa_merge_states). */
  int has_merge_states;
  /** append_kv and scatter_kv kernels are present (pa_append_kv,
   *  pa_scatter_kv). */
  int has_page_writes;
  /** kv_deviation and select_topk kernels are present
   *  (pa_kv_deviation, pa_select_topk). */
  int has_cacheblend;
  /** select_topk's compiled ratio (pa-compile --topk-ratio); 0 without
   *  the kernel. */
  double topk_ratio;
  /** A pack_mask kernel is present (pa_pack_mask). */
  int has_pack_mask;
  /** plan_split_kv's compiled chunk (tokens per work item, pa-compile
   *  --plan-chunk); 0 without the kernel (pa_plan_split_kv). */
  int64_t plan_chunk;
  /** An MLA bundle (pa-compile --kernels mla): D_kpe of its latent cache
   *  [num_pages, page_size, head_dim + mla_kpe], head_dim = D_ckv, group =
   *  num_q_heads = the query heads, kv_heads 1; 0 for other bundles. Its
   *  attention kernel is pa_mla_decode's. */
  int64_t mla_kpe;
} pa_bundle_config;

/** The prefill kernels of a bundle: `prefill` (the large query tile) and
 *  the optional `prefill_short` (a smaller tile for short batches, which
 *  pa-compile adds by default up to head dim 128). AUTO: the planner's
 *  choice (docs/Runtime.md, "Prefill kernel choice"). */
enum {
  PA_PREFILL_KERNEL_AUTO = 0,
  PA_PREFILL_KERNEL_PREFILL = 1,
  PA_PREFILL_KERNEL_SHORT = 2,
  /** Split-KV: prefill_partial over a work list of (request, query tile,
   *  KV chunk), then merge_segments per query row (pa-compile adds both
   *  to prefill bundles by default). */
  PA_PREFILL_KERNEL_PARTIAL = 3
};

/** Options of pa_prefill_plan_ex(); a NULL pointer or zeros mean
 *  defaults. */
typedef struct pa_prefill_plan_options {
  /** PA_PREFILL_KERNEL_*: AUTO lets the planner choose (split-KV when the
   *  query tiles x KV heads would leave SMs idle, else prefill or
   *  prefill_short); PREFILL, SHORT or PARTIAL forces that kernel (for
   *  tests and benchmarks; SHORT and PARTIAL fail on a bundle without
   *  them). */
  int kernel;
  /** > 0: the KV chunk of a split plan (tokens, rounded up to the page
   *  size) instead of the planner's choice; with AUTO it forces split-KV
   *  wherever a query tile sees more keys. Only with AUTO or PARTIAL. */
  int64_t kv_chunk;
} pa_prefill_plan_options;

/** Options of pa_decode_plan(); a NULL pointer or zeros mean defaults. */
/** How a split-KV launch merges its partial states
 *  (pa_plan_options::split_merge, pa_mla_decode_args::split_merge). AUTO:
 *  where the kernel can and every CTA of the launch fits on the device at
 *  once, a cooperative launch in which each CTA, after its request's splits
 *  arrived, merges a share of them; else as LAST: the last CTA of each
 *  request merges its splits alone. */
enum { PA_SPLIT_MERGE_AUTO = 0, PA_SPLIT_MERGE_LAST = 1 };

typedef struct pa_plan_options {
  /** CTAs per SM assumed by the planner (its budget is SMs * this); 0: the
   *  runtime's choice (pa::rt::decodeCTAsPerSM over the occupancy of
   *  decode_split, else decode_partial, at its launch block and smem),
   *  which may hold the decode kernels to one CTA per SM fewer through
   *  their dynamic shared memory (docs/Runtime.md, "Occupancy"). */
  int64_t ctas_per_sm;
  /** > 0: use this chunk size (tokens per work item) instead of the
   *  planner's choice, e.g. to force split-KV in tests; needs the split
   *  kernels when some request is longer than it. */
  int64_t force_chunk;
  /** > 0: a plan for CUDA graphs (docs/Runtime.md, "CUDA graphs"). It
   *  always runs the split path (decode_split, or decode_partial +
   *  merge_segments, which the bundle must have), allocates its work list
   *  and partial states for this many work items once, and launches over
   *  all of them (items past the list exit). pa_decode_plan_update re-plans it
   *  for new kv lengths of the same batch into the same buffers, so that a
   *  graph that captured pa_decode_run replays with the new lengths. The
   *  chunk is the planner's (or force_chunk), enlarged to a multiple of
   *  the page size until the items fit. */
  int64_t graph_work_capacity;
  /** PA_SPLIT_MERGE_AUTO (0) or PA_SPLIT_MERGE_LAST (1): how a split plan's
   *  decode_split merges (docs/Runtime.md, "The merge together"). AUTO
   *  merges together where the bundle's decode_split can (its manifest's
   *  `merge together` line) and the plan's grid fits on the device at once;
   *  the planner then splits without weighing the merge's cost. */
  int split_merge;
} pa_plan_options;

/** What a plan decided. */
typedef struct pa_plan_info {
  int64_t batch;
  int64_t chunk_size;     /**< tokens per work item */
  int split;              /**< 1: split-KV (decode_split, or
                               decode_partial + merge_segments) */
  /** Items of the work list: the launch's work capacity Wcap, except in a
   *  graph plan, whose Wcap is graph_work_capacity (the items in use are
   *  at most that). */
  int64_t num_work_items;
  int64_t nnz;            /**< kv_indptr[batch] the plan was made with */
  int64_t num_sms, ctas_per_sm;
  /** 1: a CUDA-graph plan (pa_plan_options.graph_work_capacity). */
  int graph;
  /** 1: a split plan runs in one launch (the bundle's decode_split; the
   *  plan holds its merge counters); 0: decode_partial then
   *  merge_segments, or no split. */
  int fused_merge;
  /** 1: the split plan's CTAs merge together (a cooperative launch of
   *  decode_split; pa_plan_options::split_merge). */
  int merge_together;
} pa_plan_info;

/** Arguments of one decode step (device pointers, sizes). */
typedef struct pa_decode_args {
  pa_deviceptr q;                /**< [B, Hq, D], bundle dtype */
  pa_deviceptr kv;               /**< joint cache, or 0 for kv split */
  pa_deviceptr k, v;             /**< split caches, or 0 for kv joint */
  pa_deviceptr kv_indptr;        /**< [B+1] int32 */
  pa_deviceptr kv_indices;       /**< [nnz] int32 */
  pa_deviceptr kv_last_page_len; /**< [B] int32 */
  pa_deviceptr o;                /**< [B, Hq, D], bundle dtype (written) */
  pa_deviceptr lse;              /**< [B, Hq] float (written) */
  int64_t batch;                 /**< B; must equal the plan's */
  int64_t num_q_heads;           /**< Hq; must equal kv_heads * group */
  int64_t head_dim;              /**< D; must equal the bundle's */
  int64_t num_pages;             /**< N: pages in the cache */
  int64_t nnz;                   /**< kv_indptr[B]; must equal the plan's */
  /** Nonzero: checked mode. Copies the page table to the host, validates it
   *  (pa::rt::validatePageTable), checks it against the plan and fails with
   *  that message before any launch; after the launches, synchronizes the
   *  stream and reports a faulting kernel by name. With an fp8 cache it
   *  also copies the scales and checks them (finite, > 0) first. */
  int checked;
  /** fp8 caches (pa_bundle_config.kv_dtype): the K and V scales, float
   *  [1] or [kv_heads] (kv_scale); 0 for other caches. */
  pa_deviceptr k_scale, v_scale;
} pa_decode_args;

/** What a prefill plan recorded. */
typedef struct pa_prefill_plan_info {
  int64_t batch;            /**< B */
  int64_t nnz;              /**< kv_indptr[B] the plan was made with */
  int64_t num_query_rows;   /**< Nq = qo_indptr[B] */
  int64_t queries_per_tile; /**< the kernel's queries per CTA tile */
  /** Grid x of the launch: max_b ceil(qo_len_b / queries_per_tile); 0 when
   *  every request is empty (pa_prefill_run then launches nothing). */
  int64_t q_tiles;
  /** The kernel the plan launches: PA_PREFILL_KERNEL_PREFILL, _SHORT or
   *  _PARTIAL (split-KV, followed by merge_segments; never AUTO). Added
   *  after q_tiles. */
  int kernel;
  /** 1 for a split-KV plan (kernel PARTIAL). */
  int split;
  /** Split plans: tokens per KV chunk, work items (grid x of
   *  prefill_partial) and rows of the partial states; 0 otherwise. */
  int64_t kv_chunk, num_work_items, num_partial_rows;
} pa_prefill_plan_info;

/** Arguments of one batch prefill / append (device pointers, sizes). The
 *  optional inputs (q_positions, custom_mask with mask_indptr, alibi_slopes)
 *  must be given exactly when the bundle's prefill kernel takes them (it was
 *  compiled with them: pa-compile --positions, --custom-mask, --alibi) and
 *  be 0 otherwise. */
typedef struct pa_prefill_args {
  pa_deviceptr q;                /**< [Nq, Hq, D], bundle dtype, 16-byte
                                      aligned (as o) */
  pa_deviceptr qo_indptr;        /**< [B+1] int32: query rows per request */
  pa_deviceptr kv;               /**< joint cache, or 0 for kv split */
  pa_deviceptr k, v;             /**< split caches, or 0 for kv joint */
  pa_deviceptr kv_indptr;        /**< [B+1] int32 */
  pa_deviceptr kv_indices;       /**< [nnz] int32 */
  pa_deviceptr kv_last_page_len; /**< [B] int32 */
  pa_deviceptr q_positions;      /**< [Nq] int32 (>= 0) or 0 */
  pa_deviceptr custom_mask;      /**< [mask_bytes] packed bits, or 0 */
  pa_deviceptr mask_indptr;      /**< [B+1] int32 byte offsets, or 0 */
  int64_t mask_bytes;            /**< bytes of custom_mask (0 without) */
  pa_deviceptr alibi_slopes;     /**< [Hq] float, or 0 */
  pa_deviceptr o;                /**< [Nq, Hq, D], bundle dtype (written) */
  pa_deviceptr lse;              /**< [Nq, Hq] float (written) */
  int64_t batch;                 /**< B; must equal the plan's */
  int64_t num_query_rows;        /**< Nq; must equal the plan's */
  int64_t num_q_heads;           /**< Hq; must equal kv_heads * group */
  int64_t head_dim;              /**< D; must equal the bundle's */
  int64_t num_pages;             /**< N: pages in the cache */
  int64_t nnz;                   /**< kv_indptr[B]; must equal the plan's */
  /** Nonzero: checked mode. Copies the page table, qo_indptr (and
   *  q_positions, mask_indptr when the kernel takes them) to the host,
   *  validates them (pa::rt::validatePageTable, validateQueries,
   *  validateMask, q_positions >= 0), checks them against the plan and
   *  fails with that message before any launch; after the launch,
   *  synchronizes the stream and reports a faulting kernel by name. With
   *  an fp8 cache it also copies the scales and checks them (finite, > 0)
   *  first. */
  int checked;
  /** fp8 caches (pa_bundle_config.kv_dtype): the K and V scales, float
   *  [1] or [kv_heads] (kv_scale); 0 for other caches. */
  pa_deviceptr k_scale, v_scale;
} pa_prefill_args;

/** Initializes the driver, retains the primary context of `device` and makes
 *  it current on the calling thread. Safe to call again (per thread). */
int pa_init(int device);

/** Releases the primary contexts retained by pa_init(). Free every bundle and
 *  plan first. */
void pa_shutdown(void);

/** The message of the calling thread's last failure ("" if none). */
const char *pa_last_error(void);

/** Reads `<dir>/bundle.manifest`, loads every kernel binary (cubin or PTX,
 *  cuModuleLoadDataEx; the JIT error log is part of a failure message) and
 *  looks up every kernel symbol. */
int pa_bundle_load(const char *dir, pa_bundle **out);

/** Unloads the modules and frees the bundle. NULL is ignored. */
void pa_bundle_free(pa_bundle *bundle);

/** Copies the bundle's configuration to `out`. */
int pa_bundle_get_config(const pa_bundle *bundle, pa_bundle_config *out);

/** Plans a decode step from the HOST copies of the page table: computes the
 *  kv lengths, picks the chunk size (pa::rt::planDecode with the device's SM
 *  count), uploads the work list and allocates the f32 partial-state
 *  workspace (o_part, lse_part) when it splits. Fails on an invalid table. */
int pa_decode_plan(pa_bundle *bundle, const int32_t *kv_indptr,
                   const int32_t *kv_last_page_len, int64_t batch,
                   const pa_plan_options *options, pa_plan **out);

/** Re-plans a CUDA-graph plan (pa_plan_options.graph_work_capacity) for
 *  new HOST copies of the page table of the same batch: recomputes the kv
 *  lengths and the work list (at most the plan's capacity of items) and
 *  copies the list into the plan's device buffers with cuMemcpyHtoDAsync
 *  on `stream`, ordered after the work already on it (a graph replay
 *  still reading the old list). Launches nothing: replay the captured
 *  graph (or call pa_decode_run) afterwards, with the device page table
 *  holding the new lengths. The bundle the plan was made with must still
 *  be loaded. Fails, leaving the plan as it was, on another plan, another
 *  batch, an invalid table or more items than the capacity even at one
 *  item a request. */
int pa_decode_plan_update(pa_plan *plan, const int32_t *kv_indptr,
                          const int32_t *kv_last_page_len, int64_t batch,
                          pa_stream stream);

/** Copies what the plan decided to `out`. */
int pa_plan_get_info(const pa_plan *plan, pa_plan_info *out);

/** Frees the plan's device buffers. NULL is ignored. Do not free a plan
 *  while a launch that uses it may still run (synchronize first). */
void pa_plan_free(pa_plan *plan);

/** Enqueues the decode step on `stream`: `decode` once, or when the plan
 *  splits `decode_split` once (bundles with it, pa-compile's default) or
 *  `decode_partial` then `merge_segments`. Runs of one plan must not
 *  overlap (they share its partial states and merge counters). Checks the arguments against
 *  the bundle and the plan first (batch, num_q_heads, head_dim, nnz, joint
 *  vs split cache); in checked mode also the page table (see
 *  pa_decode_args.checked). The plan must have been made for a bundle with
 *  the same configuration; it may serve any number of runs whose page table
 *  has the same kv lengths. */
int pa_decode_run(pa_bundle *bundle, const pa_plan *plan,
                  const pa_decode_args *args, pa_stream stream);

/** Plans a batch prefill from the HOST copies of qo_indptr [batch + 1],
 *  kv_indptr [batch + 1] and kv_last_page_len [batch]: computes the kv
 *  lengths (pa::rt::kvLengths), validates the query segments against them
 *  (pa::rt::validateQueries: qo_indptr from 0, non-decreasing, ending at
 *  num_query_rows, and qo_len <= kv_len unless the kernel takes explicit
 *  q_positions or positions do not matter: no causal mask, window or
 *  ALiBi, e.g. a cascade's shared prefix under many queries), picks the kernel (`prefill`, or `prefill_short` for a
 *  short batch when the bundle has it: see pa_prefill_plan_ex) and computes
 *  its grid (q_tiles x kv_heads x batch; batch above 65535 is rejected).
 *  Needs a bundle with a prefill kernel. A split-KV plan (the bundle's
 *  prefill_partial kernel, when the query tiles x KV heads would leave SMs
 *  idle) allocates its work list and the f32 partial states on the device
 *  (freed by pa_prefill_plan_free); other plans allocate nothing there. A
 *  plan serves every run with the same lengths
 *  (e.g. all layers of a step). */
int pa_prefill_plan(pa_bundle *bundle, const int32_t *qo_indptr,
                    const int32_t *kv_indptr, const int32_t *kv_last_page_len,
                    int64_t batch, int64_t num_query_rows,
                    pa_prefill_plan_t **out);

/** pa_prefill_plan with options (NULL: the defaults, the same as
 *  pa_prefill_plan). With kernel AUTO the plan launches `prefill_short`
 *  when the bundle has it and the batch is short: its mean keys per query,
 *  sum_b qo_len_b * kv_len_b / sum_b qo_len_b, is at most 1024
 *  (pa::rt::choosePrefillShort); else `prefill`. */
int pa_prefill_plan_ex(pa_bundle *bundle, const int32_t *qo_indptr,
                       const int32_t *kv_indptr,
                       const int32_t *kv_last_page_len, int64_t batch,
                       int64_t num_query_rows,
                       const pa_prefill_plan_options *options,
                       pa_prefill_plan_t **out);

/** Copies what the prefill plan recorded to `out`. */
int pa_prefill_plan_get_info(const pa_prefill_plan_t *plan,
                             pa_prefill_plan_info *out);

/** Frees the prefill plan (host memory only). NULL is ignored. */
void pa_prefill_plan_free(pa_prefill_plan_t *plan);

/** Enqueues the batch prefill on `stream`: one launch of the plan's
 *  prefill kernel, `prefill` or `prefill_short` (nothing when the plan's
 *  q_tiles is 0). Checks the arguments
 *  against the bundle and the plan first (batch, num_query_rows,
 *  num_q_heads, head_dim, nnz, joint vs split cache, a pointer for every
 *  role the kernel takes and none for the optional roles it lacks,
 *  mask_bytes); in checked mode also the device arrays (see
 *  pa_prefill_args.checked). Does not synchronize (except in checked
 *  mode). */
int pa_prefill_run(pa_bundle *bundle, const pa_prefill_plan_t *plan,
                   const pa_prefill_args *args, pa_stream stream);

/** Arguments of pa_append_kv_slots (device pointers, sizes). */
typedef struct pa_append_args {
  /** [N, Hkv, D] new K and V rows, bundle dtype. */
  pa_deviceptr k_new, v_new;
  /** [N] int32: row r goes to page slot_mapping[r] / P, slot
   *  slot_mapping[r] % P; negative entries are skipped (padding). The
   *  non-negative entries must be distinct and < num_pages * P. */
  pa_deviceptr slot_mapping;
  pa_deviceptr kv;   /**< joint cache [N_pages, 2, ...], or 0 */
  pa_deviceptr k, v; /**< split caches, or 0 */
  /** fp8 caches: the K and V scales (rows are stored as x / scale,
   *  clamped to the format's largest value, rounded to nearest even); 0
   *  for other caches. */
  pa_deviceptr k_scale, v_scale;
  int64_t num_rows;  /**< N (0: nothing is launched) */
  int64_t num_pages; /**< pages of the cache */
  /** Nonzero: before the launch, copy slot_mapping (and an fp8 cache's
   *  scales) to the host and fail with a message on an entry >= num_pages
   *  * P or a repeated slot; synchronize after the launch. Without it an
   *  out-of-range entry is skipped by the kernel and a repeated slot gets
   *  one of its rows. */
  int checked;
} pa_append_args;

/** Enqueues the bundle's append_kv_slots kernel on `stream`: writes the
 *  rows of k_new / v_new into the paged cache at their slots (vLLM's
 *  reshape_and_cache; pa.append_kv_slots). Checks the sizes and pointers
 *  first (a pointer for every role the kernel takes, joint vs split cache,
 *  scales iff the cache is fp8). Does not synchronize (except in checked
 *  mode). */
int pa_append_kv_slots(pa_bundle *bundle, const pa_append_args *args,
                       pa_stream stream);

/** Arguments of pa_merge: two attention states of R rows and the bundle's
 *  heads and head dim, merged into a third (docs/Semantics.md, section 8:
 *  the weights are exp(lse); a state with lse = -inf has weight 0; both
 *  -inf gives o = 0, lse = -inf). lse is natural log. */
typedef struct pa_merge_args {
  pa_deviceptr o_a, lse_a; /**< [R, Hq, D] bundle dtype, [R, Hq] float */
  pa_deviceptr o_b, lse_b; /**< the same shapes */
  /** [R, Hq, D], [R, Hq] (written); must not overlap the inputs. */
  pa_deviceptr o, lse;
  int64_t num_rows;        /**< R (0: nothing is launched) */
  /** Nonzero: check every input lse (finite or -inf: +inf and NaN are
   *  outside the merge's domain) before the launch and synchronize after
   *  it. */
  int checked;
} pa_merge_args;

/** Enqueues the bundle's merge kernel (FlashInfer's merge_state): o, lse =
 *  (o_a, lse_a) (+) (o_b, lse_b). The o pointers must be 16-byte aligned
 *  (16-byte vectors), the lse pointers 4-byte. Does not synchronize
 *  (except in checked mode). */
int pa_merge(pa_bundle *bundle, const pa_merge_args *args, pa_stream stream);

/** Arguments of pa_merge_states: S stacked states for each of R rows
 *  (FlashInfer's merge_states layout). */
typedef struct pa_merge_states_args {
  pa_deviceptr o_states;   /**< [R, S, Hq, D] bundle dtype */
  pa_deviceptr lse_states; /**< [R, S, Hq] float, natural log */
  pa_deviceptr o, lse;     /**< [R, Hq, D], [R, Hq] (written) */
  int64_t num_rows;        /**< R (0: nothing is launched) */
  int64_t num_states;      /**< S >= 0 (0: o = 0, lse = -inf) */
  int checked;             /**< as pa_merge_args.checked */
} pa_merge_states_args;

/** Enqueues the bundle's merge_states kernel: row r, head h of o / lse is
 *  the merge of the S states (o_states[r, s, h], lse_states[r, s, h]). */
int pa_merge_states(pa_bundle *bundle, const pa_merge_states_args *args,
                    pa_stream stream);

/** A multi-level cascade (pa.cascade, docs/Semantics.md section 12):
 *  levels l = 0 .. L-1 over one paged cache, each with its own query
 *  segments and page table, every level covering all Nq query rows. The
 *  classic use is shared-prefix decoding: level 0 has one segment holding
 *  all queries over the shared prefix's pages, level 1 a segment per
 *  request over its own pages. Opaque. */
typedef struct pa_cascade_plan pa_cascade_plan_t;

/** The HOST copies of one level's segments, for pa_cascade_plan. */
typedef struct pa_cascade_level {
  const int32_t *qo_indptr;        /**< [batch + 1], ends at Nq */
  const int32_t *kv_indptr;        /**< [batch + 1] */
  const int32_t *kv_last_page_len; /**< [batch] */
  int64_t batch;                   /**< segments of the level */
} pa_cascade_level;

/** How pa_cascade_plan runs a level. */
enum {
  /** One query per segment: the bundle's decode (split-KV as its
   *  planner decides). */
  PA_CASCADE_LEVEL_DECODE = 0,
  /** Otherwise: the bundle's prefill (split-KV where the query tiles
   *  would leave SMs idle: a shared prefix under a batch of queries). */
  PA_CASCADE_LEVEL_PREFILL = 1
};

/** Plans a cascade from the HOST copies of every level's segments: each
 *  level gets a decode plan when every segment of it has one query and the
 *  bundle's decode computes the same attention (a bundle whose prefill has
 *  a window, soft cap, custom sm_scale, ALiBi or base-2 lse runs every
 *  level as prefill), else a prefill plan; then room for the levels'
 *  states (L > 1). Needs a bundle with a merge kernel and a non-causal
 *  prefill for every prefill level but the last (causal applies to the
 *  last level only; pa-compile --kernels all). A plan serves every run
 *  with the same segments and lengths (all layers of a step). */
int pa_cascade_plan(pa_bundle *bundle, const pa_cascade_level *levels,
                    int64_t num_levels, int64_t num_query_rows,
                    pa_cascade_plan_t **out);

/** What a cascade plan decided for level `level`. */
typedef struct pa_cascade_level_info {
  int kind;   /**< PA_CASCADE_LEVEL_* */
  int split;  /**< 1: that level runs split-KV */
  int64_t batch, nnz;
  /** Split levels: tokens per work item (decode) or KV chunk (prefill). */
  int64_t chunk;
  int64_t num_work_items;
} pa_cascade_level_info;

int pa_cascade_plan_get_level(const pa_cascade_plan_t *plan, int64_t level,
                              pa_cascade_level_info *out);

/** Frees the plan and its device buffers. NULL is ignored. */
void pa_cascade_plan_free(pa_cascade_plan_t *plan);

/** The DEVICE arrays of one level, for pa_cascade_run. */
typedef struct pa_cascade_level_args {
  pa_deviceptr qo_indptr, kv_indptr, kv_indices, kv_last_page_len;
  int64_t nnz; /**< kv_indptr[batch] */
} pa_cascade_level_args;

/** Arguments of one cascade step. */
typedef struct pa_cascade_args {
  pa_deviceptr q;        /**< [Nq, Hq, D], bundle dtype */
  pa_deviceptr kv;       /**< joint cache, or 0 for kv split */
  pa_deviceptr k, v;     /**< split caches, or 0 for kv joint */
  pa_deviceptr k_scale, v_scale; /**< fp8 caches, else 0 */
  const pa_cascade_level_args *levels; /**< num_levels entries */
  int64_t num_levels;    /**< must equal the plan's */
  pa_deviceptr o;        /**< [Nq, Hq, D] (written) */
  pa_deviceptr lse;      /**< [Nq, Hq] float (written) */
  int64_t num_query_rows, num_q_heads, head_dim, num_pages;
  /** Nonzero: checked mode of every level's decode / prefill run (page
   *  tables and segments against the plan), and of the merges. */
  int checked;
  /** Nonzero: every level on `stream`, one after the other. Zero (the
   *  default): levels 1 .. L-1 on streams of the plan, concurrent with
   *  level 0 (a decode level at the highest stream priority), joined to
   *  `stream` before the merges. */
  int serial;
} pa_cascade_args;

/** Enqueues the cascade on `stream`: every level's decode or prefill into
 *  its state (level 0 straight into o / lse when L = 1; levels 1 .. L-1 on
 *  the plan's own streams, ordered after the work already on `stream`,
 *  unless args->serial), then L - 1 merges on `stream`, the last into o /
 *  lse. What follows on `stream` sees the whole cascade done. Runs of one
 *  plan must not overlap (they share its states and streams). */
int pa_cascade_run(pa_bundle *bundle, const pa_cascade_plan_t *plan,
                   const pa_cascade_args *args, pa_stream stream);

/** Arguments of pa_append_kv and pa_scatter_kv: rows written into the
 *  paged cache through a page table of `batch` requests. */
typedef struct pa_page_write_args {
  /** [N, Hkv, D] rows of K and V, bundle dtype. */
  pa_deviceptr k_new, v_new;
  /** [batch + 1] int32: the rows of each request. pa_append_kv: row
   *  rows_indptr[b] + j goes to token kv_len[b] - append_len[b] + j (the
   *  table describes the cache after the append, as FlashInfer's
   *  append_paged_kv_cache). pa_scatter_kv: row r goes to the request's
   *  token positions[r]. */
  pa_deviceptr rows_indptr;
  /** pa_scatter_kv: [N] int32 request-local tokens, each in [0, kv_len);
   *  0 for pa_append_kv. */
  pa_deviceptr positions;
  pa_deviceptr kv;                /**< joint cache, or 0 */
  pa_deviceptr k, v;              /**< split caches, or 0 */
  pa_deviceptr k_scale, v_scale;  /**< fp8 caches, else 0 */
  pa_deviceptr kv_indptr;         /**< [batch + 1] int32 */
  pa_deviceptr kv_indices;        /**< [nnz] int32 */
  pa_deviceptr kv_last_page_len;  /**< [batch] int32 */
  int64_t num_rows;  /**< N = rows_indptr[batch] (0: nothing launched) */
  int64_t batch, num_pages, nnz;
  /** Nonzero: copy the page table, rows_indptr (and positions) to the host
   *  first and fail on an invalid table, rows_indptr not from 0 to N,
   *  append_len > kv_len, a position outside [0, kv_len) or two rows for
   *  one token; synchronize after the launch. Without it rows that would
   *  land outside the request or the cache are skipped. */
  int checked;
} pa_page_write_args;

/** Enqueues the bundle's append_kv kernel (pa.append_kv): a CTA per row,
 *  whose request is found by binary search over rows_indptr. */
int pa_append_kv(pa_bundle *bundle, const pa_page_write_args *args,
                 pa_stream stream);

/** Enqueues the bundle's scatter_kv kernel (pa.scatter_kv, CacheBlend's
 *  write of the recomputed tokens). */
int pa_scatter_kv(pa_bundle *bundle, const pa_page_write_args *args,
                  pa_stream stream);

/** Arguments of pa_kv_deviation. */
typedef struct pa_kv_deviation_args {
  /** [N, Hkv, D] rows (bundle dtype): recomputed and cached K (or V). */
  pa_deviceptr new_rows, cached_rows;
  pa_deviceptr deviation; /**< [N] float, written */
  int64_t num_rows;       /**< N (0: nothing launched) */
} pa_kv_deviation_args;

/** Enqueues kv_deviation: deviation[t] = the L2 norm over (h, d) of
 *  new_rows[t] - cached_rows[t] (a warp per token). */
int pa_kv_deviation(pa_bundle *bundle, const pa_kv_deviation_args *args,
                    pa_stream stream);

/** Arguments of pa_select_topk. */
typedef struct pa_select_topk_args {
  pa_deviceptr deviation;  /**< [N] float */
  pa_deviceptr indptr;     /**< [batch + 1] int32 segments of deviation */
  /** [N] int32 (written): each request's ceil(r * n_b) selected
   *  request-local indices, increasing, ragged by out_indptr. */
  pa_deviceptr positions;
  pa_deviceptr out_indptr; /**< [batch + 1] int32 (written) */
  int64_t batch, num_rows;
  /** Nonzero: copy indptr and the deviations to the host first and fail on
   *  an invalid indptr or a NaN deviation; synchronize after. */
  int checked;
} pa_select_topk_args;

/** Enqueues select_topk (pa.select_topk with the bundle's compiled ratio
 *  r, pa_bundle_config.topk_ratio): per request, the ceil(r * n_b) largest
 *  deviations, ties to the lower index, found by a bitwise threshold
 *  search (no sort). */
int pa_select_topk(pa_bundle *bundle, const pa_select_topk_args *args,
                   pa_stream stream);

/** Arguments of pa_pack_mask. */
typedef struct pa_pack_mask_args {
  pa_deviceptr mask;   /**< [num_elements] uint8, non-zero = true */
  pa_deviceptr indptr; /**< [batch + 1] int32 segments of mask */
  /** [packed_bytes] (written): segment b's bits packed from byte
   *  packed_indptr[b], bit j of byte k = element 8k + j (little-endian
   *  bits), the last byte zero-padded: prefill's custom_mask layout. */
  pa_deviceptr packed;
  pa_deviceptr packed_indptr; /**< [batch + 1] int32 (written) */
  int64_t batch, num_elements;
  /** Bytes of `packed` (at least sum_b ceil(n_b / 8)). */
  int64_t packed_bytes;
  /** Nonzero: copy indptr to the host first and fail on an indptr that
   *  does not run from 0 to num_elements or a packed size over
   *  packed_bytes; synchronize after. */
  int checked;
} pa_pack_mask_args;

/** Enqueues pack_mask (pa.pack_mask, FlashInfer's segment_packbits): a CTA
 *  per segment. */
int pa_pack_mask(pa_bundle *bundle, const pa_pack_mask_args *args,
                 pa_stream stream);

/** Arguments of pa_plan_split_kv: the fixed-chunk split-KV work list of a
 *  page table (pa.plan_split_kv, docs/Semantics.md section 14), computed
 *  on the device, so that a step can be planned without a host round trip
 *  (e.g. inside a CUDA graph). With C = pa_bundle_config.plan_chunk,
 *  request b gets n_b = ceil(kv_len_b / C) items (none without tokens);
 *  work_indptr[b + 1] = work_indptr[b] + n_b; item c of request b is
 *  (b, c * C, min((c + 1) * C, kv_len_b)). This is the host planner's
 *  pa::rt::planFixedChunks. */
typedef struct pa_plan_split_kv_args {
  pa_deviceptr kv_indptr;        /**< [batch + 1] int32 */
  pa_deviceptr kv_last_page_len; /**< [batch] int32 */
  pa_deviceptr work_indptr;      /**< [batch + 1] int32 (written) */
  /** [work_capacity] int32 each (written; entries past work_indptr[batch]
   *  untouched). */
  pa_deviceptr work_request, work_start, work_end;
  int64_t batch;
  /** At least batch + ceil(nnz * page_size / C), which bounds the items of
   *  any table of `nnz` pages (checked). */
  int64_t work_capacity;
  int64_t nnz; /**< kv_indptr[batch] */
  /** Nonzero: copy the page table's indptr and last_page_len to the host
   *  first and fail on an invalid one (or an indptr[batch] other than
   *  nnz); synchronize after the launch. */
  int checked;
} pa_plan_split_kv_args;

/** Enqueues plan_split_kv (a CTA per request). */
int pa_plan_split_kv(pa_bundle *bundle, const pa_plan_split_kv_args *args,
                     pa_stream stream);

/** Arguments of pa_mla_decode (an MLA bundle): DeepSeek's multi-head latent
 *  attention with absorbed weights over the latent cache, as
 *  pa.mla_decode (docs/Semantics.md). H = num_q_heads, Dc = head_dim,
 *  Dr = mla_kpe of the bundle's config; the element type is its dtype. */
typedef struct pa_mla_decode_args {
  pa_deviceptr q_nope;  /**< [batch, H, Dc] */
  pa_deviceptr q_pe;    /**< [batch, H, Dr] */
  pa_deviceptr ckv_kpe; /**< [num_pages, page_size, Dc + Dr] */
  pa_deviceptr kv_indptr;        /**< [batch + 1] int32 */
  pa_deviceptr kv_indices;       /**< [nnz] int32 */
  pa_deviceptr kv_last_page_len; /**< [batch] int32 */
  pa_deviceptr o;   /**< [batch, H, Dc] (written) */
  pa_deviceptr lse; /**< [batch, H] f32 (written; base as compiled) */
  int64_t batch;
  int64_t num_pages; /**< pages of ckv_kpe */
  int64_t nnz;       /**< kv_indptr[batch] */
  /** Nonzero: copy the page table to the host first and fail on an
   *  invalid one (kv_indptr, kv_last_page_len, kv_indices against
   *  num_pages); synchronize after the launch and name a fault. */
  int checked;
  /** Split-KV: the CTAs that split each request's keys (their partial
   *  states merged in the same launch, see split_merge).
   *  0: chosen by the runtime to fill the GPU (at most 32, and with
   *  max_kv_len at least 128 keys per split), within workspace_bytes;
   *  1: no split; S > 1: exactly S (the workspace must hold them). */
  int64_t num_splits;
  /** Optional: the longest request's kv_len (0: unknown), which bounds the
   *  automatic splits. */
  int64_t max_kv_len;
  /** Device scratch for the partial states of split-KV (may be 0 with
   *  workspace_bytes 0: no split); pa_mla_workspace_bytes tells the size.
   *  Its contents need not be kept between calls. */
  pa_deviceptr workspace;
  int64_t workspace_bytes;
  /** How the splits' partial states merge: PA_MLA_MERGE_AUTO (0): where
   *  every CTA of the launch fits on the device at once, a cooperative
   *  launch in which each CTA, after its request's splits arrived, merges a
   *  share of them; else as PA_MLA_MERGE_LAST (1): the last CTA of each
   *  request merges its splits alone. */
  int split_merge;
} pa_mla_decode_args;

/** pa_mla_decode_args::split_merge (the PA_SPLIT_MERGE_ values). */
enum {
  PA_MLA_MERGE_AUTO = PA_SPLIT_MERGE_AUTO,
  PA_MLA_MERGE_LAST = PA_SPLIT_MERGE_LAST
};

/** Enqueues the bundle's mla_decode kernel, or mla_decode_small where the
 *  runtime picks it (a CTA per request, block of query heads and key
 *  split; a cooperative launch when the splits merge together, see
 *  split_merge); the softmax scale and soft-cap are those compiled in. */
int pa_mla_decode(pa_bundle *bundle, const pa_mla_decode_args *args,
                  pa_stream stream);

/** Bytes of pa_mla_decode's workspace for `batch` requests split
 *  `num_splits` ways (0: the most the automatic choice can take on this
 *  device, for any max_kv_len); 0 when no split needs none. */
int pa_mla_workspace_bytes(const pa_bundle *bundle, int64_t batch,
                           int64_t num_splits, int64_t *out);

/* ---- Context parallelism: one request's KV over several GPUs ----------- */

/** A group of GPUs of this host driven by one process, with an NCCL
 *  communicator over them (docs/ContextParallel.md). libnccl.so.2 is
 *  loaded when the first group is made: from $PAGEDATTN_NCCL (a path) if
 *  set, else by the dynamic loader's search; nothing else in the runtime
 *  needs it. Opaque. */
typedef struct pa_cp_group pa_cp_group;

/** Makes a group of `num_devices` (>= 1) distinct CUDA device ordinals:
 *  pa_init()s each (retaining its primary context) and creates the NCCL
 *  communicators (ncclCommInitAll; none for one device). The calling
 *  thread's current context is left as it was (pa_cp_decode_run restores
 *  it too). */
int pa_cp_group_create(const int *devices, int num_devices,
                       pa_cp_group **out);

/** Destroys the communicators. NULL is ignored. Synchronize first. */
void pa_cp_group_free(pa_cp_group *group);

/** The NCCL version the group loaded (e.g. 22703 for 2.27.3). */
int pa_cp_nccl_version(const pa_cp_group *group, int *out);

/** Bytes of the workspace each device needs for pa_cp_decode_run of
 *  `batch` requests with the bundle's configuration: the gathered states
 *  of every device (num_devices o slots of batch x Hq x D in the bundle
 *  dtype, then num_devices lse slots of batch x Hq floats, each slot
 *  16-byte aligned) and one state for the merges; 0 for one device. */
int pa_cp_workspace_bytes(const pa_cp_group *group, const pa_bundle *bundle,
                          int64_t batch, int64_t *out);

/** One device's part of a context-parallel decode step. */
typedef struct pa_cp_device_args {
  pa_bundle *bundle;      /**< loaded on this device (pa_init(device) before
                               pa_bundle_load); with two or more devices
                               it needs the merge kernel (pa-compile
                               --kernels all) */
  const pa_plan *plan;    /**< pa_decode_plan of this device's table */
  /** This device's decode: the same queries (q, on this device) over its
   *  shard of the page table (pa_shard_pages) and its cache; o and lse
   *  receive the merged state of all devices (every device gets it). */
  pa_decode_args args;
  pa_stream stream;       /**< a stream of this device (0: its default) */
  pa_deviceptr workspace; /**< pa_cp_workspace_bytes on this device,
                               16-byte aligned */
  int64_t workspace_bytes;
} pa_cp_device_args;

/** Enqueues a context-parallel decode step on the group's devices: each
 *  device runs pa_decode_run over its shard into its slots of the gathered
 *  states, NCCL all-gathers (one group) give every device every slot, and
 *  each device merges them in device order into its args.o / args.lse
 *  (one pa_merge_states launch for a single request, else a chain of
 *  pa_merge). `devices[i]` is the group's i-th device. The
 *  sharding identity (docs/Semantics.md section 14) makes the result the
 *  decode over the whole table (a bundle's decode has no window or ALiBi,
 *  whose scores would depend on the key positions a shard renumbers). The
 *  states cross devices in the bundle's dtype. Checks every device's arguments (batch, heads, head
 *  dim equal across devices, workspace size) before any launch; checked
 *  mode (args.checked of device 0) also validates each table and
 *  synchronizes every stream at the end. Does not synchronize otherwise. */
int pa_cp_decode_run(pa_cp_group *group, const pa_cp_device_args *devices,
                     int num_devices);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PAGEDATTN_RUNTIME_PA_RUNTIME_H */
