/*
 * libkungfu version macros.
 *
 * ABI policy: libraries with the same major version are ABI compatible. The
 * shared library's SONAME carries the major version (libkungfu.so.<major>).
 * Minor versions add functions and struct fields (guarded by size fields);
 * patch versions change no interface.
 */
#ifndef KUNGFU_VERSION_H
#define KUNGFU_VERSION_H

#define KF_VERSION_MAJOR 0
#define KF_VERSION_MINOR 1
#define KF_VERSION_PATCH 0

/** Encodes a version as one integer: major*10000 + minor*100 + patch. */
#define KF_VERSION_ENCODE(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))

/** The version of the headers being compiled against. */
#define KF_VERSION_CODE KF_VERSION_ENCODE(KF_VERSION_MAJOR, KF_VERSION_MINOR, KF_VERSION_PATCH)

#endif /* KUNGFU_VERSION_H */
