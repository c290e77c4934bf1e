/*
 * A program outside the project, built against the INSTALLED libkungfu: a one-rank
 * communicator from the environment, an all_reduce of a few floats, destroy.
 * Exit status 0 on success.
 */
#include <kungfu/kungfu.h>
#include <stdio.h>

#define N 5

static int check(kf_status_t s, const char* what, kf_comm_t comm) {
  if (s != KF_SUCCESS) {
    fprintf(stderr, "consumer: %s: %s (%s)\n", what, kf_status_string(s), kf_comm_last_error(comm));
    return 1;
  }
  return 0;
}

int main(void) {
  kf_config_t config = KF_CONFIG_INITIALIZER;
  kf_comm_t comm = NULL;
  float send[N] = {1.0f, -2.5f, 3.0f, 0.25f, 1024.0f};
  float recv[N] = {0};
  int rank = -1, size = -1, i;

  if (kf_get_version() / 10000 != KF_VERSION_MAJOR) {
    fprintf(stderr, "consumer: library version %d, headers %d\n", kf_get_version(),
            KF_VERSION_CODE);
    return 1;
  }
  config.name = "install-consumer";
  if (check(kf_comm_init_from_env(&config, &comm), "kf_comm_init_from_env", NULL)) return 1;
  if (check(kf_comm_rank(comm, &rank), "kf_comm_rank", comm)) return 1;
  if (check(kf_comm_size(comm, &size), "kf_comm_size", comm)) return 1;
  if (rank != 0 || size != 1) {
    fprintf(stderr, "consumer: expected rank 0 of 1, got %d of %d\n", rank, size);
    return 1;
  }
  if (check(kf_all_reduce(comm, send, recv, N, KF_FLOAT32, KF_SUM), "kf_all_reduce", comm)) {
    return 1;
  }
  for (i = 0; i < N; ++i) {
    if (recv[i] != send[i]) {
      fprintf(stderr, "consumer: recv[%d] = %g, expected %g\n", i, recv[i], send[i]);
      return 1;
    }
  }
  if (check(kf_comm_destroy(comm), "kf_comm_destroy", NULL)) return 1;
  printf("consumer: ok (libkungfu %d)\n", kf_get_version());
  return 0;
}
