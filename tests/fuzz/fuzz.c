// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs ioctl and mount fuzzer.
 *
 * For a bounded time, 2-4 worker processes run random sequences of every
 * loop-control and loop device ioctl with random and boundary arguments,
 * interleaved with open/close of nodes, buffered and O_DIRECT I/O, unlink,
 * mount/umount/remount of a few instances, detached instances and writes to
 * /proc/sys/user/max_loop_devices.  These "chaos" calls race with each
 * other: each must succeed or fail with an errno from the allow-list of
 * that operation, and some outcomes are wrong whatever the race.
 *
 * Each worker also owns an instance with devices and backing files nobody
 * else touches; the "own_*" operations on them are judged against a model
 * of each device's state: one right outcome per call, size and status as
 * predicted, written data read back after a flush and after a rebind.
 *
 * A table of calls, successes and errnos per operation is printed; every
 * operation not excluded must have run at least LOOPFS_FUZZ_MIN_OPS times
 * (default 10).  The harness checks the kernel log.  At the end every
 * instance is unmounted, no loopfs disk may remain in /sys/block, and
 * rmmod loopfs + insmod $LOOPFS_KO must work.
 *
 * Reproducible: worker w draws from its own generator seeded with
 * seed + w, so LOOPFS_FUZZ_SEED=<seed> replays the same sequence per worker
 * (LOOPFS_FUZZ_PROCS=1 removes the interleaving; LOOPFS_FUZZ_TRACE=1 prints
 * every operation to stderr; LOOPFS_FUZZ_EXCLUDE="op,op" leaves operations
 * out, by the names in the op column of the table; LOOPFS_FUZZ_MIN_OPS=N
 * sets the minimum count per operation).
 *
 * Usage: fuzz [seconds]    (default: LOOPFS_FUZZ_SECONDS, else 20 with
 *                           LOOPFS_QUICK=1, else 120)
 * Prints TAP; the table and the "# ops: total" line are diagnostics.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include "loopfs_test.h"
/* After <sys/mount.h>, which an older C library does not let follow it. */
#include <linux/mount.h>

#define NINST 3		/* mount points shared by all workers */
#define MAXSTACK 3	/* instances stacked on one mount point, at most */
#define MAXIDX 10	/* device indices the fuzzer mostly uses */
#define NFDS 12		/* open device / control fds per worker */
#define NBACK 6		/* backing files per worker */
#define MAXPROCS 4
#define NDIAG 16	/* diagnostics kept, per class */
#define BUF_SIZE (64 << 10)

/*
 * Operations.  For each chaos operation: a name and the errnos it may fail
 * with (EINTR etc. are not expected).  The own_* operations have none: the
 * model says the one outcome each call must have.
 */
#define OPS(X) \
	X(mount,	EINVAL, ENOSPC) \
	X(umount,	EINVAL, EBUSY) \
	X(remount,	EINVAL) \
	X(detached,	EINVAL, ENOSPC, ENODEV) \
	X(ctl_open,	ENOENT) \
	X(dev_open,	ENOENT, ENXIO, EBUSY, EACCES, EROFS) \
	X(host_open,	ENOENT, ENXIO, EBUSY, EACCES, EROFS) \
	X(close,	0) \
	X(ctl_add,	EEXIST, ENOSPC, EINVAL, ENODEV) \
	X(ctl_remove,	ENODEV, EBUSY, EINVAL) \
	X(ctl_get_free,	ENOSPC, ENODEV) \
	X(ctl_bad,	ENOSYS) \
	X(set_fd,	EBUSY, EBADF, EINVAL, EPERM, ENXIO) \
	/* ENOSPC: a container's host user has its partition-scanning devices. */ \
	X(configure,	EBUSY, EBADF, EINVAL, EPERM, ENXIO, EOVERFLOW, EFAULT, ENOSPC) \
	X(clr_fd,	ENXIO) \
	X(set_status,	ENXIO, EINVAL, EOVERFLOW, EPERM, EFAULT, EAGAIN, EBUSY, ENOSPC) \
	X(set_status64,	ENXIO, EINVAL, EOVERFLOW, EPERM, EFAULT, EAGAIN, EBUSY, ENOSPC) \
	X(get_status,	ENXIO, EINVAL, EOVERFLOW, EFAULT) \
	X(get_status64,	ENXIO, EINVAL, EFAULT) \
	X(change_fd,	ENXIO, EINVAL, EBADF, EBUSY) \
	X(set_capacity,	ENXIO) \
	X(set_dio,	ENXIO, EINVAL, EBUSY, EAGAIN) \
	X(set_bsize,	ENXIO, EINVAL, EBUSY, EAGAIN, EPERM) \
	X(bad_ioctl,	EINVAL) \
	X(rrpart,	EINVAL, EBUSY, EIO, ENXIO) \
	X(getsize64,	0) \
	X(discard,	EINVAL, EBADF, EOPNOTSUPP, EIO, EBUSY, EPERM, ENXIO, ENOSPC) \
	X(zeroout,	EINVAL, EBADF, EOPNOTSUPP, EIO, EBUSY, EPERM, ENXIO, ENOSPC) \
	X(flsbuf,	0) \
	X(read,		EINVAL, EIO, EBADF, ENXIO) \
	X(write,	EINVAL, EIO, EBADF, ENXIO, EPERM, ENOSPC) \
	X(write_mbr,	EINVAL, EIO, EBADF, ENXIO, EPERM, ENOSPC) \
	/* EISDIR: a device's directory in the view, unlinked as a file. */ \
	X(unlink,	ENOENT, EBUSY, EPERM, EISDIR) \
	/* ENOTDIR: the view directory onto an existing node (the VFS says so). */ \
	X(rename,	ENOENT, EPERM, EBUSY, ENOTDIR) \
	X(create,	EPERM, ENOENT, EEXIST) \
	X(sysctl,	EINVAL) \
	/* ENOENT: no instance, or no such device, mounted there now. */ \
	X(views,	ENOENT, ENOTDIR) \
	X(own_bind,	0) \
	X(own_bad,	0) \
	X(own_clear,	0) \
	X(own_io,	0) \
	X(own_rebind,	0) \
	X(own_status,	0)

#define OP_ENUM(name, ...) OP_##name,
enum op { OPS(OP_ENUM) OP_MAX };

#define OP_NAME(name, ...) #name,
static const char * const op_name[OP_MAX] = { OPS(OP_NAME) };

#define OP_ERRS(name, ...) { __VA_ARGS__, 0 },
static const int op_errs[OP_MAX][12] = { OPS(OP_ERRS) };

/* Relative weights: the device ioctls get most of the time. */
static const int op_weight[OP_MAX] = {
	[OP_mount] = 3, [OP_umount] = 2, [OP_remount] = 2, [OP_detached] = 1,
	[OP_ctl_open] = 4, [OP_dev_open] = 12, [OP_host_open] = 2,
	[OP_close] = 10, [OP_ctl_add] = 6, [OP_ctl_remove] = 4,
	[OP_ctl_get_free] = 4, [OP_ctl_bad] = 1, [OP_set_fd] = 6,
	[OP_configure] = 8, [OP_clr_fd] = 6, [OP_set_status] = 3,
	[OP_set_status64] = 4, [OP_get_status] = 2, [OP_get_status64] = 2,
	[OP_change_fd] = 3, [OP_set_capacity] = 2, [OP_set_dio] = 3,
	[OP_set_bsize] = 3, [OP_bad_ioctl] = 1, [OP_rrpart] = 2,
	[OP_getsize64] = 2, [OP_discard] = 3, [OP_zeroout] = 3,
	[OP_flsbuf] = 1, [OP_read] = 6, [OP_write] = 6, [OP_write_mbr] = 1,
	[OP_unlink] = 3, [OP_rename] = 1, [OP_create] = 1, [OP_sysctl] = 1,
	[OP_views] = 2,
	[OP_own_bind] = 4, [OP_own_bad] = 2, [OP_own_clear] = 3,
	[OP_own_io] = 6, [OP_own_rebind] = 2, [OP_own_status] = 2,
};

#define NERRNO 150	/* errno values counted one by one; larger ones in [0] */

struct shared {
	volatile int stop;
	long ok[OP_MAX];
	long err[OP_MAX];
	long errs[OP_MAX][NERRNO];	/* failures of each op, by errno */
	long unexpected;		/* chaos calls with a wrong outcome */
	long misjudged;			/* own-device calls the model refutes */
	long judged;			/* own-device results checked */
	long verified;			/* read-backs compared byte for byte */
	int ndiag[2];			/* chaos, judged */
	char diag[2][NDIAG][200];
	int stack[NINST];		/* instances mounted on mnt[i] (approx.) */
	/*
	 * Lazy umounts of mnt[i] running now, and started so far, per
	 * mount namespace (0: the shared one, 1: the container worker's).
	 */
	int detaching[2][NINST];
	int detach_gen[2][NINST];
	int own_id[MAXPROCS];		/* 1 + instance id of each worker's own one */
	int ready;			/* workers whose own instance is set up */
	volatile time_t beat[MAXPROCS];	/* last progress of each worker */
	char cur[MAXPROCS][160];	/* what each worker is doing */
};

/*
 * Argument kinds that can be excluded like operations (LOOPFS_FUZZ_EXCLUDE),
 * to step around known bugs: mnt_backing = a loopfs node opened through a
 * loopfs mount as a backing file; blk_backing = any loopfs device as a
 * backing file (loop on loop); bound_config = LOOP_SET_FD/LOOP_CONFIGURE on
 * a worker's own device while it is bound (judged: must be refused and leave
 * the binding as it was).
 */
enum { X_mnt_backing = OP_MAX, X_blk_backing, X_bound_config, X_MAX };
static const char * const x_name[X_MAX - OP_MAX] = {
	"mnt_backing", "blk_backing", "bound_config",
};

