/* Writes artifacts through the C API, as a C program would (C99, no C++). */
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c99 */

#include "capi_cases.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etpack/etpack_c.h"

/* ---- sources and progress ------------------------------------------------ */

static etpack_status Fill(void* user, uint64_t offset, void* dst, size_t n) {
  const capi_bytes* b = (const capi_bytes*)user;
  if (offset > b->size || n > b->size - offset) return ETPACK_INTERNAL;
  memcpy(dst, (const unsigned char*)b->data + offset, n);
  return ETPACK_OK;
}

static etpack_status NewSource(const capi_bytes* b, capi_kind kind, etpack_source** out) {
  switch (kind) {
    case CAPI_MEMORY: return etpack_source_memory(b->data, b->size, out);
    case CAPI_FILE: return etpack_source_file(b->file, b->offset, b->size, out);
    case CAPI_CALLBACK: return etpack_source_callback("capi item", b->size, Fill, (void*)b, out);
  }
  return ETPACK_INVALID_ARGUMENT;
}

/* Every report: done never decreases, never passes total; the last one is
 * done == total. */
typedef struct progress_log {
  int calls;
  int bad;
  uint64_t done;
  uint64_t total;
} progress_log;

static void Progress(void* user, uint64_t done, uint64_t total) {
  progress_log* p = (progress_log*)user;
  if (done < p->done || done > total || (p->calls > 0 && total != p->total)) p->bad = 1;
  p->calls++;
  p->done = done;
  p->total = total;
}

static int Write(const etpack_plan* plan, const char* path) {
  progress_log p = {0, 0, 0, 0};
  etpack_status s = etpack_plan_write(plan, path, Progress, NULL, &p);
  if (s != ETPACK_OK) return s;
  if (p.calls == 0 || p.bad || p.done != p.total) return CAPI_BAD_PROGRESS;
  return ETPACK_OK;
}

/* Adds every item of a list with `add`, checking the index it gets. */
typedef etpack_status (*add_fn)(etpack_pte*, const etpack_source*, uint32_t*);
static etpack_status AddAll(etpack_pte* pte, add_fn add, const capi_bytes* items, size_t count,
                            uint32_t first_index, capi_kind kind) {
  size_t i;
  for (i = 0; i < count; ++i) {
    etpack_source* src = NULL;
    uint32_t index = 0;
    etpack_status s = NewSource(&items[i], kind, &src);
    if (s == ETPACK_OK) s = add(pte, src, &index);
    etpack_source_free(src); /* the builder holds its own reference */
    if (s != ETPACK_OK) return s;
    if (index != first_index + i) return ETPACK_INTERNAL;
  }
  return ETPACK_OK;
}

/* ---- the three formats ----------------------------------------------------- */

int capi_write_pte(const capi_pte_case* c, capi_kind kind, const char* path) {
  etpack_pte* pte = NULL;
  etpack_plan* plan = NULL;
  etpack_source** named = NULL;
  size_t i;
  etpack_status s = etpack_pte_create(&pte);
  if (s == ETPACK_OK) {
    s = c->program_is_flatbuffer
            ? etpack_pte_set_program_flatbuffer(pte, c->program, c->program_size)
            : etpack_pte_set_program_json(pte, c->program, c->program_size);
  }
  if (s == ETPACK_OK)
    s = AddAll(pte, etpack_pte_add_constant, c->constants, c->constant_count, 1, kind);
  if (s == ETPACK_OK)
    s = AddAll(pte, etpack_pte_add_mutable, c->mutable_data, c->mutable_count, 1, kind);
  if (s == ETPACK_OK)
    s = AddAll(pte, etpack_pte_add_delegate, c->delegates, c->delegate_count, 0, kind);
  /* Keys of one buffer share its source handle, hence one segment. */
  named = (etpack_source**)calloc(c->named_buffer_count + 1, sizeof *named);
  if (named == NULL) s = ETPACK_OUT_OF_MEMORY;
  for (i = 0; s == ETPACK_OK && i < c->named_buffer_count; ++i) {
    s = NewSource(&c->named_buffers[i], kind, &named[i]);
  }
  for (i = 0; s == ETPACK_OK && i < c->named_count; ++i) {
    s = etpack_pte_add_named_data(pte, c->named[i].key, named[c->named[i].buffer],
                                  c->named[i].alignment);
  }
  if (s == ETPACK_OK)
    s = etpack_pte_set_option(pte, ETPACK_PTE_SEGMENT_ALIGNMENT, c->segment_alignment);
  if (s == ETPACK_OK)
    s = etpack_pte_set_option(pte, ETPACK_PTE_CONSTANT_ALIGNMENT, c->constant_alignment);
  if (s == ETPACK_OK)
    s = etpack_pte_set_option(pte, ETPACK_PTE_DELEGATE_ALIGNMENT, c->delegate_alignment);
  if (s == ETPACK_OK)
    s = etpack_pte_set_option(pte, ETPACK_PTE_EXTRACT_DELEGATES, (uint64_t)c->extract_delegates);
  if (s == ETPACK_OK) s = etpack_pte_plan(pte, &plan);
  for (i = 0; named != NULL && i < c->named_buffer_count; ++i) etpack_source_free(named[i]);
  free(named);
  etpack_pte_free(pte); /* the plan holds the sources it needs */
  if (s == ETPACK_OK) s = (etpack_status)Write(plan, path);
  etpack_plan_free(plan);
  return s;
}

