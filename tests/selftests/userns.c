// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs in user namespaces: mounting as the root of an
 * unprivileged user namespace, ownership of the nodes, ns_capable() checks,
 * isolation from foreign devices, the hierarchical per-user limit
 * /proc/sys/user/max_loop_devices and the per-instance max= mount option.
 *
 * Unprivileged parts run in a forked child that drops to LOOPFS_UNPRIV_UID
 * (default 1000) and unshares a user + mount namespace mapping uid 0 to it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <grp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include "loopfs_test.h"
#include "kselftest_harness.h"

static uid_t unpriv_uid(void)
{
	const char *s = getenv("LOOPFS_UNPRIV_UID");

	return s ? (uid_t)atoi(s) : 1000;
}

static int write_map(const char *file, const char *map)
{
	return write_file(file, map);
}

/*
 * Become @uid, then root of a new user namespace (map uid 0 to @uid, or
 * only @uid to itself when !map_root) with a new private mount namespace.
 */
static int enter_userns_as(uid_t uid, int map_root)
{
	char map[64];
	int r;

	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return -errno;
	prctl(PR_SET_DUMPABLE, 1);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -errno;
	r = write_map("/proc/self/setgroups", "deny");
	if (r)
		return r;
	snprintf(map, sizeof(map), "%u %u 1", map_root ? 0 : uid, uid);
	r = write_map("/proc/self/uid_map", map);
	if (!r)
		r = write_map("/proc/self/gid_map", map);
	if (r)
		return r;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	return 0;
}

/* From inside a user namespace: a nested one mapping our uid 0 to 0. */
static int enter_nested_userns(void)
{
	int r;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -errno;
	r = write_map("/proc/self/setgroups", "deny");
	if (!r)
		r = write_map("/proc/self/uid_map", "0 0 1");
	if (!r)
		r = write_map("/proc/self/gid_map", "0 0 1");
	if (r)
		return r;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	return 0;
}

/* A directory everybody can use, outside the runner's 0700 scratch dir. */
static void make_public_dir(struct __test_metadata *_metadata, char *buf,
			    size_t len)
{
	snprintf(buf, len, "/tmp/loopfs-userns.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(buf));
	ASSERT_EQ(0, chmod(buf, 0777));
}

/*
 * A public directory @dir with the paths of a mount point @mnt ("<dir>/@name")
 * and a backing file @file ("<dir>/img") in it; PATH_MAX bytes each.
 */
static void make_public_paths(struct __test_metadata *_metadata, char *dir,
			      char *mnt, const char *name, char *file)
{
	make_public_dir(_metadata, dir, PATH_MAX);
	snprintf(mnt, PATH_MAX, "%s/%s", dir, name);
	snprintf(file, PATH_MAX, "%s/img", dir);
}

/* Unmount whatever is still mounted below @dir, then remove it. */
static void rm_public_dir(const char *dir)
{
	run_cmd("for m in $(awk '{print $5}' /proc/self/mountinfo | grep '^%s/' | sort -r); "
		"do umount -l \"$m\"; done; rm -rf '%s'", dir, dir);
}

/*
 * As root of a new user namespace of @uid (uid 0 mapped to it): the backing
 * file @file of @size bytes (pattern @seed), an instance on @mnt and its
 * device 0 from LOOP_CTL_GET_FREE.  Returns the instance's loop-control.
 */
static int userns_instance(struct __test_metadata *_metadata, uid_t uid,
			   const char *file, off_t size, unsigned int seed,
			   const char *mnt)
{
	int ctl;

	ASSERT_EQ(0, enter_userns_as(uid, 1));
	ASSERT_EQ(0, make_backing(file, size, seed));
	ASSERT_EQ(0, lfs_mount(mnt, NULL));
	ctl = lfs_ctl(mnt);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
	return ctl;
}

/* Run the statements in a child; the test fails unless the child exits 0. */
#define IN_CHILD(...) do {						\
		pid_t __pid = fork();					\
		int __st;						\
		ASSERT_LE(0, __pid);					\
		if (__pid == 0) {					\
			__VA_ARGS__;					\
			_exit(_metadata->passed ? 0 : 1);		\
		}							\
		ASSERT_EQ(__pid, waitpid(__pid, &__st, 0));		\
		ASSERT_TRUE(WIFEXITED(__st)) {				\
			TH_LOG("child killed by signal %d", WTERMSIG(__st)); \
		}							\
		ASSERT_EQ(0, WEXITSTATUS(__st));			\
	} while (0)

/* Two pipes to step a child and its parent through a scenario. */
struct sync {
	int to_parent[2];
	int to_child[2];
};

static void sync_init(struct sync *s)
{
	if (pipe(s->to_parent) || pipe(s->to_child))
		perror("pipe");
}

static void sync_send(int fd, const char *msg)
{
	if (write(fd, msg, strlen(msg) + 1) < 0)
		perror("sync write");
}

static int sync_recv(int fd, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len - 1);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/*
 * Fork a child that is stepped through @s and mounts an instance on @mnt
 * (PATH_MAX bytes), a directory in the public directory @dir (PATH_MAX
 * bytes) made here: the child's pid, 0 in the child.
 */
static pid_t fork_stepped(struct __test_metadata *_metadata, char *dir,
			  char *mnt, struct sync *s)
{
	pid_t pid;

	make_public_dir(_metadata, dir, PATH_MAX);
	snprintf(mnt, PATH_MAX, "%s/mnt", dir);
	sync_init(s);
	pid = fork();
	ASSERT_LE(0, pid);
	return pid;
}

