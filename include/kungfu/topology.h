/*
 * libkungfu topology queries: where the ranks of a communicator run.
 *
 * At init every rank discovers its host identity (hostname and boot id), the
 * CPUs it may run on and their NUMA node, and the GPUs and network interfaces
 * on the machine's PCI tree, and the communicator exchanges them, so that
 * every rank knows the layout of the whole job. Discovery uses hwloc when the
 * library was built with it; otherwise it reads /proc and /sys, with less
 * detail (NUMA placement of devices and GPUs may be unknown).
 *
 * Ranks with the same host identity form a host. Hosts are numbered 0 ..
 * host_count-1 in the order of their lowest rank; a rank's local rank is its
 * position, by rank, among the ranks of its host.
 *
 * The knob KF_BIND (none, numa-spread, nic, gpu) binds each rank to the CPUs
 * of a NUMA node at init; see `kfinfo`.
 *
 * Every function is thread safe; the answers never change during the life of
 * the communicator. C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_TOPOLOGY_H
#define KUNGFU_TOPOLOGY_H

#include <stddef.h>

#include "kungfu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Formats of kf_comm_topology_dump(). Values are part of the ABI. */
typedef enum kf_topo_format {
    KF_TOPO_TEXT = 0, /**< Human-readable lines: one per host, one per rank. */
    KF_TOPO_JSON = 1  /**< One JSON object with "size", "host_count", "hosts" and "ranks". */
} kf_topo_format_t;

/**
 * Gets the number of distinct hosts the ranks of `comm` run on.
 * @param[in]  comm   Communicator. Not NULL.
 * @param[out] count  Receives the host count (>= 1). Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm, NULL count).
 */
KF_API kf_status_t kf_comm_host_count(kf_comm_t comm, int* count);

/**
 * Gets the host index of a rank.
 * @param[in]  comm  Communicator. Not NULL.
 * @param[in]  rank  A rank of comm, 0 .. size-1.
 * @param[out] host  Receives the host index, 0 .. host_count-1. Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm or rank, NULL host).
 */
KF_API kf_status_t kf_comm_host_index(kf_comm_t comm, int rank, int* host);

/**
 * Gets this process's rank among the ranks on its host.
 * @param[in]  comm        Communicator. Not NULL.
 * @param[out] local_rank  Receives the local rank, 0 .. local_size-1. Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm, NULL local_rank).
 */
KF_API kf_status_t kf_comm_local_rank(kf_comm_t comm, int* local_rank);

/**
 * Gets the number of ranks of `comm` on this process's host.
 * @param[in]  comm        Communicator. Not NULL.
 * @param[out] local_size  Receives the local size (>= 1). Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm, NULL local_size).
 */
KF_API kf_status_t kf_comm_local_size(kf_comm_t comm, int* local_size);

/**
 * Gets the NUMA node a rank's CPUs belong to, as seen at init (before any
 * KF_BIND binding).
 * @param[in]  comm       Communicator. Not NULL.
 * @param[in]  rank       A rank of comm, 0 .. size-1.
 * @param[out] numa_node  Receives the node number, or -1 when unknown or when
 *                        the rank may run on CPUs of several nodes. Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm or rank, NULL numa_node).
 */
KF_API kf_status_t kf_comm_numa_node(kf_comm_t comm, int rank, int* numa_node);

/**
 * Writes the layout of the whole job (hosts, their NUMA nodes, cores, GPUs and
 * NICs; every rank's host, local rank, NUMA node and CPUs) as text or JSON.
 *
 * Size query: *len is the capacity of `buf` in bytes on entry. If buf is NULL
 * or *len is too small, nothing is written, *len is set to the size needed
 * (including the terminating NUL) and the call returns KF_ERR_INVALID_ARGUMENT
 * (with a last-error text saying so), unless buf is NULL and *len is 0,
 * which is a plain size query and returns KF_SUCCESS. On success buf holds
 * the NUL-terminated text and *len its size including the NUL.
 *
 * @param[in]     comm    Communicator. Not NULL.
 * @param[in]     format  KF_TOPO_TEXT or KF_TOPO_JSON.
 * @param[out]    buf     Receives the text, or NULL to query the size.
 * @param[in,out] len     Capacity of buf in, size needed/written out. Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm or format, NULL len,
 *         buffer too small).
 */
KF_API kf_status_t kf_comm_topology_dump(kf_comm_t comm, kf_topo_format_t format, char* buf,
                                         size_t* len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_TOPOLOGY_H */
