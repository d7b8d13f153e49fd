/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the loopfs selftests. Every test runs in a forked child
 * (kselftest harness); tests call private_mntns() first so that every mount
 * they make disappears with the child.
 */
#ifndef LOOPFS_UTIL_H
#define LOOPFS_UTIL_H

/* Paths are built with snprintf into PATH_MAX buffers; truncation cannot happen here. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/loop.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#define LOOPFS_SUPER_MAGIC 0x6c6f6f71
#define STOCK_LOOP_MAJOR 7
#define MAX_LOOP_SYSCTL "/proc/sys/user/max_loop_devices"

/* Result of a syscall as 0/positive value or -errno. */
#define R(expr) ({ long __r = (long)(expr); __r < 0 ? -(long)errno : __r; })

static inline int private_mntns(void)
{
	if (unshare(CLONE_NEWNS))
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	return 0;
}

/* Mount a new loopfs instance on @dir (created if needed). */
static inline int lfs_mount(const char *dir, const char *opts)
{
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (mount("loop", dir, "loop", 0, opts))
		return -errno;
	return 0;
}

static inline int lfs_ctl(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/loop-control", dir);
	return open(p, O_RDWR | O_CLOEXEC);
}

static inline void lfs_devpath(char *buf, size_t len, const char *dir, int n)
{
	snprintf(buf, len, "%s/loop%d", dir, n);
}

static inline int lfs_open_dev(const char *dir, int n, int flags)
{
	char p[PATH_MAX];

	lfs_devpath(p, sizeof(p), dir, n);
	return open(p, flags | O_CLOEXEC);
}

static inline int path_exists(const char *fmt, ...)
{
	char p[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	return lstat(p, &st) == 0;
}

/* Fill @len bytes at @off with a pattern derived from @seed and the offset. */
static inline void pattern_fill(unsigned char *buf, size_t len, uint64_t off,
				unsigned int seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) / 8 * 0x9e3779b97f4a7c15ULL + seed;

		x ^= x >> 29;
		buf[i] = (unsigned char)(x >> (8 * ((off + i) % 8)));
	}
}

/* Create @path of @size bytes filled with the pattern for @seed. */
static inline int make_backing(const char *path, off_t size, unsigned int seed)
{
	unsigned char buf[65536];
	off_t off;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < (off_t)sizeof(buf) ? size - off : sizeof(buf);

		pattern_fill(buf, n, off, seed);
		if (pwrite(fd, buf, n, off) != (ssize_t)n) {
			close(fd);
			return -EIO;
		}
	}
	close(fd);
	return 0;
}

static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

/* Read a small file into @buf, strip the trailing newline. */
static inline int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return 0;
}

static inline long read_long(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 0);
}

/* Kernel name of the disk behind the block device node @path ("loopfs3-0"). */
static inline int disk_name_of(const char *path, char *name, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct stat st;
	ssize_t n;
	char *slash;

	if (stat(path, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	slash = strrchr(target, '/');
	snprintf(name, len, "%s", slash ? slash + 1 : target);
	return 0;
}

/* Read /sys/block/<disk of path>/<attr> into buf. */
static inline int disk_attr(const char *path, const char *attr, char *buf,
			    size_t len)
{
	char p[PATH_MAX];
	struct stat st;

	if (stat(path, &st))
		return -errno;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/%s",
		 major(st.st_rdev), minor(st.st_rdev), attr);
	return read_file(p, buf, len);
}

/* Wait up to @ms for @path to disappear; 0 when gone. */
static inline int wait_gone(const char *path, int ms)
{
	struct stat st;

	for (int i = 0; i < ms / 10; i++) {
		if (lstat(path, &st))
			return 0;
		usleep(10000);
	}
	return lstat(path, &st) ? 0 : -EEXIST;
}

/* Number of loopfs disks currently in /sys/block (-1 on error). */
static inline int count_loopfs_disks(void)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "loopfs", 6))
			n++;
	closedir(d);
	return n;
}

/* Major number registered as "loopfs" in /proc/devices, or -1. */
static inline int loopfs_block_major(void)
{
	FILE *f = fopen("/proc/devices", "re");
	char line[128], name[64];
	int blk = 0, maj, ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Block devices:", 14))
			blk = 1;
		else if (blk && sscanf(line, "%d %63s", &maj, name) == 2 &&
			 !strcmp(name, "loopfs"))
			ret = maj;
	}
	fclose(f);
	return ret;
}

/* Fresh unique directory under the cwd (the runner's scratch dir). */
static inline char *scratch_dir(char *buf, size_t len, const char *prefix)
{
	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	snprintf(buf, len, "%s/%s.XXXXXX", cwd, prefix);
	return mkdtemp(buf);
}

/*
 * Kernel log checks. kmsg_mark() returns the sequence number the next
 * record will get; kmsg_find() then reads the whole log again and looks only
 * at the records from that mark on, so any number of checks made after the
 * same mark all see every line logged since it.
 */

/* Next record's text and sequence number; 0 at the end, -errno on error. */
static inline int kmsg_next(int fd, char *rec, size_t len, unsigned long long *seq,
			    const char **text)
{
	ssize_t n;
	char *semi, *nl;

	for (;;) {
		n = read(fd, rec, len - 1);
		if (n >= 0)
			break;
		/* EPIPE: records were overwritten under us, go on with the next. */
		if (errno == EPIPE)
			continue;
		return errno == EAGAIN ? 0 : -errno;
	}
	rec[n] = 0;
	semi = strchr(rec, ';');
	if (!semi || sscanf(rec, "%*u,%llu,", seq) != 1)
		return -EBADMSG;
	/* The text ends at the first newline; dictionary lines follow it. */
	nl = strchr(semi + 1, '\n');
	if (nl)
		*nl = 0;
	*text = semi + 1;
	return 1;
}

/* Sequence number of the next kernel log record, or -errno. */
static inline long long kmsg_mark(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	unsigned long long seq, next = 0;
	const char *text = NULL;
	char rec[8192 + 1];	/* a whole record fits, plus a NUL */
	int r;

	if (fd < 0)
		return -errno;
	while ((r = kmsg_next(fd, rec, sizeof(rec), &seq, &text)) > 0)
		next = seq + 1;
	close(fd);
	return r < 0 ? r : (long long)next;
}

/*
 * 1 if a record logged at or after @mark has the text @needle (exactly, when
 * @whole, else as a substring), 0 if none has, -errno if the log could not be
 * read. With @line, the first matching text is copied there (@len bytes).
 */
static inline int kmsg_find_line(long long mark, const char *needle, int whole,
				 char *line, size_t len)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	unsigned long long seq;
	const char *text = NULL;
	char rec[8192 + 1];	/* a whole record fits, plus a NUL */
	int r, found = 0;

	if (fd < 0)
		return -errno;
	while ((r = kmsg_next(fd, rec, sizeof(rec), &seq, &text)) > 0) {
		if ((long long)seq < mark || found)
			continue;
		if (whole ? !strcmp(text, needle) : !!strstr(text, needle)) {
			found = 1;
			if (line)
				snprintf(line, len, "%s", text);
		}
	}
	close(fd);
	return r < 0 ? r : found;
}

static inline int kmsg_find(long long mark, const char *needle, int whole)
{
	return kmsg_find_line(mark, needle, whole, NULL, 0);
}

static inline int run_cmd(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif /* LOOPFS_UTIL_H */
