// SPDX-License-Identifier: GPL-2.0
/*
 * Helper of tests/security/host.sh: the system calls the shell cannot make
 * by itself. Every command prints "ok" (or a result) on success, otherwise
 * the errno's name, and exits non-zero on failure.
 *
 *   host-tool remount PATH OPTIONS      mount(2) MS_REMOUNT with OPTIONS
 *   host-tool ctl-add CONTROL           LOOP_CTL_ADD(-1), prints the index
 *   host-tool set-partscan DEVICE       LOOP_SET_STATUS64 adding PARTSCAN
 *   host-tool flags DEVICE              lo_flags from LOOP_GET_STATUS64
 *   host-tool opener-write UID VALUE    (as root) open max_loop_devices as
 *                                       UID, become root again, write VALUE
 *   host-tool ns-fill UID N VALUE UID2  (as root) N processes of UID each
 *                                       set VALUE in a user namespace of
 *                                       their own and stay alive; then UID2
 *                                       sets and reads its own value
 *   host-tool sysctl-bpf CGROUP         attach to the cgroup v2 directory
 *                                       CGROUP a BPF_CGROUP_SYSCTL program
 *                                       that allows every access, as a
 *                                       security agent's would (the kernel
 *                                       then reads each sysctl's value for
 *                                       it before the access)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/loop.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "loopfs_test.h"
#include "loopfs_abi.h"

static int fail(void)
{
	const char *name = errno_name(errno);

	printf("%s\n", name ? name : "unknown errno");
	return 1;
}

static int cmd_remount(const char *path, const char *opts)
{
	if (mount(NULL, path, NULL, MS_REMOUNT, opts))
		return fail();
	printf("ok\n");
	return 0;
}

static int cmd_ctl_add(const char *ctl)
{
	int fd = open(ctl, O_RDWR | O_CLOEXEC);
	int idx;

	if (fd < 0)
		return fail();
	idx = ioctl(fd, LOOP_CTL_ADD, -1);
	if (idx < 0)
		return fail();
	printf("%d\n", idx);
	return 0;
}

static int get_status(const char *dev, int *fd, struct loop_info64 *info)
{
	*fd = open(dev, O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		return -1;
	return ioctl(*fd, LOOP_GET_STATUS64, info);
}

static int cmd_set_partscan(const char *dev)
{
	struct loop_info64 info;
	int fd;

	if (get_status(dev, &fd, &info))
		return fail();
	info.lo_flags |= LO_FLAGS_PARTSCAN;
	if (ioctl(fd, LOOP_SET_STATUS64, &info))
		return fail();
	printf("ok\n");
	return 0;
}

static int cmd_flags(const char *dev)
{
	struct loop_info64 info;
	int fd;

	if (get_status(dev, &fd, &info))
		return fail();
	printf("%u\n", info.lo_flags);
	return 0;
}

/* Write @value to @fd from the start; 0 or -1 with errno. */
static int write_value(int fd, const char *value)
{
	ssize_t n = pwrite(fd, value, strlen(value), 0);

	if (n < 0)
		return -1;
	if (n != (ssize_t)strlen(value)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int cmd_opener_write(uid_t uid, const char *value)
{
	int fd;

	if (setresuid(uid, uid, 0))
		return fail();
	fd = open(LOOPFS_SYSCTL_PATH, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fail();
	if (setresuid(0, 0, 0))
		return fail();
	if (write_value(fd, value))
		return fail();
	printf("ok\n");
	return 0;
}

/* In a fresh user namespace as @uid, write @value; 0 or an errno. */
static int set_in_own_ns(uid_t uid, const char *value, int check)
{
	char buf[32];
	ssize_t n;
	int fd;

	if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return errno;
	if (unshare(CLONE_NEWUSER))
		return errno;
	fd = open(LOOPFS_SYSCTL_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write_value(fd, value))
		return errno;
	if (!check)
		return 0;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return errno;
	buf[n] = 0;
	if (atoi(buf) != atoi(value)) {
		fprintf(stderr, "read back %s", buf);
		return EIO;
	}
	return 0;
}

static int cmd_ns_fill(uid_t uid, int n, const char *value, uid_t uid2)
{
	int hold[2], res[2], i, done = 0, err = 0, status;
	pid_t pid;

	if (pipe(hold) || pipe(res))
		return fail();
	for (i = 0; i < n; i++) {
		pid = fork();
		if (pid < 0)
			break;
		if (!pid) {
			char c;

			close(hold[1]);
			err = set_in_own_ns(uid, value, 0);
			if (write(res[1], &err, sizeof(err)) != sizeof(err))
				_exit(1);
			/* Keep the namespace alive until the parent lets go. */
			while (read(hold[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		if (read(res[0], &err, sizeof(err)) != sizeof(err))
			err = EPROTO;
		if (err)
			break;
		done++;
	}
	printf("filled %d of %d", done, n);
	if (err)
		printf(" (%s)", errno_name(err));
	printf("\n");

	/* While they live, another user's namespace sets its own value. */
	pid = fork();
	if (!pid)
		_exit(set_in_own_ns(uid2, "3", 1));
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		printf("other ok\n");
	else
		printf("other %s\n", WIFEXITED(status) ?
		       errno_name(WEXITSTATUS(status)) : "killed");

	close(hold[1]);
	while (wait(NULL) > 0)
		;
	return done == n && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}

static int cmd_sysctl_bpf(const char *cgroup)
{
	/* r0 = 1 (allow); exit */
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	int cg, fd;

	cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return fail();
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_SYSCTL;
	attr.expected_attach_type = BPF_CGROUP_SYSCTL;
	attr.insns = (unsigned long)prog;
	attr.insn_cnt = sizeof(prog) / sizeof(prog[0]);
	attr.license = (unsigned long)"GPL";
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return fail();
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = cg;
	attr.attach_bpf_fd = fd;
	attr.attach_type = BPF_CGROUP_SYSCTL;
	if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)))
		return fail();
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "remount"))
		return cmd_remount(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "ctl-add"))
		return cmd_ctl_add(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "set-partscan"))
		return cmd_set_partscan(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "flags"))
		return cmd_flags(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "opener-write"))
		return cmd_opener_write(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "sysctl-bpf"))
		return cmd_sysctl_bpf(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "ns-fill"))
		return cmd_ns_fill(atoi(argv[2]), atoi(argv[3]), argv[4],
				   atoi(argv[5]));
	fprintf(stderr, "usage: see the comment at the top of host-tool.c\n");
	return 2;
}
