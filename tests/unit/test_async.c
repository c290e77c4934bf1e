/*
 * CMocka tests of include/kungfu/async.h in one process (one rank): argument
 * and name checks, options, request life cycle (test, wait, wait_any,
 * wait_all, error text, free), callbacks, and results on one rank.
 */
#define _POSIX_C_SOURCE 200809L /* unsetenv */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* clang-format off */
#include <cmocka.h>
/* clang-format on */

#include "kungfu/kungfu.h"

static kf_comm_t make_comm(void) {
  kf_comm_t comm = NULL;
  unsetenv("KF_RANK");
  unsetenv("KF_SIZE");
  unsetenv("KF_ROOT_ADDR");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
  assert_int_equal(kf_comm_init_from_env(NULL, &comm), KF_SUCCESS);
  return comm;
}

static int setup(void** state) {
  *state = make_comm();
  return 0;
}

static int teardown(void** state) {
  assert_int_equal(kf_comm_destroy((kf_comm_t)*state), KF_SUCCESS);
  return 0;
}

static void test_names(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int32_t x = 1, y = 0;
  kf_request_t r = (kf_request_t)&x; /* must be cleared on failure */
  char long_name[KF_OP_NAME_MAX + 2];
  assert_int_equal(kf_iall_reduce(comm, NULL, &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_null(r);
  assert_non_null(strstr(kf_comm_last_error(comm), "name"));
  assert_int_equal(kf_iall_reduce(comm, "", &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_iall_reduce(comm, "kf.mine", &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(kf_comm_last_error(comm), "reserved"));
  memset(long_name, 'a', sizeof(long_name) - 1);
  long_name[sizeof(long_name) - 1] = '\0';
  assert_int_equal(kf_iall_reduce(comm, long_name, &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_iall_reduce(NULL, "a", &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_iall_reduce(comm, "a", &x, &y, 1, (kf_dtype_t)99, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_iall_reduce(comm, "a", NULL, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_ibroadcast(comm, "a", &x, &y, 1, KF_INT32, 5, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
}

static void test_options(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int32_t x = 1, y = 0;
  kf_request_t r = NULL;
  kf_op_options_t bad;
  memset(&bad, 0, sizeof(bad));
  assert_int_equal(kf_iall_reduce(comm, "o", &x, &y, 1, KF_INT32, KF_SUM, &bad, &r),
                   KF_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(kf_comm_last_error(comm), "KF_OP_OPTIONS_INITIALIZER"));
}

static int g_calls;
static kf_status_t g_status;
static void on_done(kf_request_t req, kf_status_t st, void* user) {
  (void)req;
  ++*(int*)user;
  g_status = st;
  ++g_calls;
}

static void test_one_rank_ops(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int32_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
  int calls = 0;
  size_t index = 99;
  kf_request_t reqs[3];
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.callback = on_done;
  o.user_data = &calls;
  o.priority = 3;
  o.partition_bytes = 8; /* 4 partitions */
  assert_int_equal(kf_iall_reduce(comm, "sum", v, out, 8, KF_INT32, KF_SUM, &o, &reqs[0]), KF_SUCCESS);
  assert_int_equal(kf_request_wait(reqs[0]), KF_SUCCESS);
  assert_int_equal(calls, 1);
  assert_int_equal(g_status, KF_SUCCESS);
  assert_memory_equal(v, out, sizeof(v));
  assert_string_equal(kf_request_error(reqs[0]), "");
  assert_int_equal(kf_request_test(reqs[0]), KF_SUCCESS);
  assert_int_equal(kf_request_free(reqs[0]), KF_SUCCESS);

  /* count 0 and barrier are real operations */
  assert_int_equal(kf_iall_reduce(comm, "zero", NULL, NULL, 0, KF_INT32, KF_SUM, NULL, &reqs[0]), KF_SUCCESS);
  assert_int_equal(kf_ibarrier(comm, "bar", NULL, &reqs[1]), KF_SUCCESS);
  assert_int_equal(kf_iall_gather(comm, "ag", v, out, 8, KF_INT32, NULL, &reqs[2]), KF_SUCCESS);
  assert_int_equal(kf_request_wait_any(3, reqs, &index), KF_SUCCESS);
  assert_true(index < 3);
  assert_int_equal(kf_request_wait_all(3, reqs), KF_SUCCESS);
  for (int i = 0; i < 3; ++i) assert_int_equal(kf_request_free(reqs[i]), KF_SUCCESS);

  /* fire-and-forget: no handle, the callback reports. Nothing here waits for
   * it (the barrier below is another name, unordered with it), so its
   * buffers and callback state must outlive this function: static, and the
   * communicator's destruction waits for the operation. */
  static int32_t ff_in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ff_out[8];
  static int ff_calls;
  o.user_data = &ff_calls;
  assert_int_equal(kf_iall_reduce(comm, "ff", ff_in, ff_out, 8, KF_INT32, KF_MAX, &o, NULL),
                   KF_SUCCESS);
  assert_int_equal(kf_ibarrier(comm, "ff.sync", NULL, &reqs[0]), KF_SUCCESS);
  assert_int_equal(kf_request_wait(reqs[0]), KF_SUCCESS);
  kf_request_free(reqs[0]);
}

/* A completion callback that submits the next operation, 20000 times over:
 * on one rank a small operation may complete inside its kf_i* call, and such
 * a chain must not nest one call in another on one stack. */
typedef struct {
  kf_comm_t comm;
  int32_t in, out;
  int left, failed, done;
} Chain;

static void chain_next(kf_request_t req, kf_status_t st, void* user) {
  Chain* c = (Chain*)user;
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  (void)req;
  if (st != KF_SUCCESS || c->out != c->in) c->failed = 1;
  if (--c->left == 0 || c->failed) {
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return;
  }
  o.callback = chain_next;
  o.user_data = c;
  c->in = c->left;
  c->out = -1;
  if (kf_iall_reduce(c->comm, "chain", &c->in, &c->out, 1, KF_INT32, KF_SUM, &o, NULL) !=
      KF_SUCCESS) {
    c->failed = 1;
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
  }
}

static void test_callback_chain(void** state) {
  static Chain c; /* outlives the test's frame until the chain ends */
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  const struct timespec ms = {0, 1000000};
  c.comm = (kf_comm_t)*state;
  c.left = 20000;
  c.in = c.left;
  c.out = -1;
  o.callback = chain_next;
  o.user_data = &c;
  assert_int_equal(kf_iall_reduce(c.comm, "chain", &c.in, &c.out, 1, KF_INT32, KF_SUM, &o, NULL),
                   KF_SUCCESS);
  for (int i = 0; i < 30000 && !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); ++i)
    nanosleep(&ms, NULL);
  assert_int_equal(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE), 1);
  assert_int_equal(c.failed, 0);
  assert_int_equal(c.left, 0);
}

static void test_request_args(void** state) {
  (void)state;
  int dummy = 0;
  size_t index = 0;
  kf_request_t none[2] = {NULL, NULL};
  assert_int_equal(kf_request_test(NULL), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_wait(NULL), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_test((kf_request_t)&dummy), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_free((kf_request_t)&dummy), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_free(NULL), KF_SUCCESS);
  assert_int_equal(kf_request_wait_any(2, none, &index), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_wait_any(0, none, &index), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_wait_all(2, none), KF_SUCCESS);
  assert_string_equal(kf_request_error(NULL), "");
}

/* A freed handle is rejected, by every call, while no new request reuses
 * its memory; and so is a destroyed communicator. */
static void test_freed_handles(void** state) {
  (void)state;
  kf_comm_t comm = make_comm();
  int32_t x = 3, y = 0;
  kf_request_t r = NULL, many[2100];
  assert_int_equal(kf_iall_reduce(comm, "f", &x, &y, 1, KF_INT32, KF_SUM, NULL, &r), KF_SUCCESS);
  assert_int_equal(kf_request_wait(r), KF_SUCCESS);
  assert_int_equal(y, 3);
  assert_int_equal(kf_request_free(r), KF_SUCCESS);
  assert_int_equal(kf_request_free(r), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_test(r), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_wait(r), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_request_wait_all(1, &r), KF_ERR_INVALID_ARGUMENT);
  /* More live handles than the lock-free table holds (2048): all still found. */
  for (int i = 0; i < 2100; ++i) {
    assert_int_equal(kf_iall_reduce(comm, "m", &x, &y, 1, KF_INT32, KF_SUM, NULL, &many[i]),
                     KF_SUCCESS);
  }
  assert_int_equal(kf_request_wait_all(2100, many), KF_SUCCESS);
  for (int i = 0; i < 2100; ++i) assert_int_equal(kf_request_free(many[i]), KF_SUCCESS);
  for (int i = 0; i < 2100; ++i)
    assert_int_equal(kf_request_test(many[i]), KF_ERR_INVALID_ARGUMENT);
  assert_int_equal(kf_comm_destroy(comm), KF_SUCCESS);
  assert_int_equal(kf_iall_reduce(comm, "g", &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                   KF_ERR_INVALID_ARGUMENT);
}

struct free_race {
  kf_request_t req;
  kf_status_t status;
};

static void* free_request(void* arg) {
  struct free_race* f = (struct free_race*)arg;
  f->status = kf_request_free(f->req);
  return NULL;
}

/* Two threads free one handle at once: one frees it, the other is told it
 * is not a live handle (never both, never a crash). */
static void test_concurrent_free(void** state) {
  kf_comm_t comm = (kf_comm_t)*state;
  int32_t x = 1, y = 0;
  for (int i = 0; i < 1000; ++i) {
    kf_request_t r = NULL;
    struct free_race a, b;
    pthread_t ta, tb;
    assert_int_equal(kf_iall_reduce(comm, "race", &x, &y, 1, KF_INT32, KF_SUM, NULL, &r),
                     KF_SUCCESS);
    assert_int_equal(kf_request_wait(r), KF_SUCCESS);
    a.req = b.req = r;
    assert_int_equal(pthread_create(&ta, NULL, free_request, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, free_request, &b), 0);
    assert_int_equal(pthread_join(ta, NULL), 0);
    assert_int_equal(pthread_join(tb, NULL), 0);
    assert_true((a.status == KF_SUCCESS) != (b.status == KF_SUCCESS));
    assert_int_equal(a.status == KF_SUCCESS ? b.status : a.status, KF_ERR_INVALID_ARGUMENT);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_rank_ops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_callback_chain, setup, teardown),
      cmocka_unit_test(test_request_args),
      cmocka_unit_test(test_freed_handles),
      cmocka_unit_test_setup_teardown(test_concurrent_free, setup, teardown),
  };
  return cmocka_run_group_tests_name("async", tests, NULL, NULL);
}