int capi_write_ptd(const capi_ptd_case* c, capi_kind kind, const char* path) {
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = NULL;
  etpack_source** buffers = (etpack_source**)calloc(c->buffer_count + 1, sizeof *buffers);
  size_t i;
  etpack_status s = buffers ? etpack_ptd_create(&ptd) : ETPACK_OUT_OF_MEMORY;
  for (i = 0; s == ETPACK_OK && i < c->buffer_count; ++i) {
    s = NewSource(&c->buffers[i], kind, &buffers[i]);
  }
  for (i = 0; s == ETPACK_OK && i < c->entry_count; ++i) {
    const capi_ptd_entry* e = &c->entries[i];
    s = e->has_layout ? etpack_ptd_add_tensor(ptd, e->key, buffers[e->buffer], e->layout.dtype,
                                              e->layout.rank, e->layout.sizes, e->layout.dim_order,
                                              e->alignment)
                      : etpack_ptd_add_blob(ptd, e->key, buffers[e->buffer], e->alignment);
  }
  if (s == ETPACK_OK)
    s = etpack_ptd_set_option(ptd, ETPACK_PTD_SEGMENT_ALIGNMENT, c->segment_alignment);
  if (s == ETPACK_OK) s = etpack_ptd_plan(ptd, &plan);
  if (s == ETPACK_OK) s = (etpack_status)Write(plan, path);
  for (i = 0; buffers != NULL && i < c->buffer_count; ++i) etpack_source_free(buffers[i]);
  free(buffers);
  etpack_plan_free(plan);
  etpack_ptd_free(ptd);
  return s;
}

static etpack_status AddValue(etpack_bpte* bpte, int where, const capi_value* v, capi_kind kind) {
  etpack_source* data = NULL;
  etpack_status s;
  switch (v->kind) {
    case CAPI_TENSOR:
      s = NewSource(&v->data, kind, &data);
      if (s == ETPACK_OK) {
        s = etpack_bpte_add_tensor(bpte, where, v->layout.dtype, v->layout.rank, v->layout.sizes,
                                   v->layout.dim_order, data);
      }
      etpack_source_free(data);
      return s;
    case CAPI_INT: return etpack_bpte_add_int(bpte, where, v->int_val);
    case CAPI_BOOL: return etpack_bpte_add_bool(bpte, where, v->bool_val);
    case CAPI_DOUBLE: return etpack_bpte_add_double(bpte, where, v->double_val);
  }
  return ETPACK_INVALID_ARGUMENT;
}

