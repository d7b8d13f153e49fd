// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs concurrency stress. For a bounded time, worker processes
 * hammer a few shared instances and private ones at once:
 *   ctl      GET_FREE / ADD / ADD(-1) / REMOVE / unlink on shared instances
 *   bind     open a shared device, LOOP_CONFIGURE it on a private file,
 *            write + fsync + read back through the driver (O_DIRECT, or
 *            after BLKFLSBUF and POSIX_FADV_DONTNEED) + verify, LOOP_CLR_FD
 *            or autoclear-close, then verify the backing file itself
 *   open     open / BLKGETSIZE64 / close of random shared devices
 *   churn    private instances: mount, bind, keep the fd, umount (plain or
 *            lazy) under it, I/O on the orphan, close; detached instances
 *            via fsopen/fsmount dropped with devices bound
 *   remount  replaces the shared instances (lazy umount + mount) and
 *            changes their max= cap underneath everybody
 * Every call must succeed or fail with an errno documented for it, and every
 * worker must exit with status 0 (a crash or an OOM kill is a failure). At
 * the end no loopfs disk may remain, every per-user charge must be back, the
 * module refcount must be zero and rmmod must succeed (then it is reloaded).
 *
 * Prints TAP; `# ops:` diagnostics give the operation counts reached.
 * Usage: stress [seconds] (default 60, or 20 with LOOPFS_QUICK=1).
 * STRESS_KILL_WORKER=<name> (e.g. bind0) SIGKILLs that worker half-way: the
 * run must then fail, which checks that a dead worker is noticed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <sys/mman.h>
#include "loopfs_test.h"

#define NSHARED 3
#define MAXIDX 12
#define FILE_SIZE (1 << 20)

enum op {
	OP_CTL_OPEN, OP_GET_FREE, OP_ADD, OP_ADD_ANY, OP_REMOVE, OP_UNLINK,
	OP_DEV_OPEN, OP_CONFIGURE, OP_IO, OP_CLR_FD, OP_SIZE,
	OP_MOUNT, OP_UMOUNT, OP_REMOUNT, OP_DETACHED, OP_ORPHAN_IO,
	OP_MAX
};

static const char * const op_name[OP_MAX] = {
	"ctl_open", "get_free", "add", "add_any", "remove", "unlink",
	"dev_open", "configure", "io", "clr_fd", "getsize",
	"mount", "umount", "remount", "detached", "orphan_io",
};

struct shared {
	volatile int stop;
	long ok[OP_MAX];
	long err[OP_MAX];
	long unexpected;
	long data_errors;
	long file_errors;
	char diag[16][160];
};

static struct shared *sh;
static char base[PATH_MAX];
static char smnt[NSHARED][PATH_MAX];

static void note_unexpected(enum op op, int e, const char *what)
{
	long n = __atomic_fetch_add(&sh->unexpected, 1, __ATOMIC_RELAXED);

	if (n < 16)
		snprintf(sh->diag[n], sizeof(sh->diag[n]), "%s %s: %s",
			 op_name[op], what, errno_name(e) ?: "E?");
}

/*
 * Account one call: @r < 0 with errno in the 0-terminated @allowed list is
 * an expected failure, anything else negative is unexpected.
 */
static int account(enum op op, long r, const char *what, ...)
{
	int e = errno, a;
	va_list ap;

	if (r >= 0) {
		__atomic_fetch_add(&sh->ok[op], 1, __ATOMIC_RELAXED);
		return 0;
	}
	va_start(ap, what);
	while ((a = va_arg(ap, int)) != 0) {
		if (a == e) {
			va_end(ap);
			__atomic_fetch_add(&sh->err[op], 1, __ATOMIC_RELAXED);
			errno = e;
			return -1;
		}
	}
	va_end(ap);
	note_unexpected(op, e, what);
	errno = e;
	return -1;
}

