// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs instances: every mount is an independent instance with its own
 * loop-control and device numbering, bind mounts share one, the root
 * directory holds only loop-control, loop<N> and the /sys/block view, and
 * refuses anything else; the view follows the devices and cannot be written;
 * inotify watchers of the root and the view see nodes and links come and go.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <sys/inotify.h>
#include <sys/statfs.h>
#include "loopfs_test.h"
#include "kselftest_harness.h"

FIXTURE(inst) {
	char a[PATH_MAX];
	char b[PATH_MAX];
	int ctl_a;
	int ctl_b;
};

FIXTURE_SETUP(inst)
{
	char base[PATH_MAX];

	ASSERT_EQ(0, private_mntns());
	ASSERT_NE(NULL, scratch_dir(base, sizeof(base), "inst"));
	snprintf(self->a, sizeof(self->a), "%s/a", base);
	snprintf(self->b, sizeof(self->b), "%s/b", base);
	ASSERT_EQ(0, lfs_mount(self->a, NULL));
	ASSERT_EQ(0, lfs_mount(self->b, NULL));
	self->ctl_a = lfs_ctl(self->a);
	ASSERT_LE(0, self->ctl_a);
	self->ctl_b = lfs_ctl(self->b);
	ASSERT_LE(0, self->ctl_b);
}

FIXTURE_TEARDOWN(inst)
{
	close(self->ctl_a);
	close(self->ctl_b);
	umount2(self->a, MNT_DETACH);
	umount2(self->b, MNT_DETACH);
}

TEST_F(inst, two_mounts_each_get_loop0_from_get_free)
{
	struct stat sa, sb;
	char p[PATH_MAX];

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_GET_FREE)));
	ASSERT_EQ(0, R(ioctl(self->ctl_b, LOOP_CTL_GET_FREE)));
	lfs_devpath(p, sizeof(p), self->a, 0);
	ASSERT_EQ(0, stat(p, &sa));
	lfs_devpath(p, sizeof(p), self->b, 0);
	ASSERT_EQ(0, stat(p, &sb));
	ASSERT_TRUE(S_ISBLK(sa.st_mode));
	ASSERT_TRUE(S_ISBLK(sb.st_mode));
	/* Same name, different devices. */
	ASSERT_NE(sa.st_rdev, sb.st_rdev);
	/* Different superblocks. */
	ASSERT_EQ(0, stat(self->a, &sa));
	ASSERT_EQ(0, stat(self->b, &sb));
	ASSERT_NE(sa.st_dev, sb.st_dev);
}

TEST_F(inst, device_of_one_instance_is_invisible_in_the_other)
{
	ASSERT_EQ(3, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 3)));
	ASSERT_TRUE(path_exists("%s/loop3", self->a));
	ASSERT_FALSE(path_exists("%s/loop3", self->b));
	/* b has no loop3: REMOVE says so and leaves a's device alone. */
	ASSERT_EQ(-ENODEV, R(ioctl(self->ctl_b, LOOP_CTL_REMOVE, 3)));
	ASSERT_TRUE(path_exists("%s/loop3", self->a));
	/* b can create its own loop3 independently. */
	ASSERT_EQ(3, R(ioctl(self->ctl_b, LOOP_CTL_ADD, 3)));
	/* GET_FREE in b returns b's own device, not a's. */
	ASSERT_EQ(3, R(ioctl(self->ctl_b, LOOP_CTL_GET_FREE)));
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_REMOVE, 3)));
	ASSERT_FALSE(path_exists("%s/loop3", self->a));
	ASSERT_TRUE(path_exists("%s/loop3", self->b));
}

