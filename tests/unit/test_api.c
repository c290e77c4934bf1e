/*
 * CMocka unit tests of the public C API, in one process: library information, argument
 * checks (every one must return KF_ERR_INVALID_ARGUMENT and leave a detail), the life cycle
 * of a communicator, and every collective on a one-rank communicator.
 *
 * Usage: test_api [group]   groups: info, args, lifecycle, collectives (default: all).
 */
#define _POSIX_C_SOURCE 200809L /* unsetenv, environ */

#include <kungfu/kungfu.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* cmocka.h needs these three first, in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#if defined(KF_ASAN) || defined(__SANITIZE_ADDRESS__)
#define KF_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KF_TEST_UNDER_ASAN 1
#endif
#endif

extern char** environ;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static const kf_dtype_t kAllDtypes[] = {KF_INT8,   KF_UINT8,   KF_INT32,    KF_UINT32,  KF_INT64,
                                        KF_UINT64, KF_FLOAT16, KF_BFLOAT16, KF_FLOAT32, KF_FLOAT64};
static const kf_op_t kAllOps[] = {KF_SUM, KF_PROD, KF_MIN, KF_MAX, KF_AVG};
#define NUM_DTYPES (sizeof(kAllDtypes) / sizeof(kAllDtypes[0]))
#define NUM_OPS (sizeof(kAllOps) / sizeof(kAllOps[0]))

/* Invalid enum values: the first one past the end and one far outside. */
#define BAD_DTYPE_1 ((kf_dtype_t)KF_DTYPE_COUNT)
#define BAD_DTYPE_2 ((kf_dtype_t)99)
#define BAD_OP_1 ((kf_op_t)KF_OP_COUNT)
#define BAD_OP_2 ((kf_op_t)99)

/* Removes every launcher variable, so that kf_comm_init_from_env makes a one-rank
 * communicator whatever environment ctest runs in. */
static void clear_launcher_env(void) {
  static const char* const kPrefixes[] = {"OMPI_", "PMIX_", "PMI_", "SLURM_"};
  static const char* const kNames[] = {"KF_RANK",       "KF_SIZE",      "KF_LOCAL_RANK",
                                       "KF_LOCAL_SIZE", "KF_ROOT_ADDR", "KF_JOB_SECRET"};
  size_t i, p;
  int removed = 1;
  for (i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) unsetenv(kNames[i]);
  /* unsetenv changes environ: restart the scan after each removal. */
  while (removed) {
    removed = 0;
    for (i = 0; environ != NULL && environ[i] != NULL && !removed; ++i) {
      for (p = 0; p < sizeof(kPrefixes) / sizeof(kPrefixes[0]); ++p) {
        if (strncmp(environ[i], kPrefixes[p], strlen(kPrefixes[p])) == 0) {
          char name[256];
          const char* eq = strchr(environ[i], '=');
          size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
          if (len >= sizeof(name)) len = sizeof(name) - 1;
          memcpy(name, environ[i], len);
          name[len] = '\0';
          unsetenv(name);
          removed = 1;
          break;
        }
      }
    }
  }
}

static kf_comm_t make_comm(void) {
  kf_comm_t comm = NULL;
  kf_status_t s;
  clear_launcher_env();
  s = kf_comm_init_from_env(NULL, &comm);
  if (s != KF_SUCCESS) {
    print_error("kf_comm_init_from_env: %s: %s\n", kf_status_string(s), kf_comm_last_error(NULL));
  }
  assert_int_equal(s, KF_SUCCESS);
  assert_non_null(comm);
  return comm;
}

static int setup_comm(void** state) {
  *state = make_comm();
  return 0;
}

static int teardown_comm(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  assert_int_equal(kf_comm_destroy(comm), KF_SUCCESS);
  *state = NULL;
  return 0;
}

/* Asserts that `s` is KF_ERR_INVALID_ARGUMENT and that the communicator's last error is a
 * non-empty text containing `word` (the name of the bad parameter), if `word` is not NULL. */
