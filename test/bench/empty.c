/* SPDX-License-Identifier: MIT */
/* An empty library: what preloading any library costs a process (bench.py,
 * row 7's floor). */
int bench_empty_library;
