/* etpack/etpack_c.h — the etpack library for C and any FFI, and its manual.
 *
 * Plain C99. Every object is an opaque handle; every fallible call returns
 * an etpack_status; nothing of C++ (no type, no exception) crosses this
 * header. Link with `pkg-config --cflags --libs etpack`.
 *
 * WRITING: DESCRIBE, PLAN, WRITE
 *
 *   1. Describe the bytes. Every data item (a weight, a delegate payload, a
 *      test tensor) is an etpack_source that knows its size and can copy any
 *      range of itself:
 *        etpack_source_memory(data, size, &s)       bytes you hold (borrowed)
 *        etpack_source_file(path, offset, len, &s)  a byte range of a file
 *        etpack_source_callback(name, size, fill, user, &s)
 *                                                   bytes your callback
 *                                                   produces, chunk by chunk
 *      Describe the artifact with a builder that takes sources:
 *        etpack_pte   a program (.pte): its structure, as flatc-form JSON
 *                     text or Program flatbuffer bytes, plus its data items
 *                     by index, as the format refers to them
 *        etpack_ptd   external data (.ptd): named tensors and blobs
 *        etpack_bpte  a bundled program (.bpte): a program plus test cases
 *
 *   2. Plan. etpack_pte_plan / etpack_ptd_plan / etpack_bpte_plan compute
 *      where every byte goes without reading any bulk data, and return an
 *      etpack_plan (its size is known: etpack_plan_file_size).
 *
 *   3. Write. etpack_plan_write(plan, path, progress, cancel, user) streams
 *      every source into place and puts the finished file at `path`
 *      atomically: on failure `path` is untouched and nothing is left behind.
 *      etpack_plan_write_files writes several plans as one unit (a .ptd
 *      before the .pte whose EXTERNAL tensors name its keys);
 *      etpack_pte_write_with_data plans a program with its .ptd files and
 *      writes them so.
 *
 *     etpack_ptd* ptd = NULL;
 *     etpack_source* w = NULL;
 *     etpack_plan* plan = NULL;
 *     const int32_t sizes[2] = {4, 3};
 *     if (etpack_ptd_create(&ptd) != ETPACK_OK ||
 *         etpack_source_memory(weights, sizeof weights, &w) != ETPACK_OK ||
 *         etpack_ptd_add_tensor(ptd, "linear.weight", w, ETPACK_DTYPE_FLOAT,
 *                               2, sizes, NULL, 16) != ETPACK_OK ||
 *         etpack_ptd_plan(ptd, &plan) != ETPACK_OK ||
 *         etpack_plan_write(plan, "weights.ptd", NULL, NULL, NULL) != ETPACK_OK) {
 *       fprintf(stderr, "etpack: %s\n", etpack_last_error());
 *     }
 *     etpack_plan_free(plan);
 *     etpack_source_free(w);
 *     etpack_ptd_free(ptd);
 *
 * WHO OWNS WHAT
 *
 *   - Every handle is created by an etpack_*_create / etpack_source_* /
 *     etpack_*_plan call and released by its etpack_*_free, which accepts
 *     NULL. A call that fails leaves its output handle NULL.
 *   - Builders and plans hold their own references to the sources given to
 *     them: free a source handle as soon as you no longer add it anywhere.
 *   - Memory behind etpack_source_memory is borrowed: it must stay valid and
 *     unchanged until the last write of a plan that uses it has returned.
 *     etpack reads it during etpack_plan_write and cannot tell if it was
 *     freed or reallocated meanwhile (as for memcpy, that is undefined).
 *     Everything else (JSON text, flatbuffer bytes, keys, names, sizes
 *     arrays) is copied before the call returns.
 *   - A plan holds sources, not bytes, and may be written more than once.
 *
 * THREADS
 *
 *   Distinct handles may be used from distinct threads at once; one handle
 *   must not. Callbacks (fill, progress, cancel) run on the thread that
 *   called the write, before it returns.
 *
 * ERRORS
 *
 *   Every call that can fail returns an etpack_status; ETPACK_OK (0) is
 *   success. On failure etpack_last_error() returns one line for a person
 *   naming the file, the field and the value, e.g.
 *     "model.pte: execution_plan[0].values[3].val.data_buffer_idx = 9 is
 *      out of range (constants: 4)".
 *   The message belongs to the calling thread and stays valid until its
 *   next failing etpack call. Codes 1-6 are the library's own (etpack.h,
 *   ERRORS); the last two only arise at this boundary.
 *
 * UNITS AND LIMITS
 *
 *   Sizes and offsets are uint64_t byte counts; alignments are powers of
 *   two. Files beyond 4 GiB work; a .pte's flatbuffer and a standard
 *   .bpte are limited to 2 GiB by the format.
 */