static void expect_invalid_(kf_status_t s, kf_comm_t comm, const char* word, const char* call,
                            const char* file, int line) {
  const char* text;
  if (s != KF_ERR_INVALID_ARGUMENT) {
    print_error("%s:%d: %s returned %s, expected KF_ERR_INVALID_ARGUMENT\n", file, line, call,
                kf_status_string(s));
    fail();
  }
  text = kf_comm_last_error(comm);
  if (text == NULL || text[0] == '\0') {
    print_error("%s:%d: %s: kf_comm_last_error is empty\n", file, line, call);
    fail();
  }
  if (word != NULL && strstr(text, word) == NULL) {
    print_error("%s:%d: %s: last error \"%s\" does not name \"%s\"\n", file, line, call, text,
                word);
    fail();
  }
}
#define EXPECT_INVALID(comm, word, call) \
  expect_invalid_((call), (comm), (word), #call, __FILE__, __LINE__)

#define EXPECT_OK(comm, call)                                                                     \
  do {                                                                                            \
    kf_status_t s_ = (call);                                                                      \
    if (s_ != KF_SUCCESS) {                                                                       \
      print_error("%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call, kf_status_string(s_), \
                  kf_comm_last_error(comm));                                                      \
      fail();                                                                                     \
    }                                                                                             \
  } while (0)

/* Fills `n` bytes with a pattern that is a valid value of every dtype: small integers, or
 * small floats of every float type (so that no NaN compares unequal to itself). */
static void fill(void* buf, kf_dtype_t dtype, size_t n, int seed) {
  size_t i;
  for (i = 0; i < n; ++i) {
    int v = (int)((i * 7 + (size_t)seed * 13) % 23) - 11; /* -11 .. 11 */
    switch (dtype) {
      case KF_INT8:
        ((int8_t*)buf)[i] = (int8_t)v;
        break;
      case KF_UINT8:
        ((uint8_t*)buf)[i] = (uint8_t)(v + 11);
        break;
      case KF_INT32:
        ((int32_t*)buf)[i] = (int32_t)v * 100003;
        break;
      case KF_UINT32:
        ((uint32_t*)buf)[i] = (uint32_t)(v + 11) * 100003u;
        break;
      case KF_INT64:
        ((int64_t*)buf)[i] = (int64_t)v * 10000000019LL;
        break;
      case KF_UINT64:
        ((uint64_t*)buf)[i] = (uint64_t)(v + 11) * 10000000019ULL;
        break;
      case KF_FLOAT16: {
        /* Integers -11..11 in binary16: exact. */
        static const uint16_t kHalf[23] = {0xC980, 0xC900, 0xC880, 0xC800, 0xC700, 0xC600,
                                           0xC500, 0xC400, 0xC200, 0xC000, 0xBC00, 0x0000,
                                           0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600,
                                           0x4700, 0x4800, 0x4880, 0x4900, 0x4980};
        ((uint16_t*)buf)[i] = kHalf[v + 11];
        break;
      }
      case KF_BFLOAT16: {
        /* The upper half of the float32 encoding of v * 0.5: exact in bfloat16. */
        float f = (float)v * 0.5f;
        uint32_t bits;
        memcpy(&bits, &f, sizeof(bits));
        ((uint16_t*)buf)[i] = (uint16_t)(bits >> 16);
        break;
      }
      case KF_FLOAT32:
        ((float*)buf)[i] = (float)v * 0.25f;
        break;
      case KF_FLOAT64:
        ((double*)buf)[i] = (double)v * 0.125;
        break;
      default:
        fail_msg("fill: bad dtype %d", (int)dtype);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Library information                                                      */
/* ------------------------------------------------------------------------ */

static void test_version(void** state) {
  (void)state;
  assert_int_equal(kf_get_version(), KF_VERSION_CODE);
  assert_int_equal(KF_VERSION_CODE,
                   KF_VERSION_MAJOR * 10000 + KF_VERSION_MINOR * 100 + KF_VERSION_PATCH);
}

static void test_status_string(void** state) {
  static const struct {
    kf_status_t status;
    const char* name;
  } kStatuses[] = {
      {KF_SUCCESS, "KF_SUCCESS"},
      {KF_IN_PROGRESS, "KF_IN_PROGRESS"},
      {KF_ERR_INVALID_ARGUMENT, "KF_ERR_INVALID_ARGUMENT"},
      {KF_ERR_INVALID_USAGE, "KF_ERR_INVALID_USAGE"},
      {KF_ERR_SYSTEM, "KF_ERR_SYSTEM"},
      {KF_ERR_REMOTE, "KF_ERR_REMOTE"},
      {KF_ERR_TIMEOUT, "KF_ERR_TIMEOUT"},
      {KF_ERR_ABORTED, "KF_ERR_ABORTED"},
      {KF_ERR_INTERNAL, "KF_ERR_INTERNAL"},
      {KF_ERR_NOT_SUPPORTED, "KF_ERR_NOT_SUPPORTED"},
  };
  const size_t n = sizeof(kStatuses) / sizeof(kStatuses[0]);
  size_t i, j;
  (void)state;
  for (i = 0; i < n; ++i) {
    const char* text = kf_status_string(kStatuses[i].status);
    assert_non_null(text);
    assert_true(strlen(text) > strlen(kStatuses[i].name));
    /* "KF_ERR_TIMEOUT: operation timed out": the name, then a description. */
    if (strncmp(text, kStatuses[i].name, strlen(kStatuses[i].name)) != 0) {
      fail_msg("kf_status_string(%d) = \"%s\" does not start with %s", (int)kStatuses[i].status,
               text, kStatuses[i].name);
    }
    assert_string_not_equal(text, "unknown status");
    for (j = 0; j < i; ++j) assert_string_not_equal(text, kf_status_string(kStatuses[j].status));
  }
  assert_string_equal(kf_status_string((kf_status_t)10), "unknown status");
  assert_string_equal(kf_status_string((kf_status_t)12345), "unknown status");
  assert_string_equal(kf_status_string((kf_status_t)-1), "unknown status");
}

static void test_dtype_size(void** state) {
  (void)state;
  assert_int_equal(kf_dtype_size(KF_INT8), 1);
  assert_int_equal(kf_dtype_size(KF_UINT8), 1);
  assert_int_equal(kf_dtype_size(KF_INT32), 4);
  assert_int_equal(kf_dtype_size(KF_UINT32), 4);
  assert_int_equal(kf_dtype_size(KF_INT64), 8);
  assert_int_equal(kf_dtype_size(KF_UINT64), 8);
  assert_int_equal(kf_dtype_size(KF_FLOAT16), 2);
  assert_int_equal(kf_dtype_size(KF_BFLOAT16), 2);
  assert_int_equal(kf_dtype_size(KF_FLOAT32), 4);
  assert_int_equal(kf_dtype_size(KF_FLOAT64), 8);
  assert_int_equal(kf_dtype_size(BAD_DTYPE_1), 0);
  assert_int_equal(kf_dtype_size(BAD_DTYPE_2), 0);
  assert_int_equal(kf_dtype_size((kf_dtype_t)-1), 0);
}

static void test_last_error_never_null(void** state) {
  (void)state;
  assert_non_null(kf_comm_last_error(NULL));
}

/* ------------------------------------------------------------------------ */
/* Argument checks without a communicator                                   */
/* ------------------------------------------------------------------------ */

static void test_null_out_params(void** state) {
  kf_unique_id_t id;
  (void)state;
  clear_launcher_env();
  EXPECT_INVALID(NULL, NULL, kf_get_unique_id(NULL));
  EXPECT_INVALID(NULL, NULL, kf_comm_init_from_env(NULL, NULL));
  memset(&id, 0, sizeof(id));
  EXPECT_INVALID(NULL, NULL, kf_comm_init(&id, 1, 0, NULL, NULL));
}

static void test_comm_init_bad_args(void** state) {
  kf_unique_id_t id;
  kf_comm_t comm;
  (void)state;
  memset(&id, 0, sizeof(id));
  comm = (kf_comm_t)(uintptr_t)0x1; /* must be set to NULL on failure */
  EXPECT_INVALID(NULL, NULL, kf_comm_init(NULL, 1, 0, NULL, &comm));
  assert_null(comm);
  comm = (kf_comm_t)(uintptr_t)0x1;
  EXPECT_INVALID(NULL, "size", kf_comm_init(&id, 0, 0, NULL, &comm));
  assert_null(comm);
  EXPECT_INVALID(NULL, "size", kf_comm_init(&id, -1, 0, NULL, &comm));
  EXPECT_INVALID(NULL, "size", kf_comm_init(&id, 65537, 0, NULL, &comm));
  EXPECT_INVALID(NULL, "rank", kf_comm_init(&id, 2, 2, NULL, &comm));
  EXPECT_INVALID(NULL, "rank", kf_comm_init(&id, 2, -1, NULL, &comm));
  assert_null(comm);
}

static void test_config_checks(void** state) {
  kf_config_t config = KF_CONFIG_INITIALIZER;
  kf_comm_t comm;
  (void)state;
  clear_launcher_env();

  assert_int_equal(config.size, sizeof(kf_config_t));
  assert_int_equal(config.magic, KF_CONFIG_MAGIC);
  assert_int_equal(config.version, (uint32_t)KF_VERSION_CODE);
  assert_int_equal(config.timeout_ms, -1);
  assert_null(config.name);

  config.magic = 0x12345678u;
  comm = (kf_comm_t)(uintptr_t)0x1;
  EXPECT_INVALID(NULL, NULL, kf_comm_init_from_env(&config, &comm));
  assert_null(comm);

  config.magic = KF_CONFIG_MAGIC;
  config.size = 0;
  EXPECT_INVALID(NULL, NULL, kf_comm_init_from_env(&config, &comm));
  assert_null(comm);
  config.size = 4; /* less than the size field itself */
  EXPECT_INVALID(NULL, NULL, kf_comm_init_from_env(&config, &comm));
  assert_null(comm);

  /* An uninitialised (zeroed) config is refused too. */
  memset(&config, 0, sizeof(config));
  EXPECT_INVALID(NULL, NULL, kf_comm_init_from_env(&config, &comm));
  assert_null(comm);

  /* The initializer itself is accepted, with a name that the library copies. */
  {
    kf_config_t good = KF_CONFIG_INITIALIZER;
    char name[16] = "unit-test";
    good.name = name;
    good.timeout_ms = 30000;
    EXPECT_OK(NULL, kf_comm_init_from_env(&good, &comm));
    memset(name, 'x', sizeof(name) - 1);
    assert_non_null(comm);
    EXPECT_OK(comm, kf_barrier(comm));
    EXPECT_OK(NULL, kf_comm_destroy(comm));
  }
}

static void test_null_comm(void** state) {
  float buf[4] = {0};
  int value = 0;
  (void)state;
  EXPECT_INVALID(NULL, NULL, kf_comm_rank(NULL, &value));
  EXPECT_INVALID(NULL, NULL, kf_comm_size(NULL, &value));
  EXPECT_INVALID(NULL, NULL, kf_all_reduce(NULL, buf, buf, 4, KF_FLOAT32, KF_SUM));
  EXPECT_INVALID(NULL, NULL, kf_broadcast(NULL, buf, buf, 4, KF_FLOAT32, 0));
  EXPECT_INVALID(NULL, NULL, kf_reduce(NULL, buf, buf, 4, KF_FLOAT32, KF_SUM, 0));
  EXPECT_INVALID(NULL, NULL, kf_all_gather(NULL, buf, buf, 1, KF_FLOAT32));
  EXPECT_INVALID(NULL, NULL, kf_reduce_scatter(NULL, buf, buf, 1, KF_FLOAT32, KF_SUM));
  EXPECT_INVALID(NULL, NULL, kf_all_to_all(NULL, buf, buf, 1, KF_FLOAT32));
  EXPECT_INVALID(NULL, NULL, kf_gather(NULL, buf, buf, 1, KF_FLOAT32, 0));
  EXPECT_INVALID(NULL, NULL, kf_scatter(NULL, buf, buf, 1, KF_FLOAT32, 0));
  EXPECT_INVALID(NULL, NULL, kf_barrier(NULL));
  EXPECT_INVALID(NULL, NULL, kf_send(NULL, buf, 4, KF_FLOAT32, 1));
  EXPECT_INVALID(NULL, NULL, kf_recv(NULL, buf, 4, KF_FLOAT32, 1));
  /* Count 0 does not excuse a NULL communicator. */
  EXPECT_INVALID(NULL, NULL, kf_all_reduce(NULL, NULL, NULL, 0, KF_FLOAT32, KF_SUM));
}

/* ------------------------------------------------------------------------ */
/* Argument checks on a communicator                                        */
/* ------------------------------------------------------------------------ */

static void test_null_out_params_comm(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  EXPECT_INVALID(comm, NULL, kf_comm_rank(comm, NULL));
  EXPECT_INVALID(comm, NULL, kf_comm_size(comm, NULL));
}

static void test_bad_dtype(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float buf[8] = {0};
  const kf_dtype_t bad[] = {BAD_DTYPE_1, BAD_DTYPE_2};
  size_t i;
  for (i = 0; i < 2; ++i) {
    const kf_dtype_t d = bad[i];
    EXPECT_INVALID(comm, "dtype", kf_all_reduce(comm, buf, buf, 1, d, KF_SUM));
    EXPECT_INVALID(comm, "dtype", kf_broadcast(comm, buf, buf, 1, d, 0));
    EXPECT_INVALID(comm, "dtype", kf_reduce(comm, buf, buf, 1, d, KF_SUM, 0));
    EXPECT_INVALID(comm, "dtype", kf_all_gather(comm, buf, buf, 1, d));
    EXPECT_INVALID(comm, "dtype", kf_reduce_scatter(comm, buf, buf, 1, d, KF_SUM));
    EXPECT_INVALID(comm, "dtype", kf_all_to_all(comm, buf, buf, 1, d));
    EXPECT_INVALID(comm, "dtype", kf_gather(comm, buf, buf, 1, d, 0));
    EXPECT_INVALID(comm, "dtype", kf_scatter(comm, buf, buf, 1, d, 0));
    /* A bad dtype is reported even with count 0. */
    EXPECT_INVALID(comm, "dtype", kf_all_reduce(comm, NULL, NULL, 0, d, KF_SUM));
  }
}

static void test_bad_op(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float buf[8] = {0};
  const kf_op_t bad[] = {BAD_OP_1, BAD_OP_2};
  size_t i;
  for (i = 0; i < 2; ++i) {
    const kf_op_t op = bad[i];
    EXPECT_INVALID(comm, "op", kf_all_reduce(comm, buf, buf, 1, KF_FLOAT32, op));
    EXPECT_INVALID(comm, "op", kf_reduce(comm, buf, buf, 1, KF_FLOAT32, op, 0));
    EXPECT_INVALID(comm, "op", kf_reduce_scatter(comm, buf, buf, 1, KF_FLOAT32, op));
    EXPECT_INVALID(comm, "op", kf_all_reduce(comm, NULL, NULL, 0, KF_FLOAT32, op));
  }
}

static void test_count_overflow(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float buf[8] = {0};
  /* count * sizeof(dtype) overflows 64 bits; the library must not touch the buffers. */
  const uint64_t counts[] = {UINT64_MAX, UINT64_MAX / 2, (UINT64_MAX / 4) + 1};
  size_t i;
  for (i = 0; i < sizeof(counts) / sizeof(counts[0]); ++i) {
    const uint64_t n = counts[i];
    EXPECT_INVALID(comm, NULL, kf_all_reduce(comm, buf, buf, n, KF_FLOAT32, KF_SUM));
    EXPECT_INVALID(comm, NULL, kf_broadcast(comm, buf, buf, n, KF_FLOAT32, 0));
    EXPECT_INVALID(comm, NULL, kf_reduce(comm, buf, buf, n, KF_FLOAT32, KF_SUM, 0));
    EXPECT_INVALID(comm, NULL, kf_all_gather(comm, buf, buf, n, KF_FLOAT32));
    EXPECT_INVALID(comm, NULL, kf_reduce_scatter(comm, buf, buf, n, KF_FLOAT32, KF_SUM));
    EXPECT_INVALID(comm, NULL, kf_all_to_all(comm, buf, buf, n, KF_FLOAT32));
    EXPECT_INVALID(comm, NULL, kf_gather(comm, buf, buf, n, KF_FLOAT32, 0));
    EXPECT_INVALID(comm, NULL, kf_scatter(comm, buf, buf, n, KF_FLOAT32, 0));
  }
  EXPECT_INVALID(comm, NULL, kf_all_reduce(comm, buf, buf, UINT64_MAX, KF_FLOAT64, KF_SUM));
  EXPECT_INVALID(comm, NULL, kf_all_reduce(comm, buf, buf, UINT64_MAX, KF_FLOAT16, KF_SUM));
}

static void test_bad_root(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float buf[8] = {0};
  int size = 0;
  const int roots[] = {-1, 1, 1000, INT32_MIN};
  size_t i;
  EXPECT_OK(comm, kf_comm_size(comm, &size));
  assert_int_equal(size, 1); /* so root 1 == size is out of range */
  for (i = 0; i < sizeof(roots) / sizeof(roots[0]); ++i) {
    const int r = roots[i];
    EXPECT_INVALID(comm, "root", kf_broadcast(comm, buf, buf, 2, KF_FLOAT32, r));
    EXPECT_INVALID(comm, "root", kf_reduce(comm, buf, buf, 2, KF_FLOAT32, KF_SUM, r));
    EXPECT_INVALID(comm, "root", kf_gather(comm, buf, buf, 2, KF_FLOAT32, r));
    EXPECT_INVALID(comm, "root", kf_scatter(comm, buf, buf, 2, KF_FLOAT32, r));
    /* A bad root is reported even with count 0. */
    EXPECT_INVALID(comm, "root", kf_broadcast(comm, NULL, NULL, 0, KF_FLOAT32, r));
  }
}

static void test_bad_peer(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float buf[8] = {0};
  const int peers[] = {0 /* self */, -1, 1 /* == size */, 1000};
  size_t i;
  for (i = 0; i < sizeof(peers) / sizeof(peers[0]); ++i) {
    EXPECT_INVALID(comm, "peer", kf_send(comm, buf, 2, KF_FLOAT32, peers[i]));
    EXPECT_INVALID(comm, "peer", kf_recv(comm, buf, 2, KF_FLOAT32, peers[i]));
  }
}

static void test_null_buffers(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float buf[8] = {0};
  /* This rank is 0, the root: root-only buffers are required too. */
  EXPECT_INVALID(comm, NULL, kf_all_reduce(comm, NULL, buf, 2, KF_FLOAT32, KF_SUM));
  EXPECT_INVALID(comm, NULL, kf_all_reduce(comm, buf, NULL, 2, KF_FLOAT32, KF_SUM));
  EXPECT_INVALID(comm, NULL, kf_broadcast(comm, NULL, buf, 2, KF_FLOAT32, 0));
  EXPECT_INVALID(comm, NULL, kf_broadcast(comm, buf, NULL, 2, KF_FLOAT32, 0));
  EXPECT_INVALID(comm, NULL, kf_reduce(comm, NULL, buf, 2, KF_FLOAT32, KF_SUM, 0));
  EXPECT_INVALID(comm, NULL, kf_reduce(comm, buf, NULL, 2, KF_FLOAT32, KF_SUM, 0));
  EXPECT_INVALID(comm, NULL, kf_all_gather(comm, NULL, buf, 2, KF_FLOAT32));
  EXPECT_INVALID(comm, NULL, kf_all_gather(comm, buf, NULL, 2, KF_FLOAT32));
  EXPECT_INVALID(comm, NULL, kf_reduce_scatter(comm, NULL, buf, 2, KF_FLOAT32, KF_SUM));
  EXPECT_INVALID(comm, NULL, kf_reduce_scatter(comm, buf, NULL, 2, KF_FLOAT32, KF_SUM));
  EXPECT_INVALID(comm, NULL, kf_all_to_all(comm, NULL, buf, 2, KF_FLOAT32));
  EXPECT_INVALID(comm, NULL, kf_all_to_all(comm, buf, NULL, 2, KF_FLOAT32));
  EXPECT_INVALID(comm, NULL, kf_gather(comm, NULL, buf, 2, KF_FLOAT32, 0));
  EXPECT_INVALID(comm, NULL, kf_gather(comm, buf, NULL, 2, KF_FLOAT32, 0));
  EXPECT_INVALID(comm, NULL, kf_scatter(comm, NULL, buf, 2, KF_FLOAT32, 0));
  EXPECT_INVALID(comm, NULL, kf_scatter(comm, buf, NULL, 2, KF_FLOAT32, 0));
}

static void test_count_zero(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  size_t d, o;
  for (d = 0; d < NUM_DTYPES; ++d) {
    const kf_dtype_t t = kAllDtypes[d];
    for (o = 0; o < NUM_OPS; ++o) {
      EXPECT_OK(comm, kf_all_reduce(comm, NULL, NULL, 0, t, kAllOps[o]));
      EXPECT_OK(comm, kf_reduce(comm, NULL, NULL, 0, t, kAllOps[o], 0));
      EXPECT_OK(comm, kf_reduce_scatter(comm, NULL, NULL, 0, t, kAllOps[o]));
    }
    EXPECT_OK(comm, kf_broadcast(comm, NULL, NULL, 0, t, 0));
    EXPECT_OK(comm, kf_all_gather(comm, NULL, NULL, 0, t));
    EXPECT_OK(comm, kf_all_to_all(comm, NULL, NULL, 0, t));
    EXPECT_OK(comm, kf_gather(comm, NULL, NULL, 0, t, 0));
    EXPECT_OK(comm, kf_scatter(comm, NULL, NULL, 0, t, 0));
  }
}

/* After a failure, the communicator still works (argument errors do not break it). */
static void test_usable_after_errors(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float in[3] = {1.0f, 2.0f, 3.0f}, out[3] = {0};
  EXPECT_INVALID(comm, "dtype", kf_all_reduce(comm, in, out, 3, BAD_DTYPE_2, KF_SUM));
  EXPECT_OK(comm, kf_all_reduce(comm, in, out, 3, KF_FLOAT32, KF_SUM));
  assert_memory_equal(in, out, sizeof(in));
  EXPECT_OK(comm, kf_barrier(comm));
}

/* ------------------------------------------------------------------------ */
/* Life cycle                                                               */
/* ------------------------------------------------------------------------ */

static void test_destroy_null(void** state) {
  (void)state;
  assert_int_equal(kf_comm_destroy(NULL), KF_SUCCESS);
}

static void test_init_from_env_one_rank(void** state) {
  kf_comm_t comm = make_comm();
  int rank = -1, size = -1;
  (void)state;
  EXPECT_OK(comm, kf_comm_rank(comm, &rank));
  EXPECT_OK(comm, kf_comm_size(comm, &size));
  assert_int_equal(rank, 0);
  assert_int_equal(size, 1);
  assert_non_null(kf_comm_last_error(comm));
  assert_int_equal(kf_comm_destroy(comm), KF_SUCCESS);
}

static void test_several_comms(void** state) {
  kf_comm_t a = make_comm();
  kf_comm_t b = make_comm();
  int x[2] = {5, 7}, y[2] = {0, 0};
  (void)state;
  assert_ptr_not_equal(a, b);
  EXPECT_OK(a, kf_all_reduce(a, x, y, 2, KF_INT32, KF_SUM));
  EXPECT_OK(b, kf_all_reduce(b, y, y, 2, KF_INT32, KF_MAX));
  assert_int_equal(y[0], 5);
  assert_int_equal(y[1], 7);
  assert_int_equal(kf_comm_destroy(a), KF_SUCCESS);
  EXPECT_OK(b, kf_barrier(b)); /* b does not depend on a */
  assert_int_equal(kf_comm_destroy(b), KF_SUCCESS);
}

static void test_unique_id_one_rank(void** state) {
  kf_unique_id_t id;
  kf_comm_t comm = NULL;
  int rank = -1, size = -1;
  float v[2] = {1.5f, -3.0f}, r[2] = {0};
  (void)state;
  memset(&id, 0, sizeof(id));
  EXPECT_OK(NULL, kf_get_unique_id(&id));
  EXPECT_OK(NULL, kf_comm_init(&id, 1, 0, NULL, &comm));
  assert_non_null(comm);
  EXPECT_OK(comm, kf_comm_rank(comm, &rank));
  EXPECT_OK(comm, kf_comm_size(comm, &size));
  assert_int_equal(rank, 0);
  assert_int_equal(size, 1);
  EXPECT_OK(comm, kf_all_reduce(comm, v, r, 2, KF_FLOAT32, KF_SUM));
  assert_memory_equal(v, r, sizeof(v));
  assert_int_equal(kf_comm_destroy(comm), KF_SUCCESS);
}

static void test_double_destroy(void** state) {
  kf_comm_t comm;
  (void)state;
#ifdef KF_TEST_UNDER_ASAN
  /* Reading the freed handle is exactly what ASan reports (heap-use-after-free). */
  skip();
#endif
  comm = make_comm();
  assert_int_equal(kf_comm_destroy(comm), KF_SUCCESS);
  /* Documented as undefined behaviour, detected through a magic field that destroy clears,
   * as long as the memory was not reused: nothing is allocated in between here. */
  assert_int_equal(kf_comm_destroy(comm), KF_ERR_INVALID_USAGE);
}

/* ------------------------------------------------------------------------ */
/* Collectives on one rank                                                  */
/* ------------------------------------------------------------------------ */

#define MAXN 37

/* With one rank, every reduction of x is x (avg divides by 1), for every dtype. */
static void test_all_reduce_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  size_t d, o;
  for (d = 0; d < NUM_DTYPES; ++d) {
    const kf_dtype_t t = kAllDtypes[d];
    const size_t es = kf_dtype_size(t);
    for (o = 0; o < NUM_OPS; ++o) {
      unsigned char in[(MAXN + 1) * 8], keep[(MAXN + 1) * 8], out[(MAXN + 1) * 8];
      fill(in, t, MAXN, (int)(d * NUM_OPS + o));
      memcpy(keep, in, sizeof(in));
      memset(out, 0xAB, sizeof(out));
      EXPECT_OK(comm, kf_all_reduce(comm, in, out, MAXN, t, kAllOps[o]));
      assert_memory_equal(out, keep, MAXN * es);
      assert_memory_equal(in, keep, MAXN * es); /* sendbuf is not written */
      assert_int_equal(out[MAXN * es], 0xAB);   /* nothing written past count */
      /* In place. */
      EXPECT_OK(comm, kf_all_reduce(comm, in, in, MAXN, t, kAllOps[o]));
      assert_memory_equal(in, keep, MAXN * es);
    }
  }
}

static void test_all_reduce_float_values(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  float f[4] = {1.0f, -2.5f, 3.0f, 0.25f}, r[4];
  double g[3] = {1e300, -1e-300, 42.0}, s[3];
  int64_t i[2] = {INT64_MAX, INT64_MIN}, j[2];
  EXPECT_OK(comm, kf_all_reduce(comm, f, r, 4, KF_FLOAT32, KF_AVG));
  assert_memory_equal(f, r, sizeof(f));
  EXPECT_OK(comm, kf_all_reduce(comm, g, s, 3, KF_FLOAT64, KF_PROD));
  assert_memory_equal(g, s, sizeof(g));
  EXPECT_OK(comm, kf_all_reduce(comm, i, j, 2, KF_INT64, KF_SUM));
  assert_memory_equal(i, j, sizeof(i));
  EXPECT_OK(comm, kf_all_reduce(comm, i, j, 2, KF_INT64, KF_AVG));
  assert_memory_equal(i, j, sizeof(i));
}

static void test_reduce_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  size_t d, o;
  for (d = 0; d < NUM_DTYPES; ++d) {
    const kf_dtype_t t = kAllDtypes[d];
    const size_t es = kf_dtype_size(t);
    for (o = 0; o < NUM_OPS; ++o) {
      unsigned char in[(MAXN + 1) * 8], keep[(MAXN + 1) * 8], out[(MAXN + 1) * 8];
      fill(in, t, MAXN, (int)(d + o));
      memcpy(keep, in, sizeof(in));
      memset(out, 0, sizeof(out));
      EXPECT_OK(comm, kf_reduce(comm, in, out, MAXN, t, kAllOps[o], 0));
      assert_memory_equal(out, keep, MAXN * es);
      EXPECT_OK(comm, kf_reduce(comm, in, in, MAXN, t, kAllOps[o], 0));
      assert_memory_equal(in, keep, MAXN * es);
    }
  }
}

static void test_broadcast_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  size_t d;
  for (d = 0; d < NUM_DTYPES; ++d) {
    const kf_dtype_t t = kAllDtypes[d];
    const size_t es = kf_dtype_size(t);
    unsigned char in[(MAXN + 1) * 8], keep[(MAXN + 1) * 8], out[(MAXN + 1) * 8];
    fill(in, t, MAXN, (int)d);
    memcpy(keep, in, sizeof(in));
    memset(out, 0, sizeof(out));
    EXPECT_OK(comm, kf_broadcast(comm, in, out, MAXN, t, 0));
    assert_memory_equal(out, keep, MAXN * es);
    assert_memory_equal(in, keep, MAXN * es);
    EXPECT_OK(comm, kf_broadcast(comm, in, in, MAXN, t, 0));
    assert_memory_equal(in, keep, MAXN * es);
  }
}

static void test_all_gather_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int32_t in[MAXN], out[MAXN + 1];
  fill(in, KF_INT32, MAXN, 3);
  out[MAXN] = 0x5a5a5a5a;
  EXPECT_OK(comm, kf_all_gather(comm, in, out, MAXN, KF_INT32));
  assert_memory_equal(in, out, sizeof(in));
  assert_int_equal(out[MAXN], 0x5a5a5a5a);
  /* In place: sendbuf == recvbuf + rank * sendcount. */
  memcpy(out, in, sizeof(in));
  EXPECT_OK(comm, kf_all_gather(comm, out, out, MAXN, KF_INT32));
  assert_memory_equal(in, out, sizeof(in));
}

static void test_reduce_scatter_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  size_t o;
  for (o = 0; o < NUM_OPS; ++o) {
    double in[MAXN], out[MAXN];
    fill(in, KF_FLOAT64, MAXN, (int)o);
    memset(out, 0, sizeof(out));
    EXPECT_OK(comm, kf_reduce_scatter(comm, in, out, MAXN, KF_FLOAT64, kAllOps[o]));
    assert_memory_equal(in, out, sizeof(in));
    memcpy(out, in, sizeof(in));
    EXPECT_OK(comm, kf_reduce_scatter(comm, out, out, MAXN, KF_FLOAT64, kAllOps[o]));
    assert_memory_equal(in, out, sizeof(in));
  }
}

static void test_all_to_all_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  uint16_t in[MAXN], out[MAXN];
  fill(in, KF_FLOAT16, MAXN, 5);
  memset(out, 0, sizeof(out));
  EXPECT_OK(comm, kf_all_to_all(comm, in, out, MAXN, KF_FLOAT16));
  assert_memory_equal(in, out, sizeof(in));
  memcpy(out, in, sizeof(in));
  EXPECT_OK(comm, kf_all_to_all(comm, out, out, MAXN, KF_FLOAT16));
  assert_memory_equal(in, out, sizeof(in));
}

static void test_gather_scatter_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int8_t in[MAXN], out[MAXN];
  fill(in, KF_INT8, MAXN, 9);
  memset(out, 0, sizeof(out));
  EXPECT_OK(comm, kf_gather(comm, in, out, MAXN, KF_INT8, 0));
  assert_memory_equal(in, out, sizeof(in));
  memset(out, 0, sizeof(out));
  EXPECT_OK(comm, kf_scatter(comm, in, out, MAXN, KF_INT8, 0));
  assert_memory_equal(in, out, sizeof(in));
  /* In place on the root. */
  memcpy(out, in, sizeof(in));
  EXPECT_OK(comm, kf_gather(comm, out, out, MAXN, KF_INT8, 0));
  assert_memory_equal(in, out, sizeof(in));
  EXPECT_OK(comm, kf_scatter(comm, out, out, MAXN, KF_INT8, 0));
  assert_memory_equal(in, out, sizeof(in));
}