TEST_F(inst, same_source_string_still_gives_a_new_instance)
{
	char c[PATH_MAX], d[PATH_MAX];
	int cc, cd;

	snprintf(c, sizeof(c), "%s.c", self->a);
	snprintf(d, sizeof(d), "%s.d", self->a);
	ASSERT_EQ(0, mkdir(c, 0755));
	ASSERT_EQ(0, mkdir(d, 0755));
	ASSERT_EQ(0, mount("shared-name", c, LOOPFS_FSTYPE, 0, NULL));
	ASSERT_EQ(0, mount("shared-name", d, LOOPFS_FSTYPE, 0, NULL));
	cc = lfs_ctl(c);
	cd = lfs_ctl(d);
	ASSERT_LE(0, cc);
	ASSERT_LE(0, cd);
	ASSERT_EQ(0, R(ioctl(cc, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(0, R(ioctl(cd, LOOP_CTL_ADD, 0)));
	close(cc);
	close(cd);
}

TEST_F(inst, bind_mount_shares_the_instance)
{
	char c[PATH_MAX];
	struct stat s1, s2;
	int cc;

	snprintf(c, sizeof(c), "%s.bind", self->a);
	ASSERT_EQ(0, mkdir(c, 0755));
	ASSERT_EQ(0, mount(self->a, c, NULL, MS_BIND, NULL));
	ASSERT_EQ(2, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 2)));
	ASSERT_TRUE(path_exists("%s/loop2", c));
	ASSERT_EQ(0, stat(c, &s1));
	ASSERT_EQ(0, stat(self->a, &s2));
	ASSERT_EQ(s1.st_dev, s2.st_dev);
	cc = lfs_ctl(c);
	ASSERT_LE(0, cc);
	ASSERT_EQ(-EEXIST, R(ioctl(cc, LOOP_CTL_ADD, 2)));
	ASSERT_EQ(2, R(ioctl(cc, LOOP_CTL_GET_FREE)));
	ASSERT_EQ(0, R(ioctl(cc, LOOP_CTL_REMOVE, 2)));
	ASSERT_FALSE(path_exists("%s/loop2", self->a));
	close(cc);
}

/*
 * Entries of @dir that start with @prefix, "." and ".." left out; -1 if it
 * cannot be read.
 */
static int count_prefixed(const char *dir, const char *prefix)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

static int count_entries(const char *dir)
{
	return count_prefixed(dir, "");
}

TEST_F(inst, root_dir_holds_only_loop_control_and_the_views_with_right_modes_and_owner)
{
	struct stat st;
	struct dirent *de;
	char p[PATH_MAX];
	int n = 0, i;
	DIR *d;

	ASSERT_EQ(0, stat(self->a, &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(0755, st.st_mode & 07777);
	ASSERT_EQ(0, st.st_uid);
	ASSERT_EQ(0, st.st_gid);

	snprintf(p, sizeof(p), "%s/" LOOPFS_CONTROL_NAME, self->a);
	ASSERT_EQ(0, stat(p, &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	ASSERT_EQ(0600, st.st_mode & 07777);
	ASSERT_EQ(0, st.st_uid);
	ASSERT_EQ(0, st.st_gid);

	/* The views, empty at first. */
	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", self->a,
			 i ? LOOPFS_DEV_VIEW_NAME : LOOPFS_VIEW_NAME);
		ASSERT_EQ(0, lstat(p, &st));
		ASSERT_TRUE(S_ISDIR(st.st_mode));
		ASSERT_EQ(0555, st.st_mode & 07777);
		ASSERT_EQ(0, st.st_uid);
		ASSERT_EQ(0, st.st_gid);
		ASSERT_EQ(0, count_entries(p));
	}

	d = opendir(self->a);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (strcmp(de->d_name, LOOPFS_VIEW_NAME) &&
		    strcmp(de->d_name, LOOPFS_DEV_VIEW_NAME))
			EXPECT_STREQ(LOOPFS_CONTROL_NAME, de->d_name);
		n++;
	}
	closedir(d);
	ASSERT_EQ(3, n);
}

TEST_F(inst, device_nodes_are_block_0600_root_on_our_major)
{
	struct stat s0, s5;
	char p[PATH_MAX];
	int maj = loopfs_block_major();

	ASSERT_LT(0, maj);
	ASSERT_NE(STOCK_LOOP_MAJOR, maj);
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(5, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 5)));
	lfs_devpath(p, sizeof(p), self->a, 0);
	ASSERT_EQ(0, stat(p, &s0));
	lfs_devpath(p, sizeof(p), self->a, 5);
	ASSERT_EQ(0, stat(p, &s5));
	ASSERT_TRUE(S_ISBLK(s0.st_mode));
	ASSERT_TRUE(S_ISBLK(s5.st_mode));
	ASSERT_EQ(0600, s0.st_mode & 07777);
	ASSERT_EQ(0600, s5.st_mode & 07777);
	ASSERT_EQ(0, s0.st_uid);
	ASSERT_EQ(0, s0.st_gid);
	ASSERT_EQ(maj, major(s0.st_rdev));
	ASSERT_EQ(maj, major(s5.st_rdev));
	ASSERT_NE(s0.st_rdev, s5.st_rdev);
	/* 16 minors per device: partitions of loop0 fit under it. */
	ASSERT_EQ(0, minor(s0.st_rdev) % 16);
	ASSERT_EQ(0, minor(s5.st_rdev) % 16);
}

