// SPDX-License-Identifier: GPL-2.0
/*
 * Differential test of the loop(4) ioctl ABI: every sequence below is written
 * once, as a function of a control fd and device paths, and runs first
 * against the stock loop driver (/dev/loop-control, /dev/loopN) and then
 * against a loopfs instance in the same guest. Each call's return value or
 * errno, and every observable (LOOP_GET_STATUS64 fields, sizes, sysfs loop/
 * attributes) is recorded in a trace; the two traces must be identical.
 * Where the in-tree behaviour is fixed by its source, the step also carries
 * the expected value, so a wrong stock assumption or a wrong loopfs answer
 * both show up by name.
 *
 * Fields that legitimately differ are recorded as relations instead of raw
 * numbers: lo_number "== index of the device", lo_inode "== inode of the
 * backing file", lo_device "== st_dev of the backing file".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/mman.h>
#include <sys/socket.h>
#include "loopfs_test.h"
#include "kselftest_harness.h"

#define MAX_STEPS 256

struct step {
	char label[64];
	char got[200];
	char want[200];
	int has_want;
};

struct trace {
	int n;
	struct step s[MAX_STEPS];
};

struct drv {
	const char *name;
	int stock;
	int ctl;
	int idx, idx2;
	char dev[PATH_MAX];
	char dev2[PATH_MAX];
};

static const char *errstr(long v, char *buf, size_t len)
{
	if (v < 0 && v > -4096) {
		const char *n = errno_name(-v);

		snprintf(buf, len, "-%s", n ? n : "E?");
	} else {
		snprintf(buf, len, "%ld", v);
	}
	return buf;
}

static struct step *add_step(struct trace *t, const char *label)
{
	struct step *s;

	if (t->n >= MAX_STEPS)
		return &t->s[MAX_STEPS - 1];
	s = &t->s[t->n++];
	snprintf(s->label, sizeof(s->label), "%s", label);
	s->has_want = 0;
	return s;
}

/* Record the result of a call (value or -ERRNO). */
static long rec_call(struct trace *t, const char *label, long v)
{
	struct step *s = add_step(t, label);

	errstr(v, s->got, sizeof(s->got));
	return v;
}

static long rec_callx(struct trace *t, const char *label, long v, long want)
{
	struct step *s = add_step(t, label);

	errstr(v, s->got, sizeof(s->got));
	errstr(want, s->want, sizeof(s->want));
	s->has_want = 1;
	return v;
}

static void __attribute__((format(printf, 3, 4)))
rec_val(struct trace *t, const char *label, const char *fmt, ...)
{
	struct step *s = add_step(t, label);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->got, sizeof(s->got), fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 4, 5)))
rec_valx(struct trace *t, const char *label, const char *want,
	 const char *fmt, ...)
{
	struct step *s = add_step(t, label);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->got, sizeof(s->got), fmt, ap);
	va_end(ap);
	snprintf(s->want, sizeof(s->want), "%s", want);
	s->has_want = 1;
}

/* CALL(label, expr): record; CALLX(label, expr, want): record and expect. */
#define CALL(label, expr) rec_call(t, label, R(expr))
#define CALLX(label, expr, want) rec_callx(t, label, R(expr), want)

static void escape(const char *in, size_t max, char *out, size_t olen)
{
	size_t o = 0;

	for (size_t i = 0; i < max && in[i] && o + 5 < olen; i++) {
		unsigned char c = in[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = c;
		else
			o += snprintf(out + o, olen - o, "\\x%02x", c);
	}
	out[o] = 0;
}

static int dev_open(struct drv *d, int second, int flags)
{
	return open(second ? d->dev2 : d->dev, flags | O_CLOEXEC);
}

/*
 * The device's node in the host's /dev (/dev/loopN, /dev/loopfs<ID>-<N>):
 * what stacks loop on loop, since a node opened through an instance may
 * not back a loopfs device (tests/shell/backing_pin.sh).
 */
static int host_open(struct drv *d, int second, int flags)
{
	char name[64], path[PATH_MAX];

	if (disk_name_of(second ? d->dev2 : d->dev, name, sizeof(name)))
		return -1;
	snprintf(path, sizeof(path), "/dev/%s", name);
	return open(path, flags | O_CLOEXEC);
}

static int file_open(const char *path, int flags)
{
	return open(path, flags | O_CLOEXEC);
}

/* GET_STATUS64 and everything in it, as relations where numbers differ. */
static void rec_status64(struct trace *t, struct drv *d, int fd, int second,
			 const char *backing)
{
	struct loop_info64 li;
	char buf[200];
	struct stat st;
	long r;

	memset(&li, 0xa5, sizeof(li));
	r = CALL("GET_STATUS64", ioctl(fd, LOOP_GET_STATUS64, &li));
	if (r)
		return;
	rec_val(t, "lo_number==index", "%d",
		li.lo_number == (uint32_t)(second ? d->idx2 : d->idx));
	if (backing && !stat(backing, &st)) {
		rec_val(t, "lo_inode==backing", "%d", li.lo_inode == st.st_ino);
		rec_val(t, "lo_device==backing", "%d", li.lo_device == st.st_dev);
	}
	rec_val(t, "lo_rdevice", "%llu", (unsigned long long)li.lo_rdevice);
	rec_val(t, "lo_offset", "%llu", (unsigned long long)li.lo_offset);
	rec_val(t, "lo_sizelimit", "%llu", (unsigned long long)li.lo_sizelimit);
	rec_val(t, "lo_flags", "%#x", li.lo_flags);
	rec_val(t, "lo_encrypt_type", "%u", li.lo_encrypt_type);
	rec_val(t, "lo_encrypt_key_size", "%u", li.lo_encrypt_key_size);
	escape((char *)li.lo_file_name, LO_NAME_SIZE, buf, sizeof(buf));
	rec_val(t, "lo_file_name", "%s", buf);
	escape((char *)li.lo_crypt_name, LO_NAME_SIZE, buf, sizeof(buf));
	rec_val(t, "lo_crypt_name", "%s", buf);
	rec_val(t, "lo_init", "%llu,%llu", (unsigned long long)li.lo_init[0],
		(unsigned long long)li.lo_init[1]);
}

static void rec_size(struct trace *t, int fd)
{
	uint64_t sz = 0;
	long r = R(ioctl(fd, BLKGETSIZE64, &sz));

	rec_val(t, "BLKGETSIZE64", "%ld:%llu", r, (unsigned long long)sz);
}

static void rec_ro(struct trace *t, int fd)
{
	int ro = -1;
	long r = R(ioctl(fd, BLKROGET, &ro));

	rec_val(t, "BLKROGET", "%ld:%d", r, ro);
}

static void rec_bsz(struct trace *t, int fd)
{
	int ssz = -1;
	unsigned int pbsz = 0;

	ioctl(fd, BLKSSZGET, &ssz);
	ioctl(fd, BLKPBSZGET, &pbsz);
	rec_val(t, "BLKSSZGET/BLKPBSZGET", "%d/%u", ssz, pbsz);
}

/* The sysfs loop/ attributes of the device and its ro/size attributes. */
static void rec_sysfs(struct trace *t, struct drv *d, int second)
{
	static const char * const attrs[] = {
		"loop/backing_file", "loop/offset", "loop/sizelimit",
		"loop/autoclear", "loop/partscan", "loop/dio", "ro", "size",
		"queue/logical_block_size",
	};
	const char *dev = second ? d->dev2 : d->dev;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		char buf[PATH_MAX], lbl[64];
		int r = disk_attr(dev, attrs[i], buf, sizeof(buf));

		snprintf(lbl, sizeof(lbl), "sysfs %s", attrs[i]);
		if (r)
			rec_val(t, lbl, "err %d", r);
		else
			rec_val(t, lbl, "%s", buf);
	}
}

