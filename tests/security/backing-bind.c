// SPDX-License-Identifier: GPL-2.0
/*
 * backing-bind: the loop(4) calls of tests/security/backing.sh, each
 * printing one line the suite compares: "ok", "ok ro=N" or the errno's
 * name. Exit status 0 unless the arguments are wrong.
 *
 *   backing-bind getfree CTL                 index from LOOP_CTL_GET_FREE
 *   backing-bind setfd|configure DEV FILE MODE
 *   backing-bind change DEV FILE MODE        LOOP_CHANGE_FD
 *   backing-bind clr DEV
 *   backing-bind sizelimit DEV BYTES         LOOP_SET_STATUS64 with a new
 *                                            lo_sizelimit, the rest kept
 *   backing-bind write DEV OFFSET STRING     pwrite + fsync on the device
 *
 * MODE is how FILE is opened: r, w, rw, a (O_WRONLY|O_APPEND) or ra
 * (O_RDWR|O_APPEND). "ro=N" is LO_FLAGS_READ_ONLY after binding. With
 * BIND_WAIT=PATH set, FILE is opened, PATH.opened created and PATH.go
 * waited for (20 s at most) before the ioctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "loopfs_test.h"

static int result(int ret)
{
	if (ret < 0)
		printf("%s\n", errno_name(errno));
	else
		printf("ok\n");
	return 0;
}

static int open_mode(const char *path, const char *mode)
{
	int flags;

	if (!strcmp(mode, "r"))
		flags = O_RDONLY;
	else if (!strcmp(mode, "w"))
		flags = O_WRONLY;
	else if (!strcmp(mode, "rw"))
		flags = O_RDWR;
	else if (!strcmp(mode, "a"))
		flags = O_WRONLY | O_APPEND;
	else if (!strcmp(mode, "ra"))
		flags = O_RDWR | O_APPEND;
	else
		return -2;
	return open(path, flags | O_CLOEXEC);
}

static void wait_go(void)
{
	const char *base = getenv("BIND_WAIT");
	char path[4096];
	int i, fd;

	if (!base)
		return;
	snprintf(path, sizeof(path), "%s.opened", base);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s.go", base);
	for (i = 0; i < 200 && access(path, F_OK); i++)
		usleep(100000);
}

int main(int argc, char **argv)
{
	struct loop_info64 info;
	int dev, file, ret;

	if (argc < 3)
		goto usage;
	if (!strcmp(argv[1], "getfree")) {
		int ctl = open(argv[2], O_RDWR | O_CLOEXEC);

		ret = ctl < 0 ? ctl : ioctl(ctl, LOOP_CTL_GET_FREE);
		if (ret < 0)
			return result(ret);
		printf("%d\n", ret);
		return 0;
	}
	dev = open(argv[2], O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return result(dev);
	if (!strcmp(argv[1], "clr"))
		return result(ioctl(dev, LOOP_CLR_FD, 0));
	if (!strcmp(argv[1], "sizelimit") && argc == 4) {
		ret = ioctl(dev, LOOP_GET_STATUS64, &info);
		info.lo_sizelimit = strtoull(argv[3], NULL, 0);
		return result(ret ?: ioctl(dev, LOOP_SET_STATUS64, &info));
	}
	if (!strcmp(argv[1], "write") && argc == 5) {
		size_t len = strlen(argv[4]);

		ret = pwrite(dev, argv[4], len, strtoll(argv[3], NULL, 0));
		if (ret >= 0 && (size_t)ret != len) {
			errno = EIO;
			ret = -1;
		}
		if (ret >= 0)
			ret = fsync(dev);
		return result(ret);
	}
	if (argc < 5)
		goto usage;
	file = open_mode(argv[3], argv[4]);
	if (file == -2)
		goto usage;
	if (file < 0) {
		printf("open: ");
		return result(file);
	}
	wait_go();
	if (!strcmp(argv[1], "change"))
		return result(ioctl(dev, LOOP_CHANGE_FD, file));
	if (!strcmp(argv[1], "setfd")) {
		ret = ioctl(dev, LOOP_SET_FD, file);
	} else if (!strcmp(argv[1], "configure")) {
		struct loop_config cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = file;
		/* No LO_FLAGS_READ_ONLY: the driver decides. */
		ret = ioctl(dev, LOOP_CONFIGURE, &cfg);
	} else {
		goto usage;
	}
	if (ret < 0)
		return result(ret);
	if (ioctl(dev, LOOP_GET_STATUS64, &info) < 0)
		return result(-1);
	printf("ok ro=%d\n", !!(info.lo_flags & LO_FLAGS_READ_ONLY));
	return 0;
usage:
	fprintf(stderr, "usage: see the comment at the top of backing-bind.c\n");
	return 2;
}