static int mount_instance(const char *dir, const char *opts)
{
	return account(OP_MOUNT, mount("loop", dir, LOOPFS_FSTYPE, 0, opts), "mount", 0);
}

static void pattern(unsigned char *b, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

static int make_file(const char *path)
{
	static unsigned char buf[FILE_SIZE];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	pattern(buf, sizeof(buf), 1);
	if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A device index, mostly among the low ones (open/close races with binds). */
static int pick_index(unsigned int *seed)
{
	return rand_r(seed) % 4 ? rand_r(seed) % 4 : rand_r(seed) % MAXIDX;
}

/* ---------------- workers ---------------- */

static void worker_ctl(unsigned int seed)
{
	char p[PATH_MAX];

	while (!sh->stop) {
		const char *dir = smnt[rand_r(&seed) % NSHARED];
		int ctl, n;

		ctl = lfs_ctl(dir);
		if (account(OP_CTL_OPEN, ctl, "open loop-control", ENOENT, 0))
			continue;
		for (int i = 0; i < 8 && !sh->stop; i++) {
			n = rand_r(&seed) % MAXIDX;
			switch (rand_r(&seed) % 5) {
			case 0:
				account(OP_GET_FREE, ioctl(ctl, LOOP_CTL_GET_FREE),
					"GET_FREE", ENOSPC, 0);
				break;
			case 1:
				account(OP_ADD, ioctl(ctl, LOOP_CTL_ADD, n), "ADD",
					EEXIST, ENOSPC, 0);
				break;
			case 2:
				account(OP_ADD_ANY, ioctl(ctl, LOOP_CTL_ADD, -1),
					"ADD(-1)", ENOSPC, 0);
				break;
			case 3:
				account(OP_REMOVE, ioctl(ctl, LOOP_CTL_REMOVE, n),
					"REMOVE", ENODEV, EBUSY, 0);
				break;
			default:
				lfs_devpath(p, sizeof(p), dir, n);
				account(OP_UNLINK, unlink(p), "unlink", ENOENT,
					EBUSY, 0);
			}
		}
		close(ctl);
	}
}

/* Blocks written through a device since it was bound, for the file check. */
struct written {
	int n;
	off_t off[16];
	unsigned int seed[16];
};

static void written_add(struct written *wr, off_t off, unsigned int seed)
{
	int i;

	for (i = 0; i < wr->n && wr->off[i] != off; i++)
		;
	if (i == wr->n) {
		if (wr->n == 16)
			return;
		wr->n++;
	}
	wr->off[i] = off;
	wr->seed[i] = seed;
}

/*
 * Read @len bytes at @off through the driver, not from the page cache:
 * with O_DIRECT on the same open file, or after dropping the (clean, just
 * fsynced) cached pages with BLKFLSBUF and POSIX_FADV_DONTNEED.
 */
static int read_through_driver(int dev, void *buf, size_t len, off_t off,
			       unsigned int *seed, enum op op)
{
	int fl = fcntl(dev, F_GETFL), r;

	if (rand_r(seed) % 2) {
		if (account(op, fcntl(dev, F_SETFL, fl | O_DIRECT), "F_SETFL O_DIRECT", 0))
			return -1;
		r = account(op, pread(dev, buf, len, off) == (ssize_t)len ? 0 : -1,
			    "pread O_DIRECT", 0);
		fcntl(dev, F_SETFL, fl);
		return r;
	}
	if (account(op, ioctl(dev, BLKFLSBUF, 0), "BLKFLSBUF", 0))
		return -1;
	errno = posix_fadvise(dev, off, len, POSIX_FADV_DONTNEED);
	if (account(op, errno ? -1 : 0, "fadvise DONTNEED", 0))
		return -1;
	return account(op, pread(dev, buf, len, off) == (ssize_t)len ? 0 : -1,
		       "pread", 0);
}

/*
 * Write a pattern at a random block, fsync, read it back through the
 * driver and compare; remember it in @wr for the backing file check.
 */
static void io_check(int dev, unsigned int *seed, enum op op,
		     struct written *wr)
{
	static unsigned char w[4096] __attribute__((aligned(4096)));
	static unsigned char r[4096] __attribute__((aligned(4096)));
	off_t off = (off_t)(rand_r(seed) % (FILE_SIZE / 4096)) * 4096;
	unsigned int pseed = rand_r(seed);

	pattern(w, sizeof(w), pseed);
	if (account(op, pwrite(dev, w, sizeof(w), off) == sizeof(w) ? 0 : -1,
		    "pwrite", 0))
		return;
	written_add(wr, off, pseed);
	if (account(op, fsync(dev), "fsync", 0))
		return;
	memset(r, 0, sizeof(r));
	if (read_through_driver(dev, r, sizeof(r), off, seed, op))
		return;
	if (memcmp(w, r, sizeof(w)))
		__atomic_fetch_add(&sh->data_errors, 1, __ATOMIC_RELAXED);
}

/*
 * After the device let go of the file (cleared, or its last opener closed
 * it with every write fsynced), the file itself holds each block written.
 */
static void file_check(int fd, struct written *wr)
{
	unsigned char w[4096], r[4096];

	for (int i = 0; i < wr->n; i++) {
		pattern(w, sizeof(w), wr->seed[i]);
		if (pread(fd, r, sizeof(r), wr->off[i]) != sizeof(r) ||
		    memcmp(w, r, sizeof(w)))
			__atomic_fetch_add(&sh->file_errors, 1, __ATOMIC_RELAXED);
	}
	wr->n = 0;
}

static void worker_bind(unsigned int seed, int id)
{
	char p[PATH_MAX], file[PATH_MAX];
	struct written wr = { 0 };
	int fd;

	snprintf(file, sizeof(file), "%s/bind%d.img", base, id);
	fd = make_file(file);
	while (!sh->stop) {
		struct loop_config cfg;
		int dev, autoclear;

		lfs_devpath(p, sizeof(p), smnt[rand_r(&seed) % NSHARED],
			 rand_r(&seed) % MAXIDX);
		dev = open(p, O_RDWR | O_CLOEXEC);
		if (account(OP_DEV_OPEN, dev, "open device", ENOENT, ENXIO, 0))
			continue;
		autoclear = rand_r(&seed) % 2;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = fd;
		cfg.block_size = rand_r(&seed) % 2 ? 4096 : 0;
		cfg.info.lo_flags = autoclear ? LO_FLAGS_AUTOCLEAR : 0;
		if (account(OP_CONFIGURE, ioctl(dev, LOOP_CONFIGURE, &cfg),
			    "CONFIGURE", EBUSY, ENXIO, ENODEV, 0)) {
			close(dev);
			continue;
		}
		for (int i = 0; i < 4; i++)
			io_check(dev, &seed, OP_IO, &wr);
		if (!autoclear)
			account(OP_CLR_FD, ioctl(dev, LOOP_CLR_FD), "CLR_FD", 0);
		close(dev);
		file_check(fd, &wr);
	}
	close(fd);
}

static void worker_open(unsigned int seed)
{
	char p[PATH_MAX];

	while (!sh->stop) {
		uint64_t sz;
		int dev;

		lfs_devpath(p, sizeof(p), smnt[rand_r(&seed) % NSHARED],
			 pick_index(&seed));
		dev = open(p, O_RDONLY | O_CLOEXEC);
		if (account(OP_DEV_OPEN, dev, "open device ro", ENOENT, ENXIO, 0))
			continue;
		account(OP_SIZE, ioctl(dev, BLKGETSIZE64, &sz), "BLKGETSIZE64", 0);
		if (rand_r(&seed) % 8 == 0)
			usleep(rand_r(&seed) % 20000);
		close(dev);
	}
}

/* A detached instance with a bound, open device, dropped as a whole. */
static void detached_round(int fd, unsigned int *seed)
{
	struct written wr = { 0 };
	int fsfd, mfd, ctl, dev = -1;

	fsfd = syscall(SYS_fsopen, LOOPFS_FSTYPE, FSOPEN_CLOEXEC);
	if (account(OP_DETACHED, fsfd, "fsopen", 0))
		return;
	if (account(OP_DETACHED, syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE,
					 NULL, NULL, 0), "fsconfig", 0)) {
		close(fsfd);
		return;
	}
	mfd = syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC, 0);
	close(fsfd);
	if (account(OP_DETACHED, mfd, "fsmount", 0))
		return;
	ctl = openat(mfd, LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	if (!account(OP_CTL_OPEN, ctl, "openat loop-control", 0) &&
	    !account(OP_GET_FREE, ioctl(ctl, LOOP_CTL_GET_FREE), "GET_FREE", ENOSPC, 0)) {
		dev = openat(mfd, "loop0", O_RDWR | O_CLOEXEC);
		if (!account(OP_DEV_OPEN, dev, "openat loop0", 0) &&
		    !account(OP_CONFIGURE, ioctl(dev, LOOP_SET_FD, fd), "SET_FD", 0))
			io_check(dev, seed, OP_IO, &wr);
	}
	/* Drop in a random order: mount first, or device first. */
	if (rand_r(seed) % 2)
		close(mfd);
	if (ctl >= 0)
		close(ctl);
	if (dev >= 0)
		close(dev);
	if (fcntl(mfd, F_GETFD) >= 0)
		close(mfd);
	/* Both gone: the device was cleared and destroyed. */
	file_check(fd, &wr);
}

static void worker_churn(unsigned int seed, int id)
{
	char dir[PATH_MAX], file[PATH_MAX], p[PATH_MAX];
	struct written wr = { 0 };
	int fd;

	snprintf(dir, sizeof(dir), "%s/churn%d", base, id);
	snprintf(file, sizeof(file), "%s/churn%d.img", base, id);
	mkdir(dir, 0755);
	fd = make_file(file);
	while (!sh->stop) {
		int ctl, dev = -1, n, lazy;

		if (rand_r(&seed) % 3 == 0) {
			detached_round(fd, &seed);
			continue;
		}
		if (mount_instance(dir, rand_r(&seed) % 2 ? "max=4" : NULL))
			continue;
		ctl = lfs_ctl(dir);
		if (!account(OP_CTL_OPEN, ctl, "open own loop-control", 0)) {
			n = ioctl(ctl, LOOP_CTL_GET_FREE);
			if (!account(OP_GET_FREE, n, "GET_FREE own", ENOSPC, 0)) {
				lfs_devpath(p, sizeof(p), dir, n);
				dev = open(p, O_RDWR | O_CLOEXEC);
				if (!account(OP_DEV_OPEN, dev, "open own", 0))
					account(OP_CONFIGURE,
						ioctl(dev, LOOP_SET_FD, fd),
						"SET_FD own", 0);
			}
			for (int i = 0; i < 3; i++)
				account(OP_ADD_ANY, ioctl(ctl, LOOP_CTL_ADD, -1),
					"ADD(-1) own", ENOSPC, 0);
			close(ctl);
		}
		/* Tear the instance down under the open, bound device. */
		lazy = dev >= 0 || rand_r(&seed) % 2;
		account(OP_UMOUNT, umount2(dir, lazy ? MNT_DETACH : 0),
			"umount own", 0);
		if (dev >= 0) {
			for (int i = 0; i < 2; i++)
				io_check(dev, &seed, OP_ORPHAN_IO, &wr);
			/* The last close clears the orphan. */
			close(dev);
			file_check(fd, &wr);
		}
	}
	close(fd);
}

static void worker_remount(unsigned int seed)
{
	char opts[32];

	while (!sh->stop) {
		int i = rand_r(&seed) % NSHARED;

		usleep(50000 + rand_r(&seed) % 200000);
		if (rand_r(&seed) % 3 == 0) {
			snprintf(opts, sizeof(opts), "max=%d", 4 + rand_r(&seed) % 12);
			account(OP_REMOUNT, mount(NULL, smnt[i], NULL, MS_REMOUNT, opts),
				"remount max", 0);
			continue;
		}
		account(OP_UMOUNT, umount2(smnt[i], MNT_DETACH), "umount shared", 0);
		mount_instance(smnt[i], NULL);
	}
}

/* ---------------- checks ---------------- */

/* With the per-user limit at 4, exactly 4 devices fit: nothing leaked. */
static int charges_are_zero(void)
{
	char dir[PATH_MAX];
	int ctl, ok = 1;

	snprintf(dir, sizeof(dir), "%s/final", base);
	if (write_file(LOOPFS_SYSCTL_PATH, "4") || lfs_mount(dir, NULL))
		return 0;
	ctl = lfs_ctl(dir);
	for (int i = 0; i < 4; i++)
		ok &= ioctl(ctl, LOOP_CTL_ADD, -1) == i;
	ok &= ioctl(ctl, LOOP_CTL_ADD, -1) < 0 && errno == ENOSPC;
	close(ctl);
	umount(dir);
	write_file(LOOPFS_SYSCTL_PATH, "255");
	return ok;
}

static int unload_and_reload(void)
{
	for (int i = 0; i < 500 && loopfs_refcnt() > 0; i++)
		usleep(10000);
	printf("# refcnt before rmmod: %ld\n", loopfs_refcnt());
	return reload_loopfs();
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : getenv("LOOPFS_QUICK") &&
		   *getenv("LOOPFS_QUICK") == '1' ? 20 : 60;
	unsigned int seed = getenv("STRESS_SEED") ? atoi(getenv("STRESS_SEED")) :
			    (unsigned int)time(NULL);
	const char *kill_name = getenv("STRESS_KILL_WORKER");
	const char *names[16];
	pid_t pids[16];
	int status[16];
	int npids = 0, hung = 0, gone, bad = 0;
	char bad_names[160] = "";
	long total = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_plan(7);
	printf("# %d s, seed %u (STRESS_SEED=%u reproduces the schedule's choices)\n",
	       secs, seed, seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || !getcwd(base, sizeof(base)) || private_mntns()) {
		printf("Bail out! set-up: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < NSHARED; i++) {
		snprintf(smnt[i], sizeof(smnt[i]), "%s/shared%d", base, i);
		if (lfs_mount(smnt[i], NULL)) {
			printf("Bail out! mount: %s\n", strerror(errno));
			return 1;
		}
	}

#define SPAWN(name, call) do {						\
		pid_t __p = fork();					\
		if (__p == 0) {						\
			call;						\
			_exit(0);					\
		}							\
		if (__p < 0) {						\
			printf("Bail out! fork: %s\n", strerror(errno));	\
			return 1;					\
		}							\
		names[npids] = name;					\
		pids[npids++] = __p;					\
	} while (0)
	SPAWN("ctl0", worker_ctl(seed + 1));
	SPAWN("ctl1", worker_ctl(seed + 2));
	SPAWN("bind0", worker_bind(seed + 3, 0));
	SPAWN("bind1", worker_bind(seed + 4, 1));
	SPAWN("open", worker_open(seed + 5));
	SPAWN("churn0", worker_churn(seed + 6, 0));
	SPAWN("churn1", worker_churn(seed + 7, 1));
	SPAWN("remount", worker_remount(seed + 8));

	if (kill_name && *kill_name) {
		int j;

		for (j = 0; j < npids && strcmp(names[j], kill_name); j++)
			;
		sleep(secs / 2);
		if (j < npids && !kill(pids[j], SIGKILL))
			printf("# STRESS_KILL_WORKER: sent SIGKILL to worker %s (pid %d)\n",
			       names[j], pids[j]);
		else
			printf("# STRESS_KILL_WORKER: no worker %s to kill\n", kill_name);
		sleep(secs - secs / 2);
	} else {
		sleep(secs);
	}
	sh->stop = 1;
	/* Every worker must notice and finish within 60 s. */
	for (int i = 0; i < 600; i++) {
		gone = 0;
		for (int j = 0; j < npids; j++)
			if (pids[j] == 0 ||
			    waitpid(pids[j], &status[j], WNOHANG) == pids[j]) {
				pids[j] = 0;
				gone++;
			}
		if (gone == npids)
			break;
		usleep(100000);
	}
	/* A worker that crashed or was killed (OOM) did not do its share. */
	for (int j = 0; j < npids; j++) {
		if (pids[j])
			continue;
		if (WIFEXITED(status[j]) && WEXITSTATUS(status[j]) == 0)
			continue;
		bad++;
		if (WIFSIGNALED(status[j]))
			printf("# worker %s killed by signal %d (%s)\n", names[j],
			       WTERMSIG(status[j]), strsignal(WTERMSIG(status[j])));
		else
			printf("# worker %s exited with status %d\n", names[j],
			       WEXITSTATUS(status[j]));
		snprintf(bad_names + strlen(bad_names),
			 sizeof(bad_names) - strlen(bad_names), " %s", names[j]);
	}
	for (int j = 0; j < npids; j++) {
		if (pids[j]) {
			hung++;
			printf("# worker %s (pid %d) still running; its stack:\n",
			       names[j], pids[j]);
			fflush(stdout);
			char cmd[64];

			snprintf(cmd, sizeof(cmd), "sed 's/^/#   /' /proc/%d/stack", pids[j]);
			if (system(cmd))
				printf("#   (no stack)\n");
		}
	}

	printf("# ops:");
	for (int i = 0; i < OP_MAX; i++) {
		printf(" %s=%ld/%ld", op_name[i], sh->ok[i], sh->err[i]);
		total += sh->ok[i] + sh->err[i];
	}
	printf("\n# ops: total %ld calls (ok/expected-errno) in %d s\n", total, secs);
	for (int i = 0; i < 16 && i < sh->unexpected; i++)
		printf("# unexpected: %s\n", sh->diag[i]);

	tap(sh->unexpected == 0 && total > 0,
	    "%ld calls in %d s, each succeeded or failed with a documented errno (%ld did not)",
	    total, secs, sh->unexpected);
	tap(sh->data_errors == 0 && sh->file_errors == 0 && sh->ok[OP_IO] > 0,
	    "data written through bound devices reads back identical through the driver and from the backing file once released (%ld/%ld mismatches, %ld I/O calls)",
	    sh->data_errors, sh->file_errors, sh->ok[OP_IO] + sh->ok[OP_ORPHAN_IO]);
	tap(hung == 0, "every worker finished after the stop signal (%d hung)", hung);
	tap(hung == 0 && bad == 0,
	    "every worker exited with status 0 (%d did not:%s)", bad,
	    bad ? bad_names : " none");
	if (hung)
		return 1;

	for (int i = 0; i < NSHARED; i++)
		umount2(smnt[i], MNT_DETACH);
	/* Orphans are destroyed from a work item: give them a moment. */
	wait_loopfs_idle(10000);
	tap(count_loopfs_disks() == 0, "no loopfs disk left in /sys/block (%d)",
	    count_loopfs_disks());
	tap(charges_are_zero(), "per-user charges back to zero: exactly 4 devices fit under a limit of 4");
	tap(unload_and_reload() == 0, "module refcount drops to zero, rmmod loopfs succeeds, reload works");
	return tap_failures ? 1 : 0;
}