#ifndef ETPACK_ETPACK_C_H_
#define ETPACK_ETPACK_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define ETPACK_C_API __attribute__((visibility("default")))
#else
#define ETPACK_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status -------------------------------------------------------------- */

typedef enum etpack_status {
  ETPACK_OK = 0,
  ETPACK_INVALID_ARGUMENT = 1, /* the request or an input document is wrong */
  ETPACK_NOT_FOUND = 2,        /* a named file, key or method does not exist */
  ETPACK_CORRUPT = 3,          /* an input artifact or data file is malformed */
  ETPACK_OUT_OF_RANGE = 4,     /* a size, offset or count does not fit */
  ETPACK_IO_ERROR = 5,         /* the operating system refused (errno text) */
  ETPACK_UNIMPLEMENTED = 6,    /* a valid request this version does not do */
  ETPACK_OUT_OF_MEMORY = 100,  /* an allocation failed */
  ETPACK_INTERNAL = 101        /* a bug in etpack; the message says where */
} etpack_status;

/* The message of this thread's last failed call; "" when none failed yet.
 * Never NULL. */
ETPACK_C_API const char* etpack_last_error(void);

/* "ok", "invalid argument", ...; "unknown status" for other values. */
ETPACK_C_API const char* etpack_status_name(int status);

/* The library's version, "MAJOR.MINOR.PATCH". Before 1.0 a MINOR or PATCH
 * release may change this header's calls (four write calls gained their
 * `cancel` within 0.1): build against the header of the library you link. */
ETPACK_C_API const char* etpack_version(void);

/* ---- sources: where the bytes of one data item come from ---------------- */

typedef struct etpack_source etpack_source;

/* `size` bytes at `data`, borrowed (see WHO OWNS WHAT). `data` may be NULL
 * only when size is 0. */
ETPACK_C_API etpack_status etpack_source_memory(const void* data, uint64_t size,
                                                etpack_source** out);

/* Bytes [offset, offset + length) of the file at `path`;
 * length = ETPACK_TO_END takes the rest of the file. The file is opened
 * now: ETPACK_NOT_FOUND for a missing file, ETPACK_OUT_OF_RANGE for a range
 * past its end, ETPACK_INVALID_ARGUMENT for anything but a regular file. The
 * bytes are read (or copied by the kernel) only when a plan is written. */
#define ETPACK_TO_END UINT64_MAX
ETPACK_C_API etpack_status etpack_source_file(const char* path, uint64_t offset, uint64_t length,
                                              etpack_source** out);

/* Fills dst[0, n) with the source's bytes [offset, offset + n). Called
 * while a plan is written, for any range, in any order, possibly more than
 * once for the same range (always the same bytes). Returns ETPACK_OK, or
 * the code the write then fails with (the message names the source and the
 * range; any code that is not an etpack_status becomes ETPACK_IO_ERROR). */
typedef etpack_status (*etpack_fill_fn)(void* user, uint64_t offset, void* dst, size_t n);

/* `size` bytes produced by `fill(user, ...)`. `name` (copied) appears in
 * error messages. `user` must stay valid while the source is in use. */
ETPACK_C_API etpack_status etpack_source_callback(const char* name, uint64_t size,
                                                  etpack_fill_fn fill, void* user,
                                                  etpack_source** out);

/* The source's size in bytes; 0 for NULL. */
ETPACK_C_API uint64_t etpack_source_size(const etpack_source* source);

ETPACK_C_API void etpack_source_free(etpack_source* source);

/* ---- dtypes: ExecuTorch ScalarType codes --------------------------------- */

enum {
  ETPACK_DTYPE_BYTE = 0, /* uint8 */
  ETPACK_DTYPE_CHAR = 1, /* int8 */
  ETPACK_DTYPE_SHORT = 2,
  ETPACK_DTYPE_INT = 3,
  ETPACK_DTYPE_LONG = 4,
  ETPACK_DTYPE_HALF = 5,
  ETPACK_DTYPE_FLOAT = 6,
  ETPACK_DTYPE_DOUBLE = 7,
  ETPACK_DTYPE_BOOL = 11,
  ETPACK_DTYPE_BFLOAT16 = 15,
  ETPACK_DTYPE_UINT16 = 27,
  ETPACK_DTYPE_UINT32 = 28,
  ETPACK_DTYPE_UINT64 = 29
};

