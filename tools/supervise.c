// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs-run: the mount(2) policy.
 *
 * For every notification a short-lived helper reads the arguments from the
 * caller's memory once and resolves the source and target in the caller's
 * context (it joins the caller's mount and user namespaces as their root and
 * chroots to the caller's root and cwd); the supervisor then re-validates
 * the notification.  Then:
 *  - remount, move, propagation changes, and sources that are not block
 *    devices: CONTINUE, the kernel judges them with the caller's privileges;
 *  - a block device of this container's loopfs instance, an allowed type,
 *    sane flags, a caller with CAP_SYS_ADMIN over the container's user
 *    namespace (not one it made) that could open the device itself for
 *    what the mount needs (reading, and writing unless read-only): the mount is
 *    made by a helper (host root for kernel filesystems, container root for
 *    FUSE helpers) from the instance's own node, with nosuid,nodev added and
 *    locked (and a kernel filesystem's ID-mapped, see idmap_mount()), and
 *    the result is the reply;
 *  - anything else: EPERM and a line on stderr.
 * A block-device mount is never CONTINUEd.
 *
 * The container can stall whatever touches its files or memory (a FUSE
 * daemon of its own that stops answering), so the supervisor itself never
 * does: helpers do, and every wait for one ends at its deadline (the helper
 * timeout) or when COMMAND exits, whichever comes first.  A helper that is
 * given up on is killed through its pidfd and reaped later, never waited
 * for: it may sit in an uninterruptible wait until the container's FUSE
 * daemons die at teardown.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include "mount_api.h"
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopfs-run.h"

#ifndef SYS_faccessat2
#define SYS_faccessat2		439	/* Linux 5.8, after older C libraries */
#endif
#define CAP_DAC_OVERRIDE_BIT	1
#define CAP_SYS_ADMIN_BIT	21
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof(*(a)))
/* helpers given up on and not reaped yet */
#define PENDING_MAX		64

/* Flags a filesystem mount made for the container may carry. */
#define MOUNT_FLAGS_OK	(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | \
			 MS_SYNCHRONOUS | MS_DIRSYNC | MS_NOATIME | \
			 MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME | \
			 MS_LAZYTIME | MS_SILENT | MS_NOSYMFOLLOW)
/* Operations on existing mounts: the source is not a device to mount. */
#define MOUNT_OPS_CONTINUE (MS_REMOUNT | MS_MOVE | MS_SHARED | MS_PRIVATE | \
			    MS_SLAVE | MS_UNBINDABLE)

/*
 * Options that name another device by path or number (external journals),
 * or make a filesystem error a kernel WARNING (a panic where panic_on_warn
 * is set).
 */
static const char *const denied_options[] = {
	"journal_dev", "journal_path", "device", "warn_on_error",
};

/*
 * Filesystems whose superblock carries an error behaviour (s_errors, as set
 * by "tune2fs -e panic") and default mount options (s_mount_opts, which may
 * say errors=panic or warn_on_error) that the kernel follows unless the
 * mount's own options say otherwise: an explicit option is applied after
 * both.
 */
static const char *const errors_in_superblock[] = {
	"ext2", "ext3", "ext4",
};

struct caller {
	pid_t pid;
	int mnt_fd, user_fd, pid_fd, root_fd, cwd_fd;
	int cwd_err;		/* errno of entering cwd_fd, for relative paths */
	bool cap_sys_admin;
	bool cap_dac_override;
	bool in_container_ns;	/* its user namespace is the container's own */
};

struct request {
	unsigned long flags;
	char source[PATH_MAX];
	char target[PATH_MAX];
	char type[256];
	char data[4096];
	bool has_type;
	bool unreadable;	/* source or target: the kernel will say EFAULT */
	bool have_strings;	/* the helper's copy arrived */
};

/* What the resolving helper found for source and target. */
struct resolved {
	int err[2];		/* 0 or the errno of opening it */
	struct stat st[2];
	/* the caller's own credentials may open the source for these */
	bool may_read, may_write;
};

struct helper {
	pid_t pid;		/* 0 once reaped */
	int pidfd;
	struct timespec deadline;
};

enum verdict { V_CONTINUE, V_REPLY, V_DROP };

static struct seccomp_notif *req;
static struct seccomp_notif_resp *resp;
static struct seccomp_notif_sizes sizes;
static struct helper pending[PENDING_MAX];
static int npending;
/*
 * Types of cfg.allow_fs (same index) that the kernel could not ID-map and
 * that were said so: shared with the helpers, which find it out.
 */
static bool *unmapped_noted;

int supervise_init(void)
{
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes))
		return -1;
	/* libseccomp allocates the larger of its and the kernel's sizes */
	if (sizes.seccomp_notif < sizeof(*req))
		sizes.seccomp_notif = sizeof(*req);
	if (sizes.seccomp_notif_resp < sizeof(*resp))
		sizes.seccomp_notif_resp = sizeof(*resp);
	unmapped_noted = mmap(NULL, MAX_LIST * sizeof(*unmapped_noted),
			      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			      -1, 0);
	if (unmapped_noted == MAP_FAILED)
		return -1;
	return seccomp_notify_alloc(&req, &resp) ? -1 : 0;
}

static int ms_left(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000LL +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : ms;
}