static struct shared *sh;
static char base[PATH_MAX];
static char wdir[PATH_MAX];	/* this worker's files */
static char mnt[NINST][PATH_MAX];
static int excluded[X_MAX];
static int trace;

/* --- the generator: xorshift64*, one per worker -------------------------- */

static uint64_t rs;

static uint64_t rnd64(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545F4914F6CDD1DULL;
}

static unsigned int rnd(unsigned int n)
{
	return n ? rnd64() % n : 0;
}

static int chance(int pct)
{
	return (int)rnd(100) < pct;
}

/* Offsets, sizes and limits: boundaries first, then anything. */
static uint64_t rnd_u64(void)
{
	static const uint64_t edge[] = {
		0, 1, 511, 512, 513, 4095, 4096, 65536, 1 << 20, (1 << 20) + 1,
		1ULL << 31, 1ULL << 32, 1ULL << 40, LLONG_MAX, LLONG_MAX - 511,
		(uint64_t)LLONG_MAX + 1, ULLONG_MAX, ULLONG_MAX - 511,
	};

	if (chance(80))
		return edge[rnd(sizeof(edge) / sizeof(edge[0]))];
	return chance(50) ? rnd64() : rnd64() & ((1 << 22) - 1);
}

static unsigned long rnd_bsize(void)
{
	static const unsigned long sz[] = {
		0, 1, 256, 511, 512, 1024, 2048, 4096, 8192, 65536,
		(1UL << 32) | 512, ULONG_MAX, 3000,
	};

	return sz[rnd(sizeof(sz) / sizeof(sz[0]))];
}

static int rnd_index(void)
{
	static const int edge[] = {
		-1, -2, INT_MIN, INT_MAX, 255, 256, 1 << 20, (1 << 20) - 1,
		1 << 12,
	};

	if (chance(85))
		return rnd(MAXIDX);
	return edge[rnd(sizeof(edge) / sizeof(edge[0]))];
}

/* --- bookkeeping -------------------------------------------------------- */

static int worker_id;
static long opno;
static int container;	/* this worker is root of a user namespace */

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static void set_cur(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sh->cur[worker_id], sizeof(sh->cur[0]), fmt, ap);
	va_end(ap);
	sh->beat[worker_id] = time(NULL);
	if (trace)
		fprintf(stderr, "w%d #%ld %s\n", worker_id, opno, sh->cur[worker_id]);
}

static int errno_allowed(enum op op, int e)
{
	int i;

	for (i = 0; op_errs[op][i]; i++)
		if (op_errs[op][i] == e)
			return 1;
	return 0;
}

static void diag(long *counter, const char *fmt, ...)
{
	char what[sizeof(sh->cur[0])], why[120];
	int n, k = counter == &sh->misjudged;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
	n = __atomic_fetch_add(&sh->ndiag[k], 1, __ATOMIC_RELAXED);
	if (n >= NDIAG)
		return;
	memcpy(what, sh->cur[worker_id], sizeof(what));
	snprintf(sh->diag[k][n], sizeof(sh->diag[k][n]), "%sworker %d op #%ld: %s -> %s",
		 k ? "judged: " : "", worker_id, opno, what, why);
}

static long mine[OP_MAX];	/* this worker's calls per operation */

static void count(enum op op, long ret, int e)
{
	mine[op]++;
	if (ret >= 0) {
		__atomic_add_fetch(&sh->ok[op], 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&sh->err[op], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sh->errs[op][e > 0 && e < NERRNO ? e : 0], 1,
			   __ATOMIC_RELAXED);
}

/*
 * Account for the result of one chaos call: ret < 0 means it failed with
 * errno e.  extra is one more errno this particular call may see (0: none).
 */
static void result(enum op op, long ret, int e, int extra)
{
	count(op, ret, e);
	if (ret >= 0 || errno_allowed(op, e) || (extra && e == extra))
		return;
	diag(&sh->unexpected, "%s", strerror(e));
}

/* A call that must fail succeeded (or the reverse): always unexpected. */
static void wrong_outcome(enum op op, const char *why)
{
	diag(&sh->unexpected, "%s", why);
}

/*
 * Judge one call on a worker's own device against the model: want 0 means
 * it must succeed (and return want_ret if that is >= 0), want > 0 that it
 * must fail with exactly that errno.  Returns 1 if the call matched.
 */
static int judge(enum op op, long ret, int e, int want, long want_ret)
{
	count(op, ret, e);
	__atomic_add_fetch(&sh->judged, 1, __ATOMIC_RELAXED);
	if (want) {
		if (ret >= 0)
			diag(&sh->misjudged, "returned %ld, must fail with %s",
			     ret, strerror(want));
		else if (e != want)
			diag(&sh->misjudged, "%s, must be %s", strerror(e),
			     strerror(want));
		else
			return 1;
		return 0;
	}
	if (ret < 0)
		diag(&sh->misjudged, "%s, must succeed", strerror(e));
	else if (want_ret >= 0 && ret != want_ret)
		diag(&sh->misjudged, "returned %ld, must return %ld", ret, want_ret);
	else
		return 1;
	return 0;
}

/* A value the model predicts (size, flags, offsets). */
static void judge_eq(const char *what, unsigned long long got,
		     unsigned long long want)
{
	__atomic_add_fetch(&sh->judged, 1, __ATOMIC_RELAXED);
	if (got != want)
		diag(&sh->misjudged, "%s is %llu, model says %llu", what, got, want);
}

/* --- per-worker state ----------------------------------------------------- */

enum fd_kind { FD_NONE, FD_CTL, FD_DEV };

struct wfd {
	enum fd_kind kind;
	int fd;
	int inst;	/* mount point index, -1 for host nodes / detached */
	int idx;
	int flags;
	int via_mount;	/* opened through a loopfs mount (pins it) */
};

static struct wfd fds[NFDS];
static int back[NBACK];		/* backing files, some odd */
static int dirfd_, sockfd, pipefd[2], nullfd, pathfd;
static char *buf;

static struct wfd *pick_fd(enum fd_kind kind)
{
	int i, start = rnd(NFDS);

	for (i = 0; i < NFDS; i++) {
		struct wfd *w = &fds[(start + i) % NFDS];

		if (w->kind == kind)
			return w;
	}
	return NULL;
}

static struct wfd *free_slot(void)
{
	struct wfd *w = pick_fd(FD_NONE);

	if (!w) {
		w = &fds[rnd(NFDS)];
		close(w->fd);
		w->kind = FD_NONE;
		__atomic_add_fetch(&sh->ok[OP_close], 1, __ATOMIC_RELAXED);
	}
	return w;
}

/*
 * A file descriptor to hand to LOOP_SET_FD / CONFIGURE / CHANGE_FD:
 * mostly one of our backing files, sometimes something that must be
 * refused (directory, socket, pipe, char device, O_PATH, closed, -1) or
 * a loopfs device (maybe the very device being configured).
 */
static int backing_via_mount;	/* what pick_backing() returned last */
static int backing_bad;		/* ... and whether no loop may take it */

static int pick_backing(const char **what)
{
	struct wfd *w;
	int r = rnd(100);

	backing_via_mount = 0;
	backing_bad = 0;
	if (r < 65) {
		*what = "file";
		return back[rnd(NBACK)];
	}
	if (r < 80) {
		w = pick_fd(FD_DEV);
		if (w && !excluded[X_blk_backing] &&
		    (!w->via_mount || !excluded[X_mnt_backing])) {
			*what = w->via_mount ? "loopfs-dev (via mount)" : "loopfs-dev";
			backing_via_mount = w->via_mount;
			return w->fd;
		}
		*what = "file";
		return back[0];
	}
	backing_bad = 1;
	switch (rnd(8)) {
	case 0: *what = "dir"; return dirfd_;
	case 1: *what = "socket"; return sockfd;
	case 2: *what = "pipe"; return pipefd[rnd(2)];
	case 3: *what = "/dev/null"; return nullfd;
	case 4: *what = "O_PATH"; return pathfd;
	case 5: *what = "closed"; return 999;
	case 6: *what = "ctl"; w = pick_fd(FD_CTL); return w ? w->fd : -1;
	default: *what = "-1"; return -1;
	}
}

static void rnd_name(unsigned char *name, size_t len)
{
	size_t i, n;

	switch (rnd(4)) {
	case 0:		/* unterminated, every byte set */
		for (i = 0; i < len; i++)
			name[i] = 1 + rnd(255);
		break;
	case 1:
		memset(name, 0, len);
		break;
	default:
		n = rnd(len);
		for (i = 0; i < n; i++)
			name[i] = 'a' + rnd(26);
		memset(name + n, 0, len - n);
	}
}

static void rnd_info64(struct loop_info64 *info)
{
	static const uint32_t flag_pool[] = {
		LO_FLAGS_READ_ONLY, LO_FLAGS_AUTOCLEAR, LO_FLAGS_PARTSCAN,
		LO_FLAGS_DIRECT_IO, 1 << 5, 1 << 9, 0x80000000u,
	};
	int i;

	memset(info, 0, sizeof(*info));
	info->lo_offset = chance(50) ? 0 : rnd_u64();
	info->lo_sizelimit = chance(50) ? 0 : rnd_u64();
	for (i = 0; i < 7; i++)
		if (chance(i < 4 ? 25 : 3))
			info->lo_flags |= flag_pool[i];
	if (chance(10))
		info->lo_encrypt_type = rnd(20);
	if (chance(10))
		info->lo_encrypt_key_size = chance(50) ? rnd(33) : rnd64();
	if (chance(5))
		info->lo_number = rnd64();
	rnd_name(info->lo_file_name, LO_NAME_SIZE);
	if (chance(20))
		rnd_name(info->lo_crypt_name, LO_NAME_SIZE);
	if (chance(5))
		rnd_name(info->lo_encrypt_key, LO_KEY_SIZE);
}

/* A user pointer that is NULL or unmapped now and then. */
static void *maybe_bad(void *p)
{
	if (!chance(4))
		return p;
	return chance(50) ? NULL : (void *)0xffffffff81000000UL;
}

/* --- operations ------------------------------------------------------------ */

static int is_loopfs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == LOOPFS_SUPER_MAGIC;
}