/* Number of partitions of the disk behind @dev visible in sysfs. */
static int count_parts(const char *dev)
{
	char name[256], p[PATH_MAX];
	struct dirent *de;
	size_t nl;
	int n = 0;
	DIR *dir;

	if (disk_name_of(dev, name, sizeof(name)))
		return -1;
	snprintf(p, sizeof(p), "/sys/block/%s", name);
	dir = opendir(p);
	if (!dir)
		return -1;
	nl = strlen(name);
	while ((de = readdir(dir)))
		if (!strncmp(de->d_name, name, nl) && de->d_name[nl] == 'p')
			n++;
	closedir(dir);
	return n;
}

static int read_eq_file(int dev, const char *path, off_t devoff, off_t fileoff,
			size_t len)
{
	unsigned char *a = malloc(len), *b = malloc(len);
	int fd = file_open(path, O_RDONLY);
	int ok;

	ok = a && b && fd >= 0 &&
	     pread(dev, a, len, devoff) == (ssize_t)len &&
	     pread(fd, b, len, fileoff) == (ssize_t)len && !memcmp(a, b, len);
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	return ok;
}

/* ---------------- the sequences ---------------- */

/*
 * LOOP_CLR_FD, then close and reopen the device. Since 6.10 the in-tree
 * driver only marks the device for clearing and releases the backing file
 * at the last close, so a device is reusable only after that.
 */
static int clr_reopen(struct trace *t, struct drv *d, int dev, int flags,
		      const char *label)
{
	rec_callx(t, label, R(ioctl(dev, LOOP_CLR_FD)), 0);
	close(dev);
	return dev_open(d, 0, flags);
}

/* Bind @dev to a fresh a.img of @size bytes (pattern @seed); its fd. */
static int set_fd_a(struct trace *t, int dev, off_t size, unsigned int seed)
{
	int fa;

	make_backing("a.img", size, seed);
	fa = file_open("a.img", O_RDWR);
	CALLX("SET_FD", ioctl(dev, LOOP_SET_FD, fa), 0);
	return fa;
}

/* Unbind @dev, then close it and its backing file @fa. */
static void clr_fd_close(struct trace *t, int dev, int fa)
{
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	close(fa);
	close(dev);
}

static void seq_set_fd_binds_and_reports_status(struct trace *t, struct drv *d)
{
	int dev, fd;

	make_backing("a.img", 1 << 20, 11);
	dev = dev_open(d, 0, O_RDWR);
	fd = file_open("a.img", O_RDWR);
	CALLX("SET_FD", ioctl(dev, LOOP_SET_FD, fd), 0);
	close(fd);
	rec_status64(t, d, dev, 0, "a.img");
	rec_size(t, dev);
	rec_ro(t, dev);
	rec_bsz(t, dev);
	rec_sysfs(t, d, 0);
	rec_valx(t, "read matches file", "1", "%d",
		 read_eq_file(dev, "a.img", 0, 0, 1 << 20));
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	CALLX("GET_STATUS64 after clear",
	      ioctl(dev, LOOP_GET_STATUS64, &(struct loop_info64){0}), -ENXIO);
	close(dev);
	dev = dev_open(d, 0, O_RDWR);
	rec_size(t, dev);
	rec_sysfs(t, d, 0);
	close(dev);
}

static void seq_set_fd_rejects_bad_fds(struct trace *t, struct drv *d)
{
	int dev = dev_open(d, 0, O_RDWR);
	int dirfd = file_open(".", O_RDONLY | O_DIRECTORY);
	int null = file_open("/dev/null", O_RDWR);
	int pfd[2], sv[2];

	CALLX("SET_FD -1", ioctl(dev, LOOP_SET_FD, -1), -EBADF);
	CALLX("SET_FD closed fd", ioctl(dev, LOOP_SET_FD, 9999), -EBADF);
	CALLX("SET_FD directory", ioctl(dev, LOOP_SET_FD, dirfd), -EINVAL);
	CALLX("SET_FD /dev/null", ioctl(dev, LOOP_SET_FD, null), -EINVAL);
	if (!pipe(pfd)) {
		CALLX("SET_FD pipe", ioctl(dev, LOOP_SET_FD, pfd[0]), -EINVAL);
		close(pfd[0]);
		close(pfd[1]);
	}
	if (!socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		CALLX("SET_FD socket", ioctl(dev, LOOP_SET_FD, sv[0]), -EINVAL);
		close(sv[0]);
		close(sv[1]);
	}
	CALLX("GET_STATUS64 still unbound",
	      ioctl(dev, LOOP_GET_STATUS64, &(struct loop_info64){0}), -ENXIO);
	close(dirfd);
	close(null);
	close(dev);
}

static void seq_set_fd_on_bound_device_fails_ebusy(struct trace *t,
						   struct drv *d)
{
	struct loop_config cfg;
	int dev, fa, fb;

	make_backing("a.img", 1 << 20, 1);
	make_backing("b.img", 2 << 20, 2);
	dev = dev_open(d, 0, O_RDWR);
	fa = file_open("a.img", O_RDWR);
	fb = file_open("b.img", O_RDWR);
	CALLX("SET_FD a", ioctl(dev, LOOP_SET_FD, fa), 0);
	CALLX("SET_FD b while bound", ioctl(dev, LOOP_SET_FD, fb), -EBUSY);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fb;
	CALLX("CONFIGURE b while bound", ioctl(dev, LOOP_CONFIGURE, &cfg), -EBUSY);
	rec_status64(t, d, dev, 0, "a.img");
	rec_size(t, dev);
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	close(fa);
	close(fb);
	close(dev);
}

static void seq_loop_on_loop_rules(struct trace *t, struct drv *d)
{
	int dev, dev2, host, host2, fa;

	make_backing("a.img", 1 << 20, 3);
	dev = dev_open(d, 0, O_RDWR);
	dev2 = dev_open(d, 1, O_RDWR);
	host = host_open(d, 0, O_RDWR);
	host2 = host_open(d, 1, O_RDWR);
	CALLX("SET_FD itself", ioctl(dev, LOOP_SET_FD, host), -EBADF);
	CALLX("SET_FD unbound sibling", ioctl(dev, LOOP_SET_FD, host2), -EINVAL);
	fa = file_open("a.img", O_RDWR);
	CALLX("sibling SET_FD file", ioctl(dev2, LOOP_SET_FD, fa), 0);
	CALLX("SET_FD bound sibling", ioctl(dev, LOOP_SET_FD, host2), 0);
	rec_valx(t, "stacked read matches file", "1", "%d",
		 read_eq_file(dev, "a.img", 4096, 4096, 65536));
	rec_size(t, dev);
	CALLX("sibling SET_FD onto stack", ioctl(dev2, LOOP_SET_FD, host), -EBUSY);
	CALLX("CLR_FD top", ioctl(dev, LOOP_CLR_FD), 0);
	CALLX("CLR_FD bottom", ioctl(dev2, LOOP_CLR_FD), 0);
	close(fa);
	close(host);
	close(host2);
	close(dev);
	close(dev2);
}