static void deadline_in(struct timespec *deadline, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, deadline);
	deadline->tv_sec += ms / 1000;
	deadline->tv_nsec += (ms % 1000) * 1000000L;
	if (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000L;
	}
}

/*
 * Reaps the helpers given up on that have exited, waiting at most
 * timeout_ms for the others.
 */
void reap_helpers(int timeout_ms)
{
	struct pollfd p[PENDING_MAX];
	struct timespec deadline;
	int i;

	deadline_in(&deadline, timeout_ms);
	for (;;) {
		for (i = 0; i < npending;) {
			if (!waitpid(pending[i].pid, NULL, WNOHANG)) {
				i++;
				continue;
			}
			if (pending[i].pidfd >= 0)
				close(pending[i].pidfd);
			pending[i] = pending[--npending];
		}
		if (!npending || !ms_left(&deadline))
			return;
		for (i = 0; i < npending; i++) {
			p[i].fd = pending[i].pidfd;
			p[i].events = POLLIN;
		}
		poll(p, npending, ms_left(&deadline));
	}
}

/* Reaps h if it has exited, else leaves it to reap_helpers(). */
static void helper_done(struct helper *h)
{
	if (h->pid > 0 && !waitpid(h->pid, NULL, WNOHANG)) {
		if (npending == PENDING_MAX)
			reap_helpers(0);
		if (npending < PENDING_MAX) {
			pending[npending++] = *h;
			return;
		}
		/* a zombie until we exit */
	}
	if (h->pidfd >= 0)
		close(h->pidfd);
	h->pid = 0;
	h->pidfd = -1;
}

/*
 * Forks a helper, due within the helper timeout: returns 0 in the helper,
 * 1 in the supervisor, or -errno.
 */
static int helper_fork(struct container *c, struct helper *h)
{
	int err;

	h->pidfd = -1;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		/* none may keep the listener alive when the supervisor dies */
		close(c->notify_fd);
		return 0;
	}
	deadline_in(&h->deadline, cfg.helper_timeout_ms);
	/* our child, not reaped yet: the pid cannot name another process */
	h->pidfd = syscall(SYS_pidfd_open, h->pid, 0);
	if (h->pidfd < 0) {
		err = errno;
		kill(h->pid, SIGKILL);
		helper_done(h);
		return -err;
	}
	return 1;
}

/*
 * Waits until fd is readable (the helper's answer) or, with fd < 0, until
 * the helper exits: at most until its deadline, and never past COMMAND's
 * exit.  Returns 0, or -ETIMEDOUT or -ECANCELED (COMMAND exited, c->exited
 * is set) once the helper is killed.
 */
static int helper_wait(struct container *c, struct helper *h, int fd)
{
	struct pollfd p[2] = {
		{ .fd = c->pidfd, .events = POLLIN },
		{ .fd = fd >= 0 ? fd : h->pidfd, .events = POLLIN },
	};
	int r;

	do
		r = poll(p, 2, ms_left(&h->deadline));
	while (r < 0 && errno == EINTR);
	if (r > 0 && !p[0].revents)
		return 0;
	if (r < 0) {
		r = -errno;
	} else if (r > 0) {
		c->exited = true;
		r = -ECANCELED;
	} else {
		r = -ETIMEDOUT;
	}
	syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0);
	return r;
}

/* The exit status of a helper that has exited (128 + signal if killed). */
static int helper_status(struct helper *h)
{
	int status;

	if (waitpid(h->pid, &status, WNOHANG) != h->pid)
		return -ECHILD;
	h->pid = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* Reads a NUL-terminated string at addr in the caller, page by page. */
static int read_string(int mem, unsigned long addr, char *buf, size_t size)
{
	size_t off = 0;

	while (off < size) {
		size_t chunk = 4096 - ((addr + off) & 4095);
		ssize_t n;

		if (chunk > size - off)
			chunk = size - off;
		n = pread(mem, buf + off, chunk, addr + off);
		if (n <= 0)
			return -EFAULT;
		if (memchr(buf + off, '\0', n))
			return 0;
		off += n;
	}
	buf[size - 1] = '\0';
	return -ENAMETOOLONG;
}

static void close_caller(struct caller *k)
{
	int *fds[] = { &k->mnt_fd, &k->user_fd, &k->pid_fd, &k->root_fd, &k->cwd_fd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(*fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/*
 * The caller's /proc status file. Its ids are as the user namespace of
 * whoever opens it sees them.
 */
static FILE *caller_status(struct container *c, struct caller *k)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "%d/status", k->pid);
	fd = openat(c->proc_fd, path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? NULL : fdopen(fd, "r");
}

static int open_caller(struct container *c, struct caller *k)
{
	static const struct { const char *name; int flags; size_t off; } files[] = {
		{ "ns/mnt", O_RDONLY, offsetof(struct caller, mnt_fd) },
		{ "ns/user", O_RDONLY, offsetof(struct caller, user_fd) },
		{ "ns/pid", O_RDONLY, offsetof(struct caller, pid_fd) },
		{ "root", O_PATH | O_DIRECTORY, offsetof(struct caller, root_fd) },
		{ "cwd", O_PATH | O_DIRECTORY, offsetof(struct caller, cwd_fd) },
	};
	unsigned long long capeff = 0;
	char path[64], line[256];
	struct stat st;
	size_t i;
	FILE *f;
	int fd;

	for (i = 0; i < sizeof(files) / sizeof(*files); i++) {
		snprintf(path, sizeof(path), "%d/%s", k->pid, files[i].name);
		fd = openat(c->proc_fd, path, files[i].flags | O_CLOEXEC);
		*(int *)((char *)k + files[i].off) = fd;
		if (fd < 0)
			return -errno;
	}
	f = caller_status(c, k);
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &capeff) == 1)
			break;
	}
	fclose(f);
	k->cap_sys_admin = capeff & (1ULL << CAP_SYS_ADMIN_BIT);
	k->cap_dac_override = capeff & (1ULL << CAP_DAC_OVERRIDE_BIT);
	/*
	 * CAP_SYS_ADMIN counts only over the container's user namespace: a
	 * user of the container has it in any namespace it makes itself.
	 */
	k->in_container_ns = !fstat(k->user_fd, &st) &&
			     st.st_dev == c->userns_dev &&
			     st.st_ino == c->userns_ino;
	return 0;
}

