/* The README example: sum a vector across all ranks. Run with kfrun -np 4 ./example */
#include <kungfu/kungfu.h>
#include <stdio.h>

int main(void) {
  kf_comm_t comm;
  kf_status_t s = kf_comm_init_from_env(NULL, &comm); /* kfrun, mpirun, srun or 1 rank */
  if (s != KF_SUCCESS) {
    fprintf(stderr, "init: %s: %s\n", kf_status_string(s), kf_comm_last_error(NULL));
    return 1;
  }
  int rank, size;
  kf_comm_rank(comm, &rank);
  kf_comm_size(comm, &size);

  float grad[4] = {1.0f, 2.0f, 3.0f, (float)rank};
  s = kf_all_reduce(comm, grad, grad, 4, KF_FLOAT32, KF_SUM); /* in place */
  if (s != KF_SUCCESS) {
    fprintf(stderr, "all_reduce: %s\n", kf_comm_last_error(comm));
    kf_comm_destroy(comm);
    return 1;
  }
  /* Every rank now holds {size, 2*size, 3*size, 0+1+...+(size-1)}. */
  int ok = grad[0] == (float)size && grad[3] == (float)(size * (size - 1) / 2);
  if (rank == 0)
    printf("rank 0 of %d: %g %g %g %g %s\n", size, grad[0], grad[1], grad[2], grad[3],
           ok ? "ok" : "WRONG");
  kf_comm_destroy(comm);
  return ok ? 0 : 1;
}
