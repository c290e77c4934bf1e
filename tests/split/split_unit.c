/*
 * CMocka tests of the split API on a one-rank communicator, in one process:
 * argument errors (KF_ERR_INVALID_ARGUMENT with a last-error text, nothing
 * created), KF_SPLIT_NONE, and one-rank children that work and outlive their
 * parent. The multi-rank behaviour is in split_mp.
 */
#define _POSIX_C_SOURCE 200809L

#include <kungfu/kungfu.h>
#include <stdint.h>
#include <string.h>

/* cmocka.h needs these three first, in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

static kf_comm_t make_world(void) {
  kf_comm_t comm = NULL;
  assert_int_equal(kf_comm_init_from_env(NULL, &comm), KF_SUCCESS);
  assert_non_null(comm);
  return comm;
}

static void assert_text(const char* text, const char* part) {
  if (strstr(text, part) == NULL) fail_msg("last error '%s' does not contain '%s'", text, part);
}

static void test_argument_errors(void** state) {
  (void)state;
  kf_comm_t world = make_world();
  kf_comm_t out = (kf_comm_t)0x1;
  kf_config_t bad = KF_CONFIG_INITIALIZER;
  int not_a_comm = 0;

  assert_int_equal(kf_comm_split(world, 0, 0, NULL, NULL), KF_ERR_INVALID_ARGUMENT);
  assert_text(kf_comm_last_error(world), "kf_comm_split: newcomm is NULL");
  assert_int_equal(kf_comm_split_host(world, NULL, NULL), KF_ERR_INVALID_ARGUMENT);
  assert_text(kf_comm_last_error(world), "kf_comm_split_host: newcomm is NULL");
  assert_int_equal(kf_comm_split_cross(world, NULL, NULL), KF_ERR_INVALID_ARGUMENT);
  assert_text(kf_comm_last_error(world), "kf_comm_split_cross: newcomm is NULL");

  assert_int_equal(kf_comm_split(NULL, 0, 0, NULL, &out), KF_ERR_INVALID_ARGUMENT);
  assert_null(out);
  assert_text(kf_comm_last_error(NULL), "kf_comm_split");
  out = (kf_comm_t)0x1;
  assert_int_equal(kf_comm_split_cross((kf_comm_t)&not_a_comm, NULL, &out),
                   KF_ERR_INVALID_ARGUMENT);
  assert_null(out);
  assert_text(kf_comm_last_error(NULL), "not a live communicator");

  assert_int_equal(kf_comm_split(world, -2, 0, NULL, &out), KF_ERR_INVALID_ARGUMENT);
  assert_text(kf_comm_last_error(world), "color -2");
  bad.magic = 0;
  assert_int_equal(kf_comm_split(world, 0, 0, &bad, &out), KF_ERR_INVALID_ARGUMENT);
  assert_text(kf_comm_last_error(world), "KF_CONFIG_INITIALIZER");
  bad = (kf_config_t)KF_CONFIG_INITIALIZER;
  bad.timeout_ms = -7;
  assert_int_equal(kf_comm_split_host(world, &bad, &out), KF_ERR_INVALID_ARGUMENT);
  assert_text(kf_comm_last_error(world), "timeout_ms");
  assert_null(out);
  assert_int_equal(kf_comm_destroy(world), KF_SUCCESS);
}

static void test_none(void** state) {
  (void)state;
  kf_comm_t world = make_world();
  kf_comm_t out = (kf_comm_t)0x1;
  assert_int_equal(kf_comm_split(world, KF_SPLIT_NONE, 3, NULL, &out), KF_SUCCESS);
  assert_null(out);
  assert_int_equal(kf_comm_destroy(world), KF_SUCCESS);
}

static void test_one_rank_children(void** state) {
  (void)state;
  kf_comm_t world = make_world();
  kf_comm_t kids[3] = {NULL, NULL, NULL};
  kf_config_t config = KF_CONFIG_INITIALIZER;
  config.name = "kid";
  config.timeout_ms = 5000;
  assert_int_equal(kf_comm_split(world, 4, -1, &config, &kids[0]), KF_SUCCESS);
  assert_int_equal(kf_comm_split_host(world, NULL, &kids[1]), KF_SUCCESS);
  assert_int_equal(kf_comm_split_cross(kids[1], NULL, &kids[2]), KF_SUCCESS);
  assert_int_equal(kf_comm_destroy(world), KF_SUCCESS); /* children outlive it */
  for (int i = 0; i < 3; ++i) {
    int rank = -1, size = -1, hosts = -1;
    int32_t in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
    assert_non_null(kids[i]);
    assert_int_equal(kf_comm_rank(kids[i], &rank), KF_SUCCESS);
    assert_int_equal(kf_comm_size(kids[i], &size), KF_SUCCESS);
    assert_int_equal(kf_comm_host_count(kids[i], &hosts), KF_SUCCESS);
    assert_int_equal(rank, 0);
    assert_int_equal(size, 1);
    assert_int_equal(hosts, 1);
    assert_int_equal(kf_all_reduce(kids[i], in, out, 3, KF_INT32, KF_SUM), KF_SUCCESS);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(kf_barrier(kids[i]), KF_SUCCESS);
  }
  for (int i = 0; i < 3; ++i) assert_int_equal(kf_comm_destroy(kids[i]), KF_SUCCESS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_argument_errors),
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_one_rank_children),
  };
  return cmocka_run_group_tests_name("split", tests, NULL, NULL);
}
