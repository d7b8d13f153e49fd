/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only place in loopfs that knows kernel API differences.
 *
 * Supported: Debian 12's 6.1 and the 6.12 backport. Debian's 6.1 carries
 * some newer helpers, so every switch below is a feature probe made by
 * Kbuild from the kernel headers (LOOPFS_HAVE_*), never a version number.
 */
#ifndef LOOPFS_COMPAT_H
#define LOOPFS_COMPAT_H

#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/fs.h>
#include <linux/sysctl.h>

/*
 * A loop device's queue limits, every field given by the driver: the
 * adapters below only write them the way the running kernel takes them.
 */
struct compat_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int io_min;
	unsigned int max_discard_sectors;
	unsigned int max_write_zeroes_sectors;
	unsigned int discard_granularity;
	bool write_cache;
	bool rotational;
};

/*
 * block_device_operations: 6.5 replaced fmode_t with blk_mode_t, passes
 * the gendisk to ->open and drops the mode from ->release.
 * (Type aliases are macros: typedefs of kernel types are frowned upon.)
 * COMPAT_BDOPS_OPEN/RELEASE(fn) define fn_bdops() adapters around
 * fn(struct gendisk *, compat_blk_mode_t) and fn(struct gendisk *).
 */
#ifdef LOOPFS_HAVE_BLK_MODE_T
#define compat_blk_mode_t	blk_mode_t
#define COMPAT_BLK_OPEN_WRITE	BLK_OPEN_WRITE
#define COMPAT_BLK_OPEN_EXCL	BLK_OPEN_EXCL
#define COMPAT_BDOPS_OPEN(fn)						\
static int fn##_bdops(struct gendisk *disk, blk_mode_t mode)		\
{									\
	return fn(disk, mode);						\
}

#define COMPAT_BDOPS_RELEASE(fn)					\
static void fn##_bdops(struct gendisk *disk)				\
{									\
	fn(disk);							\
}
#else
#define compat_blk_mode_t	fmode_t
#define COMPAT_BLK_OPEN_WRITE	FMODE_WRITE
#define COMPAT_BLK_OPEN_EXCL	FMODE_EXCL
#define COMPAT_BDOPS_OPEN(fn)						\
static int fn##_bdops(struct block_device *bdev, fmode_t mode)		\
{									\
	return fn(bdev->bd_disk, mode);					\
}

#define COMPAT_BDOPS_RELEASE(fn)					\
static void fn##_bdops(struct gendisk *disk, fmode_t mode)		\
{									\
	fn(disk);							\
}
#endif

/* 6.5 gave bd_prepare_to_claim() a holder_ops argument. */
static inline int compat_prepare_to_claim(struct block_device *bdev,
					  void *holder)
{
#ifdef LOOPFS_HAVE_BLK_MODE_T
	return bd_prepare_to_claim(bdev, holder, NULL);
#else
	return bd_prepare_to_claim(bdev, holder);
#endif
}

/* 6.5 dropped the events argument of disk_force_media_change(). */
static inline void compat_force_media_change(struct gendisk *disk)
{
#ifdef LOOPFS_HAVE_FORCE_MEDIA_CHANGE_1
	disk_force_media_change(disk);
#else
	disk_force_media_change(disk, DISK_EVENT_MEDIA_CHANGE);
#endif
}

/*
 * Partition scanning is switched with GD_SUPPRESS_PART_SCAN, which leaves
 * BLKPG usable, as the in-tree driver of every supported kernel does
 * (Debian's 6.1 has the flag too).
 */
static inline void compat_set_partscan(struct gendisk *disk, bool on)
{
	if (on)
		clear_bit(GD_SUPPRESS_PART_SCAN, &disk->state);
	else
		set_bit(GD_SUPPRESS_PART_SCAN, &disk->state);
}

/*
 * Queue limits: 6.9 added atomic queue_limits updates, validated when
 * committed, and the limits argument of blk_mq_alloc_disk(); 6.11 moved
 * feature flags into them. The caller freezes the queue when it is live.
 */
#ifdef LOOPFS_HAVE_QUEUE_LIMITS
#define COMPAT_HAVE_QUEUE_LIMITS	true

static inline struct gendisk *compat_alloc_disk(struct blk_mq_tag_set *set,
						void *data,
						unsigned int max_hw_sectors)
{
	struct queue_limits lim = { .max_hw_sectors = max_hw_sectors };

	return blk_mq_alloc_disk(set, &lim, data);
}

