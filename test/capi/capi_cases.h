/* The C side of capi_test: artifacts written through etpack/etpack_c.h by
 * C code (capi_cases.c, compiled as C99), from plain descriptions that the
 * C++ side (capi_test.cc) makes of the golden inputs and checks afterwards.
 * Every capi_write_* returns an etpack_status, or CAPI_BAD_PROGRESS when the
 * write succeeded but its progress reports were inconsistent. */
#ifndef ETPACK_TEST_CAPI_CASES_H_
#define ETPACK_TEST_CAPI_CASES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CAPI_BAD_PROGRESS = -1 };

/* How the C side hands a data item to etpack. */
typedef enum capi_kind { CAPI_MEMORY = 0, CAPI_FILE = 1, CAPI_CALLBACK = 2 } capi_kind;

/* One data item: its bytes in memory, and the same bytes at `offset` of
 * `file` (for CAPI_FILE). */
typedef struct capi_bytes {
  const void* data;
  uint64_t size;
  const char* file;
  uint64_t offset;
} capi_bytes;

typedef struct capi_named {
  const char* key;
  size_t buffer; /* into capi_pte_case.named_buffers */
  uint64_t alignment;
} capi_named;

typedef struct capi_pte_case {
  const char* program; /* JSON text, or flatbuffer bytes */
  size_t program_size;
  int program_is_flatbuffer;
  const capi_bytes* constants; /* constant 1, 2, ... (0 is the placeholder) */
  size_t constant_count;
  const capi_bytes* mutable_data; /* mutable 1, 2, ... */
  size_t mutable_count;
  const capi_bytes* delegates; /* delegate 0, 1, ... */
  size_t delegate_count;
  const capi_bytes* named_buffers;
  size_t named_buffer_count;
  const capi_named* named;
  size_t named_count;
  uint64_t segment_alignment;
  uint64_t constant_alignment;
  uint64_t delegate_alignment;
  int extract_delegates;
} capi_pte_case;

typedef struct capi_layout {
  int32_t dtype;
  size_t rank;
  const int32_t* sizes;
  const uint8_t* dim_order;
} capi_layout;

typedef struct capi_ptd_entry {
  const char* key;
  size_t buffer;
  uint64_t alignment;
  int has_layout;
  capi_layout layout;
} capi_ptd_entry;

typedef struct capi_ptd_case {
  const capi_bytes* buffers;
  size_t buffer_count;
  const capi_ptd_entry* entries;
  size_t entry_count;
  uint64_t segment_alignment;
} capi_ptd_case;

typedef enum capi_value_kind {
  CAPI_TENSOR = 0,
  CAPI_INT = 1,
  CAPI_BOOL = 2,
  CAPI_DOUBLE = 3
} capi_value_kind;

typedef struct capi_value {
  capi_value_kind kind;
  capi_layout layout; /* CAPI_TENSOR */
  capi_bytes data;    /* CAPI_TENSOR */
  int64_t int_val;
  int bool_val;
  double double_val;
} capi_value;

typedef struct capi_test_case {
  const char* method;
  const capi_value* inputs;
  size_t input_count;
  const capi_value* outputs;
  size_t output_count;
} capi_test_case;

int capi_write_pte(const capi_pte_case* c, capi_kind kind, const char* path);
int capi_write_ptd(const capi_ptd_case* c, capi_kind kind, const char* path);
/* A standard bundle of the .pte at program_path. */
int capi_write_bpte(const char* program_path, const capi_test_case* cases, size_t case_count,
                    capi_kind kind, const char* path);

/* Error paths, callbacks and progress, checked in C inside the scratch
 * folder `dir`. Returns the number of failed checks; each failure is one
 * line in log[0, log_size). */
int capi_checks(const char* dir, char* log, size_t log_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ETPACK_TEST_CAPI_CASES_H_ */
