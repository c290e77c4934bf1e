/*
 * The rank program of the launcher tests. Usage: child MARKER BEHAVIOUR [ARGS]
 * MARKER is not used: it only makes the process findable with pgrep -f.
 *
 *   env               print the launcher variables, one NAME=VALUE per line
 *   env-remote        as env, plus KFT_REMOTE and KFT_ARGS (set by the fake
 *                     remote-exec command of the tests), cwd= (the working
 *                     directory) and cmdline= (KFT_CMDLINE: the fake remote
 *                     shell stores the command line it ran there)
 *   lines N           print N lines on stdout, one on stderr, and a last
 *                     stdout line without a newline
 *   slow-partial N    write N lines, each in two halves with a pause between
 *   exit-rank R C     rank R exits with code C after 0.2 s; others sleep forever
 *   segv-rank R       rank R dies of SIGSEGV after 0.2 s; others sleep forever
 *   sleep             sleep forever
 *   ignore-term       ignore SIGTERM and sleep forever
 *   grandchild        start a child (same argv marker) that sleeps forever,
 *                     then sleep forever
 *   exit-rank-ok R    rank R exits 0 at once; others sleep forever
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int my_rank(void) {
  const char* r = getenv("KF_RANK");
  return r != NULL ? atoi(r) : -1;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void sleep_forever(void) {
  for (;;) pause();
}

static void print_env(void) {
  static const char* const names[] = {"KF_RANK", "KF_SIZE", "KF_LOCAL_RANK", "KF_LOCAL_SIZE",
                                      "KF_ROOT_ADDR", "KF_JOB_SECRET", "KF_TEST_VAR"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    const char* v = getenv(names[i]);
    printf("%s=%s\n", names[i], v != NULL ? v : "(unset)");
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: child MARKER BEHAVIOUR [ARGS]\n");
    return 2;
  }
  const char* what = argv[2];
  int rank = my_rank();
  setvbuf(stdout, NULL, _IONBF, 0);

  if (strcmp(what, "env") == 0) {
    print_env();
    return 0;
  }
  if (strcmp(what, "env-remote") == 0) {
    print_env();
    static const char* const names[] = {"KFT_REMOTE", "KFT_ARGS"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
      const char* v = getenv(names[i]);
      printf("%s=%s\n", names[i], v != NULL ? v : "(unset)");
    }
    char cwd[4096];
    printf("cwd=%s\n", getcwd(cwd, sizeof(cwd)) != NULL ? cwd : "?");
    const char* cmdline = getenv("KFT_CMDLINE");
    if (cmdline != NULL) printf("cmdline=%s\n", cmdline);
    return 0;
  }
  if (strcmp(what, "lines") == 0 && argc > 3) {
    int n = atoi(argv[3]);
    for (int i = 0; i < n; ++i) printf("line %d of rank %d\n", i, rank);
    fprintf(stderr, "error line of rank %d\n", rank);
    printf("tail of rank %d", rank);
    return 0;
  }
  if (strcmp(what, "slow-partial") == 0 && argc > 3) {
    int n = atoi(argv[3]);
    for (int i = 0; i < n; ++i) {
      printf("first-half-%d-", rank);
      sleep_ms(7 + rank);
      printf("second-half-%d\n", rank);
    }
    return 0;
  }
  if ((strcmp(what, "exit-rank") == 0 && argc > 4) || (strcmp(what, "segv-rank") == 0 && argc > 3)) {
    if (rank == atoi(argv[3])) {
      sleep_ms(200);
      if (what[0] == 's') raise(SIGSEGV);
      return atoi(argv[4]);
    }
    sleep_forever();
  }
  if (strcmp(what, "exit-rank-ok") == 0 && argc > 3) {
    if (rank == atoi(argv[3])) return 0;
    sleep_forever();
  }
  if (strcmp(what, "sleep") == 0) sleep_forever();
  if (strcmp(what, "ignore-term") == 0) {
    signal(SIGTERM, SIG_IGN);
    printf("ignoring SIGTERM\n");
    sleep_forever();
  }
  if (strcmp(what, "grandchild") == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], argv[1], "sleep", (char*)NULL);
      _exit(1);
    }
    printf("started grandchild %d\n", (int)pid);
    sleep_forever();
  }
  fprintf(stderr, "child: unknown behaviour %s\n", what);
  return 2;
}
