// SPDX-License-Identifier: GPL-2.0
/* loopfs-run: logging, fd passing and child waiting. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopfs-run.h"

static void vlogmsg(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* one write, so that lines from helpers do not interleave */
	dprintf(STDERR_FILENO, "loopfs-run: %s\n", buf);
}

void logmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlogmsg(fmt, ap);
	va_end(ap);
}

void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!cfg.verbose)
		return;
	va_start(ap, fmt);
	vlogmsg(fmt, ap);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlogmsg(fmt, ap);
	va_end(ap);
	exit(125);
}

int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cmsg;

	if (nfds > 4)
		return -EINVAL;
	if (nfds) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t)len)
		return -errno ? -errno : -EIO;
	return 0;
}

/* Receives up to nfds descriptors; missing ones are set to -1. */
int recv_fds(int sock, void *buf, size_t len, int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cmsg;
	ssize_t n;
	int i, got = 0;

	for (i = 0; i < nfds; i++)
		fds[i] = -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EPIPE;
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		int k, n_in;

		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		n_in = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < n_in; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cmsg) + k * sizeof(int), sizeof(fd));
			if (got < nfds)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	return got;
}

/*
 * Waits for a child for at most timeout_ms (forever if < 0) and returns its
 * exit status (128 + signal for a killed child).  A child that runs too long
 * is killed and -ETIMEDOUT returned at once, without waiting for it: it may
 * be in an uninterruptible wait that ends only later.  Only helpers use a
 * timeout; their exit hands such a child to whoever reaps orphans.
 */
int wait_child(pid_t pid, int timeout_ms)
{
	int status, pidfd;

	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0 && timeout_ms >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int r;

		do
			r = poll(&p, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			close(pidfd);
			return -ETIMEDOUT;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* Copies a string from another process into a log line, safely. */
void printable(char *dst, size_t size, const char *src)
{
	size_t o = 0;

	if (!src) {
		snprintf(dst, size, "NULL");
		return;
	}
	for (; *src && o + 8 < size; src++) {
		unsigned char ch = *src;

		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			dst[o++] = ch;
		else
			o += snprintf(dst + o, size - o, "\\x%02x", ch);
	}
	if (*src) {	/* o + 4 <= size here: room for the ellipsis */
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = '\0';
}