static void seq_clr_fd_on_unbound_fails_enxio(struct trace *t, struct drv *d)
{
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	CALLX("CLR_FD unbound", ioctl(dev, LOOP_CLR_FD), -ENXIO);
	fa = set_fd_a(t, dev, 65536, 4);
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	CALLX("CLR_FD again", ioctl(dev, LOOP_CLR_FD), -ENXIO);
	close(fa);
	close(dev);
}

static void seq_clr_fd_with_second_opener_defers_via_autoclear(struct trace *t,
							       struct drv *d)
{
	int dev = dev_open(d, 0, O_RDWR);
	int other = dev_open(d, 0, O_RDONLY);
	int fa;

	fa = set_fd_a(t, dev, 65536, 5);
	close(fa);
	CALLX("CLR_FD with 2 openers", ioctl(dev, LOOP_CLR_FD), 0);
	rec_status64(t, d, dev, 0, "a.img");
	close(other);
	rec_status64(t, d, dev, 0, "a.img");
	close(dev);
	dev = dev_open(d, 0, O_RDWR);
	CALLX("GET_STATUS64 after last close",
	      ioctl(dev, LOOP_GET_STATUS64, &(struct loop_info64){0}), -ENXIO);
	close(dev);
}

static void seq_every_ioctl_on_unbound_device(struct trace *t, struct drv *d)
{
	struct loop_info64 li64;
	struct loop_info li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	make_backing("a.img", 65536, 6);
	fa = file_open("a.img", O_RDONLY);
	memset(&li64, 0, sizeof(li64));
	memset(&li, 0, sizeof(li));
	CALLX("GET_STATUS64", ioctl(dev, LOOP_GET_STATUS64, &li64), -ENXIO);
	CALLX("GET_STATUS", ioctl(dev, LOOP_GET_STATUS, &li), -ENXIO);
	CALLX("GET_STATUS64 NULL", ioctl(dev, LOOP_GET_STATUS64, NULL), -EINVAL);
	CALLX("GET_STATUS NULL", ioctl(dev, LOOP_GET_STATUS, NULL), -EINVAL);
	CALLX("SET_STATUS64", ioctl(dev, LOOP_SET_STATUS64, &li64), -ENXIO);
	CALLX("SET_STATUS", ioctl(dev, LOOP_SET_STATUS, &li), -ENXIO);
	CALLX("SET_STATUS64 NULL", ioctl(dev, LOOP_SET_STATUS64, NULL), -EFAULT);
	CALLX("SET_CAPACITY", ioctl(dev, LOOP_SET_CAPACITY, 0), -ENXIO);
	CALLX("SET_DIRECT_IO 1", ioctl(dev, LOOP_SET_DIRECT_IO, 1), -ENXIO);
	CALLX("SET_DIRECT_IO 0", ioctl(dev, LOOP_SET_DIRECT_IO, 0), -ENXIO);
	CALL("SET_BLOCK_SIZE 4096", ioctl(dev, LOOP_SET_BLOCK_SIZE, 4096));
	CALL("SET_BLOCK_SIZE 1000", ioctl(dev, LOOP_SET_BLOCK_SIZE, 1000));
	CALLX("CHANGE_FD", ioctl(dev, LOOP_CHANGE_FD, fa), -ENXIO);
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), -ENXIO);
	CALL("CONFIGURE NULL", ioctl(dev, LOOP_CONFIGURE, NULL));
	CALL("unknown loop ioctl 0x4cff", ioctl(dev, 0x4cff, 0));
	rec_size(t, dev);
	rec_ro(t, dev);
	rec_sysfs(t, d, 0);
	close(fa);
	close(dev);
}

static void seq_offset_and_sizelimit_shape_the_device(struct trace *t,
						      struct drv *d)
{
	static const struct {
		uint64_t off, lim;
	} cases[] = {
		{ 4096, 65536 }, { 0, 1000 }, { 1000, 0 }, { 512, (2 << 20) },
		{ (1 << 20) - 512, 0 }, { 1 << 20, 0 }, { (2 << 20), 0 },
		{ 0, 0 },
	};
	struct loop_info64 li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 7);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char lbl[64];

		memset(&li, 0, sizeof(li));
		li.lo_offset = cases[i].off;
		li.lo_sizelimit = cases[i].lim;
		snprintf(lbl, sizeof(lbl), "SET_STATUS64 off=%llu lim=%llu",
			 (unsigned long long)cases[i].off,
			 (unsigned long long)cases[i].lim);
		CALLX(lbl, ioctl(dev, LOOP_SET_STATUS64, &li), 0);
		rec_size(t, dev);
		rec_status64(t, d, dev, 0, "a.img");
		rec_sysfs(t, d, 0);
	}
	li.lo_offset = 8192;
	li.lo_sizelimit = 65536;
	CALLX("SET_STATUS64 window", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_valx(t, "window read matches file", "1", "%d",
		 read_eq_file(dev, "a.img", 0, 8192, 65536));
	clr_fd_close(t, dev, fa);
}