/* Joins the caller's mount and user namespaces as their root, no groups. */
static int enter_caller(struct caller *k, int user_fd, bool chroot_caller)
{
	if (setgroups(0, NULL) || setns(k->mnt_fd, CLONE_NEWNS) ||
	    setns(user_fd, CLONE_NEWUSER))
		return -errno;
	/*
	 * Root of that namespace if it is mapped; if not, the unmapped ids
	 * stay and the files of the namespace are "other" to us.
	 */
	if (setresgid(0, 0, 0) && errno != EINVAL)
		return -errno;
	if (setresuid(0, 0, 0) && errno != EINVAL)
		return -errno;
	if (chroot_caller && (fchdir(k->root_fd) || chroot(".")))
		return -errno;
	/*
	 * A working directory that the container's root may not search (the
	 * one loopfs-run was started in, such as /root) stops relative paths
	 * only, as it does in the caller's own lookups.
	 */
	if (chroot_caller && fchdir(k->cwd_fd))
		k->cwd_err = errno;
	return 0;
}

/*
 * In the resolving helper, still host root: the call's strings from the
 * caller's memory.  (A page the container backs by its own FUSE daemon
 * fails here at once: FUSE refuses requests from ids its user namespace
 * does not map.)
 */
static int read_request(struct container *c, struct caller *k,
			struct request *r)
{
	const struct seccomp_data *d = &req->data;
	char path[64];
	int mem;

	snprintf(path, sizeof(path), "%d/mem", k->pid);
	mem = openat(c->proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (mem < 0)
		return -errno;
	r->unreadable = read_string(mem, d->args[0], r->source, sizeof(r->source)) ||
			read_string(mem, d->args[1], r->target, sizeof(r->target));
	r->has_type = d->args[2] &&
		read_string(mem, d->args[2], r->type, sizeof(r->type)) == 0;
	if (d->args[4] && read_string(mem, d->args[4], r->data, sizeof(r->data)))
		r->data[0] = '\0';
	close(mem);
	return 0;
}

/* Opens path (O_PATH, following symlinks as mount(2) does) and stats it. */
static int open_path(const char *path, struct stat *st)
{
	int fd, err;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/*
 * In the resolving helper, root of the caller's user namespace: takes on
 * the caller's file system ids and groups, as that namespace sees them (the
 * status file opened from inside it), and with them its right to override
 * file modes or none. Returns 0, or -1 if it could not.
 */
static int become_caller(struct container *c, struct caller *k)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2] = { { 0 } };
	unsigned int fsuid = -1, fsgid = -1, gid;
	gid_t groups[64];
	char line[1024], *p;
	int n = 0, len;
	FILE *f;

	if (k->cap_dac_override && k->in_container_ns)
		return 0;	/* as root of the namespace, with its rights */
	f = caller_status(c, k);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %*u %*u %*u %u", &fsuid) == 1 ||
		    sscanf(line, "Gid: %*u %*u %*u %u", &fsgid) == 1)
			continue;
		if (strncmp(line, "Groups:", 7))
			continue;
		for (p = line + 7; n < (int)ARRAY_SIZE(groups) &&
		     sscanf(p, "%u%n", &gid, &len) == 1; p += len)
			groups[n++] = gid;
	}
	fclose(f);
	if (fsuid == -1U || fsgid == -1U)
		return -1;
	/* a namespace that may not set groups leaves the caller none */
	if (setgroups(n, groups) && setgroups(0, NULL) && errno != EPERM)
		return -1;
	if (setresgid(fsgid, fsgid, fsgid) || setresuid(fsuid, fsuid, fsuid))
		return -1;
	/* no capability left, even where the caller's ids are 0 */
	return syscall(SYS_capset, &hdr, none) ? -1 : 0;
}

/*
 * The resolving helper: sends the strings, then, in the caller's context,
 * the descriptors of source and target and what they are.
 */