/* Let the stepped child finish; the test fails unless it exits 0. */
static void finish_stepped(struct __test_metadata *_metadata, struct sync *s,
			   pid_t pid)
{
	int status;

	sync_send(s->to_child[1], "done");
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/*
 * The instance a child mounted on @mnt, seen from the host: its root
 * directory belongs to @uid and group @uid, its loop-control to @uid.
 */
static void expect_instance_owner(struct __test_metadata *_metadata, pid_t pid,
				  const char *mnt, uid_t uid)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d/root%s", pid, mnt);
	EXPECT_EQ(0, stat(p, &st));
	EXPECT_EQ(uid, st.st_uid);
	EXPECT_EQ(uid, st.st_gid);
	snprintf(p, sizeof(p), "/proc/%d/root%s/" LOOPFS_CONTROL_NAME, pid, mnt);
	EXPECT_EQ(0, stat(p, &st));
	EXPECT_EQ(uid, st.st_uid);
	EXPECT_TRUE(S_ISCHR(st.st_mode));
}

/* ---------- mounting, ownership, I/O ---------- */

TEST(userns_root_mounts_instance_and_owns_its_nodes)
{
	char dir[PATH_MAX], mnt[PATH_MAX], msg[512], p[PATH_MAX], name[256];
	uid_t uid = unpriv_uid();
	struct sync s;
	struct stat st;
	pid_t pid;

	pid = fork_stepped(_metadata, dir, mnt, &s);
	if (pid == 0) {
		int ctl;

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		ASSERT_EQ(0, lfs_mount(mnt, NULL));
		ASSERT_EQ(0, stat(mnt, &st));
		ASSERT_EQ(0, st.st_uid);
		ASSERT_EQ(0, st.st_gid);
		ASSERT_EQ(0755, st.st_mode & 07777);
		snprintf(p, sizeof(p), "%s/" LOOPFS_CONTROL_NAME, mnt);
		ASSERT_EQ(0, stat(p, &st));
		ASSERT_EQ(0, st.st_uid);
		ASSERT_EQ(0600, st.st_mode & 07777);
		ctl = lfs_ctl(mnt);
		ASSERT_LE(0, ctl);
		ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
		lfs_devpath(p, sizeof(p), mnt, 0);
		ASSERT_EQ(0, stat(p, &st));
		ASSERT_EQ(0, st.st_uid);
		ASSERT_EQ(0, st.st_gid);
		ASSERT_TRUE(S_ISBLK(st.st_mode));
		ASSERT_EQ(0, disk_name_of(p, name, sizeof(name)));
		sync_send(s.to_parent[1], name);
		sync_recv(s.to_child[0], msg, sizeof(msg));
		_exit(_metadata->passed ? 0 : 1);
	}
	ASSERT_EQ(0, sync_recv(s.to_parent[0], name, sizeof(name)));
	/* Seen from the host: everything belongs to the unprivileged uid. */
	expect_instance_owner(_metadata, pid, mnt, uid);
	snprintf(p, sizeof(p), "/proc/%d/root%s/loop0", pid, mnt);
	EXPECT_EQ(0, stat(p, &st));
	EXPECT_EQ(uid, st.st_uid);
	EXPECT_EQ(uid, st.st_gid);
	/* The sysfs directory is the instance root's too... */
	snprintf(p, sizeof(p), "/sys/block/%s", name);
	EXPECT_EQ(0, stat(p, &st));
	EXPECT_EQ(uid, st.st_uid) {
		TH_LOG("%s owned by %u", p, st.st_uid);
	}
	/* ...but its attributes (uevent, power/, size) stay the host's. */
	snprintf(p, sizeof(p), "/sys/block/%s/size", name);
	EXPECT_EQ(0, stat(p, &st));
	EXPECT_EQ(0, st.st_uid);
	finish_stepped(_metadata, &s, pid);
	rm_public_dir(dir);
}

TEST(userns_root_binds_its_own_file_and_reads_and_writes)
{
	char dir[PATH_MAX], mnt[PATH_MAX], file[PATH_MAX];
	uid_t uid = unpriv_uid();

	make_public_paths(_metadata, dir, mnt, "mnt", file);
	IN_CHILD({
		unsigned char buf[8192], back[8192];
		struct loop_config cfg;
		struct loop_info64 li;
		uint64_t sz = 0;
		int ctl, dev, fd;

		ctl = userns_instance(_metadata, uid, file, 4 << 20, 3, mnt);
		dev = lfs_open_dev(mnt, 0, O_RDWR);
		ASSERT_LE(0, dev);
		fd = open(file, O_RDWR);
		ASSERT_LE(0, fd);
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = fd;
		cfg.info.lo_offset = 4096;
		strcpy((char *)cfg.info.lo_file_name, file);
		ASSERT_EQ(0, R(ioctl(dev, LOOP_CONFIGURE, &cfg)));
		ASSERT_EQ(0, ioctl(dev, BLKGETSIZE64, &sz));
		ASSERT_EQ((4 << 20) - 4096, sz);
		pattern_fill(buf, sizeof(buf), 0, 77);
		ASSERT_EQ(sizeof(buf), pwrite(dev, buf, sizeof(buf), 65536));
		ASSERT_EQ(0, fsync(dev));
		ASSERT_EQ(sizeof(back), pread(fd, back, sizeof(back), 65536 + 4096));
		ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
		ASSERT_EQ(sizeof(back), pread(dev, back, sizeof(back), 0));
		ASSERT_EQ(sizeof(back), pread(fd, buf, sizeof(buf), 4096));
		ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
		memset(&li, 0, sizeof(li));
		ASSERT_EQ(0, R(ioctl(dev, LOOP_GET_STATUS64, &li)));
		ASSERT_EQ(4096, li.lo_offset);
		ASSERT_STREQ(file, (char *)li.lo_file_name);
		li.lo_sizelimit = 1 << 20;
		ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_STATUS64, &li)));
		ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_BLOCK_SIZE, 4096)));
		ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_CAPACITY, 0)));
		ASSERT_EQ(0, ioctl(dev, BLKGETSIZE64, &sz));
		ASSERT_EQ(1 << 20, sz);
		ASSERT_EQ(0, R(ioctl(dev, LOOP_CLR_FD)));
		close(dev);
		ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_REMOVE, 0)));
		close(fd);
		close(ctl);
	});
	rm_public_dir(dir);
}

