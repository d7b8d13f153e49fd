// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs-run: confine a kernel-mount helper to the one block device it
 * mounts.
 *
 * A filesystem may open other block devices while its superblock is being
 * created, named by the image itself rather than by an option: ext4 opens an
 * external journal by the device number in its superblock (s_journal_dev,
 * or journal_dev= in s_mount_opts), read-write and exclusively.  The
 * container can rewrite its image between any look the supervisor takes and
 * the mount, so the limit has to be the kernel's: every block device opened
 * by number passes the device cgroup check of the opening task
 * (devcgroup_check_permission()), which on cgroup v2 runs the
 * BPF_PROG_TYPE_CGROUP_DEVICE programs of that task's cgroup.  The helper
 * therefore creates its superblock alone in a cgroup of its own whose
 * program allows that one device and nothing else.
 *
 * The cgroup is a child of the helper's own cgroup, named
 * loopfs-run.<supervisor pid>.<helper pid>.  The cgroup2 hierarchy is
 * reached through /sys/fs/cgroup when that is a cgroup2 mount; otherwise
 * the helper enters a cgroup namespace of its own (rooted at its cgroup) and
 * makes a detached cgroup2 mount there: nothing is attached to any mount
 * namespace, and a cgroup2 mount made in the initial cgroup namespace would
 * reset the hierarchy's mount options (nsdelegate, ...) for the whole host.
 *
 * A helper removes its cgroup when it is done. One killed inside it leaves
 * it behind, which the supervisor removes at teardown; but when the
 * supervisor dies too (SIGKILL to its process group, as timeout(1) and
 * service managers send), nobody would. So the supervisor forks a janitor
 * before its first kernel-mount helper, in a session of its own: it waits
 * until the supervisor and every helper have exited (the write end of a
 * pipe they all hold is closed) and then removes their cgroups.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mount_api.h"
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopfs-run.h"

#define CGROUP_PREFIX	"loopfs-run."

/* The helper's cgroup (relative to its cgroup namespace), or "/". */
static int own_cgroup(char *path, size_t size)
{
	char line[PATH_MAX + 8];
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	/* no "0::" line: cgroup2 was never mounted, all tasks are in its root */
	snprintf(path, size, "/");
	while (fgets(line, sizeof(line), f)) {
		size_t len;

		if (strncmp(line, "0::", 3))
			continue;
		len = strcspn(line + 3, "\n");
		if (len >= size) {
			fclose(f);
			return -ENAMETOOLONG;
		}
		memcpy(path, line + 3, len);
		path[len] = '\0';
		break;
	}
	fclose(f);
	return 0;
}

/*
 * Opens the directory of the caller's cgroup in the cgroup2 hierarchy;
 * path gets the cgroup as /proc/self/cgroup will show it from now on.
 */
static int open_cgroup_dir(char *path, size_t size)
{
	struct statfs sfs;
	int fs, mnt, dir, err;

	err = own_cgroup(path, size);
	if (err) {
		errno = -err;
		return -1;
	}
	if (!statfs("/sys/fs/cgroup", &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC) {
		fs = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fs < 0)
			return -1;
		dir = openat(fs, path[1] ? path + 1 : ".",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		err = errno;
		close(fs);
		errno = err;
		return dir;
	}
	if (unshare(CLONE_NEWCGROUP))
		return -1;
	snprintf(path, size, "/");
	fs = fsopen("cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		err = errno;
		close(fs);
		errno = err;
		return -1;
	}
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
		      MOUNT_ATTR_NOEXEC);
	err = errno;
	close(fs);
	if (mnt < 0) {
		errno = err;
		return -1;
	}
	dir = openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = errno;
	close(mnt);
	errno = err;
	return dir;
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), \
	.src_reg = (s), .off = (o), .imm = (i) })

/* A device program allowing block device dev, any access, and nothing else. */
static int load_program(dev_t dev)
{
	const struct bpf_insn insns[] = {
		/* r2 = ctx->access_type & 0xffff, the device type */
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1,
		     offsetof(struct bpf_cgroup_dev_ctx, access_type), 0),
		INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff),
		INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 6, BPF_DEVCG_DEV_BLOCK),
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1,
		     offsetof(struct bpf_cgroup_dev_ctx, major), 0),
		INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 4, major(dev)),
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1,
		     offsetof(struct bpf_cgroup_dev_ctx, minor), 0),
		INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 2, minor(dev)),
		/* allow */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		/* deny */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (unsigned long)insns;
	attr.insn_cnt = sizeof(insns) / sizeof(*insns);
	attr.license = (unsigned long)"GPL";
	return syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

static int attach_program(int cgroup, int prog)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.target_fd = cgroup;
	attr.attach_bpf_fd = prog;
	attr.attach_type = BPF_CGROUP_DEVICE;
	/* runs after, and as well as, the programs of the cgroups above */
	attr.attach_flags = BPF_F_ALLOW_MULTI;
	return syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr));
}