TEST_F(inst, readdir_lists_devices_in_the_instance)
{
	struct dirent *de;
	int seen = 0;
	DIR *d;

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(7, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 7)));
	d = opendir(self->a);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, "loop0"))
			seen |= 1;
		else if (!strcmp(de->d_name, "loop7"))
			seen |= 2;
		else if (!strcmp(de->d_name, LOOPFS_CONTROL_NAME))
			seen |= 4;
		else if (!strcmp(de->d_name, LOOPFS_VIEW_NAME))
			seen |= 16;
		else if (!strcmp(de->d_name, LOOPFS_DEV_VIEW_NAME))
			seen |= 32;
		else if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			seen |= 8;
	}
	closedir(d);
	ASSERT_EQ(1 | 2 | 4 | 16 | 32, seen);
}

/* @path's symlink target is @want. */
static int link_is(const char *path, const char *want)
{
	char target[PATH_MAX];
	ssize_t n;

	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = 0;
	return !strcmp(target, want);
}

/*
 * The view's loop<N> of @dir stands for the sysfs directory of its node: a
 * 0555 directory of the instance root's, as many entries as sysfs's
 * directory has, each a symlink into it (dev checked).
 */
static int view_dir_matches(const char *dir, int index)
{
	char p[PATH_MAX], want[PATH_MAX], disk[64];
	struct stat st;

	lfs_devpath(p, sizeof(p), dir, index);
	if (disk_name_of(p, disk, sizeof(disk)))
		return 0;
	snprintf(p, sizeof(p), "%s/" LOOPFS_VIEW_NAME "/" LOOPFS_NODE_FMT,
		 dir, index);
	if (lstat(p, &st) || !S_ISDIR(st.st_mode) ||
	    (st.st_mode & 07777) != 0555 || st.st_uid)
		return 0;
	snprintf(want, sizeof(want), "/sys/devices/virtual/block/%s", disk);
	if (count_entries(p) != count_entries(want))
		return 0;
	/* Relative, to resolve once the view is bound over /sys/block. */
	snprintf(want, sizeof(want), "../../devices/virtual/block/%s/dev", disk);
	strcat(p, "/dev");
	return link_is(p, want);
}