TEST(userns_root_may_reconfigure_own_device_opened_read_only)
{
	char dir[PATH_MAX], mnt[PATH_MAX], file[PATH_MAX];
	uid_t uid = unpriv_uid();

	make_public_paths(_metadata, dir, mnt, "mnt", file);
	IN_CHILD({
		struct loop_info64 li;
		int ctl, rw, ro, fd;

		ctl = userns_instance(_metadata, uid, file, 1 << 20, 4, mnt);
		rw = lfs_open_dev(mnt, 0, O_RDWR);
		ASSERT_LE(0, rw);
		fd = open(file, O_RDWR);
		ASSERT_EQ(0, R(ioctl(rw, LOOP_SET_FD, fd)));
		ro = lfs_open_dev(mnt, 0, O_RDONLY);
		ASSERT_LE(0, ro);
		/* In-tree these need capable(CAP_SYS_ADMIN) without FMODE_WRITE;
		 * loopfs asks the instance's user namespace instead. */
		memset(&li, 0, sizeof(li));
		li.lo_offset = 512;
		ASSERT_EQ(0, R(ioctl(ro, LOOP_SET_STATUS64, &li)));
		ASSERT_EQ(0, R(ioctl(ro, LOOP_SET_CAPACITY, 0)));
		ASSERT_EQ(0, R(ioctl(ro, LOOP_SET_BLOCK_SIZE, 1024)));
		ASSERT_EQ(0, R(ioctl(ro, LOOP_SET_DIRECT_IO, 0)));
		memset(&li, 0, sizeof(li));
		ASSERT_EQ(0, R(ioctl(rw, LOOP_GET_STATUS64, &li)));
		ASSERT_EQ(512, li.lo_offset);
		close(ro);
		ASSERT_EQ(0, R(ioctl(rw, LOOP_CLR_FD)));
		close(rw);
		close(fd);
		close(ctl);
	});
	rm_public_dir(dir);
}

/*
 * Root binds a device of a host instance and a stock device and hands
 * read-only fds to a user-namespace root: it gets EPERM from both, exactly
 * as the stock driver answers.
 */
TEST(userns_root_gets_eperm_on_foreign_devices_it_only_reads)
{
	char dir[PATH_MAX], mnt[PATH_MAX], file[PATH_MAX], sdev[64];
	uid_t uid = unpriv_uid();
	int ctl, sctl, hrw, hro, srw, sro, fd, n;

	ASSERT_EQ(0, private_mntns());
	make_public_paths(_metadata, dir, mnt, "host", file);
	ASSERT_EQ(0, make_backing(file, 1 << 20, 5));
	ASSERT_EQ(0, lfs_mount(mnt, NULL));
	ctl = lfs_ctl(mnt);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
	fd = open(file, O_RDWR);
	hrw = lfs_open_dev(mnt, 0, O_RDWR);
	ASSERT_LE(0, hrw);
	ASSERT_EQ(0, R(ioctl(hrw, LOOP_SET_FD, fd)));
	hro = lfs_open_dev(mnt, 0, O_RDONLY);
	ASSERT_LE(0, hro);

	sctl = open("/dev/loop-control", O_RDWR);
	ASSERT_LE(0, sctl);
	n = ioctl(sctl, LOOP_CTL_GET_FREE);
	ASSERT_LE(0, n);
	snprintf(sdev, sizeof(sdev), "/dev/loop%d", n);
	srw = open(sdev, O_RDWR);
	ASSERT_LE(0, srw);
	ASSERT_EQ(0, R(ioctl(srw, LOOP_SET_FD, fd)));
	sro = open(sdev, O_RDONLY);
	ASSERT_LE(0, sro);

	IN_CHILD({
		struct loop_info64 li;
		int fds[2] = { sro, hro };

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		for (int i = 0; i < 2; i++) {
			const char *who = i ? "loopfs" : "stock";

			memset(&li, 0, sizeof(li));
			ASSERT_EQ(0, R(ioctl(fds[i], LOOP_GET_STATUS64, &li)));
			li.lo_offset = 4096;
			EXPECT_EQ(-EPERM, R(ioctl(fds[i], LOOP_SET_STATUS64, &li))) {
				TH_LOG("%s SET_STATUS64", who);
			}
			EXPECT_EQ(-EPERM, R(ioctl(fds[i], LOOP_SET_STATUS,
						  &(struct loop_info){0}))) {
				TH_LOG("%s SET_STATUS", who);
			}
			EXPECT_EQ(-EPERM, R(ioctl(fds[i], LOOP_SET_CAPACITY, 0))) {
				TH_LOG("%s SET_CAPACITY", who);
			}
			EXPECT_EQ(-EPERM, R(ioctl(fds[i], LOOP_SET_DIRECT_IO, 0))) {
				TH_LOG("%s SET_DIRECT_IO", who);
			}
			EXPECT_EQ(-EPERM, R(ioctl(fds[i], LOOP_SET_BLOCK_SIZE, 4096))) {
				TH_LOG("%s SET_BLOCK_SIZE", who);
			}
		}
	});
	/* Nothing changed. */
	{
		struct loop_info64 li;

		memset(&li, 0, sizeof(li));
		ASSERT_EQ(0, R(ioctl(hrw, LOOP_GET_STATUS64, &li)));
		ASSERT_EQ(0, li.lo_offset);
	}
	close(sro);
	ioctl(srw, LOOP_CLR_FD);
	close(srw);
	close(sctl);
	close(hro);
	ioctl(hrw, LOOP_CLR_FD);
	close(hrw);
	close(fd);
	close(ctl);
	umount2(mnt, MNT_DETACH);
	rm_public_dir(dir);
}

