/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loopfs test library: helpers for the selftests, the fuzzer, the stress
 * test and the security helpers, built from loopfs_test.c into each of them.
 * Names and numbers the module shows userspace come from loopfs_abi.h.
 *
 * Selftests run every test in a forked child (kselftest harness) and call
 * private_mntns() first, so that every mount they make disappears with the
 * child; the fuzzer and the stress test do the same once for the whole run.
 */
#ifndef LOOPFS_TEST_H
#define LOOPFS_TEST_H

/* Paths are built with snprintf into PATH_MAX buffers; truncation cannot happen here. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
/* Before <linux/fs.h>: an older C library's names for the mount flags. */
#include <sys/mount.h>
#include <linux/loop.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "loopfs_abi.h"

#define STOCK_LOOP_MAJOR 7

/* Result of a syscall as 0/positive value or -errno. */
#define R(expr) ({ long __r = (long)(expr); __r < 0 ? -(long)errno : __r; })

/* A private mount namespace with private propagation; 0 or -errno. */
int private_mntns(void);

/* Mount a new loopfs instance on @dir (created if needed); 0 or -errno. */
int lfs_mount(const char *dir, const char *opts);
/* Open the instance's loop-control read-write: fd or -1. */
int lfs_ctl(const char *dir);
/* Path of node loop<@n> in the instance mounted on @dir. */
void lfs_devpath(char *buf, size_t len, const char *dir, int n);
int lfs_open_dev(const char *dir, int n, int flags);

int path_exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Fill @len bytes at @off with a pattern derived from @seed and the offset. */
void pattern_fill(unsigned char *buf, size_t len, uint64_t off, unsigned int seed);
/* Create @path of @size bytes filled with the pattern for @seed; 0 or -errno. */
int make_backing(const char *path, off_t size, unsigned int seed);
/*
 * Create @path as a 4 MiB image whose MBR holds two primary partitions of
 * 1 MiB at 1 MiB and 2 MiB, the rest patterned; 0 or -errno.
 */
int make_mbr_image(const char *path);

/*
 * Write @s to @path: 0, or -errno with errno set too (a sysctl refusing a
 * value fails the write, not the open).
 */
int write_file(const char *path, const char *s);
/* Read a small file into @buf, strip the trailing newline; 0 or -errno. */
int read_file(const char *path, char *buf, size_t len);
/* The number @path holds (decimal, octal or hex), or -1. */
long read_long(const char *path);

/* Kernel name of the disk behind the block device node @path ("loopfs3-0"). */
int disk_name_of(const char *path, char *name, size_t len);
/* Read /sys/block/<disk of path>/<attr> into buf. */
int disk_attr(const char *path, const char *attr, char *buf, size_t len);
/* Wait up to @ms for @path to disappear; 0 when gone. */
int wait_gone(const char *path, int ms);
/* Number of loopfs disks currently in /sys/block (-1 on error). */
int count_loopfs_disks(void);
/* Major number registered as "loopfs" in /proc/devices, or -1. */
int loopfs_block_major(void);
/* Fresh unique directory under the cwd (the runner's scratch dir). */
char *scratch_dir(char *buf, size_t len, const char *prefix);

/*
 * Kernel log checks. kmsg_mark() returns the sequence number the next
 * record will get, or -errno; kmsg_find() then reads the whole log again and
 * looks only at the records from that mark on, so any number of checks made
 * after the same mark all see every line logged since it.
 *
 * kmsg_find_line(): 1 if a record logged at or after @mark has the text
 * @needle (exactly, when @whole, else as a substring), 0 if none has, -errno
 * if the log could not be read. With @line, the first matching text is
 * copied there (@len bytes).
 */
long long kmsg_mark(void);
int kmsg_find_line(long long mark, const char *needle, int whole,
		   char *line, size_t len);
int kmsg_find(long long mark, const char *needle, int whole);

/* system() of the formatted command: its exit status, -1 if it did not exit. */
int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in milliseconds. */
uint64_t now_ms(void);

/*
 * The module itself. load_loopfs() loads $LOOPFS_KO (0 or -errno);
 * wait_loopfs_idle() waits up to @ms for no loopfs disk and a module
 * refcount of 0 (teardown may finish in a work item) and returns the time
 * it took, or -1; reload_loopfs() runs rmmod loopfs and loads it again,
 * saying on stdout as TAP diagnostics what went wrong (0 or -1).
 */
int loopfs_loaded(void);
long loopfs_refcnt(void);
int load_loopfs(void);
int wait_loopfs_idle(int ms);
int reload_loopfs(void);

/*
 * TAP for the programs that are not kselftest harness suites: the version
 * line and plan, then one line per test, flushed at once (workers fork).
 */
extern int tap_count;		/* test lines printed */
extern int tap_failures;	/* of those, "not ok" */
void tap_plan(int tests);
void tap(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The name of errno value @e ("EBUSY"), NULL if unknown: strerrorname_np()
 * where the C library has it (2.32 and later), else a table of those the
 * tests meet.
 */
const char *errno_name(int e);

/* The running kernel is version @major.@minor or later. */
bool kernel_at_least(int major, int minor);

#endif /* LOOPFS_TEST_H */