TEST_F(inst, view_links_each_device_to_its_sysfs_dir_and_follows_add_remove)
{
	char v[PATH_MAX], p[PATH_MAX];
	struct stat st;

	snprintf(v, sizeof(v), "%s/" LOOPFS_VIEW_NAME, self->a);
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(7, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 7)));
	ASSERT_EQ(3, R(ioctl(self->ctl_b, LOOP_CTL_ADD, 3)));
	ASSERT_EQ(2, count_entries(v));
	ASSERT_TRUE(view_dir_matches(self->a, 0));
	ASSERT_TRUE(view_dir_matches(self->a, 7));
	snprintf(p, sizeof(p), "%s/loop7", v);
	ASSERT_EQ(0, lstat(p, &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(0, st.st_uid);
	/* The other instance's device is in its own view only. */
	ASSERT_FALSE(path_exists("%s/loop3", v));
	ASSERT_TRUE(view_dir_matches(self->b, 3));
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_REMOVE, 7)));
	ASSERT_EQ(1, count_entries(v));
	lfs_devpath(p, sizeof(p), self->a, 0);
	ASSERT_EQ(0, unlink(p));
	ASSERT_EQ(0, count_entries(v));
}

/*
 * Wait up to @ms for the inotify event "@wd @what @name" on @fd, what
 * being create or delete. Every event read is kept in @log, one line
 * each, for the checks that follow and for the failure message.
 */
static int saw_event(int fd, char *log, size_t len, int wd,
		     const char *what, const char *name, int ms)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t end = now_ms() + ms;
	char want[NAME_MAX + 32];
	ssize_t n;

	snprintf(want, sizeof(want), "%d %s %s\n", wd, what, name);
	for (;;) {
		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			char *p = buf;

			while (p < buf + n) {
				struct inotify_event *ev = (void *)p;
				size_t used = strlen(log);

				snprintf(log + used, len - used, "%d %s %s\n",
					 ev->wd,
					 ev->mask & IN_CREATE ? "create" :
					 ev->mask & IN_DELETE ? "delete" : "other",
					 ev->len ? ev->name : "");
				p += sizeof(*ev) + ev->len;
			}
		}
		if (strstr(log, want))
			return 1;
		if (now_ms() >= end)
			return 0;
		poll(&pfd, 1, 100);
	}
}

/*
 * Device 0 of instance @dir bound to a fresh MBR image @img with a
 * partition scan: its open fd, or -1.
 */
static int bind_partitioned(const char *dir, const char *img)
{
	struct loop_config cfg = { .info.lo_flags = LO_FLAGS_PARTSCAN };
	int dev;

	if (make_mbr_image(img))
		return -1;
	cfg.fd = open(img, O_RDWR | O_CLOEXEC);
	if (cfg.fd < 0)
		return -1;
	dev = lfs_open_dev(dir, 0, O_RDWR);
	if (dev >= 0 && ioctl(dev, LOOP_CONFIGURE, &cfg)) {
		close(dev);
		dev = -1;
	}
	close(cfg.fd);
	return dev;
}

TEST_F(inst, inotify_sees_nodes_and_view_links_come_and_go)
{
	char v[PATH_MAX], img[PATH_MAX], log[8192] = "";
	int in, root, view, dev;

	snprintf(v, sizeof(v), "%s/" LOOPFS_VIEW_NAME, self->a);
	snprintf(img, sizeof(img), "%s.img", self->a);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ASSERT_LE(0, in);
	root = inotify_add_watch(in, self->a, IN_CREATE | IN_DELETE);
	ASSERT_LE(0, root);
	view = inotify_add_watch(in, v, IN_CREATE | IN_DELETE);
	ASSERT_LE(0, view);

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	EXPECT_TRUE(saw_event(in, log, sizeof(log), root, "create", "loop0",
			      2000)) TH_LOG("events: %s", log);
	EXPECT_TRUE(saw_event(in, log, sizeof(log), view, "create", "loop0",
			      2000)) TH_LOG("events: %s", log);

	/* Partition nodes come with the scan and go with the clear. */
	dev = bind_partitioned(self->a, img);
	ASSERT_LE(0, dev);
	EXPECT_TRUE(saw_event(in, log, sizeof(log), root, "create", "loop0p1",
			      2000)) TH_LOG("events: %s", log);
	EXPECT_TRUE(saw_event(in, log, sizeof(log), root, "create", "loop0p2",
			      2000)) TH_LOG("events: %s", log);
	ASSERT_EQ(0, R(ioctl(dev, LOOP_CLR_FD, 0)));
	close(dev);
	EXPECT_TRUE(saw_event(in, log, sizeof(log), root, "delete", "loop0p1",
			      2000)) TH_LOG("events: %s", log);
	EXPECT_TRUE(saw_event(in, log, sizeof(log), root, "delete", "loop0p2",
			      2000)) TH_LOG("events: %s", log);

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_REMOVE, 0)));
	EXPECT_TRUE(saw_event(in, log, sizeof(log), root, "delete", "loop0",
			      2000)) TH_LOG("events: %s", log);
	EXPECT_TRUE(saw_event(in, log, sizeof(log), view, "delete", "loop0",
			      2000)) TH_LOG("events: %s", log);
	close(in);
}

