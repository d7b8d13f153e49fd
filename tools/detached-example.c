// SPDX-License-Identifier: GPL-2.0
/*
 * detached-example: loop devices that clean up after a crash.
 *
 * A loopfs instance created with the new mount API and never attached
 * anywhere lives exactly as long as its file descriptors.  This program
 * creates one, takes a free device from it, binds an ext4 image to it,
 * mounts the image (again detached, through /proc/self/fd/N), prints a file
 * and exits -- or crashes on request.  Whichever way it ends, the kernel
 * drops the fds and with them the mount, the device and the instance:
 * nothing is left behind to clean up.
 *
 *   detached-example [--crash|--hold] IMAGE FILE
 *     --crash  SIGKILL itself after printing
 *     --hold   print, then wait to be killed (for tests)
 * Needs CAP_SYS_ADMIN (root).  The device's system-wide name is printed on
 * stderr as "device: loopfs<ID>-<N>" so that tests can watch it go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "mount_api.h"
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "loopfs_abi.h"

static void fail(const char *what)
{
	fprintf(stderr, "detached-example: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A loopfs instance that is mounted nowhere: just a mount fd. */
static int detached_instance(void)
{
	int fs, mnt;

	fs = fsopen(LOOPFS_FSTYPE, FSOPEN_CLOEXEC);
	if (fs < 0)
		fail("fsopen(\"loop\")");
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0))
		fail("fsconfig(FSCONFIG_CMD_CREATE)");
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		fail("fsmount");
	close(fs);
	return mnt;
}

/* Binds image to a free device of the instance; returns the device fd. */
static int bind_image(int inst, const char *image)
{
	struct loop_config config;
	char name[32], sys[64], link[256];
	struct stat st;
	int ctl, dev, img, n;
	ssize_t len;

	ctl = openat(inst, LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		fail("openat(loop-control)");
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n < 0)
		fail("LOOP_CTL_GET_FREE");
	close(ctl);
	snprintf(name, sizeof(name), LOOPFS_NODE_FMT, n);
	dev = openat(inst, name, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		fail("openat(loopN)");

	img = open(image, O_RDONLY | O_CLOEXEC);
	if (img < 0)
		fail(image);
	memset(&config, 0, sizeof(config));
	config.fd = img;
	/* cleared by the kernel when the last user (our mount) goes away */
	config.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY;
	if (ioctl(dev, LOOP_CONFIGURE, &config))
		fail("LOOP_CONFIGURE");
	close(img);

	if (fstat(dev, &st) == 0) {
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u",
			 major(st.st_rdev), minor(st.st_rdev));
		len = readlink(sys, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = '\0';
			fprintf(stderr, "device: %s (%s in the instance)\n",
				strrchr(link, '/') + 1, name);
		}
	}
	return dev;
}

/* Mounts the device's ext4, detached as well, via /proc/self/fd/N. */
static int mount_image(int dev)
{
	char source[64];
	int fs, mnt;

	snprintf(source, sizeof(source), "/proc/self/fd/%d", dev);
	fs = fsopen("ext4", FSOPEN_CLOEXEC);
	if (fs < 0)
		fail("fsopen(\"ext4\")");
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", source, 0) ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0))
		fail("mount ext4 from the device");
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
		      MOUNT_ATTR_NODEV);
	if (mnt < 0)
		fail("fsmount(ext4)");
	close(fs);
	return mnt;
}

static void print_file(int mnt, const char *file)
{
	char buf[4096];
	ssize_t n;
	int fd;

	while (*file == '/')
		file++;
	fd = openat(mnt, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail(file);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (write(STDOUT_FILENO, buf, n) != n)
			fail("write");
	}
	close(fd);
}

int main(int argc, char **argv)
{
	bool crash = false, hold = false;
	int inst, dev, mnt;

	if (argc == 4 && !strcmp(argv[1], "--crash"))
		crash = true;
	else if (argc == 4 && !strcmp(argv[1], "--hold"))
		hold = true;
	else if (argc != 3) {
		fprintf(stderr, "usage: detached-example [--crash|--hold] IMAGE FILE\n");
		return 2;
	}
	inst = detached_instance();
	dev = bind_image(inst, argv[argc - 2]);
	mnt = mount_image(dev);
	/* the mount holds the device now; only the mount fd keeps it all alive */
	close(dev);
	close(inst);
	print_file(mnt, argv[argc - 1]);
	fflush(stdout);
	if (crash)
		kill(getpid(), SIGKILL);
	if (hold) {
		fprintf(stderr, "holding\n");
		pause();
	}
	return 0;	/* no cleanup code: exit drops the fds */
}
