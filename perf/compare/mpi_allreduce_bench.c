/*
 * mpi_allreduce_bench: MPI_Allreduce(MPI_FLOAT, MPI_SUM), out of place, timed
 * like all_reduce_perf (same flags, sizes, busbw and time conventions) for the
 * side-by-side comparison in compare.sh. Run under mpirun.
 */
#include <mpi.h>

#include "bench_opts.h"

static int fail(const char* what, int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "mpi_allreduce_bench: %s failed: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

int main(int argc, char** argv) {
  bench_opts o;
  int rank = 0, nranks = 1, rc, prc;
  float *send = NULL, *recv = NULL;
  size_t max_count, bytes;
  uint32_t salt = 1;
  uint64_t wrong_total = 0;

  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  prc = bench_parse_args(argc, argv, &o, NULL, NULL, NULL, NULL);
  if (prc != 0) {
    MPI_Finalize();
    return prc == 2 ? 0 : 2;
  }

  max_count = o.max_bytes / sizeof(float);
  if (posix_memalign((void**)&send, 64, (max_count ? max_count : 1) * sizeof(float)) != 0 ||
      posix_memalign((void**)&recv, 64, (max_count ? max_count : 1) * sizeof(float)) != 0) {
    fprintf(stderr, "mpi_allreduce_bench: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(send, 0, (max_count ? max_count : 1) * sizeof(float)); /* touch every page */
  memset(recv, 0, (max_count ? max_count : 1) * sizeof(float));

  if (rank == 0) {
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    char* nl;
    MPI_Get_library_version(lib, &len);
    nl = strchr(lib, '\n');
    if (nl) *nl = '\0';
    printf("# mpi_allreduce_bench: %s\n", lib);
    bench_print_header("openmpi", nranks, &o);
  }

  for (bytes = o.min_bytes; bytes != 0; bytes = bench_next_size(&o, bytes)) {
    const size_t count = bytes / sizeof(float);
    const int icount = (int)count;
    double t0, local_us, time_us = 0;
    uint64_t local_wrong = 0, wrong = 0;
    int i;
    if (count > (size_t)0x7fffffff) {
      fprintf(stderr, "mpi_allreduce_bench: %zu elements exceed int\n", count);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    bench_fill_input(send, count, rank, salt);
    for (i = 0; i < o.warmup; ++i)
      if ((rc = MPI_Allreduce(send, recv, icount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)) !=
          MPI_SUCCESS)
        return fail("MPI_Allreduce", rc);
    if ((rc = MPI_Barrier(MPI_COMM_WORLD)) != MPI_SUCCESS) return fail("MPI_Barrier", rc);
    t0 = bench_now_seconds();
    for (i = 0; i < o.iters; ++i)
      if ((rc = MPI_Allreduce(send, recv, icount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)) !=
          MPI_SUCCESS)
        return fail("MPI_Allreduce", rc);
    local_us = (bench_now_seconds() - t0) * 1e6 / o.iters;
    if ((rc = MPI_Allreduce(&local_us, &time_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD)) !=
        MPI_SUCCESS)
      return fail("MPI_Allreduce(time)", rc);

    if (o.check) {
      ++salt;
      bench_fill_input(send, count, rank, salt);
      memset(recv, 0xff, count * sizeof(float));
      if ((rc = MPI_Allreduce(send, recv, icount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)) !=
          MPI_SUCCESS)
        return fail("MPI_Allreduce", rc);
      local_wrong = bench_count_wrong(recv, count, nranks, salt);
      if ((rc = MPI_Allreduce(&local_wrong, &wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD)) !=
          MPI_SUCCESS)
        return fail("MPI_Allreduce(#wrong)", rc);
      wrong_total += wrong;
    }
    if (rank == 0) bench_print_row("openmpi", nranks, count * sizeof(float), time_us, wrong, o.check);
  }

  if (rank == 0) printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong_total,
                        wrong_total ? "FAILED" : "OK");
  free(send);
  free(recv);
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
