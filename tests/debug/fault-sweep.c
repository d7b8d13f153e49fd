// SPDX-License-Identifier: GPL-2.0
/*
 * fault-sweep: make the Nth allocation (slab or page) of one loopfs call
 * fail, for N = 1, 2, ... until the call no longer makes N allocations, and
 * check after each failure what a user relies on: the call failed cleanly
 * (ENOMEM, or it absorbed the failure and succeeded; see kernel_errno() for
 * the one exception) and nothing is left
 * half done: the same call without injection then succeeds and can be
 * undone. Uses /proc/thread-self/fail-nth, so only this task's allocations
 * fail; faults.sh sets up failslab and fail_page_alloc to allow that.
 *
 *   fault-sweep DIR BACKING OP
 *
 * OP is one of
 *   mount      mount an instance on DIR
 *   add        LOOP_CTL_ADD of device 0
 *   configure  LOOP_CONFIGURE of device 0 to BACKING, with partition scan
 *   remove     LOOP_CTL_REMOVE of device 0
 *   umount     umount DIR holding two devices, one bound to BACKING
 * DIR must not be a mount point. Prints "N ok" or "N ERRNO" for each N and
 * "calls N" last: the number of allocations the call made. Exit status 1
 * if a check failed (said on a line starting with "FAIL").
 */
#include "loopfs_test.h"

static int fail_nth_fd;
static const char *dir, *backing;

static void die(const char *fmt, const char *arg)
{
	printf("FAIL ");
	printf(fmt, arg);
	printf(": %s\n", strerror(errno));
	exit(1);
}

/* Arm the Nth allocation of this task to fail (0: disarm). */
static void arm(int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", n);

	if (pwrite(fail_nth_fd, buf, len, 0) != len)
		die("arming fail-nth %s", buf);
}

/*
 * Whether the failure armed for this call happened; disarms. Reading and
 * writing fail-nth allocates nothing, so only the call itself counts.
 */
static int injected;

static void disarm(void)
{
	char buf[16] = "";

	if (pread(fail_nth_fd, buf, sizeof(buf) - 1, 0) < 0)
		die("reading fail-nth%s", "");
	injected = atoi(buf) == 0;
	arm(0);
}

static int ctl_fd(void)
{
	int fd = lfs_ctl(dir);

	if (fd < 0)
		die("open %s/loop-control", dir);
	return fd;
}

static int dev_fd(void)
{
	int fd = lfs_open_dev(dir, 0, O_RDWR);

	if (fd < 0)
		die("open %s/loop0", dir);
	return fd;
}

static void must(long r, const char *what)
{
	if (r < 0) {
		errno = -r;
		die("%s without injection", what);
	}
}

/*
 * Each call takes the Nth allocation to fail (0: none) and arms it just
 * before its system call, once its files are open.
 */
static int do_mount(int n)
{
	int r;

	arm(n);
	r = R(mount("loop", dir, LOOPFS_FSTYPE, 0, NULL));
	disarm();
	return r;
}

static int do_umount(int n)
{
	int r;

	arm(n);
	r = R(umount(dir));
	disarm();
	return r;
}

static int ctl_call(int n, unsigned long cmd, int index)
{
	int fd = ctl_fd(), r;

	arm(n);
	r = R(ioctl(fd, cmd, index));
	disarm();
	close(fd);
	return r < 0 ? r : 0;
}

static int do_add(int n)
{
	return ctl_call(n, LOOP_CTL_ADD, 0);
}

static int do_remove(int n)
{
	return ctl_call(n, LOOP_CTL_REMOVE, 0);
}

static int do_configure(int n)
{
	struct loop_config cfg = { .info.lo_flags = LO_FLAGS_PARTSCAN };
	int fd = dev_fd(), r;

	cfg.fd = open(backing, O_RDWR | O_CLOEXEC);
	if (cfg.fd < 0)
		die("open %s", backing);
	arm(n);
	r = R(ioctl(fd, LOOP_CONFIGURE, &cfg));
	disarm();
	close(cfg.fd);
	close(fd);
	return r;
}