static int resolver(struct container *c, struct caller *k, struct request *r,
		    int sock)
{
	struct resolved res;
	int out[2], n = 0, i;

	memset(&res, 0, sizeof(res));
	if (read_request(c, k, r) || send_fds(sock, r, sizeof(*r), NULL, 0))
		return 1;
	if (r->unreadable)
		return 0;
	if (enter_caller(k, k->user_fd, true))
		return 1;
	for (i = 0; i < 2; i++) {
		const char *path = i ? r->target : r->source;
		int fd = path[0] != '/' && k->cwd_err ? -k->cwd_err :
			 open_path(path, &res.st[i]);

		res.err[i] = fd < 0 ? -fd : 0;
		if (fd >= 0)
			out[n++] = fd;
	}
	/* last: the helper is not the namespace's root after it */
	if (!res.err[0] && S_ISBLK(res.st[0].st_mode) && !become_caller(c, k)) {
		res.may_read = !syscall(SYS_faccessat2, out[0], "", R_OK,
					AT_EMPTY_PATH | AT_EACCESS);
		res.may_write = !syscall(SYS_faccessat2, out[0], "", W_OK,
					 AT_EMPTY_PATH | AT_EACCESS);
	}
	return send_fds(sock, &res, sizeof(res), out, n) ? 1 : 0;
}

/*
 * Has a helper read the call's strings into r and open source and target in
 * the caller's context.  fds[] get the descriptors (or -1), res their errnos
 * and stats.  Returns 0; -EFAULT if the strings cannot be read; -ETIMEDOUT;
 * -ECANCELED (COMMAND exited); or another -errno.  r->have_strings says
 * whether the strings arrived, also on failure.
 */
static int resolve(struct container *c, struct caller *k, struct request *r,
		   int fds[2], struct resolved *res)
{
	struct helper h;
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	ret = helper_fork(c, &h);
	if (ret == 0) {
		close(sv[0]);
		_exit(resolver(c, k, r, sv[1]));
	}
	close(sv[1]);
	if (ret < 0)
		goto out;
	/* first the strings, then the descriptors */
	ret = helper_wait(c, &h, sv[0]);
	if (!ret)
		ret = recv_fds(sv[0], r, sizeof(*r), NULL, 0);
	if (ret)
		goto done;
	r->have_strings = true;
	if (r->unreadable) {
		ret = -EFAULT;
		goto done;
	}
	ret = helper_wait(c, &h, sv[0]);
	if (!ret)
		ret = recv_fds(sv[0], res, sizeof(*res), fds, 2);
	if (ret >= 0) {
		/* fds arrive packed: put them back in their slots */
		if (res->err[0] && ret == 1) {
			fds[1] = fds[0];
			fds[0] = -1;
		}
		ret = 0;
		/*
		 * It exits right away: waiting for that (bounded as ever)
		 * costs less than overlapping its exit with the next fork.
		 */
		if (!helper_wait(c, &h, -1))
			helper_status(&h);
	}
done:
	helper_done(&h);
out:
	close(sv[0]);
	return ret;
}

/* Finds the node of dev in the instance root; 0 and its name, or -ENOENT. */
static int instance_node(struct container *c, dev_t dev, char *name, size_t size)
{
	struct dirent *de;
	struct stat st;
	int fd, ret = -ENOENT;
	DIR *d;

	fd = openat(c->inst_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISBLK(st.st_mode) || st.st_rdev != dev)
			continue;
		snprintf(name, size, "%s", de->d_name);
		ret = 0;
		break;
	}
	closedir(d);
	return ret;
}

static const char *fuse_helper(const char *type)
{
	int i;

	for (i = 0; i < cfg.nfuse; i++) {
		if (!strcmp(cfg.fuse[i].type, type))
			return cfg.fuse[i].helper;
	}
	return NULL;
}

/* The index of type in cfg.allow_fs, or -1. */
static int fs_allowed(const char *type)
{
	int i;

	for (i = 0; i < cfg.nallow; i++) {
		if (!strcmp(cfg.allow_fs[i], type))
			return i;
	}
	return -1;
}

/* Says in why, and returns true, if an option in data may not be used. */
static bool option_refused(const char *data, char *why, size_t size)
{
	char buf[4096], *tok, *save;
	size_t i, len;

	snprintf(buf, sizeof(buf), "%s", data);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		len = strcspn(tok, "=");
		for (i = 0; i < ARRAY_SIZE(denied_options); i++) {
			if (strlen(denied_options[i]) == len &&
			    !strncmp(tok, denied_options[i], len)) {
				snprintf(why, size, "option %s not allowed",
					 denied_options[i]);
				return true;
			}
		}
		/* errors=panic, onerror=panic (ufs): whatever the filesystem */
		if (tok[len] && !strcasecmp(tok + len + 1, "panic")) {
			snprintf(why, size,
				 "option %.*s=panic not allowed: a filesystem error would halt the host",
				 (int)(len < 32 ? len : 32), tok);
			return true;
		}
	}
	return false;
}

static bool in_list(const char *type, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(type, list[i]))
			return true;
	}
	return false;
}

/* "VERB mount("SRC", "TGT", "TYPE", FLAGS) by pid N: WHY" on stderr */
static void log_mount(const struct caller *k, const struct request *r,
		      const char *verb, const char *why)
{
	char s[256], t[256], y[64];

	if (!r->have_strings) {
		logmsg("%s mount(2) by pid %d: %s", verb, k->pid, why);
		return;
	}
	printable(s, sizeof(s), r->source);
	printable(t, sizeof(t), r->target);
	printable(y, sizeof(y), r->has_type ? r->type : NULL);
	logmsg("%s mount(\"%s\", \"%s\", \"%s\", 0x%lx) by pid %d: %s",
	       verb, s, t, y, r->flags, k->pid, why);
}