TEST_F(inst, views_name_partitions_as_the_instance_nodes_do)
{
	char v[PATH_MAX], dv[PATH_MAX], img[PATH_MAX], p[PATH_MAX];
	char want[PATH_MAX], disk[64];
	struct stat st;
	int dev, part, vfd;

	snprintf(v, sizeof(v), "%s/" LOOPFS_VIEW_NAME "/loop0", self->a);
	snprintf(dv, sizeof(dv), "%s/" LOOPFS_DEV_VIEW_NAME, self->a);
	snprintf(img, sizeof(img), "%s.img", self->a);
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	dev = bind_partitioned(self->a, img);
	ASSERT_LE(0, dev);
	lfs_devpath(p, sizeof(p), self->a, 0);
	ASSERT_EQ(0, disk_name_of(p, disk, sizeof(disk)));
	ASSERT_EQ(0, stat(p, &st));
	snprintf(p, sizeof(p), "%s/%u:%u", dv, major(st.st_rdev),
		 minor(st.st_rdev));
	EXPECT_TRUE(link_is(p, "../../" LOOPFS_VIEW_NAME "/loop0"));

	for (part = 1; part <= 2; part++) {
		snprintf(p, sizeof(p), "%s/loop0p%d", v, part);
		snprintf(want, sizeof(want),
			 "../../devices/virtual/block/%s/%sp%d", disk, disk,
			 part);
		EXPECT_TRUE(link_is(p, want)) TH_LOG("%s", p);
		snprintf(p, sizeof(p), "%s/loop0p%d", self->a, part);
		ASSERT_EQ(0, stat(p, &st));
		snprintf(p, sizeof(p), "%s/%u:%u", dv, major(st.st_rdev),
			 minor(st.st_rdev));
		snprintf(want, sizeof(want),
			 "../../" LOOPFS_VIEW_NAME "/loop0/loop0p%d", part);
		EXPECT_TRUE(link_is(p, want)) TH_LOG("%s", p);
	}
	/* Listed under the nodes' names, never the host's. */
	EXPECT_EQ(2, count_prefixed(v, "loop0p"));
	EXPECT_EQ(0, count_prefixed(v, disk));
	EXPECT_FALSE(path_exists("%s/%sp1", v, disk));
	EXPECT_FALSE(path_exists("%s/loop0p3", v));
	EXPECT_EQ(3, count_entries(dv));

	ASSERT_EQ(0, R(ioctl(dev, LOOP_CLR_FD, 0)));
	close(dev);
	EXPECT_EQ(0, count_prefixed(v, "loop0p"));
	EXPECT_FALSE(path_exists("%s/loop0p1", v));
	EXPECT_EQ(1, count_entries(dv));
	/* A removed device's directory, still open, shows nothing more. */
	vfd = open(v, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, vfd);
	EXPECT_EQ(0, faccessat(vfd, "dev", F_OK, AT_SYMLINK_NOFOLLOW));
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_REMOVE, 0)));
	EXPECT_EQ(0, count_entries(dv));
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	EXPECT_EQ(-ENOENT, R(faccessat(vfd, "dev", F_OK, AT_SYMLINK_NOFOLLOW)));
	close(vfd);
	EXPECT_TRUE(view_dir_matches(self->a, 0));
	unlink(img);
}