int capi_write_bpte(const char* program_path, const capi_test_case* cases, size_t case_count,
                    capi_kind kind, const char* path) {
  etpack_source* program = NULL;
  etpack_plan* program_plan = NULL;
  etpack_bpte* bpte = NULL;
  etpack_plan* plan = NULL;
  size_t i, j;
  etpack_status s = etpack_source_file(program_path, 0, ETPACK_TO_END, &program);
  if (s == ETPACK_OK) s = etpack_plan_of_source(program, &program_plan);
  if (s == ETPACK_OK) s = etpack_bpte_create(program_plan, &bpte);
  for (i = 0; s == ETPACK_OK && i < case_count; ++i) {
    s = etpack_bpte_add_case(bpte, cases[i].method);
    for (j = 0; s == ETPACK_OK && j < cases[i].input_count; ++j) {
      s = AddValue(bpte, ETPACK_BPTE_INPUT, &cases[i].inputs[j], kind);
    }
    for (j = 0; s == ETPACK_OK && j < cases[i].output_count; ++j) {
      s = AddValue(bpte, ETPACK_BPTE_EXPECTED_OUTPUT, &cases[i].outputs[j], kind);
    }
  }
  if (s == ETPACK_OK) s = etpack_bpte_set_option(bpte, ETPACK_BPTE_LAYOUT, ETPACK_BPTE_STANDARD);
  if (s == ETPACK_OK) s = etpack_bpte_plan(bpte, &plan);
  if (s == ETPACK_OK) s = (etpack_status)Write(plan, path);
  etpack_plan_free(plan);
  etpack_bpte_free(bpte);
  etpack_plan_free(program_plan);
  etpack_source_free(program);
  return s;
}

/* ---- error paths, callbacks, progress -------------------------------------- */

typedef struct checker {
  char* log;
  size_t size;
  size_t used;
  int failures;
} checker;

static void Failed(checker* c, int line, const char* format, ...) {
  va_list args;
  int n;
  c->failures++;
  if (c->used + 1 >= c->size) return;
  n = snprintf(c->log + c->used, c->size - c->used, "capi_cases.c:%d: ", line);
  if (n > 0) c->used += (size_t)n < c->size - c->used ? (size_t)n : c->size - c->used - 1;
  va_start(args, format);
  n = vsnprintf(c->log + c->used, c->size - c->used, format, args);
  va_end(args);
  if (n > 0) c->used += (size_t)n < c->size - c->used ? (size_t)n : c->size - c->used - 1;
  if (c->used + 1 < c->size) c->log[c->used++] = '\n';
  c->log[c->used] = '\0';
}

#define CHECK(cond) \
  if (!(cond)) Failed(ck, __LINE__, "CHECK(%s) failed; last error: %s", #cond, etpack_last_error())

/* The call fails with `code` and a message containing `needle`. */
#define CHECK_FAILS(call, code, needle)                                                      \
  do {                                                                                       \
    etpack_status s_ = (call);                                                               \
    if (s_ != (code) || strstr(etpack_last_error(), (needle)) == NULL) {                     \
      Failed(ck, __LINE__, "%s returned %d (%s) with \"%s\"; expected %s mentioning \"%s\"", \
             #call, (int)s_, etpack_status_name(s_), etpack_last_error(), #code, (needle));  \
    }                                                                                        \
  } while (0)

static int Exists(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f != NULL) fclose(f);
  return f != NULL;
}

/* A generator: byte i is a function of i; fails at `fail_at` when set. */
typedef struct pattern {
  uint64_t fail_at;
  uint64_t calls;
  uint64_t bytes;
} pattern;

static unsigned char PatternByte(uint64_t i) {
  return (unsigned char)((i * 131u + (i >> 20)) & 0xff);
}

static etpack_status FillPattern(void* user, uint64_t offset, void* dst, size_t n) {
  pattern* p = (pattern*)user;
  unsigned char* out = (unsigned char*)dst;
  size_t i;
  p->calls++;
  p->bytes += n;
  if (p->fail_at != 0 && offset <= p->fail_at && p->fail_at < offset + n) return ETPACK_IO_ERROR;
  for (i = 0; i < n; ++i) out[i] = PatternByte(offset + i);
  return ETPACK_OK;
}

static void Join(char* out, size_t size, const char* dir, const char* name) {
  snprintf(out, size, "%s/%s", dir, name);
}

/* A 70 MiB callback source written as a .ptd blob: the bytes land intact,
 * the callback is asked in chunks, progress reports more than once. */
static void CheckLargeCallback(checker* ck, const char* dir) {
  const uint64_t size = (uint64_t)70 << 20;
  char path[4096];
  pattern p = {0, 0, 0};
  progress_log log = {0, 0, 0, 0};
  etpack_source* src = NULL;
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = NULL;
  Join(path, sizeof path, dir, "large.ptd");
  CHECK(etpack_source_callback("pattern", size, FillPattern, &p, &src) == ETPACK_OK);
  CHECK(etpack_source_size(src) == size);
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "big", src, 4096) == ETPACK_OK);
  CHECK(etpack_ptd_plan(ptd, &plan) == ETPACK_OK);
  CHECK(p.calls == 0); /* planning reads no data */
  CHECK(etpack_plan_write(plan, path, Progress, NULL, &log) == ETPACK_OK);
  CHECK(p.calls > 1 && p.bytes == size);
  CHECK(log.calls >= 2 && !log.bad && log.done == log.total && log.total >= size);
  if (plan != NULL) {
    /* The one segment ends the file. */
    const uint64_t base = etpack_plan_file_size(plan) - size;
    FILE* f = fopen(path, "rb");
    static unsigned char buf[1 << 16];
    uint64_t at = 0;
    int same = f != NULL && fseek(f, (long)base, SEEK_SET) == 0;
    while (same && at < size) {
      size_t n = fread(buf, 1, sizeof buf, f);
      size_t i;
      if (n == 0) break;
      for (i = 0; i < n && same; ++i) same = buf[i] == PatternByte(at + i);
      at += n;
    }
    CHECK(same && at == size);
    if (f != NULL) fclose(f);
  }
  remove(path);
  etpack_plan_free(plan);
  etpack_ptd_free(ptd);
  etpack_source_free(src);
}

