// SPDX-License-Identifier: GPL-2.0
/*
 * fault-sweep: make the Nth fault-injection point one loopfs call passes
 * fail, for N = 1, 2, ... until the call no longer passes N of them, and
 * check after each failure what a user relies on: the call failed cleanly
 * and nothing is left half done. A failure is not undone or redone: the
 * next call starts from what it left and must pass point N (its own
 * failure comes later), and the last, with nothing injected, must succeed
 * and be undone, so a leftover that breaks the call shows up as a wrong
 * errno or a failed last call. Uses /proc/thread-self/fail-nth, so only
 * this task's calls fail. faults.sh decides which points count: either
 * every allocation (failslab, fail_page_alloc), where a failure must give
 * ENOMEM or be absorbed (see kernel_errno() for the one exception), or
 * loopfs's own steps marked for fail_function, set to return ERRNO, where
 * each failure must fail the call with exactly ERRNO.
 *
 * Meanwhile a thread plays the host's udev: it opens each loopfs disk as
 * soon as its node appears in /dev and holds it while LOOP_CTL_ADD runs.
 * A disk whose names could not be made in its instance must be gone when
 * the call returns even so, or its name would block the index's reuse.
 *
 *   fault-sweep DIR BACKING OP [ERRNO]
 *   fault-sweep DIR BACKING held-add ERRNO
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
#include <pthread.h>
#include <stdbool.h>
#include <sys/inotify.h>

#include "loopfs_test.h"

static int fail_nth_fd;
static const char *dir, *backing;

/* What an injected failure gives; allocation failures may be absorbed. */
static int want_errno = ENOMEM;
static bool may_absorb = true;

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

/* The udev stand-in: what it holds open, and whether it may open more. */
static struct {
	pthread_mutex_t lock;
	bool on;		/* a LOOP_CTL_ADD is running */
	int fds[4];
	int nfds;
} udev = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int held;		/* disks udev opened during the last add */
static int disks_after_add;	/* loopfs disks when that add returned */

static bool udev_on(void)
{
	return __atomic_load_n(&udev.on, __ATOMIC_RELAXED);
}

/*
 * The node appears early in add_disk(), the disk opens only at its end:
 * the disk's bdi link is made just before. Waiting for it, rather than
 * for the "add" uevent just after, gives udev the best chance to hold
 * the disk before the call that made it fails.
 */
static void udev_open(const char *name)
{
	char path[64], bdi[96];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/dev/%s", name);
	snprintf(bdi, sizeof(bdi), "/sys/block/%s/bdi", name);
	while (udev_on() && lstat(bdi, &st))
		;
	pthread_mutex_lock(&udev.lock);
	if (udev.on && udev.nfds < 4) {
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0)
			udev.fds[udev.nfds++] = fd;
	}
	pthread_mutex_unlock(&udev.lock);
}

static void *udev_thread(void *arg)
{
	int ifd = *(int *)arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	ssize_t len;
	char *p;

	for (;;) {
		len = read(ifd, buf, sizeof(buf));
		if (len <= 0)
			continue;
		for (p = buf; p < buf + len; p += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)p;
			if (ev->len && !strncmp(ev->name, "loopfs", 6))
				udev_open(ev->name);
		}
	}
	return NULL;
}

static void udev_start(void)
{
	static int ifd = -1;
	pthread_t t;

	if (ifd < 0) {
		ifd = inotify_init1(IN_CLOEXEC);
		if (ifd < 0 || inotify_add_watch(ifd, "/dev", IN_CREATE) < 0)
			die("inotify on %s", "/dev");
		if (pthread_create(&t, NULL, udev_thread, &ifd))
			die("starting the udev thread%s", "");
	}
	pthread_mutex_lock(&udev.lock);
	__atomic_store_n(&udev.on, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&udev.lock);
}

