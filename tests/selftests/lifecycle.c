// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle of loopfs instances and devices: unlink and rename
 * rules, teardown with unbound / bound / open devices, detached instances
 * made with fsopen/fsconfig/fsmount, SIGKILL of their owner, and module
 * unload. The unload test is the last one and reloads $LOOPFS_KO; an atexit
 * hook reloads it too if anything went wrong on the way.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include "loopfs_test.h"
#include "kselftest_harness.h"

static void ensure_module_loaded(void)
{
	if (!loopfs_loaded() && load_loopfs())
		fprintf(stderr, "# lifecycle: could not reload %s\n",
			getenv("LOOPFS_KO"));
}

static void __attribute__((constructor)) register_reload(void)
{
	atexit(ensure_module_loaded);
}

/* Make an ext4 image of @mib MiB holding "hello" (pattern seed 9, 64 KiB). */
static int make_ext4_image(const char *img, int mib)
{
	char src[PATH_MAX], f[PATH_MAX];

	snprintf(src, sizeof(src), "%s.d", img);
	if (mkdir(src, 0755) && errno != EEXIST)
		return -errno;
	snprintf(f, sizeof(f), "%s/hello", src);
	if (make_backing(f, 65536, 9))
		return -EIO;
	return run_cmd("mkfs.ext4 -q -F -d '%s' '%s' %dM >/dev/null 2>&1",
		       src, img, mib) ? -EIO : 0;
}

static int file_has_pattern(const char *path, size_t len, unsigned int seed)
{
	unsigned char *a = malloc(len), *b = malloc(len);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ok;

	ok = a && b && fd >= 0 && read(fd, a, len) == (ssize_t)len;
	if (ok) {
		pattern_fill(b, len, 0, seed);
		ok = !memcmp(a, b, len);
	}
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	return ok;
}

FIXTURE(lc) {
	char base[PATH_MAX];
	char mnt[PATH_MAX];
	char tmp[PATH_MAX];	/* private tmpfs for backing files */
	char file[PATH_MAX];
	char saved_max[64];
	int ctl;
};

FIXTURE_SETUP(lc)
{
	ASSERT_EQ(0, private_mntns());
	ASSERT_NE(NULL, scratch_dir(self->base, sizeof(self->base), "lc"));
	snprintf(self->mnt, sizeof(self->mnt), "%s/mnt", self->base);
	snprintf(self->tmp, sizeof(self->tmp), "%s/tmp", self->base);
	snprintf(self->file, sizeof(self->file), "%s/backing.img", self->tmp);
	ASSERT_EQ(0, mkdir(self->tmp, 0755));
	ASSERT_EQ(0, mount("tmpfs", self->tmp, "tmpfs", 0, "size=256m"));
	ASSERT_EQ(0, make_backing(self->file, 4 << 20, 5));
	ASSERT_EQ(0, read_file(LOOPFS_SYSCTL_PATH, self->saved_max,
			       sizeof(self->saved_max)));
	ASSERT_EQ(0, lfs_mount(self->mnt, NULL));
	self->ctl = lfs_ctl(self->mnt);
	ASSERT_LE(0, self->ctl);
}

FIXTURE_TEARDOWN(lc)
{
	if (self->ctl >= 0)
		close(self->ctl);
	umount2(self->mnt, MNT_DETACH);
	umount2(self->tmp, MNT_DETACH);
	if (self->saved_max[0])
		write_file(LOOPFS_SYSCTL_PATH, self->saved_max);
}

/* Bind loop<n> of the fixture instance to the backing file, return its fd. */
static int bind_n(struct __test_metadata *_metadata, FIXTURE_DATA(lc) *self,
		  int n)
{
	int dev, fd;

	ASSERT_EQ(n, R(ioctl(self->ctl, LOOP_CTL_ADD, n)));
	dev = lfs_open_dev(self->mnt, n, O_RDWR);
	fd = open(self->file, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_FD, fd)));
	close(fd);
	return dev;
}

/*
 * LOOP_CTL_ADD(@n) on @ctl, allowing up to 5 s for the charge of a device
 * that was just destroyed to come back (the module frees devices from a
 * work item); a charge that never comes back is a leak.
 */
static long add_when_charge_back(struct __test_metadata *_metadata, int ctl,
				 int n)
{
	uint64_t t0 = now_ms();
	long r;

	while ((r = R(ioctl(ctl, LOOP_CTL_ADD, n))) == -ENOSPC &&
	       now_ms() - t0 < 5000)
		usleep(10000);
	if (now_ms() - t0 > 100)
		TH_LOG("charge came back after %llu ms (result %ld)",
		       (unsigned long long)(now_ms() - t0), r);
	return r;
}

