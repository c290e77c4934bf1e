/* Strategies: a hierarchical all_reduce, then back to automatic choice.
 * Run with kfrun -H host1:4,host2:4 ./strategy_example (or any kfrun). */
#include <kungfu/kungfu.h>
#include <stdio.h>

#define N (1 << 20) /* 4 MiB of float32: large enough to matter across hosts */
static float grad[N];

int main(void) {
  kf_comm_t comm;
  kf_status_t s = kf_comm_init_from_env(NULL, &comm);
  if (s != KF_SUCCESS) {
    fprintf(stderr, "init: %s: %s\n", kf_status_string(s), kf_comm_last_error(NULL));
    return 1;
  }
  int rank, size, hosts;
  kf_comm_rank(comm, &rank);
  kf_comm_size(comm, &size);
  kf_comm_host_count(comm, &hosts);
  for (int i = 0; i < N; ++i) grad[i] = (float)(i % 7);

  /* Collective: every rank switches, with the same value, at the same point. */
  s = kf_comm_set_strategy(comm, KF_STRATEGY_HIERARCHICAL);
  if (s == KF_SUCCESS) s = kf_all_reduce(comm, grad, grad, N, KF_FLOAT32, KF_SUM);
  /* Back to the default: hierarchical across hosts for large messages only. */
  if (s == KF_SUCCESS) s = kf_comm_set_strategy(comm, KF_STRATEGY_AUTO);
  if (s != KF_SUCCESS) {
    fprintf(stderr, "rank %d: %s: %s\n", rank, kf_status_string(s), kf_comm_last_error(comm));
    kf_comm_destroy(comm);
    return 1;
  }
  int wrong = 0;
  for (int i = 0; i < N; ++i) wrong += grad[i] != (float)(i % 7) * (float)size;
  if (rank == 0) printf("%d ranks on %d hosts: %s\n", size, hosts, wrong ? "WRONG" : "ok");
  kf_comm_destroy(comm);
  return wrong ? 1 : 0;
}