/* A tensor layout is passed as (dtype, rank, sizes, dim_order): sizes and
 * dim_order point to `rank` values (NULL when rank is 0); dim_order NULL
 * means contiguous (0, 1, ..., rank - 1), else a permutation of those.
 * rank is at most 16 (the runtime's limit); a larger one is
 * ETPACK_INVALID_ARGUMENT before sizes or dim_order are read. Keys are
 * non-empty UTF-8 without the reserved prefix "etpack.integrity.". */

/* ---- plans --------------------------------------------------------------- */

typedef struct etpack_plan etpack_plan;

/* Called now and then while writing, with the bytes written so far and the
 * total of all files being written. */
typedef void (*etpack_progress_fn)(void* user, uint64_t done_bytes, uint64_t total_bytes);

/* Asked whether to stop, by every call that writes or publishes: after each
 * piece of at most 64 MiB written (so at least every 64 MiB), once more
 * before publishing, and again and again while waiting for another writer
 * that holds the destination folder's lock (a process publishing into the
 * same folder). Nonzero stops the call: it fails with ETPACK_IO_ERROR, the
 * message saying "cancelled by the caller", and, as for any failure,
 * nothing is published and nothing is left behind. It should be cheap (read
 * a flag another thread or a signal handler sets). NULL: never stops, and a
 * lock wait lasts until the other writer is done. */
typedef int (*etpack_cancel_fn)(void* user);

/* Every writing call takes `progress`, `cancel` and one `user` pointer
 * handed to both; either callback may be NULL. */

/* Size in bytes of the file the plan writes; 0 for NULL. */
ETPACK_C_API uint64_t etpack_plan_file_size(const etpack_plan* plan);

/* Writes the planned file at `path` atomically (an existing regular file is
 * replaced; its folder must exist). */
ETPACK_C_API etpack_status etpack_plan_write(const etpack_plan* plan, const char* path,
                                             etpack_progress_fn progress, etpack_cancel_fn cancel,
                                             void* user);

/* Writes `count` plans to `paths` and publishes them as one unit, in this
 * order (data files first): every plan and destination is checked before a
 * byte is written, and on failure no destination has changed. Progress
 * counts all files together. */
ETPACK_C_API etpack_status etpack_plan_write_files(size_t count, const char* const* paths,
                                                   const etpack_plan* const* plans,
                                                   etpack_progress_fn progress,
                                                   etpack_cancel_fn cancel, void* user);

/* The plan of a file that is just the bytes of `source` (e.g. an existing
 * .pte to embed in a .bpte). */
ETPACK_C_API etpack_status etpack_plan_of_source(const etpack_source* source, etpack_plan** out);

ETPACK_C_API void etpack_plan_free(etpack_plan* plan);

/* ---- .pte: ExecuTorch programs ------------------------------------------- */

typedef struct etpack_pte etpack_pte;

ETPACK_C_API etpack_status etpack_pte_create(etpack_pte** out);

/* The Program table without its bulk data, as JSON text in flatc form (one
 * object per table, member names = schema field names, unions as
 * "<field>_type" + "<field>", null = absent, [] = empty vector; see
 * docs/json.md). A constant Buffer's `storage` and an inline delegate's
 * `data` stay absent or []: their bytes are the sources added below. The
 * text is parsed now: ETPACK_INVALID_ARGUMENT names line and column. */
ETPACK_C_API etpack_status etpack_pte_set_program_json(etpack_pte* pte, const char* json,
                                                       size_t json_size);

/* The same as the bytes of a Program flatbuffer (as any flatbuffers builder
 * makes them). Copied now; verified when planned (ETPACK_CORRUPT names the
 * first field that fails). */
ETPACK_C_API etpack_status etpack_pte_set_program_flatbuffer(etpack_pte* pte, const void* bytes,
                                                             size_t size);