static void rnd_options(char *opt, size_t len, int *valid)
{
	static const char * const bad[] = {
		"max=", "max=abc", "max=-1", "max=99999999999999999999", "bogus",
		"max=1,bogus", "size=10", "max=0x", "max= 3", "max=0",
	};

	*valid = 1;
	switch (rnd(4)) {
	case 0:
		opt[0] = 0;
		break;
	case 1:
		snprintf(opt, len, "max=%u", 1 + rnd(chance(80) ? 20 : 1000));
		break;
	case 2:
		snprintf(opt, len, "max=%u,max=%u", 1 + rnd(8), 1 + rnd(300));
		break;
	default:
		*valid = 0;
		snprintf(opt, len, "%s", bad[rnd(sizeof(bad) / sizeof(bad[0]))]);
	}
}

/*
 * Lazy umounts of mnt[i] by any worker of this mount namespace: the
 * counters go up before umount2() and "detaching" goes down after it, so
 * a call that read (gen, busy) before it started and sees a change, or a
 * lazy umount already running, after it returned, overlapped one.
 */
static int ns_idx(void)
{
	return container ? 1 : 0;
}

static int detach_snapshot(int i)
{
	return __atomic_load_n(&sh->detach_gen[ns_idx()][i], __ATOMIC_SEQ_CST) +
	       (__atomic_load_n(&sh->detaching[ns_idx()][i], __ATOMIC_SEQ_CST) ?
		1 << 30 : 0);
}

static int detach_overlapped(int i, int before)
{
	return before >= 1 << 30 ||
	       __atomic_load_n(&sh->detach_gen[ns_idx()][i], __ATOMIC_SEQ_CST) != before;
}

static void op_mount(void)
{
	int i = rnd(NINST), valid, r, e, stacked, snap;
	char opt[64];

	rnd_options(opt, sizeof(opt), &valid);
	stacked = is_loopfs(mnt[i]);
	if (stacked && (__atomic_load_n(&sh->stack[i], __ATOMIC_RELAXED) >= MAXSTACK ||
			chance(70)))
		return;
	set_cur("mount %s -o '%s'", mnt[i], opt);
	snap = detach_snapshot(i);
	r = mount("loop", mnt[i], LOOPFS_FSTYPE, 0, opt);
	e = errno;
	count(OP_mount, r, e);
	if (r == 0) {
		__atomic_add_fetch(&sh->stack[i], 1, __ATOMIC_RELAXED);
		if (!valid)
			wrong_outcome(OP_mount, "malformed options accepted");
		return;
	}
	if (!valid && e == EINVAL)
		return;
	if (e == ENOSPC)	/* the namespace's mount limit */
		return;
	/*
	 * The path resolves to the instance on top of mnt[i]; if another
	 * worker lazily unmounts that one before the new mount is attached
	 * to it, 6.1 refuses in do_add_mount() (the parent is in no
	 * namespace: EINVAL) and 6.12 already in do_lock_mount() (the top
	 * mount is not mounted: ENOENT).  Only that case is allowed: a lazy
	 * umount of the same directory overlapped the call.
	 */
	if ((e == EINVAL || e == ENOENT) && detach_overlapped(i, snap))
		return;
	diag(&sh->unexpected, "%s%s", strerror(e),
	     e == EINVAL || e == ENOENT ? " (no lazy umount overlapped)" : "");
}

static void op_umount(void)
{
	int i = rnd(NINST), flags = chance(50) ? MNT_DETACH : 0, r, e, mounted;

	set_cur("umount2 %s %s", mnt[i], flags ? "MNT_DETACH" : "0");
	mounted = is_loopfs(mnt[i]);
	if (flags) {
		__atomic_add_fetch(&sh->detaching[ns_idx()][i], 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&sh->detach_gen[ns_idx()][i], 1, __ATOMIC_SEQ_CST);
	}
	r = umount2(mnt[i], flags);
	e = errno;
	if (flags)
		__atomic_sub_fetch(&sh->detaching[ns_idx()][i], 1, __ATOMIC_SEQ_CST);
	result(OP_umount, r, e, 0);
	if (r == 0 && mounted)
		__atomic_sub_fetch(&sh->stack[i], 1, __ATOMIC_RELAXED);
}

static void op_remount(void)
{
	int i = rnd(NINST), valid, r, e, snap, before;
	char opt[64];

	rnd_options(opt, sizeof(opt), &valid);
	set_cur("remount %s -o '%s'", mnt[i], opt);
	snap = detach_snapshot(i);
	before = is_loopfs(mnt[i]);
	r = mount(NULL, mnt[i], NULL, MS_REMOUNT, opt);
	e = errno;
	/*
	 * A container's root may lower max= but not raise it above the value
	 * its instance was mounted with (which the fuzzer does not track):
	 * EPERM, there only.
	 */
	result(OP_remount, r, e, container ? EPERM : 0);
	/*
	 * Malformed options must be refused by a loopfs instance; the
	 * directory itself (no instance on it) may take anything.  A lazy
	 * umount running meanwhile can change what the path meant.
	 */
	if (r == 0 && !valid && before && is_loopfs(mnt[i]) &&
	    !detach_overlapped(i, snap))
		wrong_outcome(OP_remount, "malformed options accepted");
}

/*
 * A detached instance (fsopen/fsmount, never attached): add a device
 * through it, sometimes bind it, then drop everything.
 */
static void op_detached(void)
{
	int fsfd, mfd = -1, ctl = -1, dev = -1, n = -1, r;
	char name[32];

	set_cur("detached instance");
	fsfd = syscall(SYS_fsopen, LOOPFS_FSTYPE, 0);
	if (fsfd < 0) {
		result(OP_detached, -1, errno, 0);
		return;
	}
	if (chance(30))
		syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, "max",
			chance(50) ? "2" : "x", 0);
	r = syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
	if (r == 0)
		mfd = syscall(SYS_fsmount, fsfd, 0, 0);
	if (mfd < 0) {
		result(OP_detached, -1, errno, 0);
		goto out;
	}
	ctl = openat(mfd, LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	if (ctl >= 0)
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n >= 0) {
		snprintf(name, sizeof(name), LOOPFS_NODE_FMT, n);
		dev = openat(mfd, name, O_RDWR | O_CLOEXEC);
	}
	if (dev >= 0 && chance(60))
		ioctl(dev, LOOP_SET_FD, back[0]);
	/* Keep the device fd sometimes: it outlives the instance. */
	if (dev >= 0 && chance(30)) {
		struct wfd *w = free_slot();

		*w = (struct wfd){ FD_DEV, dev, -1, n, O_RDWR, 1 };
		dev = -1;
	}
	result(OP_detached, (ctl < 0 || n < 0) ? -1 : 0, errno, 0);
out:
	if (dev >= 0)
		close(dev);
	if (ctl >= 0)
		close(ctl);
	if (mfd >= 0)
		close(mfd);
	close(fsfd);
}

static void op_ctl_open(void)
{
	int i = rnd(NINST), fd;
	char p[PATH_MAX];
	struct wfd *w;

	snprintf(p, sizeof(p), "%s/" LOOPFS_CONTROL_NAME, mnt[i]);
	set_cur("open %s", p);
	fd = open(p, O_RDWR | O_CLOEXEC);
	result(OP_ctl_open, fd, errno, 0);
	if (fd < 0)
		return;
	w = free_slot();
	*w = (struct wfd){ FD_CTL, fd, i, 0, O_RDWR };
}

static int rnd_open_flags(void)
{
	static const int acc[] = { O_RDWR, O_RDWR, O_RDONLY, O_WRONLY };
	int f = acc[rnd(4)] | O_CLOEXEC;

	if (chance(30))
		f |= O_DIRECT;
	if (chance(5))
		f |= O_EXCL;
	if (chance(10))
		f |= O_NONBLOCK;
	return f;
}

static void keep_dev(int fd, int inst, int idx, int flags, int via_mount)
{
	struct wfd *w = free_slot();

	*w = (struct wfd){ FD_DEV, fd, inst, idx, flags, via_mount };
}

static void op_dev_open(void)
{
	int i = rnd(NINST), idx = rnd(MAXIDX), flags = rnd_open_flags(), fd;
	char p[PATH_MAX];

	if (chance(5))
		snprintf(p, sizeof(p), "%s/" LOOPFS_PART_NODE_FMT, mnt[i], idx, 1 + rnd(3));
	else
		lfs_devpath(p, sizeof(p), mnt[i], idx);
	set_cur("open %s flags %#x", p, flags);
	fd = open(p, flags);
	result(OP_dev_open, fd, errno, 0);
	if (fd >= 0)
		keep_dev(fd, i, idx, flags, 1);
}

/* A disk of some worker's own instance: out of the chaos ops' reach. */
static int owned_disk(const char *name)
{
	int id, idx, i;

	if (sscanf(name, LOOPFS_DISK_FMT, &id, &idx) != 2)
		return 0;
	for (i = 0; i < MAXPROCS; i++)
		if (__atomic_load_n(&sh->own_id[i], __ATOMIC_RELAXED) == id + 1)
			return 1;
	return 0;
}