/* What udev held is counted once the add returned, then closed. */
static void udev_stop(void)
{
	int i;

	pthread_mutex_lock(&udev.lock);
	__atomic_store_n(&udev.on, false, __ATOMIC_RELAXED);
	held = udev.nfds;
	disks_after_add = count_loopfs_disks();
	for (i = 0; i < udev.nfds; i++)
		close(udev.fds[i]);
	udev.nfds = 0;
	pthread_mutex_unlock(&udev.lock);
}

static int do_add(int n)
{
	int r;

	udev_start();
	r = ctl_call(n, LOOP_CTL_ADD, 0);
	udev_stop();
	return r;
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
	return may_absorb && op->call == do_add && r == -EINVAL;
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

/*
 * held-add: LOOP_CTL_ADD with its first injection point failing (faults.sh
 * marks only the last step that names the device), over and over until
 * udev held the new disk open during the failure HELD_WANT times, in at
 * most HELD_TRIES calls. Each failure must give ERRNO and, held or not,
 * leave no disk behind when it returns; the index is then free at once.
 */
#define HELD_WANT	3
#define HELD_TRIES	60

static int held_add(int baseline)
{
	int tries, nheld = 0, r;

	setup_instance();
	for (tries = 0; tries < HELD_TRIES && nheld < HELD_WANT; tries++) {
		r = do_add(1);
		if (!injected || r != -want_errno) {
			printf("FAIL held-add: %s, %s expected\n",
			       injected ? errno_name(-r) : "nothing injected",
			       errno_name(want_errno));
			return 1;
		}
		if (disks_after_add != baseline) {
			printf("FAIL held-add: %d loopfs disks after the failed call (%s by udev), %d expected\n",
			       disks_after_add, held ? "held" : "not held",
			       baseline);
			return 1;
		}
		nheld += held > 0;
		must(do_add(0), "LOOP_CTL_ADD after the failed one");
		undo_add();
	}
	undo_mount();
	check_disks(baseline);
	printf("held %d of %d\n", nheld, tries);
	if (nheld < HELD_WANT) {
		printf("FAIL held-add: udev held the disk in only %d of %d failed calls\n",
		       nheld, tries);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct op *op = NULL;
	bool held_op;
	int n, r, baseline;
	size_t i;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: see the comment at the top of fault-sweep.c\n");
		return 2;
	}
	dir = argv[1];
	backing = argv[2];
	held_op = !strcmp(argv[3], "held-add") && argc == 5;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(argv[3], ops[i].name))
			op = &ops[i];
	if (!op && !held_op) {
		fprintf(stderr, "unknown operation %s\n", argv[3]);
		return 2;
	}
	if (argc == 5) {
		for (want_errno = 1; want_errno < 4096; want_errno++)
			if (!strcmp(argv[4], errno_name(want_errno) ?: ""))
				break;
		if (want_errno == 4096) {
			fprintf(stderr, "unknown errno %s\n", argv[4]);
			return 2;
		}
		may_absorb = false;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (fail_nth_fd < 0)
		die("open /proc/thread-self/fail-nth%s", "");
	baseline = count_loopfs_disks();
	if (held_op)
		return held_add(baseline);
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
		printf("%d %s%s\n", n, r < 0 ? errno_name(-r) : "ok",
		       op->call == do_add && held ? " held" : "");
		if (r < 0 && r != -want_errno && !kernel_errno(op, r)) {
			printf("FAIL %s: the injected failure gave %s, not %s\n",
			       op->name, errno_name(-r),
			       errno_name(want_errno));
			return 1;
		}
		if (!r && !may_absorb) {
			printf("FAIL %s: the injected failure was lost\n",
			       op->name);
			return 1;
		}
		if (r < 0 && op->call == do_add && disks_after_add != baseline) {
			printf("FAIL add: %d loopfs disks after the failed call (%s by udev), %d expected\n",
			       disks_after_add, held ? "held" : "not held",
			       baseline);
			return 1;
		}
		/* What the failure left is the next call's to meet. */
		if (!r)
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
