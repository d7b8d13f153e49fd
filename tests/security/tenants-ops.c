// SPDX-License-Identifier: GPL-2.0
/*
 * What the tenants of tests/security/tenants.sh do with their instance.
 * DIR is a loopfs mount (loop-control, loop<N>), BACKING a file.
 *
 *   timed DIR BACKING       create, configure, read (O_DIRECT), clear and
 *                           remove a device; every step must take < 1 s.
 *                           The steps run in a child: a step stuck in the
 *                           kernel leaves the child behind, not the caller.
 *   flood DIR BACKING N     bind N devices read-only to BACKING, print
 *                           "bound", wait for SIGUSR1, then submit one
 *                           O_DIRECT read per device from each of the first
 *                           two CPUs (asynchronously), print "submitted"
 *                           and sleep until killed.
 *   dioconf DIR BACKING     LOOP_CONFIGURE a new device with direct I/O.
 *   changefd DIR N BACKING  LOOP_CHANGE_FD loop<N> to BACKING.
 *   clear DIR N             LOOP_CLR_FD loop<N>.
 *   remove DIR N            LOOP_CTL_REMOVE loop<N>.
 *   write DIR BACKING MIB   bind a new device to BACKING, write MIB MiB
 *                           to it with O_DIRECT, clear and remove it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "loopfs_test.h"
/* After <sys/mount.h>, which an older C library does not let follow it. */
#include <linux/aio_abi.h>

#define STEP_MS	1000

static const char *dir;