static void sys_block_path(char *buf, size_t len, const char *devpath)
{
	char name[256] = "?";

	disk_name_of(devpath, name, sizeof(name));
	snprintf(buf, len, "/sys/block/%s", name);
}

/*
 * Bind device 0 and close it again: bound, unopened.  @p and @sys (PATH_MAX
 * bytes each) get the path of its node and its /sys/block directory.
 */
static void bind_0_closed(struct __test_metadata *_metadata,
			  FIXTURE_DATA(lc) *self, char *p, char *sys)
{
	close(bind_n(_metadata, self, 0));
	lfs_devpath(p, PATH_MAX, self->mnt, 0);
	sys_block_path(sys, PATH_MAX, p);
}

/* ---------- unlink / rename ---------- */

TEST_F(lc, unlink_of_unbound_unopened_device_removes_it)
{
	char p[PATH_MAX], sys[PATH_MAX];

	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_ADD, 0)));
	lfs_devpath(p, sizeof(p), self->mnt, 0);
	sys_block_path(sys, sizeof(sys), p);
	ASSERT_TRUE(path_exists("%s", sys));
	ASSERT_EQ(0, R(unlink(p)));
	ASSERT_FALSE(path_exists("%s", p));
	ASSERT_EQ(0, wait_gone(sys, 2000));
	ASSERT_EQ(-ENODEV, R(ioctl(self->ctl, LOOP_CTL_REMOVE, 0)));
	ASSERT_EQ(-ENOENT, R(unlink(p)));
	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_GET_FREE)));
}

TEST_F(lc, unlink_of_bound_device_fails_ebusy_and_changes_nothing)
{
	struct loop_info64 li;
	char p[PATH_MAX];
	int dev = bind_n(_metadata, self, 0);

	close(dev);
	lfs_devpath(p, sizeof(p), self->mnt, 0);
	ASSERT_EQ(-EBUSY, R(unlink(p)));
	ASSERT_TRUE(path_exists("%s", p));
	dev = open(p, O_RDWR);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_GET_STATUS64, &li)));
	ASSERT_EQ(-EBUSY, R(unlink(p)));
	ASSERT_EQ(0, R(ioctl(dev, LOOP_CLR_FD)));
	close(dev);
	ASSERT_EQ(0, R(unlink(p)));
}

TEST_F(lc, unlink_of_open_unbound_device_fails_ebusy_until_closed)
{
	char p[PATH_MAX];
	int dev;

	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_ADD, 0)));
	lfs_devpath(p, sizeof(p), self->mnt, 0);
	dev = open(p, O_RDONLY);
	ASSERT_LE(0, dev);
	ASSERT_EQ(-EBUSY, R(unlink(p)));
	ASSERT_TRUE(path_exists("%s", p));
	close(dev);
	ASSERT_EQ(0, R(unlink(p)));
	ASSERT_FALSE(path_exists("%s", p));
}

TEST_F(lc, loop_control_cannot_be_unlinked_or_renamed)
{
	char c[PATH_MAX], q[PATH_MAX];

	snprintf(c, sizeof(c), "%s/" LOOPFS_CONTROL_NAME, self->mnt);
	snprintf(q, sizeof(q), "%s/other-name", self->mnt);
	ASSERT_EQ(-EPERM, R(unlink(c)));
	ASSERT_EQ(-EPERM, R(rename(c, q)));
	ASSERT_TRUE(path_exists("%s", c));
	ASSERT_FALSE(path_exists("%s", q));
	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_ADD, 0)));
	snprintf(q, sizeof(q), "%s/loop0", self->mnt);
	ASSERT_EQ(-EPERM, R(rename(q, c)));
	ASSERT_EQ(-EPERM, R(rename(c, q)));
}