/* No file, directory, symlink or FIFO can be made at @p: EPERM for each. */
static int creation_refused(const char *p)
{
	int fd = open(p, O_CREAT | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == EPERM && R(mkdir(p, 0755)) == -EPERM &&
	       R(symlink("size", p)) == -EPERM &&
	       R(mknod(p, S_IFIFO | 0600, 0)) == -EPERM;
}

TEST_F(inst, view_cannot_be_written_or_removed)
{
	char v[PATH_MAX], p[PATH_MAX], q[PATH_MAX];

	snprintf(v, sizeof(v), "%s/" LOOPFS_VIEW_NAME, self->a);
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	snprintf(p, sizeof(p), "%s/new", v);
	EXPECT_TRUE(creation_refused(p));
	snprintf(q, sizeof(q), "%s/loop0", v);
	EXPECT_EQ(-EISDIR, R(unlink(q)));
	EXPECT_EQ(-EPERM, R(rmdir(q)));
	EXPECT_EQ(-EPERM, R(rename(q, p)));
	EXPECT_EQ(-EPERM, R(link(q, p)));
	EXPECT_EQ(-EPERM, R(rmdir(v)));
	/* Nor in a device's directory, nor in the view of /sys/dev/block. */
	snprintf(p, sizeof(p), "%s/loop0/new", v);
	EXPECT_TRUE(creation_refused(p));
	snprintf(p, sizeof(p), "%s/loop0/size", v);
	EXPECT_EQ(-EPERM, R(unlink(p)));
	snprintf(p, sizeof(p), "%s/" LOOPFS_DEV_VIEW_NAME "/1:1", self->a);
	EXPECT_TRUE(creation_refused(p));
	snprintf(p, sizeof(p), "%s/" LOOPFS_DEV_VIEW_NAME, self->a);
	EXPECT_EQ(-EPERM, R(rmdir(p)));
	snprintf(p, sizeof(p), "%s/new", v);
	EXPECT_EQ(-EISDIR, R(unlink(v)));
	snprintf(q, sizeof(q), "%s/view", self->a);
	EXPECT_EQ(-EPERM, R(rename(v, q)));
	ASSERT_FALSE(path_exists("%s", p));
	ASSERT_EQ(1, count_entries(v));
	ASSERT_TRUE(view_dir_matches(self->a, 0));
}

TEST_F(inst, creating_files_dirs_symlinks_nodes_in_root_fails_eperm)
{
	char p[PATH_MAX], q[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/newfile", self->a);
	fd = open(p, O_CREAT | O_RDWR, 0600);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-EPERM, R(mkdir(p, 0755)));
	EXPECT_EQ(-EPERM, R(symlink("/etc/passwd", p)));
	EXPECT_EQ(-EPERM, R(mknod(p, S_IFIFO | 0600, 0)));
	EXPECT_EQ(-EPERM, R(mknod(p, S_IFREG | 0600, 0)));
	EXPECT_EQ(-EPERM, R(mknod(p, S_IFBLK | 0600, makedev(7, 0))));
	EXPECT_EQ(-EPERM, R(mknod(p, S_IFCHR | 0600, makedev(1, 3))));
	/* A node that looks like a device of ours cannot be made by hand. */
	snprintf(q, sizeof(q), "%s/loop9", self->a);
	EXPECT_EQ(-EPERM, R(mknod(q, S_IFBLK | 0600,
				  makedev(loopfs_block_major(), 144))));
	snprintf(q, sizeof(q), "%s/" LOOPFS_CONTROL_NAME, self->a);
	EXPECT_EQ(-EPERM, R(link(q, p)));
	ASSERT_FALSE(path_exists("%s", p));
	ASSERT_FALSE(path_exists("%s/loop9", self->a));
}

TEST_F(inst, statfs_reports_loopfs_magic)
{
	struct statfs sfs;

	ASSERT_EQ(0, statfs(self->a, &sfs));
	ASSERT_EQ(LOOPFS_SUPER_MAGIC, (unsigned long)sfs.f_type);
	ASSERT_EQ(0, statfs(self->b, &sfs));
	ASSERT_EQ(LOOPFS_SUPER_MAGIC, (unsigned long)sfs.f_type);
}

/* Find @dir in /proc/self/mountinfo; copy the fs type and super options. */
static int mountinfo_find(const char *dir, char *type, size_t tlen,
			  char *sopts, size_t slen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], fst[64], src[256], so[1024];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*d %*d %*s %*s %4095s", mp) != 1)
			continue;
		if (strcmp(mp, dir))
			continue;
		if (sscanf(sep + 3, "%63s %255s %1023s", fst, src, so) != 3)
			continue;
		snprintf(type, tlen, "%s", fst);
		snprintf(sopts, slen, "%s", so);
		found = 1;
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

TEST_F(inst, mountinfo_shows_type_loop)
{
	char type[64], so[1024];

	ASSERT_EQ(0, mountinfo_find(self->a, type, sizeof(type), so, sizeof(so)));
	ASSERT_STREQ("loop", type);
}

TEST_F(inst, loop_control_works_through_a_symlink)
{
	char link[PATH_MAX], target[PATH_MAX];
	int fd;

	snprintf(link, sizeof(link), "%s.ctl-link", self->a);
	snprintf(target, sizeof(target), "%s/" LOOPFS_CONTROL_NAME, self->a);
	ASSERT_EQ(0, symlink(target, link));
	fd = open(link, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, R(ioctl(fd, LOOP_CTL_GET_FREE)));
	ASSERT_TRUE(path_exists("%s/loop0", self->a));
	ASSERT_FALSE(path_exists("%s/loop0", self->b));
	close(fd);
}

TEST_F(inst, loop_control_works_through_a_bind_mount_of_the_node)
{
	char file[PATH_MAX], target[PATH_MAX];
	int fd;

	snprintf(file, sizeof(file), "%s.ctl-bind", self->a);
	snprintf(target, sizeof(target), "%s/" LOOPFS_CONTROL_NAME, self->a);
	fd = open(file, O_CREAT | O_RDWR, 0600);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, mount(target, file, NULL, MS_BIND, NULL));
	fd = open(file, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(4, R(ioctl(fd, LOOP_CTL_ADD, 4)));
	ASSERT_TRUE(path_exists("%s/loop4", self->a));
	ASSERT_FALSE(path_exists("%s/loop4", self->b));
	close(fd);
}

TEST_F(inst, device_node_works_through_a_symlink)
{
	char link[PATH_MAX], target[PATH_MAX];
	int fd;

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	snprintf(link, sizeof(link), "%s.dev-link", self->a);
	snprintf(target, sizeof(target), "%s/loop0", self->a);
	ASSERT_EQ(0, symlink(target, link));
	fd = open(link, O_RDWR);
	ASSERT_LE(0, fd);
	/* Unbound device: the loop ioctls answer as a loop device. */
	ASSERT_EQ(-ENXIO, R(ioctl(fd, LOOP_CLR_FD)));
	close(fd);
}

TEST_F(inst, sysfs_names_are_unique_start_with_loop_and_are_not_loopN)
{
	char pa[PATH_MAX], pb[PATH_MAX], na[256], nb[256], chk[300];
	int id, idx;
	char tail;

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(0, R(ioctl(self->ctl_b, LOOP_CTL_ADD, 0)));
	lfs_devpath(pa, sizeof(pa), self->a, 0);
	lfs_devpath(pb, sizeof(pb), self->b, 0);
	ASSERT_EQ(0, disk_name_of(pa, na, sizeof(na)));
	ASSERT_EQ(0, disk_name_of(pb, nb, sizeof(nb)));
	TH_LOG("disk names: %s %s", na, nb);
	ASSERT_STRNE(na, nb);
	ASSERT_EQ(0, strncmp(na, "loop", 4));
	/* Documented form loopfs<ID>-<N>, N the index in the instance. */
	ASSERT_EQ(2, sscanf(na, LOOPFS_DISK_FMT "%c", &id, &idx, &tail));
	ASSERT_EQ(0, idx);
	ASSERT_EQ(2, sscanf(nb, LOOPFS_DISK_FMT "%c", &id, &idx, &tail));
	snprintf(chk, sizeof(chk), "/sys/block/%s", na);
	ASSERT_TRUE(path_exists("%s", chk));
}

TEST_F(inst, host_devtmpfs_node_is_root_only_and_no_loopN_node_is_ours)
{
	char p[PATH_MAX], name[256], hp[PATH_MAX];
	struct stat st, hst;
	struct dirent *de;
	int maj = loopfs_block_major();
	DIR *d;

	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	lfs_devpath(p, sizeof(p), self->a, 0);
	ASSERT_EQ(0, stat(p, &st));
	ASSERT_EQ(0, disk_name_of(p, name, sizeof(name)));
	snprintf(hp, sizeof(hp), "/dev/%s", name);
	ASSERT_EQ(0, stat(hp, &hst));
	ASSERT_TRUE(S_ISBLK(hst.st_mode));
	ASSERT_EQ(st.st_rdev, hst.st_rdev);
	ASSERT_EQ(0600, hst.st_mode & 07777);
	ASSERT_EQ(0, hst.st_uid);

	d = opendir("/dev");
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		char q[PATH_MAX];
		unsigned int n;
		char tail;

		if (sscanf(de->d_name, "loop%u%c", &n, &tail) != 1)
			continue;
		snprintf(q, sizeof(q), "/dev/%s", de->d_name);
		if (stat(q, &hst) || !S_ISBLK(hst.st_mode))
			continue;
		EXPECT_NE(maj, major(hst.st_rdev)) {
			TH_LOG("%s carries the loopfs major", q);
		}
	}
	closedir(d);
}

