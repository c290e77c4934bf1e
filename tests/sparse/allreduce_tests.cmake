# Sparse all_reduce and PTO tests (included from tests/CMakeLists.txt after
# tests/mp, whose kf_mp_test they use): algorithms over in-process thread
# peers, the C API on real ranks under kfrun, the convergence check, and the
# hierarchical variant on the emulated 2 x 2 cluster.
find_package(GTest REQUIRED)

add_executable(kf_sparse_algo_test
  ${PROJECT_SOURCE_DIR}/tests/algo/thread_peers.cc
  ${CMAKE_CURRENT_LIST_DIR}/sparse_algo_test.cc)
target_include_directories(kf_sparse_algo_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}
                           ${PROJECT_SOURCE_DIR}/tests/algo)
target_link_libraries(kf_sparse_algo_test PRIVATE kungfu_internal GTest::gtest_main
                      Threads::Threads kf_warnings)
add_test(NAME sparse_algo COMMAND kf_sparse_algo_test)
set_tests_properties(sparse_algo PROPERTIES TIMEOUT 120 LABELS sparse)

foreach(prog sparse_mp sparse_async_mp convergence)
  add_executable(sparse_${prog} ${CMAKE_CURRENT_LIST_DIR}/${prog}.cc)
  target_include_directories(sparse_${prog} PRIVATE ${CMAKE_CURRENT_LIST_DIR}
                             ${PROJECT_SOURCE_DIR}/tests/mp)
  target_link_libraries(sparse_${prog} PRIVATE kungfu kf_warnings Threads::Threads)
endforeach()
# The sparse_mp binary is sparse_sparse_mp; keep the name readable.
set_target_properties(sparse_sparse_mp PROPERTIES OUTPUT_NAME sparse_mp)

# Small buffers take the sparse paths (KF_SPARSE_MIN_ELEMS=0); one run keeps
# the default threshold for the dense-fallback cases.
foreach(np 2 3 4)
  kf_mp_test(sparse_mp_np${np} ${np} 120
             COMMAND -x KF_SPARSE_MIN_ELEMS=0 $<TARGET_FILE:sparse_sparse_mp>)
endforeach()
kf_mp_test(sparse_mp_tcp_np4 4 120
           COMMAND -x KF_SPARSE_MIN_ELEMS=0 -x KF_TRANSPORT=tcp $<TARGET_FILE:sparse_sparse_mp>)
# The async form (kf_isparse_all_reduce) mixed with dense async operations.
set_target_properties(sparse_sparse_async_mp PROPERTIES OUTPUT_NAME sparse_async_mp)
foreach(np 2 4)
  kf_mp_test(sparse_async_mp_np${np} ${np} 120
             COMMAND -x KF_SPARSE_MIN_ELEMS=0 $<TARGET_FILE:sparse_sparse_async_mp>)
  set_tests_properties(sparse_async_mp_np${np} PROPERTIES LABELS "mp;sparse;async")
endforeach()
kf_mp_test(sparse_convergence_np4 4 300 SERIAL COMMAND $<TARGET_FILE:sparse_convergence>)
set_tests_properties(sparse_mp_np2 sparse_mp_np3 sparse_mp_np4 sparse_mp_tcp_np4
                     sparse_convergence_np4 PROPERTIES LABELS "mp;sparse")

# Hierarchical (auto picks it) and flat on 2 hosts x 2 ranks over a 1 Gbit/s
# emulated link. Root only; skipped (77) elsewhere.
add_test(NAME cluster.sparse_2x2
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cluster_sparse.sh
                 ${PROJECT_SOURCE_DIR}/tests/cluster/cluster.sh $<TARGET_FILE:kfrun>
                 $<TARGET_FILE:sparse_sparse_mp>)
add_test(NAME cluster.sparse_async_2x2
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cluster_sparse.sh
                 ${PROJECT_SOURCE_DIR}/tests/cluster/cluster.sh $<TARGET_FILE:kfrun>
                 $<TARGET_FILE:sparse_sparse_async_mp>)
set_tests_properties(cluster.sparse_2x2 cluster.sparse_async_2x2 PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE PROCESSORS 4 LABELS "cluster;sparse")