/* Moves the calling process into the cgroup dir. */
static int enter_cgroup(int dir)
{
	int fd, ret = 0;

	fd = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	/* "0" is the writing process */
	if (write(fd, "0", 1) != 1)
		ret = -1;
	close(fd);
	return ret;
}

static bool is_helper_cgroup(const char *name, pid_t *supervisor)
{
	int pid, helper, end = 0;

	if (sscanf(name, CGROUP_PREFIX "%d.%d%n", &pid, &helper, &end) != 2 ||
	    name[end])
		return false;
	*supervisor = pid;
	return true;
}

/*
 * Removes the helper cgroups of supervisor sup below dir, or, with sup 0,
 * those whose supervisor is gone (killed before it could clean up).
 * Returns how many are left.
 */
static int remove_cgroups(int dir, pid_t sup)
{
	struct dirent *de;
	int fd, left = 0;
	pid_t owner;
	DIR *d;

	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!is_helper_cgroup(de->d_name, &owner))
			continue;
		if (sup ? owner != sup : !kill(owner, 0) || errno != ESRCH)
			continue;
		if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) && errno != ENOENT)
			left++;
	}
	closedir(d);
	return left;
}

int confine_devices(struct confinement *cf, pid_t sup, dev_t dev)
{
	char path[PATH_MAX], want[PATH_MAX + NAME_MAX + 2], name[64];
	int prog, ret;

	cf->parent = open_cgroup_dir(path, sizeof(path));
	if (cf->parent < 0) {
		cf->what = "open the helper's cgroup2 directory";
		return -errno;
	}
	remove_cgroups(cf->parent, 0);
	snprintf(name, sizeof(name), CGROUP_PREFIX "%d.%d", sup, getpid());
	if (mkdirat(cf->parent, name, 0700)) {
		cf->what = "create a cgroup";
		return -errno;
	}
	memcpy(cf->name, name, sizeof(name));
	cf->dir = openat(cf->parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cf->dir < 0) {
		cf->what = "open the new cgroup";
		return -errno;
	}
	prog = load_program(dev);
	if (prog < 0) {
		cf->what = "load the device program";
		return -errno;
	}
	ret = attach_program(cf->dir, prog);
	ret = ret ? -errno : 0;
	close(prog);
	if (ret) {
		cf->what = "attach the device program";
		return ret;
	}
	if (enter_cgroup(cf->dir)) {
		cf->what = "enter the new cgroup";
		return -errno;
	}
	cf->entered = true;
	/* the kernel must now show us where we meant to be */
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s",
		 path[1] ? "/" : "", name);
	if (own_cgroup(want, sizeof(want)) || strcmp(path, want)) {
		cf->what = "find the helper in its new cgroup";
		return -EXDEV;
	}
	return 0;
}

void unconfine(struct confinement *cf)
{
	if (cf->entered && enter_cgroup(cf->parent))
		logmsg("cannot leave cgroup %s: %m", cf->name);
	cf->entered = false;
	if (cf->dir >= 0)
		close(cf->dir);
	cf->dir = -1;
	if (cf->name[0] && unlinkat(cf->parent, cf->name, AT_REMOVEDIR))
		logmsg("cannot remove cgroup %s: %m", cf->name);
	cf->name[0] = '\0';
	if (cf->parent >= 0)
		close(cf->parent);
	cf->parent = -1;
}

static void remove_helper_cgroups(pid_t sup, int timeout_ms)
{
	char path[PATH_MAX];
	struct timespec ts = { 0, 20 * 1000000L };
	int dir, left, i;

	dir = open_cgroup_dir(path, sizeof(path));
	if (dir < 0) {
		logmsg("cannot look for the helpers' cgroups: %m");
		return;
	}
	/* a killed helper may take a moment to leave its cgroup */
	for (i = 0; (left = remove_cgroups(dir, sup)) && i < timeout_ms / 20; i++)
		nanosleep(&ts, NULL);
	if (left)
		logmsg("%d helper cgroup(s) " CGROUP_PREFIX "%d.* still in use in %s",
		       left, sup, path);
	close(dir);
}

int start_janitor(pid_t sup, pid_t *pid)
{
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (*pid) {
		close(p[0]);
		return p[1];
	}
	/* nothing of the supervisor's kept alive: above all not its listener */
	if (dup2(p[0], 3) < 0 || syscall(__NR_close_range, 4, ~0U, 0))
		_exit(1);
	/* it ends by itself, once there is nothing left to remove */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	while (read(3, &c, 1) < 0 && errno == EINTR)
		;
	remove_helper_cgroups(sup, 5000);
	_exit(0);
}

void stop_janitor(int fd, pid_t pid)
{
	struct timespec ts = { 0, 10 * 1000000L };
	int i;

	close(fd);
	/* at once, unless a helper lives on: then the janitor waits for it */
	for (i = 0; i < 200 && !waitpid(pid, NULL, WNOHANG); i++)
		nanosleep(&ts, NULL);
}