static int send_fd(int sock, int fd)
{
	char c = 'F', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &mh, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * The capability is checked against the device's instance, not the
 * caller's namespace: the root of one container holding a read-only fd of
 * another container's device gets EPERM, while that container's own root
 * is allowed the same call.
 */
TEST(userns_root_gets_eperm_on_another_containers_device)
{
	char dir[PATH_MAX], mnt[PATH_MAX], file[PATH_MAX];
	uid_t uid = unpriv_uid();
	int sv[2], ack[2];
	pid_t owner;
	int st;

	make_public_paths(_metadata, dir, mnt, "mnt", file);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ(0, pipe(ack));
	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		struct loop_info64 li;
		int rw, ro, fd;
		char c;

		close(ack[1]);	/* EOF on ack if the parent dies */
		/* Container A (uid+1): its own instance, a bound device. */
		userns_instance(_metadata, uid + 1, file, 1 << 20, 6, mnt);
		rw = lfs_open_dev(mnt, 0, O_RDWR);
		fd = open(file, O_RDWR);
		ASSERT_EQ(0, R(ioctl(rw, LOOP_SET_FD, fd)));
		ro = lfs_open_dev(mnt, 0, O_RDONLY);
		ASSERT_LE(0, ro);
		ASSERT_EQ(0, send_fd(sv[0], ro));
		ASSERT_EQ(1, read(ack[0], &c, 1));
		/* A's root may do it through its own read-only fd. */
		memset(&li, 0, sizeof(li));
		li.lo_offset = 1024;
		ASSERT_EQ(0, R(ioctl(ro, LOOP_SET_STATUS64, &li)));
		ASSERT_EQ(0, R(ioctl(ro, LOOP_SET_CAPACITY, 0)));
		ioctl(rw, LOOP_CLR_FD);
		_exit(_metadata->passed ? 0 : 1);
	}
	IN_CHILD({
		struct loop_info64 li;
		int ro;

		/* Container B (uid): receives A's read-only device fd. */
		ASSERT_EQ(0, enter_userns_as(uid, 1));
		ro = recv_fd(sv[1]);
		ASSERT_LE(0, ro);
		memset(&li, 0, sizeof(li));
		ASSERT_EQ(0, R(ioctl(ro, LOOP_GET_STATUS64, &li)));
		li.lo_offset = 4096;
		EXPECT_EQ(-EPERM, R(ioctl(ro, LOOP_SET_STATUS64, &li)));
		EXPECT_EQ(-EPERM, R(ioctl(ro, LOOP_SET_CAPACITY, 0)));
		EXPECT_EQ(-EPERM, R(ioctl(ro, LOOP_SET_DIRECT_IO, 0)));
		EXPECT_EQ(-EPERM, R(ioctl(ro, LOOP_SET_BLOCK_SIZE, 4096)));
		memset(&li, 0, sizeof(li));
		ASSERT_EQ(0, R(ioctl(ro, LOOP_GET_STATUS64, &li)));
		ASSERT_EQ(0, li.lo_offset);
	});
	ASSERT_EQ(1, write(ack[1], "x", 1));
	ASSERT_EQ(owner, waitpid(owner, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	rm_public_dir(dir);
}

TEST(userns_root_cannot_open_another_instances_nodes)
{
	char dir[PATH_MAX], mnt[PATH_MAX], p[PATH_MAX], name[256], host[PATH_MAX];
	uid_t uid = unpriv_uid();
	struct stat st;
	int ctl;

	ASSERT_EQ(0, private_mntns());
	make_public_dir(_metadata, dir, sizeof(dir));
	snprintf(mnt, sizeof(mnt), "%s/host", dir);
	ASSERT_EQ(0, lfs_mount(mnt, NULL));
	ctl = lfs_ctl(mnt);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_ADD, 0)));
	lfs_devpath(p, sizeof(p), mnt, 0);
	ASSERT_EQ(0, stat(p, &st));
	ASSERT_EQ(0, disk_name_of(p, name, sizeof(name)));
	snprintf(host, sizeof(host), "/dev/%s", name);

	IN_CHILD({
		char q[PATH_MAX], t[PATH_MAX], node[PATH_MAX];
		int fd;

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		EXPECT_EQ(-EACCES, R(open(p, O_RDONLY)));
		EXPECT_EQ(-EACCES, R(open(p, O_RDWR)));
		snprintf(q, sizeof(q), "%s/" LOOPFS_CONTROL_NAME, mnt);
		EXPECT_EQ(-EACCES, R(open(q, O_RDWR)));
		EXPECT_EQ(-EACCES, R(open(host, O_RDONLY)));
		/* A node of our own for the foreign dev_t: not allowed. */
		snprintf(t, sizeof(t), "%s/own-tmpfs", dir);
		ASSERT_EQ(0, mkdir(t, 0755));
		ASSERT_EQ(0, mount("tmpfs", t, "tmpfs", 0, NULL));
		snprintf(node, sizeof(node), "%s/node", t);
		EXPECT_EQ(-EPERM, R(mknod(node, S_IFBLK | 0600, st.st_rdev)));
		/* A bind mount of the foreign node still checks its owner. */
		fd = open(node, O_CREAT | O_RDWR, 0600);
		ASSERT_LE(0, fd);
		close(fd);
		ASSERT_EQ(0, mount(p, node, NULL, MS_BIND, NULL));
		EXPECT_EQ(-EACCES, R(open(node, O_RDONLY)));
	});
	close(ctl);
	umount2(mnt, MNT_DETACH);
	rm_public_dir(dir);
}

