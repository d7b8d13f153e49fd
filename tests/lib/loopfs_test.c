// SPDX-License-Identifier: GPL-2.0
/*
 * The loopfs test library; what each helper does is said in loopfs_test.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "loopfs_test.h"

int private_mntns(void)
{
	if (unshare(CLONE_NEWNS))
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	return 0;
}

int lfs_mount(const char *dir, const char *opts)
{
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (mount("loop", dir, LOOPFS_FSTYPE, 0, opts))
		return -errno;
	return 0;
}

int lfs_ctl(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/" LOOPFS_CONTROL_NAME, dir);
	return open(p, O_RDWR | O_CLOEXEC);
}

void lfs_devpath(char *buf, size_t len, const char *dir, int n)
{
	snprintf(buf, len, "%s/" LOOPFS_NODE_FMT, dir, n);
}

int lfs_open_dev(const char *dir, int n, int flags)
{
	char p[PATH_MAX];

	lfs_devpath(p, sizeof(p), dir, n);
	return open(p, flags | O_CLOEXEC);
}

int path_exists(const char *fmt, ...)
{
	char p[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	return lstat(p, &st) == 0;
}

void pattern_fill(unsigned char *buf, size_t len, uint64_t off, unsigned int seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) / 8 * 0x9e3779b97f4a7c15ULL + seed;

		x ^= x >> 29;
		buf[i] = (unsigned char)(x >> (8 * ((off + i) % 8)));
	}
}

int make_backing(const char *path, off_t size, unsigned int seed)
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

int make_mbr_image(const char *path)
{
	unsigned char mbr[512] = { 0 };
	int fd, err;

	err = make_backing(path, 4 << 20, 27);
	if (err)
		return err;
	/* partition 1: LBA 2048, 2048 sectors, type 0x83 */
	mbr[446 + 4] = 0x83;
	mbr[446 + 8] = 0x00; mbr[446 + 9] = 0x08;
	mbr[446 + 12] = 0x00; mbr[446 + 13] = 0x08;
	/* partition 2: LBA 4096, 2048 sectors */
	mbr[462 + 4] = 0x83;
	mbr[462 + 8] = 0x00; mbr[462 + 9] = 0x10;
	mbr[462 + 12] = 0x00; mbr[462 + 13] = 0x08;
	mbr[510] = 0x55;
	mbr[511] = 0xaa;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = pwrite(fd, mbr, sizeof(mbr), 0) == sizeof(mbr) ? 0 : -EIO;
	close(fd);
	return err;
}

int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int e = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		e = errno;
	else if ((size_t)n != strlen(s))
		e = EIO;
	close(fd);
	errno = e;
	return -e;
}

int read_file(const char *path, char *buf, size_t len)
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

long read_long(const char *path)
{
	char buf[64], *end;
	long v;

	if (read_file(path, buf, sizeof(buf)))
		return -1;
	v = strtol(buf, &end, 0);
	return end == buf ? -1 : v;
}

int disk_name_of(const char *path, char *name, size_t len)
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

int disk_attr(const char *path, const char *attr, char *buf, size_t len)
{
	char p[PATH_MAX];
	struct stat st;

	if (stat(path, &st))
		return -errno;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/%s",
		 major(st.st_rdev), minor(st.st_rdev), attr);
	return read_file(p, buf, len);
}

int wait_gone(const char *path, int ms)
{
	struct stat st;

	for (int i = 0; i < ms / 10; i++) {
		if (lstat(path, &st))
			return 0;
		usleep(10000);
	}
	return lstat(path, &st) ? 0 : -EEXIST;
}

int count_loopfs_disks(void)
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

int loopfs_block_major(void)
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

char *scratch_dir(char *buf, size_t len, const char *prefix)
{
	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	snprintf(buf, len, "%s/%s.XXXXXX", cwd, prefix);
	return mkdtemp(buf);
}

/* Next record's text and sequence number; 0 at the end, -errno on error. */
static int kmsg_next(int fd, char *rec, size_t len, unsigned long long *seq,
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

long long kmsg_mark(void)
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

int kmsg_find_line(long long mark, const char *needle, int whole,
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

int kmsg_find(long long mark, const char *needle, int whole)
{
	return kmsg_find_line(mark, needle, whole, NULL, 0);
}

int run_cmd(const char *fmt, ...)
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

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int loopfs_loaded(void)
{
	return path_exists("/sys/module/loopfs");
}

long loopfs_refcnt(void)
{
	return read_long("/sys/module/loopfs/refcnt");
}

int load_loopfs(void)
{
	const char *ko = getenv("LOOPFS_KO");
	int fd, r;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = syscall(SYS_finit_module, fd, "", 0);
	r = r ? -errno : 0;
	close(fd);
	return r;
}

int wait_loopfs_idle(int ms)
{
	uint64_t start = now_ms();

	for (;;) {
		int waited = (int)(now_ms() - start);

		if (count_loopfs_disks() == 0 && loopfs_refcnt() == 0)
			return waited;
		if (waited >= ms)
			return -1;
		usleep(10000);
	}
}

int reload_loopfs(void)
{
	int r;

	fflush(stdout);
	if (system("rmmod loopfs") || loopfs_loaded()) {
		printf("# rmmod loopfs failed (refcnt %ld)\n", loopfs_refcnt());
		fflush(stdout);
		return -1;
	}
	r = load_loopfs();
	if (r) {
		printf("# loading %s failed: %s\n", getenv("LOOPFS_KO") ?: "$LOOPFS_KO",
		       strerror(-r));
		fflush(stdout);
		return -1;
	}
	return 0;
}

int tap_count;
int tap_failures;

void tap_plan(int tests)
{
	printf("TAP version 13\n1..%d\n", tests);
	fflush(stdout);
}

void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	tap_failures += !ok;
}

const char *errno_name(int e)
{
#if __GLIBC_PREREQ(2, 32)
	return strerrorname_np(e);
#else
#define N(x) [x] = #x
	static const char *const names[] = {
		N(EPERM), N(ENOENT), N(ESRCH), N(EINTR), N(EIO), N(ENXIO),
		N(E2BIG), N(EBADF), N(ECHILD), N(EAGAIN), N(ENOMEM),
		N(EACCES), N(EFAULT), N(ENOTBLK), N(EBUSY), N(EEXIST),
		N(EXDEV), N(ENODEV), N(ENOTDIR), N(EISDIR), N(EINVAL),
		N(ENFILE), N(EMFILE), N(ENOTTY), N(ETXTBSY), N(EFBIG),
		N(ENOSPC), N(ESPIPE), N(EROFS), N(EMLINK), N(EPIPE),
		N(ERANGE), N(EDEADLK), N(ENAMETOOLONG), N(ENOSYS),
		N(ENOTEMPTY), N(ELOOP), N(ENODATA), N(EOVERFLOW),
		N(EOPNOTSUPP), N(ETIMEDOUT), N(ESTALE), N(EDQUOT),
		N(ECANCELED),
	};
#undef N
	if (e <= 0 || e >= (int)(sizeof(names) / sizeof(names[0])))
		return NULL;
	return names[e];
#endif
}

bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}
