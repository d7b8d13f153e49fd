// SPDX-License-Identifier: GPL-2.0
/*
 * Data path of loopfs devices: byte-exact reads and writes against the
 * backing file, offsets and size limits, 512 and 4096 byte blocks, O_DIRECT
 * on the device, flush, discard and write-zeroes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/mman.h>
#include "loopfs_test.h"
#include "kselftest_harness.h"

#define FILE_SIZE (8 << 20)

FIXTURE(data) {
	char mnt[PATH_MAX];
	char file[PATH_MAX];
	char devpath[PATH_MAX];
	int ctl;
	int dev;
	int fd;
	long long kmark;
};

FIXTURE_SETUP(data)
{
	char base[PATH_MAX];
	int n;

	/* Kernel log checks look at every record from here on. */
	self->kmark = kmsg_mark();
	ASSERT_LE(0, self->kmark);
	ASSERT_EQ(0, private_mntns());
	ASSERT_NE(NULL, scratch_dir(base, sizeof(base), "data"));
	snprintf(self->mnt, sizeof(self->mnt), "%s/mnt", base);
	snprintf(self->file, sizeof(self->file), "%s/backing.img", base);
	ASSERT_EQ(0, make_backing(self->file, FILE_SIZE, 42));
	ASSERT_EQ(0, lfs_mount(self->mnt, NULL));
	self->ctl = lfs_ctl(self->mnt);
	ASSERT_LE(0, self->ctl);
	n = ioctl(self->ctl, LOOP_CTL_GET_FREE);
	ASSERT_LE(0, n);
	lfs_devpath(self->devpath, sizeof(self->devpath), self->mnt, n);
	self->dev = open(self->devpath, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	self->fd = open(self->file, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(data)
{
	ioctl(self->dev, LOOP_CLR_FD);
	close(self->dev);
	close(self->fd);
	close(self->ctl);
	umount2(self->mnt, MNT_DETACH);
}

static void configure(struct __test_metadata *_metadata,
		      FIXTURE_DATA(data) *self, uint64_t off, uint64_t lim,
		      unsigned int bsize)
{
	struct loop_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = self->fd;
	cfg.block_size = bsize;
	cfg.info.lo_offset = off;
	cfg.info.lo_sizelimit = lim;
	ASSERT_EQ(0, R(ioctl(self->dev, LOOP_CONFIGURE, &cfg)));
}

/* Compare @len bytes of the device at @doff with the file at @foff. */
static int same_bytes(int dev, off_t doff, int fd, off_t foff, size_t len)
{
	unsigned char *a = malloc(len), *b = malloc(len);
	int ok;

	ok = a && b && pread(dev, a, len, doff) == (ssize_t)len &&
	     pread(fd, b, len, foff) == (ssize_t)len && !memcmp(a, b, len);
	free(a);
	free(b);
	return ok;
}

static int all_zero(int fd, off_t off, size_t len)
{
	unsigned char *a = malloc(len);
	int ok;

	ok = a && pread(fd, a, len, off) == (ssize_t)len;
	for (size_t i = 0; ok && i < len; i++)
		ok = !a[i];
	free(a);
	return ok;
}

TEST_F(data, whole_device_reads_back_the_file_byte_exact)
{
	uint64_t sz = 0;

	configure(_metadata, self, 0, 0, 0);
	ASSERT_EQ(0, ioctl(self->dev, BLKGETSIZE64, &sz));
	ASSERT_EQ(FILE_SIZE, sz);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, FILE_SIZE));
}

TEST_F(data, writes_reach_the_backing_file_after_fsync)
{
	/* Non-overlapping 8 KiB writes, some not 4 KiB aligned. */
	static const off_t offs[] = { 0, 16384 + 512, 4096 * 8 + 1024, 1 << 20,
				      FILE_SIZE - 8192 };
	unsigned char buf[8192], back[8192];

	configure(_metadata, self, 0, 0, 0);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		pattern_fill(buf, sizeof(buf), offs[i], 1000 + i);
		ASSERT_EQ(sizeof(buf), pwrite(self->dev, buf, sizeof(buf), offs[i]));
	}
	ASSERT_EQ(0, fsync(self->dev));
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		pattern_fill(buf, sizeof(buf), offs[i], 1000 + i);
		ASSERT_EQ(sizeof(back), pread(self->fd, back, sizeof(back), offs[i]));
		ASSERT_EQ(0, memcmp(buf, back, sizeof(buf))) {
			TH_LOG("mismatch at file offset %lld", (long long)offs[i]);
		}
	}
	/* Bytes around the writes are the original pattern. */
	pattern_fill(buf, 512, 8192, 42);
	ASSERT_EQ(512, pread(self->fd, back, 512, 8192));
	ASSERT_EQ(0, memcmp(buf, back, 512));
}