/* Data items, referred to from the program by index. Each call appends one
 * item and stores its index in *index (when index is not NULL).
 *   constants  a tensor with data_buffer_idx = i (no allocation_info) reads
 *              constant i. Index 0 is the format's empty placeholder and is
 *              already there: the first constant added is index 1.
 *   mutable    initial value of a memory-planned tensor with
 *              data_buffer_idx = i; likewise starts at 1.
 *   delegates  the payload of a delegate whose `processed` is
 *              {location: INLINE, index: i}; starts at 0; every one must be
 *              referenced. */
ETPACK_C_API etpack_status etpack_pte_add_constant(etpack_pte* pte, const etpack_source* data,
                                                   uint32_t* index);
ETPACK_C_API etpack_status etpack_pte_add_mutable(etpack_pte* pte, const etpack_source* data,
                                                  uint32_t* index);
ETPACK_C_API etpack_status etpack_pte_add_delegate(etpack_pte* pte, const etpack_source* data,
                                                   uint32_t* index);

/* Named data stored in the .pte, looked up by key; segments follow the
 * order of these calls. Keys given the same source handle share one
 * segment, aligned as the first of them asks. `alignment`: any positive
 * value (1 = none); the segment starts at a multiple of lcm(alignment,
 * segment alignment) from the segment base. */
ETPACK_C_API etpack_status etpack_pte_add_named_data(etpack_pte* pte, const char* key,
                                                     const etpack_source* data, uint64_t alignment);

/* Options; each has the CLI's default until set. Option and role
 * parameters are int so that any value an FFI passes is well defined. */
typedef enum etpack_pte_option {
  ETPACK_PTE_SEGMENT_ALIGNMENT = 1,  /* 128: every segment's start */
  ETPACK_PTE_CONSTANT_ALIGNMENT = 2, /* 16: each constant in its segment */
  ETPACK_PTE_DELEGATE_ALIGNMENT = 3, /* 16: inline delegate data */
  ETPACK_PTE_EXTRACT_DELEGATES = 4,  /* 1: delegate payloads to segments;
                                        0: keep them inline (2 GiB limit) */
  ETPACK_PTE_DEDUP_CONSTANTS = 5     /* 0; 1: identical constants stored once
                                        (PteOptions::dedup_constants) */
} etpack_pte_option;
ETPACK_C_API etpack_status etpack_pte_set_option(etpack_pte* pte, int option, uint64_t value);

/* Plans the .pte. The builder is left as it was and may be planned again.
 * ETPACK_INVALID_ARGUMENT names the program field and value (unknown field,
 * wrong type, index out of range, bytes in a data field), ETPACK_CORRUPT a
 * flatbuffer that fails verification, ETPACK_OUT_OF_RANGE a layout beyond
 * 64 bits or a flatbuffer beyond 2 GiB. */
ETPACK_C_API etpack_status etpack_pte_plan(const etpack_pte* pte, etpack_plan** out);

ETPACK_C_API void etpack_pte_free(etpack_pte* pte);

/* ---- .ptd: external data ------------------------------------------------- */

typedef struct etpack_ptd etpack_ptd;

ETPACK_C_API etpack_status etpack_ptd_create(etpack_ptd** out);

/* A tensor under `key`: its bytes, in dim_order, are `data`, which must
 * hold at least the layout's byte count. Entries keep the order of these
 * calls (their segments too); keys given the same source handle share one
 * segment, aligned as the first of them asks. `alignment`: any positive
 * value, combined with the segment alignment by lcm. */
ETPACK_C_API etpack_status etpack_ptd_add_tensor(etpack_ptd* ptd, const char* key,
                                                 const etpack_source* data, int32_t dtype,
                                                 size_t rank, const int32_t* sizes,
                                                 const uint8_t* dim_order, uint64_t alignment);

/* Opaque bytes under `key`, without a tensor layout. */
ETPACK_C_API etpack_status etpack_ptd_add_blob(etpack_ptd* ptd, const char* key,
                                               const etpack_source* data, uint64_t alignment);

typedef enum etpack_ptd_option {
  ETPACK_PTD_SEGMENT_ALIGNMENT = 1, /* 128: the segment base and every segment */
  /* 0 (no limit): bytes one .ptd file may take, everything included.
   * etpack_ptd_plan refuses a larger file; etpack_ptd_plan_files splits the
   * entries into shards under it. */
  ETPACK_PTD_MAX_SHARD_BYTES = 2
} etpack_ptd_option;
ETPACK_C_API etpack_status etpack_ptd_set_option(etpack_ptd* ptd, int option, uint64_t value);