TEST_F(lc, device_nodes_cannot_be_renamed)
{
	char a[PATH_MAX], b[PATH_MAX], x[PATH_MAX];

	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(1, R(ioctl(self->ctl, LOOP_CTL_ADD, 1)));
	lfs_devpath(a, sizeof(a), self->mnt, 0);
	lfs_devpath(b, sizeof(b), self->mnt, 1);
	lfs_devpath(x, sizeof(x), self->mnt, 5);
	ASSERT_EQ(-EPERM, R(rename(a, x)));
	ASSERT_EQ(-EPERM, R(rename(a, b)));
	snprintf(x, sizeof(x), "%s/renamed", self->mnt);
	ASSERT_EQ(-EPERM, R(rename(a, x)));
	ASSERT_TRUE(path_exists("%s", a));
	ASSERT_TRUE(path_exists("%s", b));
	ASSERT_FALSE(path_exists("%s", x));
	/* LOOP_CTL_* still see the original names. */
	ASSERT_EQ(-EEXIST, R(ioctl(self->ctl, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_REMOVE, 0)));
	ASSERT_FALSE(path_exists("%s", a));
}

/* ---------- teardown ---------- */

TEST_F(lc, teardown_removes_unbound_devices_at_once)
{
	char sys[4][PATH_MAX], p[PATH_MAX];

	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(i, R(ioctl(self->ctl, LOOP_CTL_ADD, i)));
		lfs_devpath(p, sizeof(p), self->mnt, i);
		sys_block_path(sys[i], sizeof(sys[i]), p);
		ASSERT_TRUE(path_exists("%s", sys[i]));
	}
	close(self->ctl);
	self->ctl = -1;
	ASSERT_EQ(0, umount(self->mnt));
	for (int i = 0; i < 4; i++) {
		ASSERT_FALSE(path_exists("%s", sys[i])) {
			TH_LOG("%s still there after umount", sys[i]);
		}
	}
}

TEST_F(lc, teardown_clears_and_removes_bound_unopened_devices)
{
	char sys[PATH_MAX], p[PATH_MAX];

	bind_0_closed(_metadata, self, p, sys);
	/* Holding the backing file keeps its tmpfs busy. */
	ASSERT_EQ(-EBUSY, R(umount(self->tmp)));
	close(self->ctl);
	self->ctl = -1;
	ASSERT_EQ(0, umount(self->mnt));
	ASSERT_FALSE(path_exists("%s", sys));
	/* The backing file was released: its filesystem can go. */
	ASSERT_EQ(0, R(umount(self->tmp)));
}

TEST_F(lc, teardown_keeps_open_device_working_until_last_close)
{
	unsigned char buf[4096], back[4096];
	char sys[PATH_MAX], p[PATH_MAX], host[PATH_MAX], other[PATH_MAX];
	int hdev, fd, c2;

	bind_0_closed(_metadata, self, p, sys);
	snprintf(host, sizeof(host), "/dev/%s", strrchr(sys, '/') + 1);
	/* An fd through the host node does not pin the loopfs mount. */
	hdev = open(host, O_RDWR);
	ASSERT_LE(0, hdev);
	ASSERT_EQ(0, write_file(LOOPFS_SYSCTL_PATH, "1"));
	close(self->ctl);
	self->ctl = -1;
	ASSERT_EQ(0, umount(self->mnt));

	/* Still bound and serving I/O. */
	ASSERT_TRUE(path_exists("%s", sys));
	pattern_fill(buf, sizeof(buf), 0, 31);
	ASSERT_EQ(sizeof(buf), pwrite(hdev, buf, sizeof(buf), 8192));
	ASSERT_EQ(0, fsync(hdev));
	fd = open(self->file, O_RDONLY);
	ASSERT_EQ(sizeof(back), pread(fd, back, sizeof(back), 8192));
	close(fd);
	ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
	ASSERT_EQ(sizeof(back), pread(hdev, back, sizeof(back), 8192));
	ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
	ASSERT_EQ(-EBUSY, R(umount(self->tmp)));

	/* Its charge is still held (limit 1): a new instance cannot add. */
	snprintf(other, sizeof(other), "%s/other", self->base);
	ASSERT_EQ(0, lfs_mount(other, NULL));
	c2 = lfs_ctl(other);
	ASSERT_EQ(-ENOSPC, R(ioctl(c2, LOOP_CTL_ADD, 0)));

	/* Last close: cleared, removed, uncharged, backing file released. */
	close(hdev);
	ASSERT_EQ(0, wait_gone(sys, 3000));
	ASSERT_EQ(0, R(umount(self->tmp)));
	ASSERT_EQ(0, add_when_charge_back(_metadata, c2, 0));
	close(c2);
}

