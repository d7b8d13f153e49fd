// SPDX-License-Identifier: GPL-2.0
/*
 * mnt-probe: raw mount(2) calls for the loopfs-run tests, with exact errnos.
 *
 *   mnt-probe mount SRC TGT TYPE [ro] [DATA]  prints "ok" or the errno name
 *   mnt-probe fsopen TYPE                     prints "ok" or the errno name
 *   mnt-probe loop-add CONTROL N              LOOP_CTL_ADD N on CONTROL
 *   mnt-probe loop-remove CONTROL N           LOOP_CTL_REMOVE N on CONTROL
 *   mnt-probe block-size DEV N                LOOP_SET_BLOCK_SIZE N on DEV
 *   mnt-probe remount TGT DATA                mount(NULL, TGT, NULL, MS_REMOUNT, DATA)
 *   mnt-probe mount-mapped FILE TGT TYPE GO   mount(2) whose source string is
 *       the start of FILE, mapped and not resident: maps FILE, drops its
 *       cached pages, prints "resident=N" (pages in memory), waits (at most
 *       60 s) for the path GO to exist, then calls mount(2)
 *   mnt-probe mount32 SRC TGT TYPE            mount(2) through the i386 ABI
 *       (int 0x80 from this 64-bit process, read-only)
 *   mnt-probe race GOOD BAD TGT TYPE N SECS   N attempts (at most SECS s) of
 *       mount(buf, TGT, TYPE, MS_RDONLY) while a second thread keeps
 *       rewriting buf between the paths GOOD and BAD.  A mount that succeeds
 *       must be of GOOD's device; prints the counts, exits 1 on a wrong mount.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include "mount_api.h"
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "loopfs_test.h"

static char buf[256];
static const char *paths[2];
static atomic_int stop;

static const char *result(int r)
{
	return r ? errno_name(errno) : "ok";
}

static void *flipper(void *arg)
{
	unsigned long i = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		const char *p = paths[i++ & 1];

		/* byte by byte on purpose: torn strings are part of the game */
		for (size_t k = 0; k <= strlen(p); k++)
			((volatile char *)buf)[k] = p[k];
	}
	return NULL;
}

#ifdef __x86_64__
/* mount(2) as a 32-bit program makes it: i386 number 21, int 0x80. */
static int mount32(char **argv)
{
	char *low = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	long ret;
	int i;

	if (low == MAP_FAILED)
		return 2;
	for (i = 0; i < 3; i++)
		snprintf(low + i * 4096, 4096, "%s", argv[i]);
	asm volatile ("int $0x80"
		      : "=a" (ret)
		      : "a" (21L), "b" (low), "c" (low + 4096), "d" (low + 8192),
			"S" ((long)MS_RDONLY), "D" (0L)
		      : "memory", "cc", "r8", "r9", "r10", "r11");
	if (ret < 0)
		errno = -ret;
	printf("%s\n", result(ret < 0));
	return ret < 0;
}
#endif

static int mount_mapped(char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char in_core;
	struct stat st;
	char *map;
	int fd, i, r;

	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[0]);
		return 2;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	map = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (mincore(map, page, &in_core))
		in_core = 1;
	printf("resident=%d\n", in_core & 1);
	fflush(stdout);
	for (i = 0; i < 6000 && stat(argv[3], &st); i++)
		usleep(10000);
	r = mount(map, argv[1], argv[2], 0, NULL);
	printf("%s\n", result(r));
	return !!r;
}

static int race(char **argv)
{
	unsigned long n = strtoul(argv[4], NULL, 0), secs = strtoul(argv[5], NULL, 0);
	unsigned long attempts = 0, mounted = 0, denied = 0, other = 0, wrong = 0;
	const char *tgt = argv[2], *type = argv[3];
	struct stat good, bad, st;
	pthread_t thr;
	time_t end = time(NULL) + secs;

	paths[0] = argv[0];
	paths[1] = argv[1];
	if (stat(paths[0], &good) || stat(paths[1], &bad)) {
		perror("stat");
		return 2;
	}
	strcpy(buf, paths[0]);
	pthread_create(&thr, NULL, flipper, NULL);
	for (; attempts < n && time(NULL) < end; attempts++) {
		if (mount(buf, tgt, type, MS_RDONLY, NULL) == 0) {
			mounted++;
			if (stat(tgt, &st) || st.st_dev != good.st_rdev) {
				wrong++;
				fprintf(stderr, "WRONG MOUNT: dev %lx (bad is %lx)\n",
					(unsigned long)st.st_dev,
					(unsigned long)bad.st_rdev);
			}
			if (umount2(tgt, 0))
				umount2(tgt, MNT_DETACH);
		} else if (errno == EPERM) {
			denied++;
		} else {
			other++;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(thr, NULL);
	printf("attempts=%lu mounted=%lu denied=%lu other=%lu wrong=%lu\n",
	       attempts, mounted, denied, other, wrong);
	return wrong ? 1 : 0;
}

/* ioctl(open(PATH, MODE), CMD, ARG): prints "ok" or the errno name. */
static int loop_ioctl(const char *path, int mode, unsigned long cmd, long arg)
{
	int fd = open(path, mode | O_CLOEXEC);
	int r = fd < 0 ? -1 : ioctl(fd, cmd, arg);

	printf("%s\n", r < 0 ? errno_name(errno) : "ok");
	return r < 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc >= 5 && !strcmp(argv[1], "mount")) {
		unsigned long flags = 0;

		if (argc >= 6 && !strcmp(argv[5], "ro"))
			flags |= MS_RDONLY;
		r = mount(argv[2], argv[3], argv[4], flags, argc >= 7 ? argv[6] : NULL);
		printf("%s\n", result(r));
		return !!r;
	}
	if (argc == 4 && !strcmp(argv[1], "remount")) {
		r = mount(NULL, argv[2], NULL, MS_REMOUNT, argv[3]);
		printf("%s\n", result(r));
		return !!r;
	}
	if (argc == 6 && !strcmp(argv[1], "mount-mapped"))
		return mount_mapped(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "fsopen")) {
		r = fsopen(argv[2], FSOPEN_CLOEXEC);
		printf("%s\n", result(r < 0));
		return r < 0;
	}
	if (argc == 4 && !strcmp(argv[1], "loop-add"))
		return loop_ioctl(argv[2], O_RDWR, LOOP_CTL_ADD, atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "loop-remove"))
		return loop_ioctl(argv[2], O_RDWR, LOOP_CTL_REMOVE, atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "block-size"))
		return loop_ioctl(argv[2], O_RDONLY, LOOP_SET_BLOCK_SIZE, atoi(argv[3]));
#ifdef __x86_64__
	if (argc == 5 && !strcmp(argv[1], "mount32"))
		return mount32(argv + 2);
#endif
	if (argc == 8 && !strcmp(argv[1], "race"))
		return race(argv + 2);
	fprintf(stderr, "usage: see the comment at the top of mnt-probe.c\n");
	return 2;
}