static void test_barrier_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int i;
  for (i = 0; i < 100; ++i) EXPECT_OK(comm, kf_barrier(comm));
}

/* A large all_reduce (several MiB, more than one chunk of any pipeline). */
static void test_all_reduce_large_one_rank(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  const size_t n = (size_t)3 << 20; /* 12 MiB of float32 */
  float* in = (float*)malloc(n * sizeof(float));
  float* out = (float*)malloc(n * sizeof(float));
  size_t i;
  assert_non_null(in);
  assert_non_null(out);
  for (i = 0; i < n; ++i) in[i] = (float)(i % 1000) - 500.0f;
  EXPECT_OK(comm, kf_all_reduce(comm, in, out, n, KF_FLOAT32, KF_SUM));
  assert_memory_equal(in, out, n * sizeof(float));
  free(in);
  free(out);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char** argv) {
  const char* group = argc > 1 ? argv[1] : "all";
  int all = strcmp(group, "all") == 0;
  int failed = 0, ran = 0;

  const struct CMUnitTest info[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_status_string),
      cmocka_unit_test(test_dtype_size),
      cmocka_unit_test(test_last_error_never_null),
  };
  const struct CMUnitTest args[] = {
      cmocka_unit_test(test_null_out_params),
      cmocka_unit_test(test_comm_init_bad_args),
      cmocka_unit_test(test_config_checks),
      cmocka_unit_test(test_null_comm),
      cmocka_unit_test_setup_teardown(test_null_out_params_comm, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_bad_dtype, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_bad_op, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_count_overflow, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_bad_root, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_bad_peer, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_null_buffers, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_count_zero, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_usable_after_errors, setup_comm, teardown_comm),
  };
  const struct CMUnitTest lifecycle[] = {
      cmocka_unit_test(test_destroy_null),   cmocka_unit_test(test_init_from_env_one_rank),
      cmocka_unit_test(test_several_comms),  cmocka_unit_test(test_unique_id_one_rank),
      cmocka_unit_test(test_double_destroy),
  };
  const struct CMUnitTest collectives[] = {
      cmocka_unit_test_setup_teardown(test_all_reduce_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_all_reduce_float_values, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_reduce_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_broadcast_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_all_gather_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_reduce_scatter_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_all_to_all_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_gather_scatter_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_barrier_one_rank, setup_comm, teardown_comm),
      cmocka_unit_test_setup_teardown(test_all_reduce_large_one_rank, setup_comm, teardown_comm),
  };

  clear_launcher_env();
  if (all || strcmp(group, "info") == 0) {
    failed += cmocka_run_group_tests_name("info", info, NULL, NULL);
    ++ran;
  }
  if (all || strcmp(group, "args") == 0) {
    failed += cmocka_run_group_tests_name("args", args, NULL, NULL);
    ++ran;
  }
  if (all || strcmp(group, "lifecycle") == 0) {
    failed += cmocka_run_group_tests_name("lifecycle", lifecycle, NULL, NULL);
    ++ran;
  }
  if (all || strcmp(group, "collectives") == 0) {
    failed += cmocka_run_group_tests_name("collectives", collectives, NULL, NULL);
    ++ran;
  }
  if (ran == 0) {
    print_error("unknown group \"%s\" (info, args, lifecycle, collectives, all)\n", group);
    return 2;
  }
  return failed == 0 ? 0 : 1;
}
