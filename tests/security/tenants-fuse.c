// SPDX-License-Identifier: GPL-2.0
/*
 * A FUSE file system of one regular file, "img", held in memory, served on
 * raw /dev/fuse (no libfuse). SIGUSR1 makes it stall: from then on READ,
 * WRITE and FSYNC requests are read and never answered, like a daemon that
 * hangs. INTERRUPT is honoured (the interrupted request fails with EINTR),
 * so a task waiting in a request can still be killed; a kernel worker that
 * is never signalled waits for good.
 *
 *   tenants-fuse MOUNTPOINT SIZE_MIB
 *
 * Mounts with allow_other and serves until the connection goes away
 * (umount, abort through /sys/fs/fuse/connections/N/abort, or a kill).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define IMG_INO		2
#define MAX_WRITE	(128 * 1024)
#define BUF_SIZE	(MAX_WRITE + 4096)

static volatile sig_atomic_t stalled;
static int fuse_fd;
static char *data;
static uint64_t size;

static void on_usr1(int sig)
{
	stalled = 1;
}

static void reply(uint64_t unique, int error, const void *arg, size_t len)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + (error ? 0 : len),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ &out, sizeof(out) },
		{ (void *)arg, error ? 0 : len },
	};

	/* ENOENT: the request was interrupted and is gone. */
	if (writev(fuse_fd, iov, 2) < 0 && errno != ENOENT) {
		perror("tenants-fuse: writev");
		exit(1);
	}
}

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0666;
		a->size = size;
		a->blocks = size / 512;
	}
}

static void serve(struct fuse_in_header *in, void *arg)
{
	switch (in->opcode) {
	case FUSE_INIT: {
		struct fuse_init_in *ii = arg;
		struct fuse_init_out io = {
			.major = FUSE_KERNEL_VERSION,
			.minor = FUSE_KERNEL_MINOR_VERSION,
			.max_readahead = ii->max_readahead,
			.max_write = MAX_WRITE,
			.max_background = 16,
			.congestion_threshold = 12,
		};

		reply(in->unique, 0, &io, sizeof(io));
		break;
	}
	case FUSE_LOOKUP: {
		struct fuse_entry_out eo = { 0 };

		if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, "img")) {
			reply(in->unique, -ENOENT, NULL, 0);
			break;
		}
		eo.nodeid = IMG_INO;
		eo.entry_valid = 3600;
		eo.attr_valid = 3600;
		fill_attr(&eo.attr, IMG_INO);
		reply(in->unique, 0, &eo, sizeof(eo));
		break;
	}
	case FUSE_GETATTR:
	case FUSE_SETATTR: {
		struct fuse_attr_out ao = { .attr_valid = 3600 };

		fill_attr(&ao.attr, in->nodeid);
		reply(in->unique, 0, &ao, sizeof(ao));
		break;
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		/* Keep the cache: an open must not wait on stalled pages. */
		struct fuse_open_out oo = {
			.fh = 1,
			.open_flags = FOPEN_KEEP_CACHE,
		};

		reply(in->unique, 0, &oo, sizeof(oo));
		break;
	}
	case FUSE_READ: {
		struct fuse_read_in *ri = arg;
		uint64_t len = ri->size;

		if (stalled)
			break;
		if (ri->offset >= size)
			len = 0;
		else if (ri->offset + len > size)
			len = size - ri->offset;
		reply(in->unique, 0, data + (len ? ri->offset : 0), len);
		break;
	}
	case FUSE_WRITE: {
		struct fuse_write_in *wi = arg;
		struct fuse_write_out wo = { .size = wi->size };

		if (stalled)
			break;
		if (wi->offset >= size || wi->offset + wi->size > size) {
			reply(in->unique, -EFBIG, NULL, 0);
			break;
		}
		memcpy(data + wi->offset, wi + 1, wi->size);
		reply(in->unique, 0, &wo, sizeof(wo));
		break;
	}
	case FUSE_FSYNC:
		if (stalled)
			break;
		/* fall through */
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		reply(in->unique, 0, NULL, 0);
		break;
	case FUSE_INTERRUPT: {
		struct fuse_interrupt_in *ii = arg;

		reply(ii->unique, -EINTR, NULL, 0);
		break;
	}
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
		break;
	default:
		reply(in->unique, -ENOSYS, NULL, 0);
		break;
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	char opts[128];
	char *buf;

	if (argc != 3) {
		fprintf(stderr, "usage: %s MOUNTPOINT SIZE_MIB\n", argv[0]);
		return 2;
	}
	size = strtoull(argv[2], NULL, 0) << 20;
	data = calloc(1, size);
	buf = malloc(BUF_SIZE);
	if (!data || !buf)
		return 1;
	sigaction(SIGUSR1, &sa, NULL);
	fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fuse_fd < 0) {
		perror("tenants-fuse: /dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other",
		 fuse_fd, getuid(), getgid());
	if (mount("tenants-fuse", argv[1], "fuse", MS_NOSUID | MS_NODEV,
		  opts)) {
		perror("tenants-fuse: mount");
		return 1;
	}
	for (;;) {
		ssize_t n = read(fuse_fd, buf, BUF_SIZE);

		if (n < 0) {
			if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
				continue;
			/* ENODEV: unmounted or aborted. */
			return errno == ENODEV ? 0 : 1;
		}
		if ((size_t)n < sizeof(struct fuse_in_header))
			return 1;
		serve((struct fuse_in_header *)buf,
		      buf + sizeof(struct fuse_in_header));
	}
}