/* A failing callback fails the write with its code, naming the source;
 * the destination is never created. */
static void CheckFailingCallback(checker* ck, const char* dir) {
  char path[4096];
  pattern p = {5000, 0, 0};
  etpack_source* src = NULL;
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = NULL;
  Join(path, sizeof path, dir, "failing.ptd");
  CHECK(etpack_source_callback("layer.0.weight", 10000, FillPattern, &p, &src) == ETPACK_OK);
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "w", src, 1) == ETPACK_OK);
  CHECK(etpack_ptd_plan(ptd, &plan) == ETPACK_OK);
  CHECK_FAILS(etpack_plan_write(plan, path, NULL, NULL, NULL), ETPACK_IO_ERROR, "layer.0.weight");
  CHECK(strstr(etpack_last_error(), "fill callback returned 5") != NULL);
  CHECK(!Exists(path));
  etpack_plan_free(plan);
  etpack_ptd_free(ptd);
  etpack_source_free(src);
}

/* Shards under ETPACK_PTD_MAX_SHARD_BYTES: each within the cap, named after
 * the path, written as one unit; etpack_ptd_plan refuses the whole. */
static void CheckShards(checker* ck, const char* dir) {
  char path[4096];
  static unsigned char bytes[4][3000];
  etpack_source* src[4] = {NULL, NULL, NULL, NULL};
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = NULL;
  etpack_ptd_files* files = NULL;
  const char* paths[8];
  const etpack_plan* plans[8];
  size_t i, n;
  Join(path, sizeof path, dir, "sharded.ptd");
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  for (i = 0; i < 4; ++i) {
    char key[16];
    snprintf(key, sizeof key, "w%u", (unsigned)i);
    memset(bytes[i], (int)i + 1, sizeof bytes[i]); /* distinct contents: no dedup */
    CHECK(etpack_source_memory(bytes[i], sizeof bytes[i], &src[i]) == ETPACK_OK);
    CHECK(etpack_ptd_add_blob(ptd, key, src[i], 1) == ETPACK_OK);
  }
  CHECK(etpack_ptd_set_option(ptd, ETPACK_PTD_MAX_SHARD_BYTES, 4096) == ETPACK_OK);
  CHECK_FAILS(etpack_ptd_plan(ptd, &plan), ETPACK_INVALID_ARGUMENT, "max_shard_bytes = 4096");
  CHECK(etpack_ptd_plan_files(ptd, path, &files) == ETPACK_OK);
  n = etpack_ptd_files_count(files);
  CHECK(n == 4);
  CHECK(etpack_ptd_files_path(files, n) == NULL && etpack_ptd_files_plan(files, n) == NULL);
  for (i = 0; i < n && i < 8; ++i) {
    paths[i] = etpack_ptd_files_path(files, i);
    plans[i] = etpack_ptd_files_plan(files, i);
    CHECK(etpack_plan_file_size(plans[i]) <= 4096);
    CHECK(strncmp(paths[i], path, strlen(path) - 4) == 0 && strstr(paths[i], "sharded-") != NULL);
  }
  CHECK(etpack_plan_write_files(n, paths, plans, NULL, NULL, NULL) == ETPACK_OK);
  for (i = 0; i < n && i < 8; ++i) {
    CHECK(Exists(paths[i]));
    remove(paths[i]);
  }
  CHECK(!Exists(path));
  etpack_ptd_files_free(files);
  CHECK(etpack_ptd_set_option(ptd, ETPACK_PTD_MAX_SHARD_BYTES, 2000) == ETPACK_OK);
  CHECK_FAILS(etpack_ptd_plan_files(ptd, path, &files), ETPACK_INVALID_ARGUMENT, "'w0'");
  CHECK(files == NULL);
  etpack_ptd_free(ptd);
  for (i = 0; i < 4; ++i) etpack_source_free(src[i]);
}