TEST(nodes_fall_back_to_global_root_without_uid0_mapping)
{
	char dir[PATH_MAX], mnt[PATH_MAX], msg[64];
	uid_t uid = unpriv_uid();
	struct sync s;
	pid_t pid;

	pid = fork_stepped(_metadata, dir, mnt, &s);
	if (pid == 0) {
		int ctl;

		ASSERT_EQ(0, enter_userns_as(uid, 0));
		ASSERT_EQ(0, lfs_mount(mnt, NULL));
		ctl = lfs_ctl(mnt);
		/* Owned by the unmapped global root: no DAC override here. */
		EXPECT_EQ(-1, ctl);
		sync_send(s.to_parent[1], "ready");
		sync_recv(s.to_child[0], msg, sizeof(msg));
		_exit(_metadata->passed ? 0 : 1);
	}
	ASSERT_EQ(0, sync_recv(s.to_parent[0], msg, sizeof(msg)));
	expect_instance_owner(_metadata, pid, mnt, 0);
	finish_stepped(_metadata, &s, pid);
	rm_public_dir(dir);
}

/* ---------- the per-user limit ---------- */

FIXTURE(limit) {
	char dir[PATH_MAX];
	char saved[64];
};

FIXTURE_SETUP(limit)
{
	ASSERT_EQ(0, private_mntns());
	ASSERT_EQ(0, read_file(LOOPFS_SYSCTL_PATH, self->saved, sizeof(self->saved)));
	make_public_dir(_metadata, self->dir, sizeof(self->dir));
}

FIXTURE_TEARDOWN(limit)
{
	write_file(LOOPFS_SYSCTL_PATH, self->saved);
	rm_public_dir(self->dir);
}

/* ADD(-1), retrying ENOSPC for up to 3 s while an exited child's charges go. */
static long add_retry(int ctl)
{
	long r = 0;

	for (int i = 0; i < 300; i++) {
		r = R(ioctl(ctl, LOOP_CTL_ADD, -1));
		if (r != -ENOSPC)
			break;
		usleep(10000);
	}
	return r;
}

TEST_F(limit, max_loop_devices_exists_and_defaults_to_255)
{
	ASSERT_STREQ("255", self->saved);
}

TEST_F(limit, unprivileged_user_cannot_raise_max_loop_devices)
{
	uid_t uid = unpriv_uid();

	IN_CHILD({
		int r;

		ASSERT_EQ(0, setresuid(uid, uid, uid));
		r = write_file(LOOPFS_SYSCTL_PATH, "100000");
		ASSERT_TRUE(r == -EACCES || r == -EPERM) {
			TH_LOG("write as uid %u returned %d", uid, r);
		}
	});
	IN_CHILD({
		char v[64];

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		/* Readable inside the namespace; a write there (denied, or
		 * setting the namespace's own value) never changes the host's. */
		ASSERT_EQ(0, read_file(LOOPFS_SYSCTL_PATH, v, sizeof(v)));
		write_file(LOOPFS_SYSCTL_PATH, "100000");
	});
	{
		char v[64];

		ASSERT_EQ(0, read_file(LOOPFS_SYSCTL_PATH, v, sizeof(v)));
		ASSERT_STREQ(self->saved, v);
	}
}