static void log_fs_context(int fs)
{
	char buf[512];
	ssize_t n;

	while ((n = read(fs, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		logmsg("  kernel: %s", buf);
	}
}

static int fs_configure(int fs, const struct request *r)
{
	static const struct { unsigned long flag; const char *key; } sb_flags[] = {
		{ MS_RDONLY, "ro" }, { MS_SYNCHRONOUS, "sync" },
		{ MS_DIRSYNC, "dirsync" }, { MS_LAZYTIME, "lazytime" },
	};
	char buf[sizeof(r->data)], *tok, *save, *eq;
	bool errors_set = false;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sb_flags); i++) {
		if ((r->flags & sb_flags[i].flag) &&
		    fsconfig(fs, FSCONFIG_SET_FLAG, sb_flags[i].key, NULL, 0))
			return -errno;
	}
	/* what mount(2) hands to the filesystem, one option at a time */
	snprintf(buf, sizeof(buf), "%s", r->data);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (eq)
			*eq++ = '\0';
		if (fsconfig(fs, eq ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG,
			     tok, eq, 0))
			return -errno;
		if (!strcmp(tok, "errors"))
			errors_set = true;
	}
	/*
	 * errors=panic was refused; unless the caller chose continue or
	 * remount-ro, a superblock asking for panic must not have its way
	 */
	if (!in_list(r->type, errors_in_superblock, ARRAY_SIZE(errors_in_superblock)))
		return 0;
	if (!errors_set &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "errors", "remount-ro", 0))
		return -errno;
	/*
	 * ext4 also takes warn_on_error from the image's default mount
	 * options: the caller's is refused, the image's overridden. The
	 * ext2 driver (where ext4 does not serve ext2) has no such option.
	 */
	if (fsconfig(fs, FSCONFIG_SET_FLAG, "nowarn_on_error", NULL, 0) &&
	    strcmp(r->type, "ext2"))
		return -errno;
	return 0;
}

static unsigned int mount_attrs(unsigned long flags)
{
	unsigned int attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

	if (flags & MS_RDONLY)
		attr |= MOUNT_ATTR_RDONLY;
	if (flags & MS_NOEXEC)
		attr |= MOUNT_ATTR_NOEXEC;
	if (flags & MS_NOSYMFOLLOW)
		attr |= MOUNT_ATTR_NOSYMFOLLOW;
	if (flags & MS_NODIRATIME)
		attr |= MOUNT_ATTR_NODIRATIME;
	if (flags & MS_NOATIME)
		attr |= MOUNT_ATTR_NOATIME;
	else if (flags & MS_STRICTATIME)
		attr |= MOUNT_ATTR_STRICTATIME;
	return attr;
}

/*
 * Returns a copy of the detached mount mnt whose flags are locked
 * (MNT_LOCK_NOSUID, _NODEV, ...), so that the container cannot clear them
 * with a bind remount.  The kernel locks flags when it copies mounts into a
 * mount namespace of a less privileged user namespace: attach mnt in our
 * private namespace, copy that into a new user namespace, clone it there.
 */
static int locked_clone(int mnt)
{
	int sv[2], fd = -1, st;
	char ch;
	pid_t pid;

	if (move_mount(mnt, "", AT_FDCWD, "/dev", MOVE_MOUNT_F_EMPTY_PATH) ||
	    fchdir(mnt))
		return -errno;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int clone;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
			_exit(1);
		clone = open_tree(AT_FDCWD, ".", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		_exit(clone < 0 || send_fds(sv[1], "L", 1, &clone, 1));
	}
	close(sv[1]);
	if (recv_fds(sv[0], &ch, 1, &fd, 1) != 1)
		fd = -EIO;
	close(sv[0]);
	st = wait_child(pid, cfg.helper_timeout_ms);
	if (fd >= 0 && st) {
		close(fd);
		fd = -EIO;
	}
	return fd;
}

/* Is host uid id one that the container's user namespace maps? */
static bool host_uid_mapped(uid_t id)
{
	unsigned int in, out, n;
	int i;

	if (id == cfg.uid)
		return true;
	for (i = 0; i < cfg.nmaps; i++) {
		if (sscanf(cfg.maps[i], "%u:%u:%u", &in, &out, &n) == 3 &&
		    id >= out && id - out < n)
			return true;
	}
	return false;
}

/*
 * Shows the filesystem of the detached mount mnt through the container's user
 * namespace (an ID-mapped mount), so that the ids the container wrote are its
 * own: on-disk 0 is the container's root, on-disk 1000 its uid 1000.  When the
 * root directory belongs to a host uid that the container maps, the host
 * prepared that image for this container, in host ids: it is shown through
 * the namespace of those host ids, each to itself (host_ids_userns()).  A
 * type that the kernel cannot ID-map (no FS_ALLOW_IDMAP: EINVAL) is mounted
 * as it is, and said so once; so is every type on a kernel without ID-mapped
 * mounts (ENOSYS).  Returns 0 or an errno.
 */
static int idmap_mount(struct container *c, const struct request *r, int mnt)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP,
		.userns_fd = c->userns_fd,
	};
	struct stat st;
	int i;

	if (fstat(mnt, &st))
		return errno;
	if (host_uid_mapped(st.st_uid)) {
		vlog("%s: root directory of host uid %u, mapped: host ids kept",
		     r->type, st.st_uid);
		attr.userns_fd = c->host_ids_fd;
	}
	if (!mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)))
		return 0;
	/* ENOSYS: a kernel before ID-mapped mounts (5.12) maps no type. */
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	i = fs_allowed(r->type);
	if (i >= 0 && !unmapped_noted[i]) {
		unmapped_noted[i] = true;
		logmsg(
		       "%s cannot be ID-mapped by this kernel: mounted with its on-disk ids as host ids, so files the container makes show as nobody (--fuse %s=HELPER mounts it with the container's ids)",
		       r->type, r->type);
	}
	return 0;
}

