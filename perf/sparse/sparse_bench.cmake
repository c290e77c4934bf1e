# sparse_bench: dense vs flat vs hierarchical sparse all_reduce (included
# from perf/CMakeLists.txt; run_cluster.sh runs it on the emulated cluster).
add_executable(sparse_bench ${CMAKE_CURRENT_LIST_DIR}/sparse_bench.cc)
target_link_libraries(sparse_bench PRIVATE kungfu Threads::Threads kf_warnings)

# A small run so the tool stays built and working (np 4 on one host: the
# hierarchical variants run as one host of four).
if(KF_BUILD_TESTS)
  add_test(NAME sparse_bench_smoke
           COMMAND $<TARGET_FILE:kfrun> -np 4 --timeout 100 -x KF_TIMEOUT_MS=30000
                   $<TARGET_FILE:sparse_bench> --sizes 1M --densities 0.01,0.001 --iters 1 --ef)
  set_tests_properties(sparse_bench_smoke PROPERTIES TIMEOUT 130 PROCESSORS 4 LABELS "perf;sparse")
endif()