TEST_F(limit, limit_holds_across_instances_and_nested_userns_of_one_uid)
{
	char m1[PATH_MAX], m2[PATH_MAX], m3[PATH_MAX], file[PATH_MAX];
	uid_t uid = unpriv_uid();

	snprintf(m1, sizeof(m1), "%s/m1", self->dir);
	snprintf(m2, sizeof(m2), "%s/m2", self->dir);
	snprintf(m3, sizeof(m3), "%s/m3", self->dir);
	snprintf(file, sizeof(file), "%s/img", self->dir);
	ASSERT_EQ(0, write_file(LOOPFS_SYSCTL_PATH, "3"));
	IN_CHILD({
		int c1, c2, dev, fd;

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		ASSERT_EQ(0, make_backing(file, 65536, 1));
		ASSERT_EQ(0, lfs_mount(m1, NULL));
		ASSERT_EQ(0, lfs_mount(m2, NULL));
		c1 = lfs_ctl(m1);
		c2 = lfs_ctl(m2);
		ASSERT_LE(0, c1);
		ASSERT_LE(0, c2);
		ASSERT_EQ(0, R(ioctl(c1, LOOP_CTL_ADD, 0)));
		ASSERT_EQ(1, R(ioctl(c1, LOOP_CTL_ADD, 1)));
		ASSERT_EQ(0, R(ioctl(c2, LOOP_CTL_ADD, 0)));
		/* Three devices over two instances: the uid is at its limit. */
		ASSERT_EQ(-ENOSPC, R(ioctl(c2, LOOP_CTL_ADD, 1)));
		ASSERT_EQ(-ENOSPC, R(ioctl(c1, LOOP_CTL_ADD, -1)));
		ASSERT_FALSE(path_exists("%s/loop1", m2));
		/* GET_FREE may return an existing unbound device... */
		ASSERT_EQ(0, R(ioctl(c2, LOOP_CTL_GET_FREE)));
		/* ...but cannot create one. */
		dev = lfs_open_dev(m2, 0, O_RDWR);
		fd = open(file, O_RDWR);
		ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_FD, fd)));
		ASSERT_EQ(-ENOSPC, R(ioctl(c2, LOOP_CTL_GET_FREE)));

		/* A nested user namespace of the same uid is charged too. */
		IN_CHILD({
			int c3;

			ASSERT_EQ(0, enter_nested_userns());
			ASSERT_EQ(0, lfs_mount(m3, NULL));
			c3 = lfs_ctl(m3);
			ASSERT_LE(0, c3);
			ASSERT_EQ(-ENOSPC, R(ioctl(c3, LOOP_CTL_ADD, 0)));
			ASSERT_EQ(-ENOSPC, R(ioctl(c3, LOOP_CTL_GET_FREE)));
		});

		/* Removing a device releases its charge at every level. */
		ASSERT_EQ(0, R(ioctl(c1, LOOP_CTL_REMOVE, 1)));
		IN_CHILD({
			int c3;

			ASSERT_EQ(0, enter_nested_userns());
			ASSERT_EQ(0, lfs_mount(m3, NULL));
			c3 = lfs_ctl(m3);
			ASSERT_EQ(0, R(ioctl(c3, LOOP_CTL_ADD, 0)));
			ASSERT_EQ(-ENOSPC, R(ioctl(c3, LOOP_CTL_ADD, 1)));
		});
		/* The nested instance died with its namespace: charge back. */
		ASSERT_EQ(1, add_retry(c1));
		ASSERT_EQ(-ENOSPC, R(ioctl(c1, LOOP_CTL_ADD, 2)));

		/* Unmounting an instance releases all its devices' charges,
		 * the bound one included. */
		ASSERT_EQ(0, R(ioctl(dev, LOOP_CLR_FD)));
		close(dev);
		close(fd);
		close(c2);
		ASSERT_EQ(0, umount(m2));
		ASSERT_EQ(2, R(ioctl(c1, LOOP_CTL_ADD, 2)));
		ASSERT_EQ(-ENOSPC, R(ioctl(c1, LOOP_CTL_ADD, 3)));
		close(c1);
	});
}

