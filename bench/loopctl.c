// SPDX-License-Identifier: GPL-2.0
/*
 * loopctl - loop-control helper for the loopfs benchmark.
 *
 *   loopctl add CONTROL              LOOP_CTL_ADD(-1), print the new index
 *   loopctl remove CONTROL N...      LOOP_CTL_REMOVE(N) for each N
 *   loopctl populate CONTROL COUNT   LOOP_CTL_ADD(-1) COUNT times, print the indices
 *   loopctl cycles CONTROL DEVFMT BACKING COUNT
 *        COUNT times: add a device, open it (DEVFMT is a printf format taking
 *        the index, e.g. /dev/loop%d), LOOP_CONFIGURE it on BACKING, LOOP_CLR_FD,
 *        close, LOOP_CTL_REMOVE.  Prints one line of key=value timings:
 *        cycles per second over the whole run and the median and quartiles of
 *        the per-cycle time in microseconds.
 *
 * Works on the stock /dev/loop-control and on a loopfs instance's
 * loop-control alike: it speaks only the loop(4) ABI.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "loopctl: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int open_ctl(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die(path);
	return fd;
}

static int ctl_add(int ctl)
{
	int idx = ioctl(ctl, LOOP_CTL_ADD, -1);

	if (idx < 0)
		die("LOOP_CTL_ADD");
	return idx;
}

/* The last close may finish tearing the device down just after we return. */
static void ctl_remove(int ctl, int idx)
{
	int tries;

	for (tries = 0; ioctl(ctl, LOOP_CTL_REMOVE, idx) < 0; tries++) {
		if (errno != EBUSY || tries == 1000)
			die("LOOP_CTL_REMOVE");
		usleep(100);
	}
}

/* One create + configure + clear + remove cycle. */
static void cycle(int ctl, const char *devfmt, int backing)
{
	struct loop_config cfg;
	char dev[4096];
	int idx, fd;

	idx = ctl_add(ctl);
	snprintf(dev, sizeof(dev), devfmt, idx);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(dev);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = backing;
	if (ioctl(fd, LOOP_CONFIGURE, &cfg) < 0)
		die("LOOP_CONFIGURE");
	if (ioctl(fd, LOOP_CLR_FD) < 0)
		die("LOOP_CLR_FD");
	close(fd);
	ctl_remove(ctl, idx);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cycles(int ctl, const char *devfmt, const char *path, int count)
{
	double *t, start, total;
	int backing, i;

	backing = open(path, O_RDWR | O_CLOEXEC);
	if (backing < 0)
		die(path);
	t = calloc(count, sizeof(*t));
	if (!t)
		die("calloc");
	start = now_us();
	for (i = 0; i < count; i++) {
		t[i] = now_us();
		cycle(ctl, devfmt, backing);
		t[i] = now_us() - t[i];
	}
	total = now_us() - start;
	qsort(t, count, sizeof(*t), cmp_double);
	printf("cycles=%d per_s=%.1f median_us=%.1f p25_us=%.1f p75_us=%.1f\n",
	       count, count / (total / 1e6), t[count / 2], t[count / 4],
	       t[(3 * count) / 4]);
	free(t);
	close(backing);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: loopctl add CONTROL | remove CONTROL N... |\n"
		"       populate CONTROL COUNT | cycles CONTROL DEVFMT BACKING COUNT\n");
	return 2;
}

int main(int argc, char **argv)
{
	int ctl, i;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "add") && argc == 3) {
		printf("%d\n", ctl_add(open_ctl(argv[2])));
	} else if (!strcmp(argv[1], "remove") && argc >= 4) {
		ctl = open_ctl(argv[2]);
		for (i = 3; i < argc; i++)
			ctl_remove(ctl, atoi(argv[i]));
	} else if (!strcmp(argv[1], "populate") && argc == 4) {
		ctl = open_ctl(argv[2]);
		for (i = atoi(argv[3]); i > 0; i--)
			printf("%d\n", ctl_add(ctl));
	} else if (!strcmp(argv[1], "cycles") && argc == 6 && atoi(argv[5]) > 0) {
		return cycles(open_ctl(argv[2]), argv[3], argv[4], atoi(argv[5]));
	} else {
		return usage();
	}
	return 0;
}