static void CheckNullArguments(checker* ck) {
  etpack_source* src = (etpack_source*)&src; /* must come back NULL */
  etpack_source* none = NULL;
  etpack_pte* pte = NULL;
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = (etpack_plan*)&plan;
  const int32_t sizes[1] = {4};
  CHECK_FAILS(etpack_source_memory(NULL, 4, &src), ETPACK_INVALID_ARGUMENT,
              "etpack_source_memory: data is NULL");
  CHECK(src == NULL);
  CHECK(etpack_source_memory(NULL, 0, &src) == ETPACK_OK); /* an empty item */
  CHECK(etpack_source_size(src) == 0);
  CHECK_FAILS(etpack_source_memory("x", 1, NULL), ETPACK_INVALID_ARGUMENT, "out is NULL");
  CHECK_FAILS(etpack_source_file(NULL, 0, 1, &none), ETPACK_INVALID_ARGUMENT, "path is NULL");
  CHECK_FAILS(etpack_source_callback("g", 1, NULL, NULL, &none), ETPACK_INVALID_ARGUMENT,
              "fill is NULL");
  CHECK(none == NULL);
  CHECK_FAILS(etpack_pte_create(NULL), ETPACK_INVALID_ARGUMENT, "etpack_pte_create: out is NULL");
  CHECK_FAILS(etpack_pte_set_program_json(NULL, "{}", 2), ETPACK_INVALID_ARGUMENT, "pte is NULL");
  CHECK(etpack_pte_create(&pte) == ETPACK_OK);
  CHECK_FAILS(etpack_pte_set_program_json(pte, NULL, 0), ETPACK_INVALID_ARGUMENT, "json is NULL");
  CHECK_FAILS(etpack_pte_add_constant(pte, NULL, NULL), ETPACK_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(etpack_pte_plan(pte, &plan), ETPACK_INVALID_ARGUMENT, "no program structure");
  CHECK(plan == NULL);
  CHECK_FAILS(etpack_plan_write(NULL, "x.pte", NULL, NULL, NULL), ETPACK_INVALID_ARGUMENT,
              "etpack_plan_write: plan is NULL");
  CHECK_FAILS(etpack_plan_write_files(1, NULL, NULL, NULL, NULL, NULL), ETPACK_INVALID_ARGUMENT,
              "paths is NULL");
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK_FAILS(etpack_ptd_add_tensor(ptd, NULL, src, ETPACK_DTYPE_FLOAT, 1, sizes, NULL, 1),
              ETPACK_INVALID_ARGUMENT, "key is NULL");
  CHECK_FAILS(etpack_ptd_add_tensor(ptd, "k", src, ETPACK_DTYPE_FLOAT, 1, NULL, NULL, 1),
              ETPACK_INVALID_ARGUMENT, "sizes is NULL");
  CHECK_FAILS(etpack_bpte_create(NULL, NULL), ETPACK_INVALID_ARGUMENT, "out is NULL");
  etpack_source_free(NULL); /* every free takes NULL */
  etpack_plan_free(NULL);
  etpack_pte_free(NULL);
  etpack_ptd_free(NULL);
  etpack_bpte_free(NULL);
  CHECK(etpack_plan_file_size(NULL) == 0 && etpack_source_size(NULL) == 0);
  etpack_ptd_free(ptd);
  etpack_pte_free(pte);
  etpack_source_free(src);
}

static void CheckBadInput(checker* ck, const char* dir) {
  static const char kTruncated[] = "{\"execution_plan\": [";
  static const char kUnknownField[] = "{\"execution_plan\": [], \"no_such_field\": 1}";
  static const unsigned char kNotAFlatbuffer[] = {1, 2, 3};
  const unsigned char bytes[8] = {0};
  const int32_t sizes[2] = {2, 2};
  const uint8_t not_a_permutation[2] = {0, 0};
  char missing[4096], path[4096], nodir[4096];
  etpack_pte* pte = NULL;
  etpack_ptd* ptd = NULL;
  etpack_bpte* bpte = NULL;
  etpack_plan* plan = NULL;
  etpack_source* src = NULL;
  Join(missing, sizeof missing, dir, "missing.bin");
  Join(path, sizeof path, dir, "bad.ptd");
  Join(nodir, sizeof nodir, dir, "no/such/dir/out.ptd");

  CHECK(etpack_pte_create(&pte) == ETPACK_OK);
  CHECK_FAILS(etpack_pte_set_program_json(pte, kTruncated, sizeof kTruncated - 1),
              ETPACK_INVALID_ARGUMENT, "program JSON");
  CHECK(etpack_pte_set_program_json(pte, kUnknownField, sizeof kUnknownField - 1) == ETPACK_OK);
  CHECK_FAILS(etpack_pte_plan(pte, &plan), ETPACK_INVALID_ARGUMENT, "no_such_field");
  CHECK(etpack_pte_set_program_flatbuffer(pte, kNotAFlatbuffer, sizeof kNotAFlatbuffer) ==
        ETPACK_OK);
  CHECK(etpack_pte_plan(pte, &plan) != ETPACK_OK && plan == NULL);
  CHECK_FAILS(etpack_pte_set_option(pte, 99, 1), ETPACK_INVALID_ARGUMENT, "unknown option 99");
  CHECK(etpack_pte_set_option(pte, ETPACK_PTE_DEDUP_CONSTANTS, 1) == ETPACK_OK);

  CHECK_FAILS(etpack_source_file(missing, 0, ETPACK_TO_END, &src), ETPACK_NOT_FOUND, "missing.bin");
  CHECK(src == NULL);
  CHECK_FAILS(etpack_source_file(dir, 0, ETPACK_TO_END, &src), ETPACK_INVALID_ARGUMENT, dir);

  CHECK(etpack_source_memory(bytes, sizeof bytes, &src) == ETPACK_OK);
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK_FAILS(
      etpack_ptd_add_tensor(ptd, "t", src, ETPACK_DTYPE_BYTE, 2, sizes, not_a_permutation, 1),
      ETPACK_INVALID_ARGUMENT, "dim_order");
  CHECK_FAILS(etpack_ptd_add_tensor(ptd, "t", src, 12345, 2, sizes, NULL, 1),
              ETPACK_INVALID_ARGUMENT, "12345");
  /* Rank: the runtime's limit of 16, checked before `rank` values are read;
   * the message stays one short line whatever the rank. */
  {
    int32_t ones[100000];
    size_t i;
    for (i = 0; i < 100000; ++i) ones[i] = 1;
    CHECK_FAILS(etpack_ptd_add_tensor(ptd, "r", src, ETPACK_DTYPE_BYTE, 17, ones, NULL, 1),
                ETPACK_INVALID_ARGUMENT, "rank 17 exceeds");
    CHECK_FAILS(etpack_ptd_add_tensor(ptd, "r", src, ETPACK_DTYPE_BYTE, 100000, ones, NULL, 1),
                ETPACK_INVALID_ARGUMENT, "rank 100000 exceeds");
    CHECK(strlen(etpack_last_error()) < 200);
    CHECK_FAILS(etpack_ptd_add_tensor(ptd, "r", src, ETPACK_DTYPE_BYTE, (size_t)-1, ones, NULL, 1),
                ETPACK_INVALID_ARGUMENT, "exceeds the runtime's limit of 16");
  }
  /* Keys: the planners' rule, checked by the call that adds the key. */
  CHECK_FAILS(etpack_ptd_add_blob(ptd, "", src, 1), ETPACK_INVALID_ARGUMENT, "empty key");
  CHECK_FAILS(etpack_ptd_add_blob(ptd, "a\xff", src, 1), ETPACK_INVALID_ARGUMENT,
              "not valid UTF-8");
  CHECK_FAILS(etpack_ptd_add_blob(ptd, "etpack.integrity.x", src, 1), ETPACK_INVALID_ARGUMENT,
              "reserved");
  CHECK(etpack_ptd_add_tensor(ptd, "t", src, ETPACK_DTYPE_BYTE, 2, sizes, NULL, 1) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "t", src, 1) == ETPACK_OK);
  CHECK_FAILS(etpack_ptd_plan(ptd, &plan), ETPACK_INVALID_ARGUMENT, "repeats entries[0] 't'");
  etpack_ptd_free(ptd);
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "none", src, 0) == ETPACK_OK);
  CHECK_FAILS(etpack_ptd_plan(ptd, &plan), ETPACK_INVALID_ARGUMENT, "0");
  etpack_ptd_free(ptd);

  /* A destination in a folder that does not exist: an error, no file. */
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "b", src, 1) == ETPACK_OK);
  CHECK(etpack_ptd_plan(ptd, &plan) == ETPACK_OK);
  CHECK(etpack_plan_write(plan, nodir, NULL, NULL, NULL) != ETPACK_OK);
  CHECK(strstr(etpack_last_error(), "no/such/dir") != NULL);
  CHECK(!Exists(nodir));

  /* Values before any test case. */
  CHECK(etpack_bpte_create(plan, &bpte) == ETPACK_OK);
  CHECK_FAILS(etpack_bpte_add_int(bpte, ETPACK_BPTE_INPUT, 1), ETPACK_INVALID_ARGUMENT,
              "etpack_bpte_add_case");
  CHECK(etpack_bpte_add_case(bpte, "forward") == ETPACK_OK);
  CHECK_FAILS(etpack_bpte_add_int(bpte, 7, 1), ETPACK_INVALID_ARGUMENT, "where = 7");
  CHECK_FAILS(etpack_bpte_set_option(bpte, ETPACK_BPTE_LAYOUT, 5), ETPACK_INVALID_ARGUMENT,
              "ETPACK_BPTE_LAYOUT = 5");

  etpack_bpte_free(bpte);
  etpack_plan_free(plan);
  etpack_ptd_free(ptd);
  etpack_source_free(src);
  etpack_pte_free(pte);
}