TEST_F(limit, limit_is_counted_per_uid)
{
	char m1[PATH_MAX], m2[PATH_MAX], mr[PATH_MAX];
	uid_t uid = unpriv_uid();
	int cr;

	snprintf(m1, sizeof(m1), "%s/m1", self->dir);
	snprintf(m2, sizeof(m2), "%s/m2", self->dir);
	snprintf(mr, sizeof(mr), "%s/root", self->dir);
	ASSERT_EQ(0, write_file(LOOPFS_SYSCTL_PATH, "2"));
	ASSERT_EQ(0, lfs_mount(mr, NULL));
	cr = lfs_ctl(mr);
	ASSERT_LE(0, cr);
	ASSERT_EQ(0, R(ioctl(cr, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(1, R(ioctl(cr, LOOP_CTL_ADD, 1)));
	ASSERT_EQ(-ENOSPC, R(ioctl(cr, LOOP_CTL_ADD, 2)));
	/* Root's two devices do not count against the other uids. */
	IN_CHILD({
		int c;

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		ASSERT_EQ(0, lfs_mount(m1, NULL));
		c = lfs_ctl(m1);
		ASSERT_EQ(0, R(ioctl(c, LOOP_CTL_ADD, -1)));
		ASSERT_EQ(1, R(ioctl(c, LOOP_CTL_ADD, -1)));
		ASSERT_EQ(-ENOSPC, R(ioctl(c, LOOP_CTL_ADD, -1)));
	});
	IN_CHILD({
		int c;

		ASSERT_EQ(0, enter_userns_as(uid + 1, 1));
		ASSERT_EQ(0, lfs_mount(m2, NULL));
		c = lfs_ctl(m2);
		ASSERT_EQ(0, R(ioctl(c, LOOP_CTL_ADD, -1)));
		ASSERT_EQ(1, R(ioctl(c, LOOP_CTL_ADD, -1)));
		ASSERT_EQ(-ENOSPC, R(ioctl(c, LOOP_CTL_ADD, -1)));
	});
	ASSERT_EQ(0, R(ioctl(cr, LOOP_CTL_REMOVE, 1)));
	ASSERT_EQ(1, R(ioctl(cr, LOOP_CTL_ADD, -1)));
	close(cr);
}

/* One create/remove cycle in many flavours; returns 0 or the failing step. */
static int churn_once(const char *mnt, int ctl, const char *file, int i)
{
	char p[PATH_MAX];
	int dev, fd, n;

	switch (i % 4) {
	case 0:
		n = ioctl(ctl, LOOP_CTL_ADD, -1);
		if (n < 0 || ioctl(ctl, LOOP_CTL_REMOVE, n))
			return 1;
		return 0;
	case 1:
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return 2;
		dev = lfs_open_dev(mnt, n, O_RDWR);
		fd = open(file, O_RDWR);
		if (dev < 0 || fd < 0 || ioctl(dev, LOOP_SET_FD, fd))
			return 3;
		close(fd);
		if (ioctl(dev, LOOP_CLR_FD))
			return 4;
		close(dev);
		return ioctl(ctl, LOOP_CTL_REMOVE, n) ? 5 : 0;
	case 2:
		n = ioctl(ctl, LOOP_CTL_ADD, 7);
		if (n != 7)
			return 6;
		lfs_devpath(p, sizeof(p), mnt, n);
		return unlink(p) ? 7 : 0;
	default:
		/* ADD and leave it: released by the umount that follows. */
		n = ioctl(ctl, LOOP_CTL_ADD, -1);
		return n < 0 ? 8 : 0;
	}
}

static void churn(struct __test_metadata *_metadata, const char *mnt,
		  const char *file, int cycles)
{
	int ctl = -1;

	for (int i = 0; i < cycles; i++) {
		/* Remount after each cycle that leaves a device behind. */
		if (i % 4 == 0) {
			if (ctl >= 0) {
				close(ctl);
				ASSERT_EQ(0, umount(mnt));
			}
			ASSERT_EQ(0, lfs_mount(mnt, NULL));
			ctl = lfs_ctl(mnt);
			ASSERT_LE(0, ctl);
		}
		ASSERT_EQ(0, churn_once(mnt, ctl, file, i)) {
			TH_LOG("cycle %d: errno %d", i, errno);
		}
	}
	close(ctl);
	ASSERT_EQ(0, umount(mnt));
}

/* With the limit at 2: exactly two devices fit, so every charge is back. */
static void check_two_fit(struct __test_metadata *_metadata, const char *mnt)
{
	int ctl;

	ASSERT_EQ(0, lfs_mount(mnt, NULL));
	ctl = lfs_ctl(mnt);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_EQ(1, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	close(ctl);
	ASSERT_EQ(0, umount(mnt));
}

TEST_F_TIMEOUT(limit, thousand_create_remove_cycles_return_every_charge, 250)
{
	char mnt[PATH_MAX], file[PATH_MAX];
	uid_t uid = unpriv_uid();
	const char *quick = getenv("LOOPFS_QUICK");
	const char *asked = getenv("LOOPFS_CHURN_CYCLES");
	int asked_cycles = asked ? atoi(asked) : 0;
	/* The harness always exports LOOPFS_QUICK; only "1" asks for less. */
	int cycles = quick && !strcmp(quick, "1") ? 400 : 1000;

	/* A debug kernel asks for fewer: it checks each flavour's paths. */
	if (asked_cycles >= 4)
		cycles = asked_cycles;

	snprintf(mnt, sizeof(mnt), "%s/m", self->dir);
	snprintf(file, sizeof(file), "%s/img", self->dir);
	ASSERT_EQ(0, make_backing(file, 65536, 2));
	ASSERT_EQ(0, chmod(file, 0666));
	ASSERT_EQ(0, write_file(LOOPFS_SYSCTL_PATH, "2"));
	TH_LOG("%d create/remove cycles (LOOPFS_QUICK=%s)", cycles,
	       quick ? quick : "(unset)");
	/* Half the cycles as host root... */
	churn(_metadata, mnt, file, cycles / 2);
	check_two_fit(_metadata, mnt);
	/* ...a quarter each as root of a user namespace and of a nested one. */
	IN_CHILD({
		ASSERT_EQ(0, enter_userns_as(uid, 1));
		churn(_metadata, mnt, file, cycles / 4);
		IN_CHILD({
			ASSERT_EQ(0, enter_nested_userns());
			churn(_metadata, mnt, file, cycles / 4);
			check_two_fit(_metadata, mnt);
		});
		/* Give a dead namespace's instances a moment to go. */
		usleep(200000);
		check_two_fit(_metadata, mnt);
	});
	ASSERT_EQ(0, count_loopfs_disks());
}

/* ---------- the max= mount option ---------- */

/* Super options of the mount at @dir (fourth field after " - "). */
static int super_opts(const char *dir, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], fst[64], src[256], so[1024];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*d %*d %*s %*s %4095s", mp) != 1 ||
		    strcmp(mp, dir))
			continue;
		if (sscanf(sep + 3, "%63s %255s %1023s", fst, src, so) == 3) {
			snprintf(out, len, "%s", so);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

static int has_opt(const char *opts, const char *opt)
{
	char buf[1024], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", opts);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, opt))
			return 1;
	return 0;
}

TEST_F(limit, max_option_caps_an_instance_with_enospc)
{
	char mnt[PATH_MAX], file[PATH_MAX];
	int ctl, d0, d1, fd;

	snprintf(mnt, sizeof(mnt), "%s/m", self->dir);
	snprintf(file, sizeof(file), "%s/img", self->dir);
	ASSERT_EQ(0, make_backing(file, 65536, 3));
	ASSERT_EQ(0, lfs_mount(mnt, "max=2"));
	ctl = lfs_ctl(mnt);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(5, R(ioctl(ctl, LOOP_CTL_ADD, 5)));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, 1)));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_FALSE(path_exists("%s/loop1", mnt));
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
	fd = open(file, O_RDWR);
	d0 = lfs_open_dev(mnt, 0, O_RDWR);
	d1 = lfs_open_dev(mnt, 5, O_RDWR);
	ASSERT_EQ(0, R(ioctl(d0, LOOP_SET_FD, fd)));
	ASSERT_EQ(0, R(ioctl(d1, LOOP_SET_FD, fd)));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
	ioctl(d0, LOOP_CLR_FD);
	ioctl(d1, LOOP_CLR_FD);
	close(d0);
	close(d1);
	/* Another instance is not affected by this one's cap. */
	{
		char other[PATH_MAX];
		int c2;

		snprintf(other, sizeof(other), "%s/o", self->dir);
		ASSERT_EQ(0, lfs_mount(other, NULL));
		c2 = lfs_ctl(other);
		for (int i = 0; i < 3; i++) {
			ASSERT_EQ(i, R(ioctl(c2, LOOP_CTL_ADD, -1)));
		}
		close(c2);
	}
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_REMOVE, 5)));
	ASSERT_EQ(1, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	close(fd);
	close(ctl);
}