TEST_F(inst, stock_loop_control_keeps_working_beside_instances)
{
	char p[64];
	struct stat st;
	int sctl, n;

	sctl = open("/dev/loop-control", O_RDWR);
	ASSERT_LE(0, sctl);
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	n = ioctl(sctl, LOOP_CTL_GET_FREE);
	ASSERT_LE(0, n);
	snprintf(p, sizeof(p), "/dev/loop%d", n);
	ASSERT_EQ(0, stat(p, &st));
	ASSERT_EQ(STOCK_LOOP_MAJOR, major(st.st_rdev));
	/* Our instance did not gain or lose anything. */
	ASSERT_FALSE(path_exists("%s/" LOOPFS_NODE_FMT, self->a, n ? n : 1));
	ASSERT_TRUE(path_exists("%s/loop0", self->a));
	close(sctl);
}

TEST_F(inst, umount_of_one_instance_leaves_the_other_intact)
{
	char p[PATH_MAX];
	int fd;

	ASSERT_EQ(0, R(ioctl(self->ctl_b, LOOP_CTL_ADD, 0)));
	ASSERT_EQ(0, R(ioctl(self->ctl_a, LOOP_CTL_ADD, 0)));
	close(self->ctl_a);
	self->ctl_a = -1;
	ASSERT_EQ(0, umount(self->a));
	lfs_devpath(p, sizeof(p), self->b, 0);
	fd = open(p, O_RDWR);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(1, R(ioctl(self->ctl_b, LOOP_CTL_ADD, 1)));
}

TEST_HARNESS_MAIN