TEST_F(data, unaligned_byte_writes_are_read_modify_written_exactly)
{
	unsigned char buf[1000];

	configure(_metadata, self, 0, 0, 0);
	memset(buf, 0xee, sizeof(buf));
	ASSERT_EQ(sizeof(buf), pwrite(self->dev, buf, sizeof(buf), 777));
	ASSERT_EQ(0, fsync(self->dev));
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, 1 << 16));
	ASSERT_EQ(sizeof(buf), pread(self->fd, buf, sizeof(buf), 777));
	for (size_t i = 0; i < sizeof(buf); i++) {
		ASSERT_EQ(0xee, buf[i]);
	}
}

TEST_F(data, offset_and_sizelimit_window_maps_exactly)
{
	const off_t off = (1 << 20) + 4096, lim = 2 << 20;
	unsigned char buf[4096], orig[4096], back[4096];
	uint64_t sz = 0;

	configure(_metadata, self, off, lim, 0);
	ASSERT_EQ(0, ioctl(self->dev, BLKGETSIZE64, &sz));
	ASSERT_EQ(lim, sz);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, off, lim));

	/* First and last block of the window land at the right file offsets. */
	pattern_fill(buf, sizeof(buf), 0, 7);
	ASSERT_EQ(sizeof(buf), pwrite(self->dev, buf, sizeof(buf), 0));
	ASSERT_EQ(sizeof(buf), pwrite(self->dev, buf, sizeof(buf), lim - 4096));
	ASSERT_EQ(0, fsync(self->dev));
	ASSERT_EQ(sizeof(back), pread(self->fd, back, sizeof(back), off));
	ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
	ASSERT_EQ(sizeof(back), pread(self->fd, back, sizeof(back),
				      off + lim - 4096));
	ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));

	/* Nothing outside the window changed. */
	pattern_fill(orig, sizeof(orig), off - 4096, 42);
	ASSERT_EQ(sizeof(back), pread(self->fd, back, sizeof(back), off - 4096));
	ASSERT_EQ(0, memcmp(orig, back, sizeof(orig)));
	pattern_fill(orig, sizeof(orig), off + lim, 42);
	ASSERT_EQ(sizeof(back), pread(self->fd, back, sizeof(back), off + lim));
	ASSERT_EQ(0, memcmp(orig, back, sizeof(orig)));

	/* The end of the device is the end of the window. */
	ASSERT_EQ(-ENOSPC, R(pwrite(self->dev, buf, 512, lim)));
	ASSERT_EQ(0, R(pread(self->dev, buf, 512, lim)));
}

TEST_F(data, unaligned_file_size_rounds_down_to_sectors)
{
	uint64_t sz = 0;

	ASSERT_EQ(0, ftruncate(self->fd, (1 << 20) + 700));
	configure(_metadata, self, 0, 0, 0);
	ASSERT_EQ(0, ioctl(self->dev, BLKGETSIZE64, &sz));
	ASSERT_EQ((1 << 20) + 512, sz);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, (1 << 20) + 512));
}

TEST_F(data, block_size_4096_device_serves_4k_aligned_io)
{
	unsigned char buf[65536];
	int ssz = 0, odev;
	void *al;

	configure(_metadata, self, 0, 0, 4096);
	ASSERT_EQ(0, ioctl(self->dev, BLKSSZGET, &ssz));
	ASSERT_EQ(4096, ssz);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, FILE_SIZE));

	odev = open(self->devpath, O_RDWR | O_DIRECT);
	ASSERT_LE(0, odev);
	ASSERT_EQ(0, posix_memalign(&al, 4096, 65536));
	/* 512-byte direct I/O is below the logical block size. */
	ASSERT_EQ(-EINVAL, R(pread(odev, al, 512, 0)));
	ASSERT_EQ(-EINVAL, R(pread(odev, al, 4096, 512)));
	ASSERT_EQ(65536, pread(odev, al, 65536, 1 << 20));
	ASSERT_EQ(65536, pread(self->fd, buf, 65536, 1 << 20));
	ASSERT_EQ(0, memcmp(al, buf, 65536));
	pattern_fill(al, 65536, 0, 5);
	ASSERT_EQ(65536, pwrite(odev, al, 65536, 4096 * 5));
	ASSERT_EQ(0, fsync(odev));
	ASSERT_EQ(65536, pread(self->fd, buf, 65536, 4096 * 5));
	ASSERT_EQ(0, memcmp(al, buf, 65536));
	free(al);
	close(odev);
}