TEST_F(lc, lazy_umount_with_fd_on_instance_node_defers_teardown)
{
	char sys[PATH_MAX], p[PATH_MAX];
	unsigned char buf[512];
	int dev;

	dev = bind_n(_metadata, self, 0);
	lfs_devpath(p, sizeof(p), self->mnt, 0);
	sys_block_path(sys, sizeof(sys), p);
	close(self->ctl);
	self->ctl = -1;
	/* The fd pins the mount: a plain umount is refused. */
	ASSERT_EQ(-EBUSY, R(umount(self->mnt)));
	ASSERT_EQ(0, umount2(self->mnt, MNT_DETACH));
	ASSERT_EQ(512, pread(dev, buf, sizeof(buf), 0));
	ASSERT_TRUE(path_exists("%s", sys));
	close(dev);
	ASSERT_EQ(0, wait_gone(sys, 3000));
	ASSERT_EQ(0, R(umount(self->tmp)));
}

TEST_F_TIMEOUT(lc, teardown_with_ext4_mounted_on_device_waits_for_its_umount, 90)
{
	char img[PATH_MAX], ext[PATH_MAX], p[PATH_MAX], sys[PATH_MAX];
	char f[PATH_MAX], m2[PATH_MAX];
	int dev, fd, c2;

	snprintf(img, sizeof(img), "%s/ext4.img", self->tmp);
	snprintf(ext, sizeof(ext), "%s/ext", self->base);
	ASSERT_EQ(0, make_ext4_image(img, 32));
	ASSERT_EQ(0, mkdir(ext, 0755));
	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_ADD, 0)));
	dev = lfs_open_dev(self->mnt, 0, O_RDWR);
	fd = open(img, O_RDWR);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_FD, fd)));
	close(fd);
	close(dev);
	lfs_devpath(p, sizeof(p), self->mnt, 0);
	sys_block_path(sys, sizeof(sys), p);
	ASSERT_EQ(0, mount(p, ext, "ext4", 0, NULL));
	close(self->ctl);
	self->ctl = -1;
	ASSERT_EQ(0, umount(self->mnt));

	/* The filesystem keeps working on the orphaned device. */
	snprintf(f, sizeof(f), "%s/hello", ext);
	ASSERT_TRUE(file_has_pattern(f, 65536, 9));
	snprintf(f, sizeof(f), "%s/written-after-teardown", ext);
	ASSERT_EQ(0, make_backing(f, 100000, 21));
	ASSERT_TRUE(path_exists("%s", sys));
	ASSERT_EQ(0, umount(ext));
	ASSERT_EQ(0, wait_gone(sys, 3000));

	/* What was written reached the image. */
	snprintf(m2, sizeof(m2), "%s/m2", self->base);
	ASSERT_EQ(0, lfs_mount(m2, NULL));
	c2 = lfs_ctl(m2);
	ASSERT_EQ(0, R(ioctl(c2, LOOP_CTL_GET_FREE)));
	dev = lfs_open_dev(m2, 0, O_RDWR);
	fd = open(img, O_RDWR);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_FD, fd)));
	close(fd);
	lfs_devpath(p, sizeof(p), m2, 0);
	ASSERT_EQ(0, mount(p, ext, "ext4", MS_RDONLY, NULL));
	ASSERT_TRUE(file_has_pattern(f, 100000, 21));
	ASSERT_EQ(0, umount(ext));
	ASSERT_EQ(0, R(ioctl(dev, LOOP_CLR_FD)));
	close(dev);
	close(c2);
}

/* ---------- detached instances (new mount API) ---------- */

/* Number of loopfs mounts in this mount namespace. */
static int loop_mounts(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, " - loop ") != NULL;
	fclose(f);
	return n;
}

static int detached_instance(void)
{
	int fsfd, mfd;

	fsfd = syscall(SYS_fsopen, LOOPFS_FSTYPE, FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		close(fsfd);
		return -errno;
	}
	mfd = syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC, 0);
	close(fsfd);
	return mfd < 0 ? -errno : mfd;
}