/*
 * Makes the root a private tmpfs holding one node: the checked device, at the
 * path the caller named (or /dev/loopfs/NODE), so that mountinfo shows the
 * usual source and nothing else can be named, also by options taking a path.
 * The caller's path is kept only if it ends in the node's own name: a
 * link named /dev/sda to the container's loop0 must not make its mount
 * read as the host's disk to whoever reads mountinfo.
 */
static int source_root(const struct request *r, const char *node, dev_t rdev,
		       char *src, size_t size)
{
	const char *s = r->source, *base = strrchr(s, '/');
	size_t len = strlen(s);
	char *p;

	if (s[0] == '/' && len > 1 && len < size && s[len - 1] != '/' &&
	    !strstr(s, "/.") && !strstr(s, "//") && !strcmp(base + 1, node))
		snprintf(src, size, "%s", s);
	else
		snprintf(src, size, "/dev/loopfs/%s", node);
	if (mount("loopfs-run", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=700") ||
	    chdir("/dev") || chroot("."))
		return -1;
	for (p = strchr(src + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(src, 0700) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mknod(src, S_IFBLK | 0600, rdev);
}

/*
 * In the kernel-mount helper, confined to the device: creates the superblock
 * from a private root holding the device's node only.  Returns 0 or an
 * errno.
 */
static int create_superblock(const struct caller *k, const struct request *r,
			     int fs, const char *node, dev_t rdev)
{
	char source[PATH_MAX];
	int err;

	if (source_root(r, node, rdev, source, sizeof(source)))
		return errno;
	/* the device program is in force: a node of any other device is refused */
	if (!mknod("/.probe", S_IFCHR | 0600, makedev(1, 3)) || errno != EPERM) {
		log_mount(k, r, "denied", "the device program does not confine the kernel mount");
		return EPERM;
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", source, 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		err = errno;
		log_fs_context(fs);
		return err;
	}
	return 0;
}

/*
 * In the helper: creates the filesystem from the instance node and attaches
 * it.  This and fuse_mount() return 0 or a positive errno: the helper's exit
 * status, which perform() turns into the reply.
 */
static int kernel_mount(struct container *c, struct caller *k,
			const struct request *r, const char *node, dev_t rdev,
			int tgt)
{
	struct confinement cf = { .parent = -1, .dir = -1 };
	int host_root, dev, fs, mnt, clone, err;
	struct stat st, mapped;
	char why[192];

	/* held open, the device cannot be removed and its dev_t reused */
	dev = openat(c->inst_fd, node, O_RDONLY | O_CLOEXEC);
	if (dev < 0 || fstat(dev, &st))
		return errno;
	if (st.st_rdev != rdev)
		return EBUSY;	/* the node was replaced meanwhile */
	fs = fsopen(r->type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return errno;
	if (fs_configure(fs, r)) {
		err = errno;
		log_fs_context(fs);
		return err;
	}
	/* a private mount namespace; its root (not the host's) to come back to */
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return errno;
	host_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (host_root < 0)
		return errno;
	/*
	 * Creating the superblock may open other block devices that the image
	 * names (an external journal), as host root: only this one may be.
	 */
	err = confine_devices(&cf, c->supervisor, rdev);
	if (err) {
		snprintf(why, sizeof(why), "cannot confine the kernel mount to its device: %s: %s",
			 cf.what, strerror(-err));
		log_mount(k, r, "denied", why);
		unconfine(&cf);
		return EPERM;
	}
	err = create_superblock(k, r, fs, node, rdev);
	unconfine(&cf);
	if (err)
		return err;
	if (fchdir(host_root) || chroot("."))
		return errno;
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, mount_attrs(r->flags));
	if (mnt < 0)
		return errno;
	/* only a mount never attached anywhere can be ID-mapped */
	err = idmap_mount(c, r, mnt);
	if (err)
		return err;
	if (fstat(mnt, &mapped))
		return errno;
	clone = locked_clone(mnt);
	if (clone < 0)
		return -clone;
	/* clone_mnt() carries the ID mapping over: the root shows alike */
	if (fstat(clone, &st) || st.st_uid != mapped.st_uid ||
	    st.st_gid != mapped.st_gid) {
		log_mount(k, r, "denied", "the locked copy of the mount lost its ID mapping");
		return EPERM;
	}
	if (setns(k->mnt_fd, CLONE_NEWNS) ||
	    move_mount(clone, "", tgt, "",
		       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH))
		return errno;
	return 0;
}

/* In the helper: runs the FUSE helper as root of the container. */
static int fuse_mount(struct container *c, struct caller *k,
		      const struct request *r, const char *helper, int src)
{
	char opts[sizeof(r->data) + 64], dev[64], fdpath[32], tgt[256];
	char *argv[] = { (char *)helper, dev, (char *)r->target, "-o", opts, NULL };
	struct stat before, after;
	int owner, fd, st;
	pid_t pid;

	/* the PID namespace first: its owner may be an ancestor namespace */
	owner = ioctl(k->mnt_fd, NS_GET_USERNS);
	if (owner < 0 || setns(k->pid_fd, CLONE_NEWPID) ||
	    enter_caller(k, owner, false))
		return EPERM;
	/* an absolute target needs no working directory (see enter_caller()) */
	if (fchdir(k->root_fd) || chroot(".") ||
	    (fchdir(k->cwd_fd) && r->target[0] != '/'))
		return EIO;
	if (stat(r->target, &before))
		return errno;
	pid = fork();	/* the child is in the container's PID namespace */
	if (pid < 0)
		return errno;
	if (pid) {
		st = wait_child(pid, cfg.helper_timeout_ms);
		if (st)
			return EIO;
		/*
		 * Some helpers exit 0 when they mounted nothing (fuse2fs on a
		 * target that is not empty): mount(2) must not succeed then.
		 */
		if (!stat(r->target, &after) && after.st_dev != before.st_dev)
			return 0;
		printable(tgt, sizeof(tgt), r->target);
		logmsg("%s: %s exited without mounting it", tgt, helper);
		return EIO;
	}
	/* reopen the very node that was checked, with the container's rights */
	snprintf(fdpath, sizeof(fdpath), "self/fd/%d", src);
	fd = openat(c->proc_fd, fdpath, r->flags & MS_RDONLY ? O_RDONLY : O_RDWR);
	if (fd < 0) {
		logmsg("fuse: reopen device: %m");
		_exit(1);
	}
	snprintf(dev, sizeof(dev), "/proc/self/fd/%d", fd);
	snprintf(opts, sizeof(opts), "nosuid,nodev%s%s%s",
		 r->flags & MS_RDONLY ? ",ro" : "", r->data[0] ? "," : "", r->data);
	close(STDIN_FILENO);
	if (open("/dev/null", O_RDONLY) != STDIN_FILENO ||
	    dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		_exit(1);
	clearenv();
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
	execvp(helper, argv);
	logmsg("fuse: exec %s: %m", helper);
	_exit(1);
}

/* Returns 0 or the errno of the mount, ETIMEDOUT, ECANCELED (COMMAND exited). */
static int perform(struct container *c, struct caller *k, const struct request *r,
		   const char *node, dev_t rdev, const char *helper, int src, int tgt)
{
	struct helper h;
	int st;

	if (!helper && c->janitor < 0) {
		c->janitor = start_janitor(c->supervisor, &c->janitor_pid);
		if (c->janitor < 0)
			return -c->janitor;
	}
	st = helper_fork(c, &h);
	if (st < 0)
		return -st;
	if (st == 0)
		_exit(helper ? fuse_mount(c, k, r, helper, src) :
			       kernel_mount(c, k, r, node, rdev, tgt));
	st = helper_wait(c, &h, -1);
	if (!st)
		st = helper_status(&h);
	helper_done(&h);
	if (st < 0)
		return -st;
	return st >= 128 ? EIO : st;
}

static enum verdict refuse(struct caller *k, const struct request *r, int *err,
			   int errnum, const char *why)
{
	log_mount(k, r, errnum == EPERM ? "denied" : "failed", why);
	*err = errnum;
	return V_REPLY;
}

static enum verdict deny(struct caller *k, const struct request *r, int *err,
			 const char *why)
{
	return refuse(k, r, err, EPERM, why);
}

static enum verdict timed_out(struct caller *k, const struct request *r,
			      int *err, const char *helper)
{
	char why[128];

	snprintf(why, sizeof(why), "the %s helper timed out after %d s",
		 helper, cfg.helper_timeout_ms / 1000);
	return refuse(k, r, err, ETIMEDOUT, why);
}

/* Is the block device read-only (a loop device bound read-only)? */
static bool device_read_only(dev_t dev)
{
	char path[64], ch = '0';
	int fd;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/ro", major(dev),
		 minor(dev));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, &ch, 1) != 1)
		ch = '0';
	close(fd);
	return ch == '1';
}

/*
 * A read-only loop device that the caller mounts with MS_RDONLY: was that
 * asked for, or did losetup fall back to a read-only device because the
 * container may not write the image?  mount -o loop then adds MS_RDONLY on
 * its own and says nothing.  A helper asks the kernel whether the
 * container's root may open the backing file for writing: true if not.
 */
static bool write_protected(struct container *c, dev_t dev)
{
	char path[PATH_MAX + 16];
	struct helper h;
	ssize_t n;
	int fd, st;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/loop/backing_file",
		 major(dev), minor(dev));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, path, sizeof(path) - 1);
	close(fd);
	if (n <= 1 || path[n - 1] != '\n')
		return false;
	path[n - 1] = '\0';
	st = helper_fork(c, &h);
	if (st < 0)
		return false;
	if (st == 0) {
		/* the host's paths, with the rights of the container's root */
		if (setgroups(0, NULL) || setns(c->userns_fd, CLONE_NEWUSER) ||
		    setresgid(0, 0, 0) || setresuid(0, 0, 0))
			_exit(2);
		if (!faccessat(AT_FDCWD, path, W_OK, AT_EACCESS))
			_exit(0);
		_exit(errno == EACCES || errno == EROFS || errno == EPERM ? 1 : 2);
	}
	st = helper_wait(c, &h, -1);
	if (!st)
		st = helper_status(&h);
	helper_done(&h);
	return st == 1;
}