TEST_F(data, switching_block_size_keeps_the_data)
{
	int ssz = 0;

	configure(_metadata, self, 0, 0, 0);
	ASSERT_EQ(0, R(ioctl(self->dev, LOOP_SET_BLOCK_SIZE, 4096)));
	ASSERT_EQ(0, ioctl(self->dev, BLKSSZGET, &ssz));
	ASSERT_EQ(4096, ssz);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, FILE_SIZE));
	ASSERT_EQ(0, R(ioctl(self->dev, LOOP_SET_BLOCK_SIZE, 512)));
	ASSERT_EQ(0, ioctl(self->dev, BLKSSZGET, &ssz));
	ASSERT_EQ(512, ssz);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, FILE_SIZE));
}

TEST_F(data, o_direct_on_512_device_reads_and_writes_exactly)
{
	unsigned char buf[8192];
	int odev;
	void *al;

	configure(_metadata, self, 0, 0, 0);
	odev = open(self->devpath, O_RDWR | O_DIRECT);
	ASSERT_LE(0, odev);
	ASSERT_EQ(0, posix_memalign(&al, 4096, 8192));
	ASSERT_EQ(8192, pread(odev, al, 8192, 512 * 7));
	ASSERT_EQ(8192, pread(self->fd, buf, 8192, 512 * 7));
	ASSERT_EQ(0, memcmp(al, buf, 8192));
	pattern_fill(al, 8192, 0, 77);
	ASSERT_EQ(8192, pwrite(odev, al, 8192, 512 * 3));
	/* O_DIRECT write completed: the backing file has it without fsync. */
	ASSERT_EQ(8192, pread(self->fd, buf, 8192, 512 * 3));
	ASSERT_EQ(0, memcmp(al, buf, 8192));
	ASSERT_EQ(-EINVAL, R(pread(odev, al, 100, 0)));
	free(al);
	close(odev);
}

TEST_F(data, large_sequential_write_then_read_round_trips)
{
	const size_t chunk = 1 << 20;
	unsigned char *buf = malloc(chunk), *back = malloc(chunk);

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, back);
	configure(_metadata, self, 0, 0, 0);
	for (off_t o = 0; o < FILE_SIZE; o += chunk) {
		pattern_fill(buf, chunk, o, 555);
		ASSERT_EQ(chunk, pwrite(self->dev, buf, chunk, o));
	}
	ASSERT_EQ(0, fsync(self->dev));
	ASSERT_EQ(0, R(ioctl(self->dev, BLKFLSBUF, 0)));
	for (off_t o = 0; o < FILE_SIZE; o += chunk) {
		pattern_fill(buf, chunk, o, 555);
		ASSERT_EQ(chunk, pread(self->dev, back, chunk, o));
		ASSERT_EQ(0, memcmp(buf, back, chunk));
		ASSERT_EQ(chunk, pread(self->fd, back, chunk, o));
		ASSERT_EQ(0, memcmp(buf, back, chunk));
	}
	free(buf);
	free(back);
}

TEST_F(data, writes_in_backing_file_are_seen_after_flushbuf)
{
	unsigned char buf[4096];

	configure(_metadata, self, 0, 0, 0);
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, 65536));
	memset(buf, 0x3c, sizeof(buf));
	ASSERT_EQ(sizeof(buf), pwrite(self->fd, buf, sizeof(buf), 8192));
	ASSERT_EQ(0, R(ioctl(self->dev, BLKFLSBUF, 0)));
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, 65536));
}

TEST_F(data, discard_punches_a_hole_in_the_backing_file)
{
	uint64_t range[2] = { 1 << 20, 1 << 20 };
	char qmax[64];
	struct stat before, after;
	off_t hole;

	configure(_metadata, self, 0, 0, 0);
	ASSERT_EQ(0, disk_attr(self->devpath, "queue/discard_max_bytes", qmax,
			       sizeof(qmax)));
	/* tmpfs punches holes: discard is advertised. */
	ASSERT_NE(0, strtoull(qmax, NULL, 0));
	ASSERT_EQ(0, fstat(self->fd, &before));
	ASSERT_EQ(0, R(ioctl(self->dev, BLKDISCARD, range)));
	/*
	 * Before reading through the device: tmpfs of 5.10 fills a hole that
	 * is read through an iterator of pages, as the device reads it.
	 */
	ASSERT_EQ(0, fstat(self->fd, &after));
	ASSERT_EQ(FILE_SIZE, after.st_size);
	ASSERT_LE(before.st_blocks - after.st_blocks, 2048 + 16);
	ASSERT_GE(before.st_blocks - after.st_blocks, 2048 - 16);
	hole = lseek(self->fd, 0, SEEK_HOLE);
	ASSERT_EQ(1 << 20, hole);
	ASSERT_TRUE(all_zero(self->dev, 1 << 20, 1 << 20));
	ASSERT_TRUE(all_zero(self->fd, 1 << 20, 1 << 20));
	/* Neighbours keep their data. */
	ASSERT_TRUE(same_bytes(self->dev, (1 << 20) - 4096, self->fd,
			       (1 << 20) - 4096, 4096));
	ASSERT_TRUE(same_bytes(self->dev, 2 << 20, self->fd, 2 << 20, 4096));
}