TEST_F(lc, detached_instance_works_through_openat_and_vanishes_on_close)
{
	unsigned char buf[4096], back[4096];
	char sys[PATH_MAX], name[256], fdpath[64];
	struct stat st;
	int mfd, ctl, dev, fd, before = loop_mounts();

	ASSERT_EQ(1, before);
	mfd = detached_instance();
	ASSERT_LE(0, mfd);
	/* Never attached anywhere. */
	ASSERT_EQ(before, loop_mounts());
	ASSERT_EQ(0, fstat(mfd, &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ctl = openat(mfd, LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
	dev = openat(mfd, "loop0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	fd = open(self->file, O_RDWR | O_CLOEXEC);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_FD, fd)));
	ASSERT_EQ(sizeof(buf), pread(dev, buf, sizeof(buf), 65536));
	ASSERT_EQ(sizeof(back), pread(fd, back, sizeof(back), 65536));
	ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
	close(fd);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", dev);
	ASSERT_EQ(0, disk_name_of(fdpath, name, sizeof(name)));
	snprintf(sys, sizeof(sys), "/sys/block/%s", name);
	ASSERT_TRUE(path_exists("%s", sys));
	close(ctl);
	close(dev);
	ASSERT_TRUE(path_exists("%s", sys));
	close(mfd);
	ASSERT_EQ(0, wait_gone(sys, 3000));
	ASSERT_EQ(0, R(umount(self->tmp)));
}

TEST_F_TIMEOUT(lc, detached_instance_mounts_ext4_image_via_proc_self_fd, 90)
{
	char img[PATH_MAX], ext[PATH_MAX], src[64], f[PATH_MAX], sys[PATH_MAX];
	char name[256];
	int mfd, ctl, dev, fd;

	snprintf(img, sizeof(img), "%s/ext4.img", self->tmp);
	snprintf(ext, sizeof(ext), "%s/ext", self->base);
	ASSERT_EQ(0, make_ext4_image(img, 32));
	ASSERT_EQ(0, mkdir(ext, 0755));
	mfd = detached_instance();
	ASSERT_LE(0, mfd);
	ctl = openat(mfd, LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	ASSERT_EQ(0, R(ioctl(ctl, LOOP_CTL_GET_FREE)));
	dev = openat(mfd, "loop0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	fd = open(img, O_RDWR | O_CLOEXEC);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_SET_FD, fd)));
	close(fd);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", dev);
	ASSERT_EQ(0, disk_name_of(src, name, sizeof(name)));
	snprintf(sys, sizeof(sys), "/sys/block/%s", name);
	ASSERT_EQ(0, mount(src, ext, "ext4", 0, NULL));
	snprintf(f, sizeof(f), "%s/hello", ext);
	ASSERT_TRUE(file_has_pattern(f, 65536, 9));
	ASSERT_EQ(0, umount(ext));
	close(ctl);
	close(dev);
	close(mfd);
	ASSERT_EQ(0, wait_gone(sys, 3000));
}

TEST_F_TIMEOUT(lc, sigkill_of_owner_with_detached_instance_leaves_nothing, 90)
{
	char img[PATH_MAX], ext[PATH_MAX], names[3][256], buf[1024];
	int pfd[2], c2;
	pid_t pid;
	int st;

	snprintf(img, sizeof(img), "%s/ext4.img", self->tmp);
	snprintf(ext, sizeof(ext), "%s/ext", self->base);
	ASSERT_EQ(0, make_ext4_image(img, 32));
	ASSERT_EQ(0, mkdir(ext, 0755));
	ASSERT_EQ(0, write_file(LOOPFS_SYSCTL_PATH, "3"));
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char src[64], n[3][256];
		int mfd, ctl, d0, d1, fd;

		close(pfd[0]);
		if (private_mntns())
			_exit(2);
		mfd = detached_instance();
		ctl = openat(mfd, LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
		if (ioctl(ctl, LOOP_CTL_GET_FREE) != 0 ||
		    ioctl(ctl, LOOP_CTL_ADD, 1) != 1 ||
		    ioctl(ctl, LOOP_CTL_ADD, 2) != 2)
			_exit(3);
		d0 = openat(mfd, "loop0", O_RDWR | O_CLOEXEC);
		d1 = openat(mfd, "loop1", O_RDONLY | O_CLOEXEC);
		fd = open(img, O_RDWR | O_CLOEXEC);
		if (d0 < 0 || d1 < 0 || ioctl(d0, LOOP_SET_FD, fd))
			_exit(4);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", d0);
		if (mount(src, ext, "ext4", 0, NULL))
			_exit(5);
		for (int i = 0; i < 3; i++) {
			int f = openat(mfd, i == 0 ? "loop0" : i == 1 ? "loop1" :
				       "loop2", O_PATH | O_CLOEXEC);

			snprintf(src, sizeof(src), "/proc/self/fd/%d", f);
			if (disk_name_of(src, n[i], sizeof(n[i])))
				_exit(6);
		}
		dprintf(pfd[1], "%s %s %s\n", n[0], n[1], n[2]);
		for (;;)
			pause();
	}
	close(pfd[1]);
	memset(buf, 0, sizeof(buf));
	ASSERT_LT(0, read(pfd[0], buf, sizeof(buf) - 1)) {
		waitpid(pid, &st, 0);
		TH_LOG("child failed: status %d", WEXITSTATUS(st));
	}
	ASSERT_EQ(3, sscanf(buf, "%255s %255s %255s", names[0], names[1],
			    names[2]));
	for (int i = 0; i < 3; i++) {
		ASSERT_TRUE(path_exists("/sys/block/%s", names[i]));
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	for (int i = 0; i < 3; i++) {
		char sys[PATH_MAX];

		snprintf(sys, sizeof(sys), "/sys/block/%s", names[i]);
		ASSERT_EQ(0, wait_gone(sys, 5000)) {
			TH_LOG("%s survived its owner", sys);
		}
	}
	/* The image is not held anymore... */
	for (int i = 0; i < 300 && umount(self->tmp); i++)
		usleep(10000);
	ASSERT_FALSE(path_exists("%s", img));
	/* ...and all three charges are back (limit 3). */
	c2 = self->ctl;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(i, add_when_charge_back(_metadata, c2, i));
	}
	ASSERT_EQ(-ENOSPC, R(ioctl(c2, LOOP_CTL_ADD, -1)));
}

/* ---------- module unload (keep last: it unloads and reloads) ---------- */

static long try_unload(void)
{
	return R(syscall(SYS_delete_module, "loopfs", O_NONBLOCK));
}

/* Does a line of @file have @word as its @col-th whitespace-separated field? */
static int proc_has(const char *file, int col, const char *word)
{
	FILE *f = fopen(file, "re");
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *save, *tok = strtok_r(line, " \t\n", &save);

		for (int i = 0; tok && i < col; i++)
			tok = strtok_r(NULL, " \t\n", &save);
		found = tok && !strcmp(tok, word);
	}
	fclose(f);
	return found;
}

TEST_F_TIMEOUT(lc, module_unload_refused_while_in_use_then_clean, 60)
{
	char p[PATH_MAX], sys[PATH_MAX], host[PATH_MAX];
	int mfd, hdev;

	ASSERT_TRUE(loopfs_loaded());
	ASSERT_TRUE(proc_has("/proc/filesystems", 1, "loop"));
	ASSERT_TRUE(proc_has("/proc/devices", 1, "loopfs"));
	/* 1: a mounted instance (the fixture's). */
	ASSERT_EQ(-EWOULDBLOCK, try_unload());
	ASSERT_NE(0, run_cmd("rmmod loopfs 2>/dev/null"));
	ASSERT_TRUE(loopfs_loaded());

	/* 2: an orphaned, still open device. */
	bind_0_closed(_metadata, self, p, sys);
	snprintf(host, sizeof(host), "/dev/%s", strrchr(sys, '/') + 1);
	hdev = open(host, O_RDONLY);
	ASSERT_LE(0, hdev);
	close(self->ctl);
	self->ctl = -1;
	ASSERT_EQ(0, umount(self->mnt));
	ASSERT_EQ(-EWOULDBLOCK, try_unload());
	close(hdev);
	ASSERT_EQ(0, wait_gone(sys, 3000));

	/* 3: a detached instance only. */
	mfd = detached_instance();
	ASSERT_LE(0, mfd);
	ASSERT_EQ(-EWOULDBLOCK, try_unload());
	close(mfd);

	/* Everything gone: unload succeeds (allow teardown to finish). */
	for (int i = 0; i < 500 && loopfs_refcnt() > 0; i++)
		usleep(10000);
	ASSERT_EQ(0, loopfs_refcnt());
	ASSERT_EQ(0, try_unload());
	ASSERT_FALSE(loopfs_loaded());
	ASSERT_EQ(0, count_loopfs_disks());
	ASSERT_FALSE(path_exists(LOOPFS_SYSCTL_PATH));
	ASSERT_FALSE(proc_has("/proc/filesystems", 1, "loop"));
	ASSERT_FALSE(proc_has("/proc/devices", 1, "loopfs"));

	/* Reload for the suites that follow; it works as before. */
	ASSERT_EQ(0, load_loopfs());
	ASSERT_TRUE(path_exists(LOOPFS_SYSCTL_PATH));
	ASSERT_EQ(0, lfs_mount(self->mnt, NULL));
	self->ctl = lfs_ctl(self->mnt);
	ASSERT_EQ(0, R(ioctl(self->ctl, LOOP_CTL_GET_FREE)));
	self->saved_max[0] = 0;
}

TEST_HARNESS_MAIN