static enum verdict decide_block(struct container *c, struct caller *k,
				 struct request *r, const struct resolved *res,
				 int fds[2], int *err)
{
	const struct stat *st = &res->st[0];
	char node[NAME_MAX + 1], why[128], tgt[256];
	bool forced_ro = false;
	const char *helper;

	if (r->flags & MS_BIND)
		return deny(k, r, err, "bind mount of a block device node");
	if (!k->cap_sys_admin || !k->in_container_ns)
		return deny(k, r, err, "caller lacks CAP_SYS_ADMIN over the container's user namespace");
	if (instance_node(c, st->st_rdev, node, sizeof(node)))
		return deny(k, r, err, "not a device of this container's loopfs instance");
	helper = r->has_type ? fuse_helper(r->type) : NULL;
	if (!helper && (!r->has_type || fs_allowed(r->type) < 0))
		return deny(k, r, err, "filesystem type not allowed");
	if (r->flags & ~MOUNT_FLAGS_OK) {
		snprintf(why, sizeof(why), "mount flags 0x%lx not allowed",
			 r->flags & ~MOUNT_FLAGS_OK);
		return deny(k, r, err, why);
	}
	if (option_refused(r->data, why, sizeof(why)))
		return deny(k, r, err, why);
	if (fds[1] < 0) {
		*err = res->err[1];
		return V_REPLY;
	}
	/*
	 * A read-only device mounts read-only; as mount(8) does when it falls
	 * back, say so unless the caller asked for it.
	 */
	if (device_read_only(st->st_rdev)) {
		forced_ro = !(r->flags & MS_RDONLY) ||
			    write_protected(c, st->st_rdev);
		r->flags |= MS_RDONLY;
	}
	/* what the caller could not open itself, it does not mount either */
	if (!res->may_read || (!(r->flags & MS_RDONLY) && !res->may_write))
		return deny(k, r, err, r->flags & MS_RDONLY ?
			    "caller may not open the device for reading" :
			    "caller may not open the device for reading and writing");
	/* the caller may have been killed while we looked */
	if (seccomp_notify_id_valid(c->notify_fd, req->id))
		return V_DROP;
	*err = perform(c, k, r, node, st->st_rdev, helper, fds[0], fds[1]);
	if (c->exited)
		return V_DROP;
	if (*err == ETIMEDOUT)
		return timed_out(k, r, err, "mount");
	if (!*err && forced_ro) {
		printable(tgt, sizeof(tgt), r->target);
		logmsg("%s: WARNING: source write-protected, mounted read-only", tgt);
	}
	vlog("%s mount of %s (%s) on %s by pid %d: %s", helper ? helper : "kernel",
	     node, r->type, r->target, k->pid, *err ? strerror(*err) : "done");
	return V_REPLY;
}