/* Plans the .ptd. ETPACK_INVALID_ARGUMENT names the entry and value: empty
 * or duplicate key, bad alignment, invalid layout, data smaller than the
 * layout, a file over ETPACK_PTD_MAX_SHARD_BYTES. */
ETPACK_C_API etpack_status etpack_ptd_plan(const etpack_ptd* ptd, etpack_plan** out);

/* The .ptd planned as the files that hold it, for `path` ("dir/model.ptd"):
 * that one file, or with ETPACK_PTD_MAX_SHARD_BYTES shards of at most that
 * many bytes each, entries in the order added, named "dir/model-<16 hex
 * digits of XXH3-64 of the shard's sorted keys>.ptd" (the same entries give
 * the same names and bytes). An entry that cannot fit in a shard alone is
 * ETPACK_INVALID_ARGUMENT naming it, its size and the cap. Write them (and
 * the program that refers to them) as one unit with etpack_plan_write_files. */
typedef struct etpack_ptd_files etpack_ptd_files;
ETPACK_C_API etpack_status etpack_ptd_plan_files(const etpack_ptd* ptd, const char* path,
                                                 etpack_ptd_files** out);
/* How many files; 0 for NULL. */
ETPACK_C_API size_t etpack_ptd_files_count(const etpack_ptd_files* files);
/* File i's path and plan, owned by `files`; NULL when i is out of range. */
ETPACK_C_API const char* etpack_ptd_files_path(const etpack_ptd_files* files, size_t i);
ETPACK_C_API const etpack_plan* etpack_ptd_files_plan(const etpack_ptd_files* files, size_t i);
ETPACK_C_API void etpack_ptd_files_free(etpack_ptd_files* files);

ETPACK_C_API void etpack_ptd_free(etpack_ptd* ptd);

/* ---- a program and its external data, as one unit ----------------------- */

/* Plans `pte` and the `count` .ptd files that hold its external data
 * (`data[i]`, written at `data_paths[i]`) together, and writes them as one
 * unit, as `etpack pack --external-named-data` and the Python module do:
 * everything is planned and checked before a byte is written, the .ptd
 * files are published first and the .pte at `path` last, and on failure no
 * destination has changed, so a program never appears without its data,
 * nor data beside an old program. Each .ptd takes the program's
 * ETPACK_PTE_SEGMENT_ALIGNMENT (its own ETPACK_PTD_SEGMENT_ALIGNMENT is not
 * used). A planning error starts with the path of the file it is about; a
 * path given twice is ETPACK_INVALID_ARGUMENT. The builders are left as
 * they were. `progress` counts all files together. */
ETPACK_C_API etpack_status etpack_pte_write_with_data(const etpack_pte* pte, const char* path,
                                                      size_t count, const char* const* data_paths,
                                                      const etpack_ptd* const* data,
                                                      etpack_progress_fn progress,
                                                      etpack_cancel_fn cancel, void* user);

/* ---- .bpte: bundled programs --------------------------------------------- */

typedef struct etpack_bpte etpack_bpte;

/* A bundle around `program`: the plan of a .pte being exported
 * (etpack_pte_plan, embedded without being materialized) or of an existing
 * file (etpack_plan_of_source). The bundle keeps its own copy of the plan. */
ETPACK_C_API etpack_status etpack_bpte_create(const etpack_plan* program, etpack_bpte** out);

/* Starts a new test case of method `method_name` (its suite is created at
 * the first case; suites keep the order of their first case). The values
 * added next belong to this case. */
ETPACK_C_API etpack_status etpack_bpte_add_case(etpack_bpte* bpte, const char* method_name);

/* Values of the current case, in order: where = ETPACK_BPTE_INPUT or
 * ETPACK_BPTE_EXPECTED_OUTPUT. A tensor's `data` must hold exactly the
 * layout's byte count (checked when planned). */
typedef enum etpack_bpte_value_role {
  ETPACK_BPTE_INPUT = 0,
  ETPACK_BPTE_EXPECTED_OUTPUT = 1
} etpack_bpte_value_role;
ETPACK_C_API etpack_status etpack_bpte_add_tensor(etpack_bpte* bpte, int where, int32_t dtype,
                                                  size_t rank, const int32_t* sizes,
                                                  const uint8_t* dim_order,
                                                  const etpack_source* data);