/* Two files as one unit: when the second cannot be written, the first is
 * not published either. */
static void CheckOneUnit(checker* ck, const char* dir) {
  const unsigned char bytes[4] = {1, 2, 3, 4};
  char first[4096], second[4096], bad[4096];
  const char* paths[2];
  const etpack_plan* plans[2];
  progress_log log = {0, 0, 0, 0};
  etpack_source* src = NULL;
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = NULL;
  Join(first, sizeof first, dir, "a.ptd");
  Join(second, sizeof second, dir, "b.ptd");
  Join(bad, sizeof bad, dir, "missing/b.ptd");
  CHECK(etpack_source_memory(bytes, sizeof bytes, &src) == ETPACK_OK);
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "b", src, 1) == ETPACK_OK);
  CHECK(etpack_ptd_plan(ptd, &plan) == ETPACK_OK);
  paths[0] = first;
  paths[1] = bad;
  plans[0] = plan;
  plans[1] = plan;
  CHECK(etpack_plan_write_files(2, paths, plans, NULL, NULL, NULL) != ETPACK_OK);
  CHECK(!Exists(first));
  paths[1] = second;
  CHECK(etpack_plan_write_files(2, paths, plans, Progress, NULL, &log) == ETPACK_OK);
  CHECK(Exists(first) && Exists(second));
  CHECK(log.calls > 0 && log.done == log.total && log.total <= 2 * etpack_plan_file_size(plan));
  remove(first);
  remove(second);
  etpack_plan_free(plan);
  etpack_ptd_free(ptd);
  etpack_source_free(src);
}

