/*
 * Communicator split: a two-level sum through the communicator of this host
 * and the "cross" communicator of same-local-rank peers across hosts, checked
 * against the flat all_reduce; then even and odd ranks on their own.
 *
 *     kfrun -np 4 ./split_example
 */
#include <kungfu/kungfu.h>
#include <stdio.h>

static int check(kf_status_t st, kf_comm_t comm, const char* what) {
  if (st != KF_SUCCESS)
    fprintf(stderr, "%s: %s: %s\n", what, kf_status_string(st), kf_comm_last_error(comm));
  return st == KF_SUCCESS;
}

int main(void) {
  kf_comm_t world = NULL, host = NULL, cross = NULL, half = NULL;
  int rank = 0, size = 0, local_rank = 0, half_rank = 0, half_size = 0, ok = 1;
  double flat[4], two[4];

  if (!check(kf_comm_init_from_env(NULL, &world), NULL, "init")) return 1;
  kf_comm_rank(world, &rank);
  kf_comm_size(world, &size);

  /* Collective over world: every rank calls both. */
  ok = ok && check(kf_comm_split_host(world, NULL, &host), world, "split_host");
  ok = ok && check(kf_comm_split_cross(world, NULL, &cross), world, "split_cross");
  for (int i = 0; ok && i < 4; ++i) flat[i] = two[i] = rank + i;
  ok = ok && check(kf_all_reduce(world, flat, flat, 4, KF_FLOAT64, KF_SUM), world, "all_reduce");
  /* Sum on the host, then across hosts among local rank 0, then share on the host. */
  ok = ok && check(kf_comm_rank(host, &local_rank), host, "rank");
  ok = ok && check(kf_reduce(host, two, two, 4, KF_FLOAT64, KF_SUM, 0), host, "reduce");
  if (ok && local_rank == 0)
    ok = check(kf_all_reduce(cross, two, two, 4, KF_FLOAT64, KF_SUM), cross, "cross");
  ok = ok && check(kf_broadcast(host, two, two, 4, KF_FLOAT64, 0), host, "broadcast");
  for (int i = 0; ok && i < 4; ++i) ok = flat[i] == two[i];

  /* Even and odd ranks, highest rank first (key = -rank). */
  ok = ok && check(kf_comm_split(world, rank % 2, -rank, NULL, &half), world, "split");
  ok = ok && check(kf_comm_rank(half, &half_rank), half, "rank");
  ok = ok && check(kf_comm_size(half, &half_size), half, "size");
  kf_comm_destroy(world); /* the split communicators live on */
  ok = ok && check(kf_barrier(half), half, "barrier");
  printf("rank %d: local rank %d, rank %d of %d in %s; two-level sum %s\n", rank, local_rank,
         half_rank, half_size, rank % 2 ? "odd" : "even", ok ? "matches" : "FAILED");
  kf_comm_destroy(half);
  kf_comm_destroy(cross);
  kf_comm_destroy(host);
  return ok ? 0 : 1;
}