static inline int compat_apply_limits(struct request_queue *q,
				      const struct compat_limits *cl)
{
	struct queue_limits lim = queue_limits_start_update(q);

	lim.logical_block_size = cl->logical_block_size;
	lim.physical_block_size = cl->physical_block_size;
	lim.io_min = cl->io_min;
	lim.max_hw_discard_sectors = cl->max_discard_sectors;
	lim.max_write_zeroes_sectors = cl->max_write_zeroes_sectors;
	lim.discard_granularity = cl->discard_granularity;
	lim.features &= ~(BLK_FEAT_WRITE_CACHE | BLK_FEAT_ROTATIONAL);
	if (cl->write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
	if (cl->rotational)
		lim.features |= BLK_FEAT_ROTATIONAL;
	return queue_limits_commit_update(q, &lim);
}
#else
#define COMPAT_HAVE_QUEUE_LIMITS	false

static inline struct gendisk *compat_alloc_disk(struct blk_mq_tag_set *set,
						void *data,
						unsigned int max_hw_sectors)
{
	struct gendisk *disk = blk_mq_alloc_disk(set, data);

	if (!IS_ERR(disk))
		blk_queue_max_hw_sectors(disk->queue, max_hw_sectors);
	return disk;
}

/* No commit step here to reject a bad block size: check as it would. */
static inline int compat_apply_limits(struct request_queue *q,
				      const struct compat_limits *cl)
{
	if (blk_validate_block_size(cl->logical_block_size))
		return -EINVAL;
	blk_queue_logical_block_size(q, cl->logical_block_size);
	blk_queue_physical_block_size(q, cl->physical_block_size);
	blk_queue_io_min(q, cl->io_min);
	blk_queue_max_discard_sectors(q, cl->max_discard_sectors);
	blk_queue_max_write_zeroes_sectors(q, cl->max_write_zeroes_sectors);
	q->limits.discard_granularity = cl->discard_granularity;
	blk_queue_write_cache(q, cl->write_cache, false);
	if (cl->rotational)
		blk_queue_flag_clear(QUEUE_FLAG_NONROT, q);
	else
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	return 0;
}
#endif

/* 6.10 replaced bdev->bd_partno with bdev_partno(). */
static inline u8 compat_bdev_partno(struct block_device *bdev)
{
#ifdef LOOPFS_HAVE_BDEV_PARTNO
	return bdev_partno(bdev);
#else
	return bdev->bd_partno;
#endif
}

/* 6.3 passes inode operations a mnt_idmap instead of a user namespace. */
#ifdef LOOPFS_HAVE_MNT_IDMAP
#define compat_idmap_t		struct mnt_idmap
#else
#define compat_idmap_t		struct user_namespace
#endif

/*
 * Whether buffered writes to @file honour IOCB_NOWAIT (elsewhere such a
 * write fails with -EINVAL): an f_mode bit on 6.1, an f_op flag since 6.11.
 */
static inline bool compat_file_buf_wasync(struct file *file)
{
#ifdef LOOPFS_HAVE_FOP_BUFFER_WASYNC
	return file->f_op->fop_flags & FOP_BUFFER_WASYNC;
#else
	return file->f_mode & FMODE_BUF_WASYNC;
#endif
}

/* 6.6 added simple_inode_init_ts(); older kernels set the times by hand. */
static inline void compat_inode_init_ts(struct inode *inode)
{
#ifdef LOOPFS_HAVE_SIMPLE_INODE_INIT_TS
	simple_inode_init_ts(inode);
#else
	struct timespec64 now = current_time(inode);

	inode->i_atime = now;
	inode->i_mtime = now;
	inode->i_ctime = now;
#endif
}

/*
 * sysctl: 6.11 made ->proc_handler take a const table, and tables stopped
 * needing an empty sentinel entry (6.6 sized registration).
 */
#ifdef LOOPFS_HAVE_CONST_SYSCTL
#define COMPAT_CTL_TABLE	const struct ctl_table
#else
#define COMPAT_CTL_TABLE	struct ctl_table
#endif
#ifdef LOOPFS_HAVE_REGISTER_SYSCTL_SZ
#define COMPAT_CTL_SENTINEL
#else
#define COMPAT_CTL_SENTINEL	{ }
#endif

#endif /* LOOPFS_COMPAT_H */