TEST_F(limit, remount_changes_max_and_mountinfo_shows_it)
{
	char mnt[PATH_MAX], so[1024];
	int ctl;

	snprintf(mnt, sizeof(mnt), "%s/m", self->dir);
	ASSERT_EQ(0, lfs_mount(mnt, "max=2"));
	ASSERT_EQ(0, super_opts(mnt, so, sizeof(so)));
	ASSERT_TRUE(has_opt(so, "max=2")) {
		TH_LOG("super options: %s", so);
	}
	ctl = lfs_ctl(mnt);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_EQ(1, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_EQ(0, mount(NULL, mnt, NULL, MS_REMOUNT, "max=3"));
	ASSERT_EQ(0, super_opts(mnt, so, sizeof(so)));
	ASSERT_TRUE(has_opt(so, "max=3")) {
		TH_LOG("super options: %s", so);
	}
	ASSERT_FALSE(has_opt(so, "max=2"));
	ASSERT_EQ(2, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	/* A bad remount changes nothing. */
	ASSERT_EQ(-EINVAL, R(mount(NULL, mnt, NULL, MS_REMOUNT, "max=zz")));
	ASSERT_EQ(0, super_opts(mnt, so, sizeof(so)));
	ASSERT_TRUE(has_opt(so, "max=3"));
	ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
	close(ctl);
}

/*
 * Every rejected option must leave its own line in the kernel log: the
 * fs_context messages of the legacy mount(2) path ("loop: " prefix), the
 * generic parser's for unknown keys and bad numbers, the module's own for a
 * cap of no device or above the index space. Each option is checked against only the
 * records logged since its own mount attempt.
 */
TEST_F(limit, unknown_or_malformed_options_fail_einval_and_log)
{
	static const struct {
		const char *opts;
		const char *line;
	} bad[] = {
		{ "bogusopt", "loop: Unknown parameter 'bogusopt'" },
		{ "max=abc", "loop: Bad value for 'max'" },
		{ "max=-1", "loop: Bad value for 'max'" },
		{ "max=", "loop: Bad value for 'max'" },
		{ "max=99999999999999999999", "loop: Bad value for 'max'" },
		{ "max=0", "loop: max must be at least 1" },
		{ "max=1048577", "loop: max must be at most 1048576" },
		{ "max=2,bogusopt=1", "loop: Unknown parameter 'bogusopt'" },
	};
	char mnt[PATH_MAX];

	snprintf(mnt, sizeof(mnt), "%s/m", self->dir);
	ASSERT_EQ(0, mkdir(mnt, 0755));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long long mark = kmsg_mark();

		ASSERT_LE(0, mark);
		EXPECT_EQ(-EINVAL, R(mount("loop", mnt, LOOPFS_FSTYPE, 0, bad[i].opts))) {
			TH_LOG("option '%s' accepted", bad[i].opts);
			umount2(mnt, MNT_DETACH);
		}
		EXPECT_EQ(1, kmsg_find(mark, bad[i].line, 1)) {
			TH_LOG("option '%s': no kernel log line \"%s\"",
			       bad[i].opts, bad[i].line);
		}
	}
}

TEST_F(limit, fsconfig_rejects_unknown_option_with_a_message)
{
	char log[512];
	ssize_t n;
	int fsfd;

	fsfd = syscall(SYS_fsopen, LOOPFS_FSTYPE, 0);
	ASSERT_LE(0, fsfd);
	ASSERT_EQ(-EINVAL, R(syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING,
				     "bogusopt", "1", 0)));
	n = read(fsfd, log, sizeof(log) - 1);
	ASSERT_LT(0, n);
	log[n] = 0;
	ASSERT_NE(NULL, strstr(log, "bogusopt")) {
		TH_LOG("fs_context log: %s", log);
	}
	ASSERT_EQ(-EINVAL, R(syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING,
				     "max", "x", 0)));
	ASSERT_EQ(0, R(syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING,
			       "max", "4", 0)));
	ASSERT_EQ(0, R(syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL,
			       NULL, 0)));
	close(fsfd);
}

TEST_F(limit, max_option_works_in_a_user_namespace)
{
	char mnt[PATH_MAX];
	uid_t uid = unpriv_uid();

	snprintf(mnt, sizeof(mnt), "%s/m", self->dir);
	IN_CHILD({
		char so[1024];
		int ctl;

		ASSERT_EQ(0, enter_userns_as(uid, 1));
		ASSERT_EQ(0, lfs_mount(mnt, "max=2"));
		ctl = lfs_ctl(mnt);
		ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
		/* The owner may lower max= and restore it, not lift it. */
		ASSERT_EQ(0, mount(NULL, mnt, NULL, MS_REMOUNT, "max=1"));
		ASSERT_EQ(-ENOSPC, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
		ASSERT_EQ(0, mount(NULL, mnt, NULL, MS_REMOUNT, "max=2"));
		ASSERT_EQ(1, R(ioctl(ctl, LOOP_CTL_ADD, -1)));
		ASSERT_EQ(-EPERM, R(mount(NULL, mnt, NULL, MS_REMOUNT, "max=3")));
		ASSERT_EQ(0, super_opts(mnt, so, sizeof(so)));
		ASSERT_TRUE(has_opt(so, "max=2"));
	});
}

TEST_HARNESS_MAIN