/* An output that is the job's own input is refused before anything is
 * written (cp's "are the same file"); so is a FIFO as an input, at once. */
static void CheckInputs(checker* ck, const char* dir) {
  char data[4096], fifo[4096];
  etpack_source* src = NULL;
  etpack_ptd* ptd = NULL;
  etpack_plan* plan = NULL;
  FILE* f;
  Join(data, sizeof data, dir, "own.bin");
  Join(fifo, sizeof fifo, dir, "fifo.bin");
  f = fopen(data, "wb");
  CHECK(f != NULL);
  if (f == NULL) return;
  CHECK(fwrite("abcdefgh", 1, 8, f) == 8);
  fclose(f);
  CHECK(etpack_source_file(data, 0, ETPACK_TO_END, &src) == ETPACK_OK);
  CHECK(etpack_ptd_create(&ptd) == ETPACK_OK);
  CHECK(etpack_ptd_add_blob(ptd, "b", src, 1) == ETPACK_OK);
  CHECK(etpack_ptd_plan(ptd, &plan) == ETPACK_OK);
  CHECK_FAILS(etpack_plan_write(plan, data, NULL, NULL, NULL), ETPACK_INVALID_ARGUMENT,
              "is the same file as the output");
  f = fopen(data, "rb");
  if (f != NULL) {
    char back[16] = {0};
    CHECK(fread(back, 1, sizeof back, f) == 8 && memcmp(back, "abcdefgh", 8) == 0);
    fclose(f);
  }
  if (mkfifo(fifo, 0600) == 0) {
    etpack_source* from_fifo = NULL;
    CHECK_FAILS(etpack_source_file(fifo, 0, ETPACK_TO_END, &from_fifo), ETPACK_INVALID_ARGUMENT,
                "is a FIFO");
    CHECK(from_fifo == NULL);
    remove(fifo);
  }
  remove(data);
  etpack_plan_free(plan);
  etpack_ptd_free(ptd);
  etpack_source_free(src);
}