/* Open a loopfs disk by its host name in devtmpfs. */
static void op_host_open(void)
{
	char names[32][64], p[PATH_MAX];
	int n = 0, flags = rnd_open_flags(), fd;
	struct dirent *de;
	DIR *d;

	d = opendir("/sys/block");
	if (!d)
		return;
	while ((de = readdir(d)) && n < 32)
		if (!strncmp(de->d_name, "loopfs", 6) && !owned_disk(de->d_name))
			snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
	closedir(d);
	if (!n)
		return;
	snprintf(p, sizeof(p), "/dev/%s", names[rnd(n)]);
	set_cur("open %s flags %#x", p, flags);
	fd = open(p, flags);
	result(OP_host_open, fd, errno, 0);
	if (fd >= 0)
		keep_dev(fd, -1, -1, flags, 0);
}

static void op_close(void)
{
	struct wfd *w = &fds[rnd(NFDS)];
	int r;

	if (w->kind == FD_NONE)
		return;
	set_cur("close fd %d", w->fd);
	r = close(w->fd);
	result(OP_close, r, errno, 0);
	w->kind = FD_NONE;
}

static void op_ctl(enum op op)
{
	struct wfd *w = pick_fd(FD_CTL);
	int arg = rnd_index();
	long r;

	if (!w)
		return;
	switch (op) {
	case OP_ctl_add:
		set_cur("LOOP_CTL_ADD %d (inst %d)", arg, w->inst);
		r = ioctl(w->fd, LOOP_CTL_ADD, arg);
		break;
	case OP_ctl_remove:
		set_cur("LOOP_CTL_REMOVE %d (inst %d)", arg, w->inst);
		r = ioctl(w->fd, LOOP_CTL_REMOVE, arg);
		break;
	case OP_ctl_get_free:
		set_cur("LOOP_CTL_GET_FREE (inst %d)", w->inst);
		r = ioctl(w->fd, LOOP_CTL_GET_FREE);
		break;
	default: {
		static const unsigned long cmd[] = {
			LOOP_SET_FD, LOOP_CONFIGURE, 0x4C83, 0x4CFF, BLKGETSIZE64,
		};
		unsigned long c = cmd[rnd(5)];

		set_cur("ioctl ctl %#lx", c);
		r = ioctl(w->fd, c, arg);
	}
	}
	result(op, r, errno, 0);
}

/* A node opened through an instance's mount never backs a device. */
static void check_pin(enum op op, long r)
{
	if (r == 0 && backing_via_mount)
		wrong_outcome(op, "accepted a backing file opened through a loopfs mount");
	/* Neither a directory, socket, pipe, char device nor a bad fd. */
	if (r == 0 && backing_bad)
		wrong_outcome(op, "accepted a backing fd that is no file or block device");
}

/* LOOP_SET_FD or LOOP_CHANGE_FD (@op) with a backing fd of any kind. */
static void op_fd_ioctl(struct wfd *w, enum op op)
{
	int set = op == OP_set_fd;
	const char *what;
	int bfd = pick_backing(&what);
	long r;

	set_cur("%s dev %d/%d backing %s", set ? "LOOP_SET_FD" : "LOOP_CHANGE_FD",
		w->inst, w->idx, what);
	r = ioctl(w->fd, set ? LOOP_SET_FD : LOOP_CHANGE_FD, bfd);
	result(op, r, errno, 0);
	check_pin(op, r);
}

static void op_configure(struct wfd *w)
{
	struct loop_config cfg;
	const char *what;
	long r;

	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = pick_backing(&what);
	cfg.block_size = chance(50) ? 0 : (uint32_t)rnd_bsize();
	rnd_info64(&cfg.info);
	if (chance(5))
		cfg.__reserved[rnd(8)] = rnd64();
	set_cur("LOOP_CONFIGURE dev %d/%d backing %s bs %u off %llu lim %llu flags %#x",
		w->inst, w->idx, what, cfg.block_size,
		(unsigned long long)cfg.info.lo_offset,
		(unsigned long long)cfg.info.lo_sizelimit, cfg.info.lo_flags);
	r = ioctl(w->fd, LOOP_CONFIGURE, maybe_bad(&cfg));
	result(OP_configure, r, errno, 0);
	check_pin(OP_configure, r);
}

static void op_set_status(struct wfd *w, int is64)
{
	struct loop_info64 info;
	struct loop_info old;
	long r;

	rnd_info64(&info);
	set_cur("LOOP_SET_STATUS%s dev %d/%d off %llu lim %llu flags %#x",
		is64 ? "64" : "", w->inst, w->idx,
		(unsigned long long)info.lo_offset,
		(unsigned long long)info.lo_sizelimit, info.lo_flags);
	if (is64) {
		r = ioctl(w->fd, LOOP_SET_STATUS64, maybe_bad(&info));
		result(OP_set_status64, r, errno, 0);
		return;
	}
	memset(&old, 0, sizeof(old));
	old.lo_offset = (int)info.lo_offset;
	old.lo_flags = info.lo_flags;
	old.lo_encrypt_type = info.lo_encrypt_type;
	old.lo_encrypt_key_size = info.lo_encrypt_key_size;
	memcpy(old.lo_name, info.lo_file_name, LO_NAME_SIZE);
	r = ioctl(w->fd, LOOP_SET_STATUS, maybe_bad(&old));
	result(OP_set_status, r, errno, 0);
}

static void op_get_status(struct wfd *w, int is64)
{
	struct loop_info64 info;
	struct loop_info old;
	long r;

	set_cur("LOOP_GET_STATUS%s dev %d/%d", is64 ? "64" : "", w->inst, w->idx);
	if (is64)
		r = ioctl(w->fd, LOOP_GET_STATUS64, maybe_bad(&info));
	else
		r = ioctl(w->fd, LOOP_GET_STATUS, maybe_bad(&old));
	result(is64 ? OP_get_status64 : OP_get_status, r, errno, 0);
}

static void op_simple(struct wfd *w, enum op op)
{
	unsigned long arg;
	long r;

	switch (op) {
	case OP_set_capacity:
		set_cur("LOOP_SET_CAPACITY dev %d/%d", w->inst, w->idx);
		r = ioctl(w->fd, LOOP_SET_CAPACITY, 0);
		break;
	case OP_set_dio:
		arg = chance(80) ? rnd(2) : rnd64();
		set_cur("LOOP_SET_DIRECT_IO dev %d/%d %#lx", w->inst, w->idx, arg);
		r = ioctl(w->fd, LOOP_SET_DIRECT_IO, arg);
		break;
	case OP_set_bsize:
		arg = rnd_bsize();
		set_cur("LOOP_SET_BLOCK_SIZE dev %d/%d %lu", w->inst, w->idx, arg);
		r = ioctl(w->fd, LOOP_SET_BLOCK_SIZE, arg);
		break;
	case OP_rrpart:
		set_cur("BLKRRPART dev %d/%d", w->inst, w->idx);
		r = ioctl(w->fd, BLKRRPART, 0);
		break;
	case OP_flsbuf:
		set_cur("BLKFLSBUF dev %d/%d", w->inst, w->idx);
		r = ioctl(w->fd, BLKFLSBUF, 0);
		break;
	case OP_getsize64: {
		uint64_t size;

		set_cur("BLKGETSIZE64 dev %d/%d", w->inst, w->idx);
		r = ioctl(w->fd, BLKGETSIZE64, &size);
		break;
	}
	default: {
		/* Unknown commands in and next to the loop range. */
		static const unsigned long cmd[] = {
			0x4C0B, 0x4C0C, 0x4C82, 0x4CFF, 0x4C00 | 0x80000000,
			LOOP_CTL_ADD, LOOP_CTL_GET_FREE,
		};
		unsigned long c = cmd[rnd(7)];

		set_cur("ioctl dev %d/%d %#lx", w->inst, w->idx, c);
		r = ioctl(w->fd, c, rnd64() & 0xffff);
	}
	}
	/* BLKRRPART and BLKFLSBUF want CAP_SYS_ADMIN in the initial namespace. */
	result(op, r, errno, container && (op == OP_rrpart || op == OP_flsbuf) ? EACCES : 0);
}

static void op_range(struct wfd *w, enum op op)
{
	uint64_t range[2];
	long r;

	range[0] = chance(70) ? (uint64_t)rnd(2048) * 512 : rnd_u64();
	range[1] = chance(70) ? (uint64_t)(1 + rnd(256)) * 512 : rnd_u64();
	set_cur("%s dev %d/%d start %llu len %llu", op == OP_discard ?
		"BLKDISCARD" : "BLKZEROOUT", w->inst, w->idx,
		(unsigned long long)range[0], (unsigned long long)range[1]);
	r = ioctl(w->fd, op == OP_discard ? BLKDISCARD : BLKZEROOUT, range);
	result(op, r, errno, 0);
}

static void op_io(struct wfd *w, enum op op)
{
	int aligned = chance(70);
	size_t len = aligned ? (size_t)(1 + rnd(16)) * 4096 : 1 + rnd(BUF_SIZE - 1);
	off_t off = aligned ? (off_t)rnd(512) * 4096 : (off_t)rnd(1 << 21);
	char *p = buf + (chance(80) ? 0 : 1 + rnd(511));
	int acc = w->flags & O_ACCMODE;
	int extra = 0;
	ssize_t r;

	if (len > BUF_SIZE - 512)
		len = BUF_SIZE - 512;
	if (chance(3))
		off = (off_t)(rnd_u64() & LLONG_MAX);
	/* A read on an O_WRONLY fd, and the reverse, is EBADF: allowed. */
	if (op == OP_read) {
		set_cur("pread dev %d/%d len %zu off %lld%s", w->inst, w->idx,
			len, (long long)off, w->flags & O_DIRECT ? " O_DIRECT" : "");
		r = pread(w->fd, p, len, off);
		if (w->flags & O_NONBLOCK)
			extra = EAGAIN;
		result(op, r, errno, extra);
		return;
	}
	if (op == OP_write_mbr) {
		/* Two small partitions: BLKRRPART / PARTSCAN then find them. */
		memset(buf, 0, 512);
		buf[446 + 4] = 0x83;
		buf[446 + 8] = 8;
		buf[446 + 12] = 64;
		buf[462 + 4] = 0x83;
		buf[462 + 8] = 72;
		buf[462 + 12] = 64;
		buf[510] = 0x55;
		buf[511] = 0xaa;
		p = buf;
		len = w->flags & O_DIRECT ? 4096 : 512;
		off = 0;
	} else {
		memset(p, 0x5a + (int)opno, len);
	}
	set_cur("%s dev %d/%d len %zu off %lld acc %d%s", op_name[op], w->inst,
		w->idx, len, (long long)off, acc,
		w->flags & O_DIRECT ? " O_DIRECT" : "");
	r = pwrite(w->fd, p, len, off);
	if (w->flags & O_NONBLOCK)
		extra = EAGAIN;
	result(op, r, errno, extra);
}