ETPACK_C_API etpack_status etpack_bpte_add_int(etpack_bpte* bpte, int where, int64_t value);
ETPACK_C_API etpack_status etpack_bpte_add_bool(etpack_bpte* bpte, int where, int value);
ETPACK_C_API etpack_status etpack_bpte_add_double(etpack_bpte* bpte, int where, double value);

typedef enum etpack_bpte_option {
  /* ETPACK_BPTE_STANDARD (default): the reference format, 2 GiB at most;
   * ETPACK_BPTE_SEGMENTED: program and large tensors in segments, no limit
   * (docs/bpte-segments.md). */
  ETPACK_BPTE_LAYOUT = 1,
  /* Segmented: alignment of the embedded program (128; >= 128). */
  ETPACK_BPTE_PROGRAM_ALIGNMENT = 2,
  /* Segmented: tensors of at least this many bytes get a segment (1 MiB). */
  ETPACK_BPTE_TENSOR_SEGMENT_THRESHOLD = 3
} etpack_bpte_option;
enum { ETPACK_BPTE_STANDARD = 0, ETPACK_BPTE_SEGMENTED = 1 };
ETPACK_C_API etpack_status etpack_bpte_set_option(etpack_bpte* bpte, int option, uint64_t value);

/* Plans the .bpte. ETPACK_OUT_OF_RANGE when a standard bundle would exceed
 * 2 GiB (the segmented layout is the way out); ETPACK_INVALID_ARGUMENT for a
 * tensor whose data size differs from its layout (naming suite, case and
 * value). */
ETPACK_C_API etpack_status etpack_bpte_plan(const etpack_bpte* bpte, etpack_plan** out);

ETPACK_C_API void etpack_bpte_free(etpack_bpte* bpte);

/* ---- verifying ----------------------------------------------------------- */

/* Checks the `count` files at `paths` completely, as `etpack verify` does:
 * one .pte, .ptd or .bpte (flatbuffer, structure, integrity table, fat
 * delegates); a .pte with the .ptd files holding its data (each valid,
 * every EXTERNAL tensor resolving in them); or .ptd files alone, a set
 * loaded together (each valid, each key in exactly one). ETPACK_OK when all
 * is valid; else the code of the first failure, etpack_last_error() naming
 * the file, the field and the value (ETPACK_NOT_FOUND or ETPACK_IO_ERROR for
 * a file that cannot be read). ETPACK_INVALID_ARGUMENT also for no file, two
 * programs, or .ptd files beside a .bpte. */
ETPACK_C_API etpack_status etpack_verify(size_t count, const char* const* paths);

/* ---- sharing a family's data -------------------------------------------- */

enum {
  ETPACK_SHARE_DRY_RUN = 1,  /* plan and report only: write nothing */
  ETPACK_SHARE_INTEGRITY = 2 /* an integrity table in every output */
};

/* `etpack share` (docs/share.md): the `count` inputs (two or more .pte
 * paths, and the .ptd files they use) become thin programs in `out_dir`
 * (made if missing; each under its input's base name, as each .ptd's
 * remaining entries) and one shared file `data_name` (NULL: "shared.ptd")
 * holding once every constant, named-data key and .ptd entry two or more
 * inputs hold alike, published as one unit. max_shard_bytes: 0, or the
 * shared file as shards of at most that many bytes; alignment: 0 (as the
 * inputs were written), or every segment and constant at a multiple of it;
 * min_bytes: smaller items stay (the CLI's default is 4096). `flags`:
 * ETPACK_SHARE_* or'ed. `report`, when not NULL, receives the report as
 * one JSON object (`etpack share --json`), NUL-terminated, which the caller
 * frees with etpack_string_free; NULL on failure. `cancel` is asked while
 * the outputs are written and while waiting for another writer holding the
 * lock of out_dir's parent folder (another share beside it); cancelled,
 * out_dir is as it was. */
ETPACK_C_API etpack_status etpack_share(size_t count, const char* const* inputs,
                                        const char* out_dir, const char* data_name,
                                        uint64_t max_shard_bytes, uint64_t alignment,
                                        uint64_t min_bytes, uint32_t flags,
                                        etpack_progress_fn progress, etpack_cancel_fn cancel,
                                        void* user, char** report);

/* Frees a string the library returned (NULL: nothing). */
ETPACK_C_API void etpack_string_free(char* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ETPACK_ETPACK_C_H_ */