/* Each thread has its own last error. */
static void* FailInThread(void* message) {
  etpack_source* none = NULL;
  etpack_source_file(NULL, 0, 0, &none);
  strncpy((char*)message, etpack_last_error(), 255);
  return NULL;
}

static void CheckThreadLocalError(checker* ck) {
  char theirs[256] = {0};
  pthread_t thread;
  CHECK(etpack_pte_create(NULL) == ETPACK_INVALID_ARGUMENT);
  CHECK(pthread_create(&thread, NULL, FailInThread, theirs) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(strstr(theirs, "etpack_source_file: path is NULL") != NULL);
  CHECK(strstr(etpack_last_error(), "etpack_pte_create: out is NULL") != NULL);
}

static void CheckNames(checker* ck) {
  CHECK(strcmp(etpack_status_name(ETPACK_OK), "ok") == 0);
  CHECK(strcmp(etpack_status_name(ETPACK_NOT_FOUND), "not found") == 0);
  CHECK(strcmp(etpack_status_name(ETPACK_OUT_OF_MEMORY), "out of memory") == 0);
  CHECK(strcmp(etpack_status_name(42), "unknown status") == 0);
  CHECK(strchr(etpack_version(), '.') != NULL);
}

int capi_checks(const char* dir, char* log, size_t log_size) {
  checker c = {NULL, 0, 0, 0};
  checker* ck = &c;
  c.log = log;
  c.size = log_size;
  if (log_size > 0) log[0] = '\0';
  CHECK(etpack_last_error() != NULL);
  CheckNames(ck);
  CheckThreadLocalError(ck);
  CheckNullArguments(ck);
  CheckBadInput(ck, dir);
  CheckFailingCallback(ck, dir);
  CheckOneUnit(ck, dir);
  CheckShards(ck, dir);
  CheckInputs(ck, dir);
  CheckLargeCallback(ck, dir);
  return c.failures;
}