static void op_dev(enum op op)
{
	struct wfd *w = pick_fd(FD_DEV);

	if (!w)
		return;
	switch (op) {
	case OP_set_fd: op_fd_ioctl(w, op); break;
	case OP_configure: op_configure(w); break;
	case OP_clr_fd: {
		long r;

		set_cur("LOOP_CLR_FD dev %d/%d", w->inst, w->idx);
		r = ioctl(w->fd, LOOP_CLR_FD, 0);
		result(op, r, errno, 0);
		break;
	}
	case OP_set_status: op_set_status(w, 0); break;
	case OP_set_status64: op_set_status(w, 1); break;
	case OP_get_status: op_get_status(w, 0); break;
	case OP_get_status64: op_get_status(w, 1); break;
	case OP_change_fd: op_fd_ioctl(w, op); break;
	case OP_discard:
	case OP_zeroout: op_range(w, op); break;
	case OP_read:
	case OP_write:
	case OP_write_mbr: op_io(w, op); break;
	default: op_simple(w, op);
	}
}

/*
 * A name in an instance root for op_names(): loop-control, a view, an
 * entry of a view or a device node. Returns true for the views and their
 * entries, which no call may change.
 */
static bool pick_name(char *p, size_t len)
{
	int pct = rnd(100);

	if (pct < 15) {
		snprintf(p, len, LOOPFS_CONTROL_NAME);
		return false;
	}
	if (pct < 20) {
		snprintf(p, len, chance(50) ? LOOPFS_VIEW_NAME :
			 LOOPFS_DEV_VIEW_NAME);
		return true;
	}
	if (pct < 30) {
		snprintf(p, len, LOOPFS_VIEW_NAME "/" LOOPFS_NODE_FMT,
			 rnd(MAXIDX));
		return true;
	}
	if (pct < 35) {
		snprintf(p, len, LOOPFS_VIEW_NAME "/" LOOPFS_NODE_FMT "/%s",
			 rnd(MAXIDX), chance(50) ? "size" : "loop0p1");
		return true;
	}
	snprintf(p, len, LOOPFS_NODE_FMT, rnd(MAXIDX));
	return false;
}

/*
 * unlink / rename / create, through a directory fd checked to be a loopfs
 * root (the mount point may be empty at the moment). The view directory is
 * removed with AT_REMOVEDIR, the way rm -r would try.
 */
