/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loopfs-run: run a command in a user-namespace container with a private
 * loopfs instance, and perform its block-device mount(2) calls for it.
 */
#ifndef LOOPFS_RUN_H
#define LOOPFS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "loopfs_abi.h"

#define MAX_LIST		32

struct fuse_map {
	char *type;
	char *helper;
};

struct config {
	uid_t uid;			/* host uid of the container's root */
	gid_t gid;
	char *maps[MAX_LIST];		/* extra "in:out:count" ranges, uid and gid */
	int nmaps;
	unsigned int devices;		/* max= of the instance, pre-created devices */
	bool pid_ns;
	char *allow_fs[MAX_LIST];
	int nallow;
	struct fuse_map fuse[MAX_LIST];
	int nfuse;
	bool verbose;
	int helper_timeout_ms;		/* bound on every helper */
	char **argv;			/* COMMAND */
};

/* What the supervisor knows about its container. */
struct container {
	pid_t pid;			/* first process, inside all namespaces */
	int pidfd;			/* of pid: readable once COMMAND exited */
	bool exited;			/* seen while handling a mount */
	pid_t supervisor;
	int janitor;			/* its pipe, from the first kernel mount */
	pid_t janitor_pid;
	int notify_fd;			/* seccomp listener, supervisor only */
	int inst_fd;			/* O_PATH, root of the loopfs instance */
	int proc_fd;			/* O_PATH, the host's /proc */
	int userns_fd;			/* the container's user namespace */
	int host_ids_fd;		/* its host ids, each to itself */
	dev_t userns_dev;		/* and its identity */
	ino_t userns_ino;
};

extern struct config cfg;

/* util.c */
void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
int recv_fds(int sock, void *buf, size_t len, int *fds, int nfds);
int wait_child(pid_t pid, int timeout_ms);
void printable(char *dst, size_t size, const char *src);

/* supervise.c */
void handle_notification(struct container *c);
int supervise_init(void);
void reap_helpers(int timeout_ms);

/* confine.c: a kernel-mount helper's cgroup allowing one block device */
struct confinement {
	int parent;			/* the helper's cgroup */
	int dir;			/* the one made for it */
	char name[64];
	bool entered;
	const char *what;		/* the step that failed */
};

int confine_devices(struct confinement *cf, pid_t supervisor, dev_t dev);
void unconfine(struct confinement *cf);
int start_janitor(pid_t supervisor, pid_t *pid);
void stop_janitor(int fd, pid_t pid);

#endif