static void undo_mount(void)
{
	must(do_umount(0), "umount");
}

static void undo_add(void)
{
	must(do_remove(0), "LOOP_CTL_REMOVE");
}

static void undo_remove(void)
{
	must(do_add(0), "LOOP_CTL_ADD");
}

static void undo_configure(void)
{
	int fd = dev_fd();

	must(R(ioctl(fd, LOOP_CLR_FD, 0)), "LOOP_CLR_FD");
	close(fd);
}

/* The instance do_umount() takes down: two devices, one bound. */
static void undo_umount(void)
{
	must(do_mount(0), "mount");
	must(ctl_call(0, LOOP_CTL_ADD, 0), "LOOP_CTL_ADD 0");
	must(ctl_call(0, LOOP_CTL_ADD, 1), "LOOP_CTL_ADD 1");
	must(do_configure(0), "LOOP_CONFIGURE");
}

struct op {
	const char *name;
	int (*call)(int n);
	void (*undo)(void);	/* after the call succeeded */
	void (*setup)(void);	/* the state the call starts from */
};

/*
 * The one failed allocation the kernel itself reports as something else:
 * device_add_disk() does not check that naming the disk's device worked,
 * and device_add() then refuses the nameless device with EINVAL (the
 * in-tree driver's LOOP_CTL_ADD gives the same).
 */
static int kernel_errno(const struct op *op, int r)
{
	return op->call == do_add && r == -EINVAL;
}

static void setup_instance(void)
{
	must(do_mount(0), "mount");
}

static void setup_device(void)
{
	setup_instance();
	undo_remove();
}

static const struct op ops[] = {
	{ "mount", do_mount, undo_mount, NULL },
	{ "add", do_add, undo_add, setup_instance },
	{ "configure", do_configure, undo_configure, setup_device },
	{ "remove", do_remove, undo_remove, setup_device },
	{ "umount", do_umount, undo_umount, undo_umount },
};

/*
 * Disks of the instances this program made. An umount takes its instance
 * down before it returns (no device is open here); a disk udev might hold
 * open goes at that close, so allow it a moment.
 */
static void check_disks(int want)
{
	int i, n;

	for (i = 0; i < 50; i++) {
		n = count_loopfs_disks();
		if (n == want)
			return;
		usleep(100000);
	}
	printf("FAIL %d loopfs disks, %d expected\n", n, want);
	exit(1);
}

int main(int argc, char **argv)
{
	const struct op *op = NULL;
	int n, r, baseline;
	size_t i;

	if (argc != 4) {
		fprintf(stderr, "usage: see the comment at the top of fault-sweep.c\n");
		return 2;
	}
	dir = argv[1];
	backing = argv[2];
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(argv[3], ops[i].name))
			op = &ops[i];
	if (!op) {
		fprintf(stderr, "unknown operation %s\n", argv[3]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (fail_nth_fd < 0)
		die("open /proc/thread-self/fail-nth%s", "");
	baseline = count_loopfs_disks();
	if (op->setup)
		op->setup();
	for (n = 1;; n++) {
		r = op->call(n);
		if (!injected) {
			/* The call made fewer than n allocations. */
			if (r < 0) {
				errno = -r;
				die("%s with no failure injected", op->name);
			}
			break;
		}
		printf("%d %s\n", n, r < 0 ? strerrorname_np(-r) : "ok");
		if (r < 0 && r != -ENOMEM && !kernel_errno(op, r)) {
			printf("FAIL %s: the failed allocation gave %s, not ENOMEM\n",
			       op->name, strerrorname_np(-r));
			return 1;
		}
		/* Whatever the failure left, the call works now. */
		if (r < 0)
			must(op->call(0), op->name);
		op->undo();
		if (op->call == do_umount)
			check_disks(baseline + 2);
	}
	/* The last call, with nothing injected, succeeded: leave nothing. */
	if (op->call != do_umount) {
		op->undo();
		if (op->call != do_mount)
			undo_mount();
	}
	check_disks(baseline);
	printf("calls %d\n", n - 1);
	return 0;
}