static int open_node(const char *name, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int open_dev(int n, int flags)
{
	char name[32];

	snprintf(name, sizeof(name), LOOPFS_NODE_FMT, n);
	return open_node(name, flags);
}

static int new_device(void)
{
	int ctl = open_node(LOOPFS_CONTROL_NAME, O_RDWR);
	int n = ioctl(ctl, LOOP_CTL_GET_FREE);

	if (n < 0) {
		perror("LOOP_CTL_GET_FREE");
		exit(1);
	}
	close(ctl);
	return n;
}

static void configure(int dev, int backing, unsigned int flags)
{
	struct loop_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = backing;
	cfg.info.lo_flags = flags;
	if (ioctl(dev, LOOP_CONFIGURE, &cfg)) {
		perror("LOOP_CONFIGURE");
		exit(1);
	}
}

static const char *const steps[] = {
	"create", "configure", "read", "clear", "remove",
};

static void timed_child(const char *backing, int out)
{
	int n, ctl, dev, bfd, dfd;
	char step = 0;
	void *buf;

	n = new_device();
	write(out, &step, 1);
	step++;
	bfd = open(backing, O_RDWR | O_CLOEXEC);
	if (bfd < 0) {
		perror(backing);
		exit(1);
	}
	dev = open_dev(n, O_RDWR);
	configure(dev, bfd, 0);
	close(bfd);
	write(out, &step, 1);
	step++;
	dfd = open_dev(n, O_RDONLY | O_DIRECT);
	if (posix_memalign(&buf, 4096, 4096) ||
	    pread(dfd, buf, 4096, 8192) != 4096) {
		perror("read");
		exit(1);
	}
	close(dfd);
	write(out, &step, 1);
	step++;
	if (ioctl(dev, LOOP_CLR_FD)) {
		perror("LOOP_CLR_FD");
		exit(1);
	}
	close(dev);
	write(out, &step, 1);
	step++;
	ctl = open_node(LOOPFS_CONTROL_NAME, O_RDWR);
	if (ioctl(ctl, LOOP_CTL_REMOVE, n) < 0) {
		perror("LOOP_CTL_REMOVE");
		exit(1);
	}
	write(out, &step, 1);
	exit(0);
}

static int timed(const char *backing)
{
	int p[2], i, status;
	pid_t pid;

	if (pipe(p))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		close(p[0]);
		/* Left stuck, it must not hold the caller's output open. */
		dup2(open("/dev/null", O_WRONLY), 1);
		timed_child(backing, p[1]);
	}
	close(p[1]);
	for (i = 0; i < (int)(sizeof(steps) / sizeof(steps[0])); i++) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		uint64_t t0 = now_ms();
		char c;

		if (poll(&pfd, 1, STEP_MS) != 1) {
			printf("%s: still waiting after %d ms\n", steps[i],
			       STEP_MS);
			return 1;
		}
		if (read(p[0], &c, 1) != 1) {
			printf("%s: failed\n", steps[i]);
			waitpid(pid, &status, 0);
			return 1;
		}
		printf("%s: %ld ms\n", steps[i], (long)(now_ms() - t0));
	}
	waitpid(pid, &status, 0);
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int flood(const char *backing, int count)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct iocb *iocbs, *ptrs[1];
	aio_context_t ctx = 0;
	int *fds, i, cpu, bfd;
	char *buf;

	sigaction(SIGUSR1, &sa, NULL);
	fds = calloc(count, sizeof(*fds));
	iocbs = calloc(2 * count, sizeof(*iocbs));
	if (!fds || !iocbs || posix_memalign((void **)&buf, 4096,
					     2 * count * 4096UL))
		return 1;
	bfd = open(backing, O_RDONLY | O_CLOEXEC);
	if (bfd < 0) {
		perror(backing);
		return 1;
	}
	for (i = 0; i < count; i++) {
		int n = new_device();
		int dev = open_dev(n, O_RDONLY);

		configure(dev, bfd, LO_FLAGS_READ_ONLY);
		close(dev);
		fds[i] = open_dev(n, O_RDONLY | O_DIRECT);
	}
	printf("bound\n");
	fflush(stdout);
	while (!go)
		pause();
	if (syscall(SYS_io_setup, 2 * count, &ctx)) {
		perror("io_setup");
		return 1;
	}
	/* One request per hardware queue and device: CPU n maps to queue n. */
	for (cpu = 0; cpu < 2; cpu++) {
		pin(cpu);
		for (i = 0; i < count; i++) {
			struct iocb *cb = &iocbs[cpu * count + i];

			cb->aio_fildes = fds[i];
			cb->aio_lio_opcode = IOCB_CMD_PREAD;
			cb->aio_buf = (unsigned long)(buf +
						      (cpu * count + i) * 4096UL);
			cb->aio_nbytes = 4096;
			cb->aio_offset = (cpu * count + i) * 4096ULL;
			ptrs[0] = cb;
			if (syscall(SYS_io_submit, ctx, 1, ptrs) != 1) {
				perror("io_submit");
				return 1;
			}
		}
	}
	printf("submitted\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int write_mib(const char *backing, int mib)
{
	int n = new_device(), dev, bfd, dfd, ctl, i;
	void *buf;

	bfd = open(backing, O_RDWR | O_CLOEXEC);
	if (bfd < 0 || posix_memalign(&buf, 4096, 1 << 20)) {
		perror(backing);
		return 1;
	}
	memset(buf, 0x5a, 1 << 20);
	dev = open_dev(n, O_RDWR);
	configure(dev, bfd, 0);
	close(bfd);
	dfd = open_dev(n, O_WRONLY | O_DIRECT);
	for (i = 0; i < mib; i++) {
		if (pwrite(dfd, buf, 1 << 20, (off_t)i << 20) != 1 << 20) {
			fprintf(stderr, "write at %d MiB: %s\n", i,
				strerror(errno));
			return 1;
		}
	}
	close(dfd);
	printf("wrote %d MiB\n", mib);
	if (ioctl(dev, LOOP_CLR_FD)) {
		perror("LOOP_CLR_FD");
		return 1;
	}
	close(dev);
	ctl = open_node(LOOPFS_CONTROL_NAME, O_RDWR);
	if (ioctl(ctl, LOOP_CTL_REMOVE, n) < 0) {
		perror("LOOP_CTL_REMOVE");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int dev, bfd;

	if (argc < 3) {
		fprintf(stderr, "usage: see the source\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	dir = argv[2];
	if (!strcmp(argv[1], "timed") && argc == 4)
		return timed(argv[3]);
	if (!strcmp(argv[1], "write") && argc == 5)
		return write_mib(argv[3], atoi(argv[4]));
	if (!strcmp(argv[1], "flood") && argc == 5)
		return flood(argv[3], atoi(argv[4]));
	if (!strcmp(argv[1], "dioconf") && argc == 4) {
		dev = open_dev(new_device(), O_RDWR);
		bfd = open(argv[3], O_RDWR | O_CLOEXEC);
		if (bfd < 0) {
			perror(argv[3]);
			return 1;
		}
		printf("configuring\n");
		configure(dev, bfd, LO_FLAGS_DIRECT_IO);
		printf("configured\n");
		return 0;
	}
	if (!strcmp(argv[1], "changefd") && argc == 5) {
		dev = open_dev(atoi(argv[3]), O_RDONLY);
		bfd = open(argv[4], O_RDONLY | O_CLOEXEC);
		if (bfd < 0) {
			perror(argv[4]);
			return 1;
		}
		printf("changing\n");
		if (ioctl(dev, LOOP_CHANGE_FD, bfd))
			perror("LOOP_CHANGE_FD");
		printf("changed\n");
		return 0;
	}
	if (!strcmp(argv[1], "remove") && argc == 4) {
		printf("removing\n");
		dev = open_node(LOOPFS_CONTROL_NAME, O_RDWR);
		if (ioctl(dev, LOOP_CTL_REMOVE, atoi(argv[3])) < 0)
			perror("LOOP_CTL_REMOVE");
		printf("removed\n");
		return 0;
	}
	if (!strcmp(argv[1], "clear") && argc == 4) {
		printf("clearing\n");
		dev = open_dev(atoi(argv[3]), O_RDONLY);
		if (ioctl(dev, LOOP_CLR_FD))
			perror("LOOP_CLR_FD");
		printf("cleared\n");
		return 0;
	}
	fprintf(stderr, "usage: see the source\n");
	return 2;
}