static enum verdict decide(struct container *c, struct caller *k,
			   struct request *r, int *err)
{
	const struct seccomp_data *d = &req->data;
	int fds[2] = { -1, -1 }, ret;
	struct resolved res;
	enum verdict v;

	r->flags = d->args[3];
	if ((r->flags & MS_MGC_MSK) == MS_MGC_VAL)
		r->flags &= ~MS_MGC_MSK;
	/* flags are a register: what we see is what the kernel gets */
	if ((r->flags & MOUNT_OPS_CONTINUE) || !d->args[0] || !d->args[1])
		return V_CONTINUE;

	if (open_caller(c, k))
		return V_DROP;
	ret = resolve(c, k, r, fds, &res);
	if (c->exited) {
		v = V_DROP;
	} else if (ret == -ETIMEDOUT) {
		v = timed_out(k, r, err, "path-resolving");
	} else if (seccomp_notify_id_valid(c->notify_fd, req->id)) {
		/* the caller is gone: what was read and opened may not be its */
		v = V_DROP;
	} else if (ret == -EFAULT) {
		/* unreadable strings: the kernel will say EFAULT itself */
		v = V_CONTINUE;
	} else if (ret) {
		v = deny(k, r, err, "cannot resolve the paths in the caller's context");
	} else if (fds[0] < 0 || !S_ISBLK(res.st[0].st_mode)) {
		v = V_CONTINUE;
	} else {
		v = decide_block(c, k, r, &res, fds, err);
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return v;
}

void handle_notification(struct container *c)
{
	static struct request r;
	struct caller k = { .mnt_fd = -1, .user_fd = -1, .pid_fd = -1,
			    .root_fd = -1, .cwd_fd = -1 };
	enum verdict v;
	int err = 0;

	/* the kernel wants a zeroed buffer of its own size */
	memset(req, 0, sizes.seccomp_notif);
	if (seccomp_notify_receive(c->notify_fd, req))
		return;	/* the caller is gone */
	memset(&r, 0, sizeof(r));
	k.pid = req->pid;
	v = decide(c, &k, &r, &err);
	close_caller(&k);
	/* helpers given up on earlier that have exited since */
	reap_helpers(0);
	if (v == V_DROP)
		return;
	memset(resp, 0, sizes.seccomp_notif_resp);
	resp->id = req->id;
	if (v == V_CONTINUE) {
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		vlog("mount by pid %d: continue in the kernel", k.pid);
	} else {
		resp->error = -err;
	}
	seccomp_notify_respond(c->notify_fd, resp);
}