static void op_names(enum op op)
{
	int i = rnd(NINST), dfd, r;
	char p[64], q[64];
	struct statfs st;
	bool view;

	dfd = open(mnt[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (fstatfs(dfd, &st) || (unsigned long)st.f_type != LOOPFS_SUPER_MAGIC) {
		close(dfd);
		return;
	}
	view = pick_name(p, sizeof(p));
	switch (op) {
	case OP_unlink:
		set_cur("unlink %s/%s", mnt[i], p);
		r = unlinkat(dfd, p, strcmp(p, LOOPFS_VIEW_NAME) &&
			     strcmp(p, LOOPFS_DEV_VIEW_NAME) ? 0 : AT_REMOVEDIR);
		break;
	case OP_rename:
		snprintf(q, sizeof(q), LOOPFS_NODE_FMT, rnd(MAXIDX));
		set_cur("rename %s/%s %s", mnt[i], p, q);
		r = renameat(dfd, p, dfd, q);
		break;
	default:
		snprintf(p, sizeof(p), "%s%s", chance(25) ?
			 LOOPFS_VIEW_NAME "/" : "",
			 chance(50) ? "file" : "loop99");
		set_cur("creat %s/%s", mnt[i], p);
		r = openat(dfd, p, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
		if (r >= 0) {
			close(r);
			/* Creating anything in an instance root must fail. */
			wrong_outcome(op, "created");
			unlinkat(dfd, p, 0);
			close(dfd);
			return;
		}
	}
	if (r == 0 && view)
		wrong_outcome(op, "changed a view");
	result(op, r, errno, 0);
	close(dfd);
}

/*
 * List a view of an instance, /sys/dev/block's or a device's directory in
 * /sys/block's, and read its links while other workers add and remove
 * devices and partitions. A link may go between the listing and the read;
 * a host name must never be listed.
 */
static void op_views(void)
{
	char p[PATH_MAX], q[PATH_MAX + NAME_MAX + 2], t[PATH_MAX];
	int i = rnd(NINST), n = 0, r = 0, e = 0;
	struct dirent *de;
	DIR *d;

	if (chance(50))
		snprintf(p, sizeof(p), "%s/" LOOPFS_DEV_VIEW_NAME, mnt[i]);
	else
		snprintf(p, sizeof(p), "%s/" LOOPFS_VIEW_NAME "/" LOOPFS_NODE_FMT,
			 mnt[i], rnd(MAXIDX));
	set_cur("list %s", p);
	d = opendir(p);
	if (!d) {
		result(OP_views, -1, errno, 0);
		return;
	}
	while ((de = readdir(d)) && n++ < 64) {
		if (de->d_name[0] == '.')
			continue;
		if (!strncmp(de->d_name, "loopfs", 6))
			wrong_outcome(OP_views, "listed a host name");
		snprintf(q, sizeof(q), "%s/%s", p, de->d_name);
		if (readlink(q, t, sizeof(t)) < 0 && errno != ENOENT) {
			r = -1;
			e = errno;
		}
	}
	closedir(d);
	result(OP_views, r, e, 0);
}

static int write_sysctl(const char *val)
{
	return write_file(LOOPFS_SYSCTL_PATH, val);
}

static void op_sysctl(void)
{
	static const char * const good[] = { "255", "1000", "4", "0", "2147483647" };
	static const char * const bad[] = { "-1", "abc", "99999999999", "1x" };
	const char *v;
	int r;

	if (chance(75)) {
		v = good[rnd(5)];
		set_cur("write %s to " LOOPFS_SYSCTL_PATH, v);
		r = write_sysctl(v);
		result(OP_sysctl, r, errno, 0);
		if (r == 0 && strcmp(v, "255")) {
			/* Low limits only for a moment, else nothing gets created. */
			usleep(2000);
			write_sysctl("255");
		}
		return;
	}
	v = bad[rnd(4)];
	set_cur("write '%s' to " LOOPFS_SYSCTL_PATH, v);
	r = write_sysctl(v);
	result(OP_sysctl, r, errno, 0);
	if (r == 0) {
		wrong_outcome(OP_sysctl, "accepted");
		write_sysctl("255");
	}
}

/* --- a worker's own instance: judged against a model --------------------- */

/*
 * Every worker mounts one instance of its own on a directory no other
 * worker touches, with NOWN devices it keeps open (it is their only
 * opener: no other worker can reach them, the chaos ops skip their host
 * nodes) and backing files nobody else binds.  So the state of each device
 * is known exactly, and every call on it has one right outcome: the model
 * below says which, and any other outcome fails the suite.
 */
#define NOWN 2
#define NOWN_BACK 3

struct own_dev {
	int fd;			/* O_RDWR, the device's only opener */
	int idx;
	int bound;
	int ro;			/* bound read-only */
	int disk_ro;		/* the disk's read-only flag (an unbind keeps it) */
	int back;		/* own_back[] index while bound */
	uint64_t offset, limit, size;
	int pat;		/* a verified pattern is on the device: */
	off_t pat_off;		/*   at this device offset, */
	size_t pat_len;		/*   this long, */
	unsigned int pat_seed;	/*   made by fill() with this seed */
};

static struct own_dev own[NOWN];
static int own_back[NOWN_BACK];
static const off_t own_back_size[NOWN_BACK] = { 1 << 20, 256 << 10, 256 << 10 };
static const int own_back_ro[NOWN_BACK] = { 0, 0, 1 };	/* opened O_RDONLY */
static char own_mnt[PATH_MAX];
static int own_ctl = -1;
static char *rbuf;

static void fill(char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (char)((seed + i * 7 + (i >> 9) * 13) & 0xff);
}

/* Compare a read-back; returns 1 if it matches. */
static int verify(const char *what, const char *got, size_t len,
		  unsigned int seed)
{
	size_t i;

	fill(buf, len, seed);
	__atomic_add_fetch(&sh->verified, 1, __ATOMIC_RELAXED);
	for (i = 0; i < len; i++)
		if (got[i] != buf[i]) {
			diag(&sh->misjudged, "%s differs at byte %zu: %#x, wrote %#x",
			     what, i, (unsigned char)got[i], (unsigned char)buf[i]);
			return 0;
		}
	return 1;
}

static uint64_t model_size(int back, uint64_t offset, uint64_t limit)
{
	uint64_t size = (uint64_t)own_back_size[back];

	size = offset < size ? size - offset : 0;
	if (limit && limit < size)
		size = limit;
	return size & ~511ULL;
}

/* Size, status fields and the read-only flag: what the model says. */
static void own_check_state(struct own_dev *d)
{
	struct loop_info64 info;
	uint64_t size = ~0ULL;
	int ro = -1;
	long r;

	r = ioctl(d->fd, BLKGETSIZE64, &size);
	if (judge(OP_own_status, r, errno, 0, 0))
		judge_eq("BLKGETSIZE64", size, d->bound ? d->size : 0);
	r = ioctl(d->fd, BLKROGET, &ro);
	if (judge(OP_own_status, r, errno, 0, 0))
		judge_eq("BLKROGET", ro, d->disk_ro);
	r = ioctl(d->fd, LOOP_GET_STATUS64, &info);
	if (!judge(OP_own_status, r, errno, d->bound ? 0 : ENXIO, 0) || !d->bound)
		return;
	judge_eq("lo_number", info.lo_number, d->idx);
	judge_eq("lo_offset", info.lo_offset, d->offset);
	judge_eq("lo_sizelimit", info.lo_sizelimit, d->limit);
	judge_eq("LO_FLAGS_READ_ONLY", !!(info.lo_flags & LO_FLAGS_READ_ONLY), d->ro);
}

/* Bind d to own_back[back] with LOOP_CONFIGURE or LOOP_SET_FD. */
static long own_configure(struct own_dev *d, int back, int cfg, uint64_t offset,
			  uint64_t limit, int ro_flag, uint32_t bsize)
{
	struct loop_config c;

	if (!cfg)
		return ioctl(d->fd, LOOP_SET_FD, own_back[back]);
	memset(&c, 0, sizeof(c));
	c.fd = own_back[back];
	c.block_size = bsize;
	c.info.lo_offset = offset;
	c.info.lo_sizelimit = limit;
	c.info.lo_flags = ro_flag ? LO_FLAGS_READ_ONLY : 0;
	return ioctl(d->fd, LOOP_CONFIGURE, &c);
}

static void own_bound(struct own_dev *d, int back, uint64_t offset,
		      uint64_t limit, int ro_flag)
{
	d->bound = 1;
	d->back = back;
	d->offset = offset;
	d->limit = limit;
	d->size = model_size(back, offset, limit);
	d->ro = ro_flag || own_back_ro[back];
	d->disk_ro = d->ro;
	d->pat = 0;
}

static void op_own_bind(struct own_dev *d)
{
	static const uint32_t bs[] = { 0, 512, 4096 };
	int back = rnd(NOWN_BACK), cfg = chance(60), ro_flag = 0;
	uint64_t offset = 0, limit = 0;
	uint32_t bsize = 0;
	long r;

	if (d->bound && excluded[X_bound_config])
		return;
	if (cfg) {
		ro_flag = chance(25);
		offset = chance(30) ? 4096 : 0;
		limit = chance(30) ? 128 << 10 : 0;
		bsize = bs[rnd(3)];
	}
	set_cur("own %s loop%d backing own-%d off %llu lim %llu ro %d bs %u (%s)",
		cfg ? "LOOP_CONFIGURE" : "LOOP_SET_FD", d->idx, back,
		(unsigned long long)offset, (unsigned long long)limit, ro_flag,
		bsize, d->bound ? "bound" : "unbound");
	r = own_configure(d, back, cfg, offset, limit, ro_flag, bsize);
	/*
	 * A bound device refuses another file with EBUSY and keeps its
	 * binding as it was.
	 */
	if (!judge(OP_own_bind, r, errno, d->bound ? EBUSY : 0, 0))
		return;
	if (!d->bound)
		own_bound(d, back, offset, limit, ro_flag);
	own_check_state(d);
}

/*
 * Not a file or block device: the in-tree loop driver refuses a bad fd
 * with EBADF and a directory, socket, pipe or character device with
 * EINVAL, and the device stays unbound.  A bound device refuses any new
 * file (EBUSY, or EINVAL from the checks that come first); both are
 * judged only as "refused".
 */
static void op_own_bad(struct own_dev *d)
{
	static const char * const kind[] = {
		"dir", "socket", "pipe", "/dev/null", "loop-control", "O_PATH",
		"closed", "-1",
	};
	int k = rnd(8), cfg = chance(50), fd, want;
	struct loop_config c;
	long r;
	int e;

	switch (k) {
	case 0: fd = dirfd_; break;
	case 1: fd = sockfd; break;
	case 2: fd = pipefd[rnd(2)]; break;
	case 3: fd = nullfd; break;
	case 4: fd = own_ctl; break;
	case 5: fd = pathfd; break;
	case 6: fd = 999; break;
	default: fd = -1;
	}
	want = k >= 5 ? EBADF : EINVAL;
	if (d->bound && excluded[X_bound_config])
		return;
	set_cur("own %s loop%d backing %s (%s)", cfg ? "LOOP_CONFIGURE" : "LOOP_SET_FD",
		d->idx, kind[k], d->bound ? "bound" : "unbound");
	if (cfg) {
		memset(&c, 0, sizeof(c));
		c.fd = fd;
		r = ioctl(d->fd, LOOP_CONFIGURE, &c);
	} else {
		r = ioctl(d->fd, LOOP_SET_FD, fd);
	}
	e = errno;
	if (d->bound && r < 0 && (e == EBUSY || e == EINVAL || e == EBADF) &&
	    (want == EBADF ? e == EBADF : 1))
		want = e;
	if (!judge(OP_own_bad, r, e, want, 0) && r == 0) {
		/* Accepted: undo it so that the model holds again. */
		ioctl(d->fd, LOOP_CLR_FD, 0);
		return;
	}
	own_check_state(d);
}

static void op_own_clear(struct own_dev *d)
{
	long r;

	set_cur("own LOOP_CLR_FD loop%d (%s)", d->idx, d->bound ? "bound" : "unbound");
	r = ioctl(d->fd, LOOP_CLR_FD, 0);
	/* The only opener clears at once; an unbound device says ENXIO. */
	if (!judge(OP_own_clear, r, errno, d->bound ? 0 : ENXIO, 0) || !d->bound)
		return;
	d->bound = 0;
	d->pat = 0;
	own_check_state(d);
}

/*
 * Read back through the device: buffered after the page cache was
 * dropped, and with O_DIRECT through a second open, so the data comes
 * from the backing file, then straight from the backing file.
 */
static void own_read_back(struct own_dev *d, enum op op, const char *when)
{
	char p[PATH_MAX], what[64];
	long r;
	int fd;

	if (!container) {
		/* BLKFLSBUF: write back and drop the device's page cache. */
		r = ioctl(d->fd, BLKFLSBUF, 0);
		judge(op, r, errno, 0, 0);
	} else {
		/* Not capable in the initial namespace: EACCES. */
		r = ioctl(d->fd, BLKFLSBUF, 0);
		judge(op, r, errno, EACCES, 0);
		r = posix_fadvise(d->fd, 0, 0, POSIX_FADV_DONTNEED);
		judge(op, r ? -1 : 0, r, 0, 0);
	}
	r = pread(d->fd, rbuf, d->pat_len, d->pat_off);
	snprintf(what, sizeof(what), "%s: device read", when);
	if (judge(op, r, errno, 0, d->pat_len))
		verify(what, rbuf, d->pat_len, d->pat_seed);

	lfs_devpath(p, sizeof(p), own_mnt, d->idx);
	fd = open(p, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (judge(op, fd, errno, 0, -1)) {
		r = pread(fd, rbuf, d->pat_len, d->pat_off);
		snprintf(what, sizeof(what), "%s: O_DIRECT device read", when);
		if (judge(op, r, errno, 0, d->pat_len))
			verify(what, rbuf, d->pat_len, d->pat_seed);
		close(fd);
	}
	r = pread(own_back[d->back], rbuf, d->pat_len, d->pat_off + d->offset);
	snprintf(what, sizeof(what), "%s: backing file read", when);
	if (judge(op, r, errno, 0, d->pat_len))
		verify(what, rbuf, d->pat_len, d->pat_seed);
}

static void op_own_io(struct own_dev *d)
{
	size_t len = (size_t)(1 + rnd(16)) * 4096;
	off_t off;
	unsigned int seed = (unsigned int)rnd64();
	long r;
	int i;

	if (!d->bound) {
		/* Size 0: nothing to read, a write is past the end. */
		set_cur("own pwrite/pread loop%d (unbound, ro %d)", d->idx, d->disk_ro);
		fill(buf, 4096, seed);
		r = pwrite(d->fd, buf, 4096, 0);
		judge(OP_own_io, r, errno, d->disk_ro ? EPERM : ENOSPC, 0);
		r = pread(d->fd, rbuf, 4096, 0);
		judge(OP_own_io, r, errno, 0, 0);
		return;
	}
	if (len > d->size)
		len = d->size & ~4095ULL;
	off = (off_t)rnd((d->size - len) / 4096 + 1) * 4096;
	set_cur("own pwrite loop%d len %zu off %lld (size %llu, ro %d)", d->idx,
		len, (long long)off, (unsigned long long)d->size, d->ro);
	fill(buf, len, seed);
	r = pwrite(d->fd, buf, len, off);
	if (d->ro) {
		/* A read-only device refuses every write: EPERM. */
		judge(OP_own_io, r, errno, EPERM, 0);
		r = pread(d->fd, rbuf, len, off);
		judge(OP_own_io, r, errno, 0, len);
		return;
	}
	/* A healthy tmpfs backing: the whole write, no EIO. */
	if (!judge(OP_own_io, r, errno, 0, len))
		return;
	r = fsync(d->fd);
	judge(OP_own_io, r, errno, 0, 0);
	/* The worker's other device on the same file may have been overwritten. */
	for (i = 0; i < NOWN; i++)
		if (&own[i] != d && own[i].bound && own[i].back == d->back)
			own[i].pat = 0;
	d->pat = 1;
	d->pat_off = off;
	d->pat_len = len;
	d->pat_seed = seed;
	own_read_back(d, OP_own_io, "after flush");
}

/* Unbind and bind the same file again: what was written is still there. */
static void op_own_rebind(struct own_dev *d)
{
	int back = d->back, ro_flag = d->ro && !own_back_ro[d->back];
	uint64_t offset = d->offset, limit = d->limit;
	long r;

	if (!d->bound || !d->pat) {
		op_own_io(d);
		return;
	}
	set_cur("own rebind loop%d backing own-%d off %llu lim %llu", d->idx, back,
		(unsigned long long)offset, (unsigned long long)limit);
	r = ioctl(d->fd, LOOP_CLR_FD, 0);
	if (!judge(OP_own_rebind, r, errno, 0, 0))
		return;
	d->bound = 0;
	r = own_configure(d, back, 1, offset, limit, ro_flag, 0);
	if (!judge(OP_own_rebind, r, errno, 0, 0)) {
		d->pat = 0;
		return;
	}
	d->bound = 1;
	d->disk_ro = d->ro;
	own_read_back(d, OP_own_rebind, "after rebind");
}

static void op_own(enum op op)
{
	struct own_dev *d = &own[rnd(NOWN)];

	if (d->fd < 0)
		return;
	switch (op) {
	case OP_own_bind: op_own_bind(d); break;
	case OP_own_bad: op_own_bad(d); break;
	case OP_own_clear: op_own_clear(d); break;
	case OP_own_io: op_own_io(d); break;
	case OP_own_rebind: op_own_rebind(d); break;
	default:
		set_cur("own status loop%d (%s)", d->idx, d->bound ? "bound" : "unbound");
		own_check_state(d);
	}
}

/*
 * Set up the worker's own instance on <wdir>/own (already created):
 * mount it, add loop0..NOWN-1, open each once, and publish the
 * instance's id so that the chaos ops leave its host nodes alone.
 */
static int own_setup(void)
{
	char p[PATH_MAX], name[64];
	int i, id, idx, tries;

	if (posix_memalign((void **)&rbuf, 4096, BUF_SIZE))
		return -1;
	for (i = 0; i < NOWN_BACK; i++) {
		snprintf(p, sizeof(p), "%s/own-back-%d", wdir, i);
		own_back[i] = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (own_back[i] < 0 || ftruncate(own_back[i], own_back_size[i]))
			return -1;
		if (own_back_ro[i]) {
			close(own_back[i]);
			own_back[i] = open(p, O_RDONLY | O_CLOEXEC);
		}
	}
	snprintf(own_mnt, sizeof(own_mnt), "%s/own", wdir);
	if (mount("loop", own_mnt, LOOPFS_FSTYPE, 0, ""))
		return -1;
	own_ctl = lfs_ctl(own_mnt);
	if (own_ctl < 0)
		return -1;
	for (i = 0; i < NOWN; i++) {
		own[i].fd = -1;
		own[i].idx = i;
		/* Another worker may hold max_loop_devices at 0 a moment. */
		for (tries = 0; ioctl(own_ctl, LOOP_CTL_ADD, i) < 0; tries++)
			if (errno != ENOSPC || tries > 1000)
				return -1;
			else
				usleep(1000);
		lfs_devpath(p, sizeof(p), own_mnt, i);
		own[i].fd = open(p, O_RDWR | O_CLOEXEC);
		if (own[i].fd < 0)
			return -1;
	}
	/* The instance's id, from the name of the last device's disk. */
	if (disk_name_of(p, name, sizeof(name)) ||
	    sscanf(name, LOOPFS_DISK_FMT, &id, &idx) != 2)
		return -1;
	__atomic_store_n(&sh->own_id[worker_id], id + 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void own_teardown(void)
{
	int i;

	for (i = 0; i < NOWN; i++)
		if (own[i].fd >= 0)
			close(own[i].fd);
	if (own_ctl >= 0)
		close(own_ctl);
	if (!container)
		umount2(own_mnt, MNT_DETACH);
}

/*
 * Weighted draws, and every third operation the kind this worker ran
 * least so far (one that found nothing to act on stays least), so that
 * every kind gets its minimum count even on a slow, loaded guest.
 */
static enum op pick_op(void)
{
	static int total;
	int i, r, least = -1;
	long n, min = LONG_MAX;

	if (opno % 3 == 0) {
		for (i = 0; i < OP_MAX; i++) {
			if (excluded[i])
				continue;
			n = mine[i];
			if (n < min) {
				min = n;
				least = i;
			}
		}
		if (least >= 0)
			return least;
	}

	if (!total)
		for (i = 0; i < OP_MAX; i++)
			total += excluded[i] ? 0 : op_weight[i];
	r = rnd(total);
	for (i = 0; i < OP_MAX; i++) {
		if (excluded[i])
			continue;
		if (r < op_weight[i])
			return i;
		r -= op_weight[i];
	}
	return OP_close;
}

static void do_op(enum op op)
{
	switch (op) {
	case OP_mount: op_mount(); break;
	case OP_umount: op_umount(); break;
	case OP_remount: op_remount(); break;
	case OP_detached: op_detached(); break;
	case OP_ctl_open: op_ctl_open(); break;
	case OP_dev_open: op_dev_open(); break;
	case OP_host_open: op_host_open(); break;
	case OP_close: op_close(); break;
	case OP_ctl_add:
	case OP_ctl_remove:
	case OP_ctl_get_free:
	case OP_ctl_bad: op_ctl(op); break;
	case OP_unlink:
	case OP_rename:
	case OP_create: op_names(op); break;
	case OP_sysctl: op_sysctl(); break;
	case OP_views: op_views(); break;
	case OP_own_bind:
	case OP_own_bad:
	case OP_own_clear:
	case OP_own_io:
	case OP_own_rebind:
	case OP_own_status: op_own(op); break;
	default: op_dev(op);
	}
}

static void make_backing_files(void)
{
	static const off_t sizes[NBACK] = {
		1 << 20, (1 << 20) + 123, 0, 4096, 511, 3 << 20,
	};
	char p[PATH_MAX];
	int i;

	for (i = 0; i < NBACK; i++) {
		snprintf(p, sizeof(p), "%s/back-%d", wdir, i);
		back[i] = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (back[i] < 0 || ftruncate(back[i], sizes[i])) {
			perror(p);
			exit(2);
		}
		/* Number 3 is read-only. */
		if (i == 3) {
			close(back[i]);
			back[i] = open(p, O_RDONLY | O_CLOEXEC);
		}
	}
	dirfd_ = open(wdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipefd) == 0) {
		sockfd = pipefd[0];
		close(pipefd[1]);
	}
	if (pipe2(pipefd, O_CLOEXEC))
		pipefd[0] = pipefd[1] = -1;
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/back-0", wdir);
	pathfd = open(p, O_PATH | O_CLOEXEC);
}

/* Write "0 <id> 1" into /proc/<pid>/<file>. */
static int write_map(pid_t pid, const char *file, const char *line)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/%s", pid, file);
	return write_file(p, line) ? -1 : 0;
}

/*
 * The container worker: root of a new user namespace whose 0 is the host's
 * LOOPFS_UNPRIV_UID, in its own mount namespace, fuzzing instances it
 * mounts there itself (its mount points replace mnt[]).  They are torn down
 * with the namespace when it exits.  A helper forked before unshare(),
 * still root outside, writes the id maps.
 */
static int enter_container(int w, uid_t uid)
{
	char line[64];
	int sync[2], i, status;
	pid_t self = getpid(), helper;
	char c = 0;

	for (i = 0; i < NINST; i++) {
		snprintf(mnt[i], sizeof(mnt[i]), "%s/c%d-%d", base, w, i);
		if (mkdir(mnt[i], 0755) || chown(mnt[i], uid, uid))
			return -1;
	}
	if (pipe2(sync, O_CLOEXEC))
		return -1;
	helper = fork();
	if (helper == 0) {
		if (read(sync[0], &c, 1) != 1)
			_exit(1);
		snprintf(line, sizeof(line), "0 %u 1\n", uid);
		_exit(write_map(self, "uid_map", line) ||
		      write_map(self, "setgroups", "deny") ||
		      write_map(self, "gid_map", line));
	}
	if (helper < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -1;
	if (write(sync[1], &c, 1) != 1 || waitpid(helper, &status, 0) != helper ||
	    !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	close(sync[0]);
	close(sync[1]);
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
		return -1;
	for (i = 0; i < NINST; i++)
		mount("loop", mnt[i], LOOPFS_FSTYPE, 0, "max=8");
	return 0;
}

static void worker(int w, int nprocs, uint64_t seed, time_t deadline,
		   uid_t container_uid)
{
	worker_id = w;
	rs = seed + (uint64_t)w * 0x9E3779B97F4A7C15ULL;
	if (!rs)
		rs = 1;
	if (posix_memalign((void **)&buf, 4096, BUF_SIZE))
		exit(2);
	snprintf(wdir, sizeof(wdir), "%s/w%d", base, w);
	snprintf(own_mnt, sizeof(own_mnt), "%s/own", wdir);
	if (mkdir(wdir, 0755) || mkdir(own_mnt, 0755) ||
	    (container_uid && (chown(wdir, container_uid, container_uid) ||
			       chown(own_mnt, container_uid, container_uid)))) {
		perror(wdir);
		exit(2);
	}
	if (container_uid && enter_container(w, container_uid)) {
		perror("container worker set-up");
		exit(2);
	}
	container = container_uid != 0;
	make_backing_files();
	if (own_setup()) {
		perror("own instance set-up");
		exit(2);
	}
	/* No chaos op before every worker's own instance is known. */
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < nprocs &&
	       !sh->stop && time(NULL) < deadline)
		usleep(1000);
	while (!sh->stop && time(NULL) < deadline) {
		opno++;
		do_op(pick_op());
	}
	snprintf(sh->cur[w], sizeof(sh->cur[0]), "done");
	own_teardown();
	exit(0);
}

/* --- setup and teardown --------------------------------------------------- */

static int unmount_all(void)
{
	int i, n = 0;

	for (i = 0; i < NINST; i++)
		while (is_loopfs(mnt[i]) && n < 100) {
			if (umount2(mnt[i], MNT_DETACH))
				return -1;
			n++;
		}
	return n;
}

/* What is left: every loopfs disk with its binding and holders. */
static void show_leftovers(void)
{
	char dir[PATH_MAX], back[256], holders[256], sub[PATH_MAX];
	struct dirent *de, *he;
	DIR *d = opendir("/sys/block"), *h;
	FILE *f;

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "loopfs", 6))
			continue;
		snprintf(dir, sizeof(dir), "/sys/block/%s", de->d_name);
		snprintf(sub, sizeof(sub), "%s/loop/backing_file", dir);
		if (read_file(sub, back, sizeof(back)))
			back[0] = 0;
		holders[0] = 0;
		snprintf(sub, sizeof(sub), "%s/holders", dir);
		h = opendir(sub);
		while (h && (he = readdir(h)))
			if (he->d_name[0] != '.' &&
			    strlen(holders) + strlen(he->d_name) + 2 < sizeof(holders)) {
				strcat(holders, " ");
				strcat(holders, he->d_name);
			}
		if (h)
			closedir(h);
		say("#   %s: backing '%s' holders:%s\n", de->d_name, back, holders);
	}
	if (d)
		closedir(d);
	f = fopen("/proc/self/mountinfo", "r");
	while (f && fgets(dir, sizeof(dir), f))
		if (strstr(dir, " - loop "))
			say("#   mount: %s", dir);
	if (f)
		fclose(f);
}

/*
 * After the last reference, removal may finish in a work item: wait up to
 * 30 s (a loaded TCG guest can be slow), and say how long it took.
 */
static int wait_clean(void)
{
	int ms = wait_loopfs_idle(30000);

	if (ms < 0)
		return -1;
	say("# clean after %d ms\n", ms);
	return 0;
}

static void parse_exclude(void)
{
	const char *ex = getenv("LOOPFS_FUZZ_EXCLUDE");
	char tmp[2048], *tok, *save;
	int i;

	if (!ex || !*ex)
		return;
	snprintf(tmp, sizeof(tmp), "%s", ex);
	for (tok = strtok_r(tmp, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
		for (i = 0; i < X_MAX; i++)
			if (!strcmp(tok, i < OP_MAX ? op_name[i] : x_name[i - OP_MAX]))
				excluded[i] = 1;
}

/*
 * The per-operation table: calls, successes and each errno with its count.
 * Counts the kinds not excluded (*kinds) and those that ran fewer than
 * min_ops times (*few); returns the total.
 */
static long print_table(int *few, long min_ops, int *kinds)
{
	char line[1024];
	long total = 0, n;
	int i, e;
	size_t len;

	say("# %-14s %7s %7s  %s\n", "op", "count", "ok", "errno:count");
	for (i = 0; i < OP_MAX; i++) {
		n = sh->ok[i] + sh->err[i];
		total += n;
		if (!excluded[i]) {
			(*kinds)++;
			if (n < min_ops)
				(*few)++;
		} else if (!n) {
			continue;
		}
		len = snprintf(line, sizeof(line), "# %-14s %7ld %7ld ", op_name[i],
			       n, sh->ok[i]);
		for (e = 0; e < NERRNO && len < sizeof(line) - 40; e++) {
			const char *name = e ? errno_name(e) : NULL;

			if (!sh->errs[i][e])
				continue;
			if (name)
				len += snprintf(line + len, sizeof(line) - len, " %s:%ld",
						name, sh->errs[i][e]);
			else
				len += snprintf(line + len, sizeof(line) - len, " errno%d:%ld",
						e, sh->errs[i][e]);
		}
		say("%s%s%s\n", line, excluded[i] ? "  (excluded)" : "",
		    !excluded[i] && n < min_ops ? "  (too few)" : "");
	}
	return total;
}

int main(int argc, char **argv)
{
	const char *e;
	uint64_t seed;
	int seconds, nprocs, i, status, hung = 0, died = 0, unmounted, clean;
	uid_t cuid;
	pid_t pids[MAXPROCS];
	time_t deadline, now;
	long total = 0, min_ops = 10;
	int few = 0, kinds = 0;

	/* argv[1], else LOOPFS_FUZZ_SECONDS, else 20 if LOOPFS_QUICK=1, else 120 */
	e = getenv("LOOPFS_QUICK");
	seconds = e && !strcmp(e, "1") ? 20 : 120;
	e = getenv("LOOPFS_FUZZ_SECONDS");
	if (e && *e)
		seconds = atoi(e);
	if (argc > 1)
		seconds = atoi(argv[1]);
	e = getenv("LOOPFS_FUZZ_SEED");
	if (e && *e)
		seed = strtoull(e, NULL, 0);
	else
		seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	e = getenv("LOOPFS_FUZZ_MIN_OPS");
	if (e && *e)
		min_ops = atol(e);
	trace = getenv("LOOPFS_FUZZ_TRACE") != NULL;
	parse_exclude();
	rs = seed ? seed : 1;
	nprocs = 2 + rnd(3);
	e = getenv("LOOPFS_FUZZ_PROCS");
	if (e && atoi(e) >= 1 && atoi(e) <= MAXPROCS)
		nprocs = atoi(e);

	tap_plan(7);
	say("# seed %llu (reproduce: LOOPFS_FUZZ_SEED=%llu), %d s, %d processes\n",
	    (unsigned long long)seed, (unsigned long long)seed, seconds, nprocs);
	for (i = 0; i < X_MAX; i++)
		if (excluded[i])
			say("# excluded: %s\n", i < OP_MAX ? op_name[i] : x_name[i - OP_MAX]);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	/* Our own mount namespace: nothing leaks into the runner's. */
	if (private_mntns()) {
		perror("unshare");
		return 2;
	}
	if (!getcwd(base, sizeof(base) - 64))
		return 2;
	strcat(base, "/fuzz");
	mkdir(base, 0755);
	for (i = 0; i < NINST; i++) {
		snprintf(mnt[i], sizeof(mnt[i]), "%s/i%d", base, i);
		mkdir(mnt[i], 0755);
		if (mount("loop", mnt[i], LOOPFS_FSTYPE, 0, "") == 0)
			sh->stack[i] = 1;
	}

	/* With 3 or more workers, the last one lives in a user namespace. */
	e = getenv("LOOPFS_UNPRIV_UID");
	cuid = nprocs >= 3 && e && atoi(e) > 0 ? (uid_t)atoi(e) : 0;
	if (cuid) {
		say("# worker %d: root of a user namespace (uid %u outside)\n",
		    nprocs - 1, cuid);
		chmod(".", 0755);	/* it must reach its own directory */
	}
	deadline = time(NULL) + seconds;
	for (i = 0; i < nprocs; i++) {
		sh->beat[i] = time(NULL);
		pids[i] = fork();
		if (pids[i] == 0)
			worker(i, nprocs, seed, deadline, i == nprocs - 1 ? cuid : 0);
	}
	/* Watchdog: a worker stuck in one call for 60 s is a hang. */
	for (;;) {
		int alive = 0;

		for (i = 0; i < nprocs; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &status, WNOHANG) == 0) {
				alive++;
				continue;
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				say("# worker %d died (status %#x) in: %s\n", i,
				    status, sh->cur[i]);
				died++;
			}
			pids[i] = 0;
		}
		if (!alive)
			break;
		now = time(NULL);
		for (i = 0; i < nprocs; i++)
			if (pids[i] > 0 && now - sh->beat[i] > 60 && !hung) {
				say("# worker %d stuck for %lds in: %s\n", i,
				    (long)(now - sh->beat[i]), sh->cur[i]);
				hung = 1;
			}
		if (hung && now > deadline + 120) {
			say("# giving up on stuck workers\n");
			break;
		}
		usleep(200000);
	}
	sh->stop = 1;

	total = print_table(&few, min_ops, &kinds);
	say("# ops: total %ld in %d s (seed %llu), %ld results judged against the model, %ld read-backs compared\n",
	    total, seconds, (unsigned long long)seed, sh->judged, sh->verified);
	for (i = 0; i < 2 * NDIAG; i++)
		if (i % NDIAG < sh->ndiag[i / NDIAG])
			say("# unexpected: %s\n", sh->diag[i / NDIAG][i % NDIAG]);
	tap(sh->unexpected == 0, "every chaos call succeeded or failed with an allowed errno (%ld unexpected)",
	    sh->unexpected);
	tap(sh->misjudged == 0 && sh->judged > 0 && sh->verified > 0,
	    "every call on a worker's own devices matched the model (%ld of %ld judged results wrong, %ld read-backs)",
	    sh->misjudged, sh->judged, sh->verified);
	tap(kinds > 0 && total > 0 && few == 0,
	    "each of the %d operation kinds not excluded ran at least %ld times (%d ran fewer)",
	    kinds, min_ops, few);
	tap(!hung && !died, "no worker stuck in a call or dead (%d died)", died);

	write_sysctl("255");
	unmounted = unmount_all();
	say("# unmounted %d instances\n", unmounted);
	clean = unmounted >= 0 && wait_clean() == 0;
	if (!clean) {
		say("# left behind: %d loopfs disks in /sys/block, refcnt %ld\n",
		    count_loopfs_disks(), loopfs_refcnt());
		show_leftovers();
	}
	tap(unmounted >= 0, "every instance unmounts");
	tap(clean, "no loopfs disk left in /sys/block, module refcount 0");
	tap(!hung && reload_loopfs() == 0, "rmmod loopfs and load it again");
	return sh->unexpected || sh->misjudged || !sh->judged || !sh->verified ||
	       few || !kinds || !total || hung || died || !clean ? 1 : 0;
}