/*
 * On 6.1, BLKZEROOUT falls back to writing zero pages when WRITE_ZEROES
 * fails, so a broken WRITE_ZEROES still zeroes the range: only the kernel
 * log ("<status> error, dev ..., op 0x9:(WRITE_ZEROES)") shows the failure.
 */
static void expect_no_log_line(struct __test_metadata *_metadata,
			       long long mark, const char *needle)
{
	char line[512];
	int r = kmsg_find_line(mark, needle, 0, line, sizeof(line));

	EXPECT_EQ(0, r) {
		TH_LOG("kernel log since the test's start: \"%s\"",
		       r > 0 ? line : strerror(-r));
	}
}

TEST_F(data, write_zeroes_zeroes_range_without_kernel_errors)
{
	uint64_t range[2] = { 3 << 20, 512 * 1024 + 4096 };

	configure(_metadata, self, 0, 0, 0);
	ASSERT_EQ(0, R(ioctl(self->dev, BLKZEROOUT, range)));
	ASSERT_EQ(0, fsync(self->dev));
	ASSERT_TRUE(all_zero(self->dev, range[0], range[1]));
	ASSERT_TRUE(all_zero(self->fd, range[0], range[1]));
	ASSERT_TRUE(same_bytes(self->dev, range[0] + range[1], self->fd,
			       range[0] + range[1], 4096));
	ASSERT_TRUE(same_bytes(self->dev, range[0] - 4096, self->fd,
			       range[0] - 4096, 4096));
	expect_no_log_line(_metadata, self->kmark, "operation not supported");
	expect_no_log_line(_metadata, self->kmark, "I/O error");
	expect_no_log_line(_metadata, self->kmark, "WRITE_ZEROES");
}

TEST_F(data, discard_on_read_only_device_fails)
{
	uint64_t range[2] = { 0, 1 << 20 };
	int rofd = open(self->file, O_RDONLY);
	long r;

	ASSERT_LE(0, rofd);
	ASSERT_EQ(0, R(ioctl(self->dev, LOOP_SET_FD, rofd)));
	close(rofd);
	r = R(ioctl(self->dev, BLKDISCARD, range));
	/* EPERM (read-only disk) or EOPNOTSUPP (discard not advertised). */
	ASSERT_TRUE(r == -EPERM || r == -EOPNOTSUPP) {
		TH_LOG("BLKDISCARD on read-only device returned %ld", r);
	}
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, 1 << 20));
	ASSERT_FALSE(all_zero(self->fd, 0, 4096));
}

TEST_F(data, flush_of_idle_device_succeeds_and_sysfs_has_write_cache)
{
	char wc[64];

	configure(_metadata, self, 0, 0, 0);
	ASSERT_EQ(0, disk_attr(self->devpath, "queue/write_cache", wc, sizeof(wc)));
	/* Flushes are passed down (as fsync of the backing file). */
	ASSERT_STREQ("write back", wc);
	ASSERT_EQ(0, fsync(self->dev));
	ASSERT_EQ(0, fdatasync(self->dev));
}

TEST_F(data, two_devices_on_two_files_do_not_mix)
{
	char other[PATH_MAX], p[PATH_MAX];
	int dev2, fd2;

	configure(_metadata, self, 0, 0, 0);
	snprintf(other, sizeof(other), "%s.2", self->file);
	ASSERT_EQ(0, make_backing(other, 1 << 20, 43));
	fd2 = open(other, O_RDWR);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(1, R(ioctl(self->ctl, LOOP_CTL_GET_FREE)));
	lfs_devpath(p, sizeof(p), self->mnt, 1);
	dev2 = open(p, O_RDWR);
	ASSERT_LE(0, dev2);
	ASSERT_EQ(0, R(ioctl(dev2, LOOP_SET_FD, fd2)));
	ASSERT_TRUE(same_bytes(dev2, 0, fd2, 0, 1 << 20));
	ASSERT_TRUE(same_bytes(self->dev, 0, self->fd, 0, 1 << 20));
	ASSERT_FALSE(same_bytes(dev2, 0, self->fd, 0, 4096));
	ASSERT_EQ(0, R(ioctl(dev2, LOOP_CLR_FD)));
	close(dev2);
	close(fd2);
}

TEST_HARNESS_MAIN