static void seq_set_status_flag_rules(struct trace *t, struct drv *d)
{
	struct loop_info64 li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 8);
	memset(&li, 0, sizeof(li));
	li.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_DIRECT_IO;
	CALLX("SET_STATUS64 ro|dio (not settable)",
	      ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_ro(t, dev);
	li.lo_flags = LO_FLAGS_AUTOCLEAR;
	CALLX("SET_STATUS64 autoclear", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	li.lo_flags = 0;
	CALLX("SET_STATUS64 clear autoclear", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	li.lo_flags = LO_FLAGS_PARTSCAN;
	CALLX("SET_STATUS64 partscan", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	li.lo_flags = 0;
	CALLX("SET_STATUS64 try clear partscan",
	      ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	li.lo_flags = 0x1000;
	CALL("SET_STATUS64 unknown flag", ioctl(dev, LOOP_SET_STATUS64, &li));
	rec_status64(t, d, dev, 0, "a.img");
	rec_sysfs(t, d, 0);
	clr_fd_close(t, dev, fa);
}

static void seq_set_status_rejects_encryption_and_overflow(struct trace *t,
							    struct drv *d)
{
	struct loop_info64 li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 9);
	memset(&li, 0, sizeof(li));
	li.lo_offset = 4096;
	li.lo_encrypt_type = LO_CRYPT_XOR;
	CALLX("SET_STATUS64 xor", ioctl(dev, LOOP_SET_STATUS64, &li), -EINVAL);
	li.lo_encrypt_type = LO_CRYPT_CRYPTOAPI;
	CALLX("SET_STATUS64 cryptoapi", ioctl(dev, LOOP_SET_STATUS64, &li), -EINVAL);
	li.lo_encrypt_type = 99;
	CALLX("SET_STATUS64 type 99", ioctl(dev, LOOP_SET_STATUS64, &li), -EINVAL);
	li.lo_encrypt_type = 0;
	li.lo_encrypt_key_size = LO_KEY_SIZE + 1;
	CALLX("SET_STATUS64 key size 33", ioctl(dev, LOOP_SET_STATUS64, &li),
	      -EINVAL);
	li.lo_encrypt_key_size = 0;
	li.lo_offset = 1ULL << 63;
	CALLX("SET_STATUS64 offset 2^63", ioctl(dev, LOOP_SET_STATUS64, &li),
	      -EOVERFLOW);
	li.lo_offset = 0;
	li.lo_sizelimit = ~0ULL;
	CALLX("SET_STATUS64 sizelimit ~0", ioctl(dev, LOOP_SET_STATUS64, &li),
	      -EOVERFLOW);
	rec_status64(t, d, dev, 0, "a.img");
	rec_size(t, dev);
	clr_fd_close(t, dev, fa);
}

static void seq_file_name_fields_truncate_to_63_chars(struct trace *t,
						      struct drv *d)
{
	struct loop_info64 li;
	struct loop_config cfg;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 10);
	memset(&li, 0, sizeof(li));
	memset(li.lo_file_name, 'A', LO_NAME_SIZE);
	memset(li.lo_crypt_name, 'C', LO_NAME_SIZE);
	memset(li.lo_encrypt_key, 'K', LO_KEY_SIZE);
	CALLX("SET_STATUS64 64-char names", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	memset(&li, 0, sizeof(li));
	strcpy((char *)li.lo_file_name, "/some/short/name");
	CALLX("SET_STATUS64 short name", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	dev = clr_reopen(t, d, dev, O_RDWR, "CLR_FD");
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	memset(cfg.info.lo_file_name, 'B', LO_NAME_SIZE);
	CALLX("CONFIGURE 64-char name", ioctl(dev, LOOP_CONFIGURE, &cfg), 0);
	rec_status64(t, d, dev, 0, "a.img");
	CALLX("CLR_FD 2", ioctl(dev, LOOP_CLR_FD), 0);
	close(fa);
	close(dev);
}

static void rec_old_status(struct trace *t, struct drv *d, int fd,
			   const char *backing)
{
	struct loop_info li;
	char buf[200];
	struct stat st;
	long r;

	memset(&li, 0x5a, sizeof(li));
	r = CALL("GET_STATUS (old)", ioctl(fd, LOOP_GET_STATUS, &li));
	if (r)
		return;
	rec_val(t, "old lo_number==index", "%d", li.lo_number == d->idx);
	if (!stat(backing, &st)) {
		rec_val(t, "old lo_inode==backing", "%d", li.lo_inode == st.st_ino);
		rec_val(t, "old lo_device==backing", "%d",
			li.lo_device == st.st_dev);
	}
	rec_val(t, "old lo_rdevice", "%lu", (unsigned long)li.lo_rdevice);
	rec_val(t, "old lo_offset", "%d", li.lo_offset);
	rec_val(t, "old lo_encrypt_type", "%d", li.lo_encrypt_type);
	rec_val(t, "old lo_encrypt_key_size", "%d", li.lo_encrypt_key_size);
	rec_val(t, "old lo_flags", "%#x", li.lo_flags);
	escape(li.lo_name, LO_NAME_SIZE, buf, sizeof(buf));
	rec_val(t, "old lo_name", "%s", buf);
	rec_val(t, "old lo_init", "%lu,%lu", li.lo_init[0], li.lo_init[1]);
}

static void seq_old_loop_info_get_and_set(struct trace *t, struct drv *d)
{
	struct loop_info64 li64;
	struct loop_info li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 12);
	memset(&li64, 0, sizeof(li64));
	li64.lo_offset = 8192;
	li64.lo_sizelimit = 65536;
	li64.lo_flags = LO_FLAGS_AUTOCLEAR;
	strcpy((char *)li64.lo_file_name, "old-struct-name");
	CALLX("SET_STATUS64", ioctl(dev, LOOP_SET_STATUS64, &li64), 0);
	rec_old_status(t, d, dev, "a.img");
	memset(&li, 0, sizeof(li));
	li.lo_offset = 1024;
	strcpy(li.lo_name, "set-through-old");
	CALLX("SET_STATUS (old)", ioctl(dev, LOOP_SET_STATUS, &li), 0);
	/* The old struct has no sizelimit: it is reset to 0. */
	rec_status64(t, d, dev, 0, "a.img");
	rec_old_status(t, d, dev, "a.img");
	rec_size(t, dev);
	/* The old struct's encryption fields are not even looked at. */
	li.lo_encrypt_type = LO_CRYPT_XOR;
	CALLX("SET_STATUS (old) xor is ignored", ioctl(dev, LOOP_SET_STATUS, &li), 0);
	memset(&li64, 0, sizeof(li64));
	li64.lo_offset = 1ULL << 32;
	CALLX("SET_STATUS64 offset 4G", ioctl(dev, LOOP_SET_STATUS64, &li64), 0);
	CALLX("GET_STATUS (old) offset 4G", ioctl(dev, LOOP_GET_STATUS, &li),
	      -EOVERFLOW);
	clr_fd_close(t, dev, fa);
}

/* The i386 ABI of LOOP_GET_STATUS/LOOP_SET_STATUS, reached through int $0x80. */
struct compat_loop_info {
	int32_t lo_number;
	uint16_t lo_device;
	uint32_t lo_inode;
	uint16_t lo_rdevice;
	int32_t lo_offset;
	int32_t lo_encrypt_type;
	int32_t lo_encrypt_key_size;
	int32_t lo_flags;
	char lo_name[LO_NAME_SIZE];
	unsigned char lo_encrypt_key[LO_KEY_SIZE];
	uint32_t lo_init[2];
	char reserved[4];
};

static long ia32_ioctl(int fd, unsigned int cmd, uint32_t arg)
{
	long ret;

	asm volatile ("int $0x80"
		      : "=a" (ret)
		      : "a" (54), "b" (fd), "c" (cmd), "d" (arg)
		      : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static void seq_compat_32bit_loop_info(struct trace *t, struct drv *d)
{
	struct compat_loop_info *ci;
	struct loop_info64 li64, *li64p;
	struct loop_config *cfgp;
	struct stat st;
	char buf[200];
	int dev = dev_open(d, 0, O_RDWR);
	int fa;
	long r;

	ci = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	fa = set_fd_a(t, dev, 1 << 20, 13);
	memset(&li64, 0, sizeof(li64));
	li64.lo_offset = 4096;
	strcpy((char *)li64.lo_file_name, "compat-name");
	CALLX("SET_STATUS64", ioctl(dev, LOOP_SET_STATUS64, &li64), 0);
	memset(ci, 0x77, sizeof(*ci));
	r = rec_call(t, "compat GET_STATUS",
		     ia32_ioctl(dev, LOOP_GET_STATUS, (uint32_t)(uintptr_t)ci));
	if (!r) {
		stat("a.img", &st);
		rec_val(t, "compat lo_number==index", "%d", ci->lo_number == d->idx);
		rec_val(t, "compat lo_inode==backing", "%d",
			ci->lo_inode == (uint32_t)st.st_ino);
		rec_val(t, "compat lo_offset", "%d", ci->lo_offset);
		rec_val(t, "compat lo_flags", "%#x", ci->lo_flags);
		rec_val(t, "compat lo_rdevice", "%u", ci->lo_rdevice);
		escape(ci->lo_name, LO_NAME_SIZE, buf, sizeof(buf));
		rec_val(t, "compat lo_name", "%s", buf);
	}
	memset(ci, 0, sizeof(*ci));
	ci->lo_offset = 512;
	strcpy(ci->lo_name, "from-32bit");
	rec_call(t, "compat SET_STATUS",
		 ia32_ioctl(dev, LOOP_SET_STATUS, (uint32_t)(uintptr_t)ci));
	rec_status64(t, d, dev, 0, "a.img");
	rec_call(t, "compat GET_STATUS NULL", ia32_ioctl(dev, LOOP_GET_STATUS, 0));
	/* loop_info64 and loop_config have one layout for both ABIs. */
	li64p = (struct loop_info64 *)(ci + 1);
	memset(li64p, 0, sizeof(*li64p));
	li64p->lo_offset = 8192;
	li64p->lo_sizelimit = 65536;
	strcpy((char *)li64p->lo_file_name, "compat64");
	rec_call(t, "compat SET_STATUS64",
		 ia32_ioctl(dev, LOOP_SET_STATUS64, (uint32_t)(uintptr_t)li64p));
	memset(li64p, 0, sizeof(*li64p));
	rec_call(t, "compat GET_STATUS64",
		 ia32_ioctl(dev, LOOP_GET_STATUS64, (uint32_t)(uintptr_t)li64p));
	rec_val(t, "compat64 offset/sizelimit/name", "%llu/%llu/%s",
		(unsigned long long)li64p->lo_offset,
		(unsigned long long)li64p->lo_sizelimit, li64p->lo_file_name);
	rec_size(t, dev);
	rec_call(t, "compat SET_BLOCK_SIZE 2048",
		 ia32_ioctl(dev, LOOP_SET_BLOCK_SIZE, 2048));
	rec_bsz(t, dev);
	rec_call(t, "compat SET_CAPACITY", ia32_ioctl(dev, LOOP_SET_CAPACITY, 0));
	rec_call(t, "compat CLR_FD", ia32_ioctl(dev, LOOP_CLR_FD, 0));
	CALLX("GET_STATUS64 after compat clear",
	      ioctl(dev, LOOP_GET_STATUS64, &li64), -ENXIO);
	close(dev);
	dev = dev_open(d, 0, O_RDWR);
	cfgp = (struct loop_config *)(li64p + 1);
	memset(cfgp, 0, sizeof(*cfgp));
	cfgp->fd = fa;
	cfgp->block_size = 4096;
	cfgp->info.lo_offset = 4096;
	cfgp->info.lo_flags = LO_FLAGS_AUTOCLEAR;
	rec_call(t, "compat CONFIGURE",
		 ia32_ioctl(dev, LOOP_CONFIGURE, (uint32_t)(uintptr_t)cfgp));
	rec_status64(t, d, dev, 0, "a.img");
	rec_size(t, dev);
	rec_bsz(t, dev);
	munmap(ci, 4096);
	close(fa);
	close(dev);
}

static void seq_set_block_size_valid_and_invalid(struct trace *t, struct drv *d)
{
	static const unsigned long sizes[] = {
		4096, 1024, 512, 2048, 1000, 256, 0, 8192, 65536, 3 * 512,
		1UL << 32 | 4096,
	};
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 14);
	rec_bsz(t, dev);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char lbl[64];
		int valid = sizes[i] == 512 || sizes[i] == 1024 ||
			    sizes[i] == 2048 || sizes[i] == 4096;
		/*
		 * Kernel-dependent: 6.12 takes 0 as "default size" and
		 * truncates the argument to 32 bits; > PAGE_SIZE varies.
		 */
		int varies = sizes[i] == 0 || sizes[i] > 4096;

		snprintf(lbl, sizeof(lbl), "SET_BLOCK_SIZE %lu", sizes[i]);
		if (valid)
			CALLX(lbl, ioctl(dev, LOOP_SET_BLOCK_SIZE, sizes[i]), 0);
		else if (varies)
			CALL(lbl, ioctl(dev, LOOP_SET_BLOCK_SIZE, sizes[i]));
		else
			CALLX(lbl, ioctl(dev, LOOP_SET_BLOCK_SIZE, sizes[i]),
			      -EINVAL);
		rec_bsz(t, dev);
		rec_size(t, dev);
	}
	CALLX("SET_BLOCK_SIZE 4096 again", ioctl(dev, LOOP_SET_BLOCK_SIZE, 4096), 0);
	rec_sysfs(t, d, 0);
	rec_valx(t, "read at 4k matches file", "1", "%d",
		 read_eq_file(dev, "a.img", 0, 0, 1 << 20));
	clr_fd_close(t, dev, fa);
}

static void seq_configure_sets_everything_at_once(struct trace *t,
						  struct drv *d)
{
	struct loop_config cfg;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	make_backing("a.img", 4 << 20, 15);
	fa = file_open("a.img", O_RDWR);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	cfg.block_size = 4096;
	cfg.info.lo_offset = 65536;
	cfg.info.lo_sizelimit = 1 << 20;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	strcpy((char *)cfg.info.lo_file_name, "configured");
	CALLX("CONFIGURE", ioctl(dev, LOOP_CONFIGURE, &cfg), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_size(t, dev);
	rec_bsz(t, dev);
	rec_ro(t, dev);
	rec_sysfs(t, d, 0);
	rec_valx(t, "window read matches file", "1", "%d",
		 read_eq_file(dev, "a.img", 0, 65536, 1 << 20));
	clr_fd_close(t, dev, fa);
}

static void seq_configure_rejects_bad_fields(struct trace *t, struct drv *d)
{
	struct loop_config cfg;
	int dev = dev_open(d, 0, O_RDWR);
	int dirfd = file_open(".", O_RDONLY | O_DIRECTORY);
	int fa;

	make_backing("a.img", 1 << 20, 16);
	fa = file_open("a.img", O_RDWR);
#define CFG_CASE(label, want, ...) do {					\
		memset(&cfg, 0, sizeof(cfg));				\
		cfg.fd = fa;						\
		__VA_ARGS__;						\
		CALLX(label, ioctl(dev, LOOP_CONFIGURE, &cfg), want);	\
		CALLX(label " leaves it unbound",			\
		      ioctl(dev, LOOP_GET_STATUS64,			\
			    &(struct loop_info64){0}), -ENXIO);		\
	} while (0)
	CFG_CASE("CONFIGURE fd -1", -EBADF, cfg.fd = -1);
	CFG_CASE("CONFIGURE directory", -EINVAL, cfg.fd = dirfd);
	CFG_CASE("CONFIGURE block 1000", -EINVAL, cfg.block_size = 1000);
	CFG_CASE("CONFIGURE block 256", -EINVAL, cfg.block_size = 256);
	CFG_CASE("CONFIGURE unknown flag", -EINVAL, cfg.info.lo_flags = 0x100);
	CFG_CASE("CONFIGURE xor", -EINVAL,
		 cfg.info.lo_encrypt_type = LO_CRYPT_XOR);
	CFG_CASE("CONFIGURE key size", -EINVAL,
		 cfg.info.lo_encrypt_key_size = 64);
	CFG_CASE("CONFIGURE offset overflow", -EOVERFLOW,
		 cfg.info.lo_offset = 1ULL << 63);
#undef CFG_CASE
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	cfg.__reserved[0] = 1;
	CALL("CONFIGURE reserved field set", ioctl(dev, LOOP_CONFIGURE, &cfg));
	rec_status64(t, d, dev, 0, "a.img");
	ioctl(dev, LOOP_CLR_FD);
	close(dev);
	dev = dev_open(d, 0, O_RDWR);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	cfg.info.lo_flags = LO_FLAGS_DIRECT_IO | LO_FLAGS_PARTSCAN;
	CALLX("CONFIGURE dio|partscan", ioctl(dev, LOOP_CONFIGURE, &cfg), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_sysfs(t, d, 0);
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	close(dirfd);
	close(fa);
	close(dev);
}

static void seq_change_fd_needs_read_only_device(struct trace *t, struct drv *d)
{
	int dev = dev_open(d, 0, O_RDWR);
	int fa, fb;

	make_backing("a.img", 1 << 20, 17);
	make_backing("b.img", 1 << 20, 18);
	fa = file_open("a.img", O_RDWR);
	fb = file_open("b.img", O_RDWR);
	CALLX("CHANGE_FD unbound", ioctl(dev, LOOP_CHANGE_FD, fb), -ENXIO);
	CALLX("SET_FD rw", ioctl(dev, LOOP_SET_FD, fa), 0);
	CALLX("CHANGE_FD on rw device", ioctl(dev, LOOP_CHANGE_FD, fb), -EINVAL);
	CALLX("CHANGE_FD bad fd", ioctl(dev, LOOP_CHANGE_FD, -1), -EBADF);
	rec_status64(t, d, dev, 0, "a.img");
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	close(fa);
	close(fb);
	close(dev);
}

static void seq_change_fd_on_read_only_device_switches_backing(struct trace *t,
							       struct drv *d)
{
	int dev = dev_open(d, 0, O_RDWR);
	int dirfd = file_open(".", O_RDONLY | O_DIRECTORY);
	int fa, fb, fc;

	make_backing("a.img", 1 << 20, 19);
	make_backing("b.img", 1 << 20, 20);
	make_backing("c.img", 2 << 20, 21);
	fa = file_open("a.img", O_RDONLY);
	fb = file_open("b.img", O_RDONLY);
	fc = file_open("c.img", O_RDONLY);
	CALLX("SET_FD ro file", ioctl(dev, LOOP_SET_FD, fa), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_valx(t, "reads a", "1", "%d", read_eq_file(dev, "a.img", 0, 0, 65536));
	CALLX("CHANGE_FD other size", ioctl(dev, LOOP_CHANGE_FD, fc), -EINVAL);
	CALLX("CHANGE_FD directory", ioctl(dev, LOOP_CHANGE_FD, dirfd), -EINVAL);
	CALLX("CHANGE_FD itself", ioctl(dev, LOOP_CHANGE_FD, dev), -EBADF);
	CALLX("CHANGE_FD same size", ioctl(dev, LOOP_CHANGE_FD, fb), 0);
	rec_status64(t, d, dev, 0, "b.img");
	rec_sysfs(t, d, 0);
	ioctl(dev, BLKFLSBUF, 0);
	rec_valx(t, "reads b after change", "1", "%d",
		 read_eq_file(dev, "b.img", 0, 0, 65536));
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	close(fa);
	close(fb);
	close(fc);
	close(dirfd);
	close(dev);
}

static void seq_set_capacity_picks_up_grown_file(struct trace *t, struct drv *d)
{
	struct loop_info64 li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 22);
	rec_size(t, dev);
	CALLX("grow file", ftruncate(fa, 3 << 20), 0);
	rec_size(t, dev);
	CALLX("SET_CAPACITY", ioctl(dev, LOOP_SET_CAPACITY, 0), 0);
	rec_size(t, dev);
	rec_sysfs(t, d, 0);
	memset(&li, 0, sizeof(li));
	li.lo_sizelimit = (2 << 20) + 512;
	CALLX("SET_STATUS64 sizelimit", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	CALLX("grow file more", ftruncate(fa, 5 << 20), 0);
	CALLX("SET_CAPACITY capped", ioctl(dev, LOOP_SET_CAPACITY, 0), 0);
	rec_size(t, dev);
	CALLX("shrink file", ftruncate(fa, (1 << 20) + 700), 0);
	CALLX("SET_CAPACITY shrunk", ioctl(dev, LOOP_SET_CAPACITY, 0), 0);
	rec_size(t, dev);
	clr_fd_close(t, dev, fa);
}

static void seq_set_direct_io(struct trace *t, struct drv *d)
{
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	fa = set_fd_a(t, dev, 1 << 20, 23);
	CALL("SET_DIRECT_IO 1", ioctl(dev, LOOP_SET_DIRECT_IO, 1));
	rec_status64(t, d, dev, 0, "a.img");
	rec_sysfs(t, d, 0);
	CALLX("SET_DIRECT_IO 0", ioctl(dev, LOOP_SET_DIRECT_IO, 0), 0);
	rec_status64(t, d, dev, 0, "a.img");
	CALL("SET_DIRECT_IO 7", ioctl(dev, LOOP_SET_DIRECT_IO, 7));
	CALLX("SET_DIRECT_IO 0 again", ioctl(dev, LOOP_SET_DIRECT_IO, 0), 0);
	rec_valx(t, "read matches file", "1", "%d",
		 read_eq_file(dev, "a.img", 0, 0, 1 << 20));
	clr_fd_close(t, dev, fa);
}

static void seq_read_only_backing_fd_gives_read_only_device(struct trace *t,
							    struct drv *d)
{
	char buf[512] = { 1 };
	struct loop_info64 li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	make_backing("a.img", 1 << 20, 24);
	fa = file_open("a.img", O_RDONLY);
	CALLX("SET_FD O_RDONLY file", ioctl(dev, LOOP_SET_FD, fa), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_ro(t, dev);
	rec_sysfs(t, d, 0);
	CALLX("write to ro device", pwrite(dev, buf, sizeof(buf), 0), -EPERM);
	memset(&li, 0, sizeof(li));
	CALLX("SET_STATUS64 cannot clear ro", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_valx(t, "file untouched", "1", "%d",
		 read_eq_file(dev, "a.img", 0, 0, 4096));
	clr_fd_close(t, dev, fa);
}

static void seq_read_only_flag_and_read_only_open(struct trace *t, struct drv *d)
{
	char buf[512] = { 1 };
	struct loop_config cfg;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	make_backing("a.img", 1 << 20, 25);
	fa = file_open("a.img", O_RDWR);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	cfg.info.lo_flags = LO_FLAGS_READ_ONLY;
	CALLX("CONFIGURE READ_ONLY", ioctl(dev, LOOP_CONFIGURE, &cfg), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_ro(t, dev);
	CALLX("write to ro device", pwrite(dev, buf, sizeof(buf), 0), -EPERM);
	CALLX("CLR_FD", ioctl(dev, LOOP_CLR_FD), 0);
	close(dev);
	/* Device opened read-only, rw backing file: bound read-only. */
	dev = dev_open(d, 0, O_RDONLY);
	CALLX("SET_FD via O_RDONLY device", ioctl(dev, LOOP_SET_FD, fa), 0);
	rec_status64(t, d, dev, 0, "a.img");
	rec_ro(t, dev);
	CALLX("CLR_FD 2", ioctl(dev, LOOP_CLR_FD), 0);
	close(dev);
	close(fa);
}

static void seq_autoclear_clears_on_last_close(struct trace *t, struct drv *d)
{
	struct loop_config cfg;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	make_backing("a.img", 1 << 20, 26);
	fa = file_open("a.img", O_RDWR);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	CALLX("CONFIGURE autoclear", ioctl(dev, LOOP_CONFIGURE, &cfg), 0);
	close(fa);
	rec_sysfs(t, d, 0);
	close(dev);
	dev = dev_open(d, 0, O_RDWR);
	CALLX("GET_STATUS64 after last close",
	      ioctl(dev, LOOP_GET_STATUS64, &(struct loop_info64){0}), -ENXIO);
	rec_size(t, dev);
	close(dev);
}

static void seq_partscan_creates_and_clear_removes_partitions(struct trace *t,
							      struct drv *d)
{
	struct loop_config cfg;
	struct loop_info64 li;
	int dev = dev_open(d, 0, O_RDWR);
	int fa;

	if (make_mbr_image("p.img"))
		perror("make_mbr_image");
	fa = file_open("p.img", O_RDWR);
	CALLX("SET_FD no partscan", ioctl(dev, LOOP_SET_FD, fa), 0);
	rec_val(t, "partitions without partscan", "%d", count_parts(d->dev));
	CALL("BLKRRPART without partscan", ioctl(dev, BLKRRPART, 0));
	memset(&li, 0, sizeof(li));
	li.lo_flags = LO_FLAGS_PARTSCAN;
	CALLX("SET_STATUS64 partscan", ioctl(dev, LOOP_SET_STATUS64, &li), 0);
	rec_valx(t, "partitions after SET_STATUS partscan", "2", "%d",
		 count_parts(d->dev));
	dev = clr_reopen(t, d, dev, O_RDWR, "CLR_FD");
	rec_valx(t, "partitions after clear", "0", "%d", count_parts(d->dev));
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fa;
	cfg.info.lo_flags = LO_FLAGS_PARTSCAN;
	CALLX("CONFIGURE partscan", ioctl(dev, LOOP_CONFIGURE, &cfg), 0);
	rec_valx(t, "partitions after CONFIGURE partscan", "2", "%d",
		 count_parts(d->dev));
	CALLX("BLKRRPART with partscan", ioctl(dev, BLKRRPART, 0), 0);
	rec_valx(t, "partitions after BLKRRPART", "2", "%d", count_parts(d->dev));
	rec_sysfs(t, d, 0);
	dev = clr_reopen(t, d, dev, O_RDWR, "CLR_FD 2");
	rec_valx(t, "partitions after clear 2", "0", "%d", count_parts(d->dev));
	close(fa);
	close(dev);
}

static void seq_set_status_on_read_only_open_as_root(struct trace *t,
						     struct drv *d)
{
	struct loop_info64 li;
	int rw = dev_open(d, 0, O_RDWR);
	int ro = dev_open(d, 0, O_RDONLY);
	int fa;

	make_backing("a.img", 1 << 20, 28);
	fa = file_open("a.img", O_RDWR);
	CALLX("SET_FD", ioctl(rw, LOOP_SET_FD, fa), 0);
	memset(&li, 0, sizeof(li));
	li.lo_offset = 512;
	CALLX("SET_STATUS64 via O_RDONLY fd (CAP_SYS_ADMIN)",
	      ioctl(ro, LOOP_SET_STATUS64, &li), 0);
	CALLX("SET_CAPACITY via O_RDONLY fd", ioctl(ro, LOOP_SET_CAPACITY, 0), 0);
	CALLX("SET_BLOCK_SIZE via O_RDONLY fd",
	      ioctl(ro, LOOP_SET_BLOCK_SIZE, 1024), 0);
	CALL("SET_DIRECT_IO 0 via O_RDONLY fd", ioctl(ro, LOOP_SET_DIRECT_IO, 0));
	rec_status64(t, d, rw, 0, "a.img");
	rec_bsz(t, rw);
	close(ro);
	CALLX("CLR_FD", ioctl(rw, LOOP_CLR_FD), 0);
	close(fa);
	close(rw);
}

static void seq_block_ioctls_and_writes_round_trip(struct trace *t,
						   struct drv *d)
{
	unsigned char buf[8192], back[8192];
	int dev = dev_open(d, 0, O_RDWR);
	int fa, ok;

	fa = set_fd_a(t, dev, 1 << 20, 29);
	pattern_fill(buf, sizeof(buf), 0, 99);
	CALLX("pwrite 8k at 12288", pwrite(dev, buf, sizeof(buf), 12288), 8192);
	CALLX("fsync", fsync(dev), 0);
	ok = pread(fa, back, sizeof(back), 12288) == sizeof(back) &&
	     !memcmp(buf, back, sizeof(buf));
	rec_valx(t, "file has the data", "1", "%d", ok);
	CALLX("BLKFLSBUF", ioctl(dev, BLKFLSBUF, 0), 0);
	CALLX("pwrite at end", pwrite(dev, buf, 512, 1 << 20), -ENOSPC);
	CALLX("pread at end", pread(dev, buf, 512, 1 << 20), 0);
	clr_fd_close(t, dev, fa);
}

/* ---------------- driver set-up and comparison ---------------- */

FIXTURE(diff) {
	char base[PATH_MAX];
	char mnt[PATH_MAX];
	char run[PATH_MAX];
	char cwd[PATH_MAX];
	struct drv drv[2];
	int have[2];
};

/*
 * A new device of the stock driver. Before 6.1 (5.10 here) LOOP_CTL_ADD of
 * -1 answered EEXIST whenever some device was free: there the first index
 * not taken is asked for by number.
 */
static int stock_add(int ctl)
{
	int r = ioctl(ctl, LOOP_CTL_ADD, -1);

	for (int i = 0; r < 0 && errno == EEXIST && i < 1024; i++)
		r = ioctl(ctl, LOOP_CTL_ADD, i);
	return r;
}

static int drv_setup(struct drv *d, int stock, const char *mnt)
{
	memset(d, 0, sizeof(*d));
	d->stock = stock;
	d->name = stock ? "stock" : "loopfs";
	d->ctl = stock ? open("/dev/loop-control", O_RDWR | O_CLOEXEC)
		       : lfs_ctl(mnt);
	if (d->ctl < 0)
		return -errno;
	d->idx = stock ? stock_add(d->ctl) : ioctl(d->ctl, LOOP_CTL_ADD, -1);
	d->idx2 = stock ? stock_add(d->ctl) : ioctl(d->ctl, LOOP_CTL_ADD, -1);
	if (d->idx < 0 || d->idx2 < 0)
		return -errno;
	if (stock) {
		snprintf(d->dev, sizeof(d->dev), "/dev/loop%d", d->idx);
		snprintf(d->dev2, sizeof(d->dev2), "/dev/loop%d", d->idx2);
	} else {
		lfs_devpath(d->dev, sizeof(d->dev), mnt, d->idx);
		lfs_devpath(d->dev2, sizeof(d->dev2), mnt, d->idx2);
	}
	return 0;
}

static void drv_put_dev(struct drv *d, const char *path, int idx)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		ioctl(fd, LOOP_CLR_FD);
		close(fd);
	}
	for (int i = 0; i < 100; i++) {
		if (ioctl(d->ctl, LOOP_CTL_REMOVE, idx) == 0 || errno == ENODEV)
			return;
		usleep(20000);
	}
}

static void drv_teardown(struct drv *d)
{
	if (d->ctl <= 0)
		return;
	/* Top of a possible stack first. */
	drv_put_dev(d, d->dev, d->idx);
	drv_put_dev(d, d->dev2, d->idx2);
	close(d->ctl);
	d->ctl = -1;
}

FIXTURE_SETUP(diff)
{
	ASSERT_EQ(0, private_mntns());
	ASSERT_NE(NULL, getcwd(self->cwd, sizeof(self->cwd)));
	ASSERT_NE(NULL, scratch_dir(self->base, sizeof(self->base), "diff"));
	snprintf(self->mnt, sizeof(self->mnt), "%s/mnt", self->base);
	snprintf(self->run, sizeof(self->run), "%s/run", self->base);
	if (getenv("LOOPFS_DIFF_STOCK_ONLY"))
		return;
	ASSERT_EQ(0, lfs_mount(self->mnt, NULL));
}

FIXTURE_TEARDOWN(diff)
{
	for (int i = 0; i < 2; i++)
		drv_teardown(&self->drv[i]);
	if (chdir(self->cwd))
		perror("chdir");
	umount2(self->mnt, MNT_DETACH);
}

static void print_trace_mismatch(struct __test_metadata *_metadata,
				 const struct trace *a, const struct trace *b)
{
	int n = a->n > b->n ? a->n : b->n;

	for (int i = 0; i < n; i++) {
		const struct step *sa = i < a->n ? &a->s[i] : NULL;
		const struct step *sb = i < b->n ? &b->s[i] : NULL;

		if (sa && sb && !strcmp(sa->label, sb->label) &&
		    !strcmp(sa->got, sb->got))
			continue;
		TH_LOG("step %d '%s': stock=%s loopfs=%s", i,
		       sa ? sa->label : (sb ? sb->label : "?"),
		       sa ? sa->got : "(none)", sb ? sb->got : "(none)");
	}
}

static int check_wants(struct __test_metadata *_metadata, const char *name,
		       const struct trace *t)
{
	int bad = 0;

	for (int i = 0; i < t->n; i++) {
		if (!t->s[i].has_want || !strcmp(t->s[i].got, t->s[i].want))
			continue;
		TH_LOG("%s step %d '%s': expected %s, got %s", name, i,
		       t->s[i].label, t->s[i].want, t->s[i].got);
		bad++;
	}
	return bad;
}

/*
 * The stock driver of kernels before 6.1 (5.10 here) still had encryption
 * transfers and kept their names, and answered some misuse otherwise: it
 * is not what loopfs follows. There its trace is not held to the
 * expectations, and a step where the two differ is let pass when loopfs
 * met the expectation, or when it is a cipher name.
 */
static bool stock_era_step(const struct step *stock, const struct step *lfs)
{
	if (!strcmp(stock->label, "lo_crypt_name"))
		return true;
	return lfs->has_want && !strcmp(lfs->got, lfs->want);
}

typedef void (*seq_fn)(struct trace *t, struct drv *d);

static void run_on(struct __test_metadata *_metadata, FIXTURE_DATA(diff) *self,
		   int stock, seq_fn fn, struct trace *t)
{
	struct drv *d = &self->drv[stock];

	ASSERT_EQ(0, drv_setup(d, stock, self->mnt));
	ASSERT_EQ(0, run_cmd("rm -rf '%s'", self->run));
	ASSERT_EQ(0, mkdir(self->run, 0755));
	ASSERT_EQ(0, chdir(self->run));
	fn(t, d);
	ASSERT_EQ(0, chdir(self->cwd));
	drv_teardown(d);
}

static void run_diff(struct __test_metadata *_metadata,
		     FIXTURE_DATA(diff) *self, seq_fn fn)
{
	struct trace *ts = calloc(1, sizeof(*ts));
	struct trace *tl = calloc(1, sizeof(*tl));
	bool stock_followed = kernel_at_least(6, 1);
	int same = 1;

	ASSERT_NE(NULL, ts);
	ASSERT_NE(NULL, tl);
	run_on(_metadata, self, 1, fn, ts);
	if (stock_followed)
		EXPECT_EQ(0, check_wants(_metadata, "stock", ts));
	if (getenv("LOOPFS_DIFF_VERBOSE"))
		for (int i = 0; i < ts->n; i++)
			TH_LOG("%-40s %s", ts->s[i].label, ts->s[i].got);
	/* Checking the in-tree expectations alone (no module needed). */
	if (getenv("LOOPFS_DIFF_STOCK_ONLY"))
		return;
	run_on(_metadata, self, 0, fn, tl);
	EXPECT_EQ(0, check_wants(_metadata, "loopfs", tl));
	if (ts->n != tl->n)
		same = 0;
	for (int i = 0; same && i < ts->n; i++)
		if (strcmp(ts->s[i].label, tl->s[i].label) ||
		    (strcmp(ts->s[i].got, tl->s[i].got) &&
		     (stock_followed || !stock_era_step(&ts->s[i], &tl->s[i]))))
			same = 0;
	EXPECT_TRUE(same) {
		print_trace_mismatch(_metadata, ts, tl);
	}
	free(ts);
	free(tl);
}

#define DIFF_TEST(name) \
	TEST_F(diff, name) { run_diff(_metadata, self, seq_##name); }

DIFF_TEST(set_fd_binds_and_reports_status)
DIFF_TEST(set_fd_rejects_bad_fds)
DIFF_TEST(set_fd_on_bound_device_fails_ebusy)
DIFF_TEST(loop_on_loop_rules)
DIFF_TEST(clr_fd_on_unbound_fails_enxio)
DIFF_TEST(clr_fd_with_second_opener_defers_via_autoclear)
DIFF_TEST(every_ioctl_on_unbound_device)
DIFF_TEST(offset_and_sizelimit_shape_the_device)
DIFF_TEST(set_status_flag_rules)
DIFF_TEST(set_status_rejects_encryption_and_overflow)
DIFF_TEST(file_name_fields_truncate_to_63_chars)
DIFF_TEST(old_loop_info_get_and_set)
DIFF_TEST(compat_32bit_loop_info)
DIFF_TEST(set_block_size_valid_and_invalid)
DIFF_TEST(configure_sets_everything_at_once)
DIFF_TEST(configure_rejects_bad_fields)
DIFF_TEST(change_fd_needs_read_only_device)
DIFF_TEST(change_fd_on_read_only_device_switches_backing)
DIFF_TEST(set_capacity_picks_up_grown_file)
DIFF_TEST(set_direct_io)
DIFF_TEST(read_only_backing_fd_gives_read_only_device)
DIFF_TEST(read_only_flag_and_read_only_open)
DIFF_TEST(autoclear_clears_on_last_close)
DIFF_TEST(partscan_creates_and_clear_removes_partitions)
DIFF_TEST(set_status_on_read_only_open_as_root)
DIFF_TEST(block_ioctls_and_writes_round_trip)

TEST_HARNESS_MAIN
