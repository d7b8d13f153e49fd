/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loopfs is written against the interfaces of the newest kernel it
 * supports. This header gives older kernels those interfaces under their
 * upstream names, each only where a feature probe of compat.mk found the
 * kernel without it (LOOPFS_HAVE_*), never by version number.
 *
 * Where the old and the new interface cannot be given one name, because a
 * method's signature or the way limits are set changed, an adapter named
 * compat_*() says so at its call site.
 */
#ifndef LOOPFS_COMPAT_H
#define LOOPFS_COMPAT_H

#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/dcache.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sysctl.h>
#include <linux/writeback.h>

/* Open modes of a block device were fmode_t bits. */
#ifndef LOOPFS_HAVE_BLK_MODE_T
#define blk_mode_t		fmode_t
#define BLK_OPEN_WRITE		FMODE_WRITE
#define BLK_OPEN_EXCL		FMODE_EXCL
#endif

/*
 * block_device_operations: ->open took the block device rather than its
 * disk, and ->release the open mode too. A driver writes both methods the
 * current way, follows each with COMPAT_BDOPS_OPEN(fn) or
 * COMPAT_BDOPS_RELEASE(fn), and names them in its table through
 * compat_bdops_open(fn) and compat_bdops_release(fn): where the kernel
 * calls them as they are written, these define nothing and give fn itself.
 */
#ifdef LOOPFS_HAVE_BDOPS_OPEN_DISK
#define COMPAT_BDOPS_OPEN(fn)
#define compat_bdops_open(fn)	(fn)
#else
#define COMPAT_BDOPS_OPEN(fn)						\
static int fn##_compat(struct block_device *bdev, fmode_t mode)	\
{									\
	return fn(bdev->bd_disk, mode);					\
}

#define compat_bdops_open(fn)	(fn##_compat)
#endif

#ifdef LOOPFS_HAVE_BDOPS_RELEASE_DISK
#define COMPAT_BDOPS_RELEASE(fn)
#define compat_bdops_release(fn)	(fn)
#else
#define COMPAT_BDOPS_RELEASE(fn)					\
static void fn##_compat(struct gendisk *disk, fmode_t mode)		\
{									\
	fn(disk);							\
}

#define compat_bdops_release(fn)	(fn##_compat)
#endif

/* Claims had no holder operations. */
#ifndef LOOPFS_HAVE_BD_CLAIM_HOLDER_OPS
#define bd_prepare_to_claim(bdev, holder, hops)				\
	bd_prepare_to_claim(bdev, holder)
#endif

/* The events to report came with a forced media change. */
#ifndef LOOPFS_HAVE_DISK_FORCE_MEDIA_CHANGE_1
#define disk_force_media_change(disk)					\
	disk_force_media_change(disk, DISK_EVENT_MEDIA_CHANGE)
#endif

#ifndef LOOPFS_HAVE_BDEV_ROT
static inline bool bdev_rot(struct block_device *bdev)
{
	return !bdev_nonrot(bdev);
}
#endif

/*
 * Freezing a queue also enters a scope in which allocations do no I/O
 * (which could wait on the frozen queue); the caller keeps what it saved
 * and hands it back to blk_mq_unfreeze_queue(). Before, a freeze was only
 * a freeze: here it enters the same scope.
 */
#ifndef LOOPFS_HAVE_FREEZE_MEMFLAGS
#define blk_mq_freeze_queue(q) ({					\
	unsigned int __memflags = memalloc_noio_save();			\
									\
	blk_mq_freeze_queue(q);						\
	__memflags;							\
})

#define blk_mq_unfreeze_queue(q, memflags) do {				\
	blk_mq_unfreeze_queue(q);					\
	memalloc_noio_restore(memflags);				\
} while (0)
#endif

/*
 * A queue merged bios into its requests only where its tag set asked for
 * it (BLK_MQ_F_SHOULD_MERGE); now every queue does.
 */
#ifndef LOOPFS_HAVE_MERGE_BY_DEFAULT
#define blk_mq_alloc_tag_set(set) ({					\
	struct blk_mq_tag_set *__set = (set);				\
									\
	__set->flags |= BLK_MQ_F_SHOULD_MERGE;				\
	blk_mq_alloc_tag_set(__set);					\
})
#endif

/*
 * A class interface's callbacks were given the interface too. A driver
 * writes them the current way, follows each with COMPAT_CLASS_INTF_ADD(fn)
 * or COMPAT_CLASS_INTF_REMOVE(fn) and names them in its interface through
 * compat_class_intf_add(fn) and compat_class_intf_remove(fn).
 */
#ifdef LOOPFS_HAVE_CLASS_INTF_DEV_ONLY
#define COMPAT_CLASS_INTF_ADD(fn)
#define compat_class_intf_add(fn)	(fn)
#define COMPAT_CLASS_INTF_REMOVE(fn)
#define compat_class_intf_remove(fn)	(fn)
#else
#define COMPAT_CLASS_INTF_ADD(fn)					\
static int fn##_compat(struct device *dev, struct class_interface *intf) \
{									\
	return fn(dev);							\
}

#define compat_class_intf_add(fn)	(fn##_compat)
#define COMPAT_CLASS_INTF_REMOVE(fn)					\
static void fn##_compat(struct device *dev, struct class_interface *intf) \
{									\
	fn(dev);							\
}

#define compat_class_intf_remove(fn)	(fn##_compat)
#endif

#ifndef LOOPFS_HAVE_BDEV_PARTNO
static inline u8 bdev_partno(const struct block_device *bdev)
{
	return bdev->bd_partno;
}
#endif

/*
 * A loop device's queue limits, every field chosen by the driver. Since
 * atomic queue limits they are committed in one validated update, and the
 * disk is allocated with its first limits; before, each was set on its
 * own and nothing checked a block size afterwards. The adapters write
 * them whichever way the kernel takes them; the caller freezes the queue
 * of a live device.
 */
struct loop_dev_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int io_min;
	unsigned int max_discard_sectors;
	unsigned int max_write_zeroes_sectors;
	unsigned int discard_granularity;
	bool write_cache;
	bool rotational;
};

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
				      const struct loop_dev_limits *dl)
{
	struct queue_limits lim = queue_limits_start_update(q);

	lim.logical_block_size = dl->logical_block_size;
	lim.physical_block_size = dl->physical_block_size;
	lim.io_min = dl->io_min;
	lim.max_hw_discard_sectors = dl->max_discard_sectors;
	lim.max_write_zeroes_sectors = dl->max_write_zeroes_sectors;
	lim.discard_granularity = dl->discard_granularity;
	lim.features &= ~(BLK_FEAT_WRITE_CACHE | BLK_FEAT_ROTATIONAL);
	if (dl->write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
	if (dl->rotational)
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
				      const struct loop_dev_limits *dl)
{
	if (blk_validate_block_size(dl->logical_block_size))
		return -EINVAL;
	blk_queue_logical_block_size(q, dl->logical_block_size);
	blk_queue_physical_block_size(q, dl->physical_block_size);
	blk_queue_io_min(q, dl->io_min);
	blk_queue_max_discard_sectors(q, dl->max_discard_sectors);
	blk_queue_max_write_zeroes_sectors(q, dl->max_write_zeroes_sectors);
	q->limits.discard_granularity = dl->discard_granularity;
	blk_queue_write_cache(q, dl->write_cache, false);
	if (dl->rotational)
		blk_queue_flag_clear(QUEUE_FLAG_NONROT, q);
	else
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	return 0;
}
#endif

/* Writeback of a range, started and not waited for. */
#ifndef LOOPFS_HAVE_FILEMAP_FLUSH_RANGE
static inline int filemap_flush_range(struct address_space *mapping,
				      loff_t start, loff_t end)
{
	struct writeback_control wbc = {
		.sync_mode	= WB_SYNC_NONE,
		.nr_to_write	= LONG_MAX,
		.range_start	= start,
		.range_end	= end,
	};

	return filemap_fdatawrite_wbc(mapping, &wbc);
}
#endif

#ifndef LOOPFS_HAVE_SIMPLE_INODE_INIT_TS
static inline struct timespec64 simple_inode_init_ts(struct inode *inode)
{
	struct timespec64 ts = current_time(inode);

	inode->i_atime = ts;
	inode->i_mtime = ts;
	inode->i_ctime = ts;
	return ts;
}
#endif

#ifndef LOOPFS_HAVE_INODE_LOCK_KILLABLE
static inline __must_check int inode_lock_killable(struct inode *inode)
{
	return down_write_killable(&inode->i_rwsem);
}
#endif

/* A superblock's dentry operations were a field it set itself. */
#ifndef LOOPFS_HAVE_SET_DEFAULT_D_OP
static inline void set_default_d_op(struct super_block *sb,
				    const struct dentry_operations *ops)
{
	sb->s_d_op = ops;
}
#endif

#ifndef LOOPFS_HAVE_INODE_JUST_DROP
#define inode_just_drop		generic_delete_inode
#endif

#ifndef LOOPFS_HAVE_QSTR
#define QSTR(n)			((struct qstr)QSTR_INIT(n, strlen(n)))
#endif

/*
 * lookup_one_len() also checked that the caller may search @base, as a
 * path walk would; lookup_noperm() is a filesystem's lookup in its own
 * directories and checks nothing. Every directory of an instance may be
 * searched by everybody (0755, 0555), so there the check is refused by
 * a security module's hook alone, never by owner or mode.
 */
#ifndef LOOPFS_HAVE_LOOKUP_NOPERM
static inline struct dentry *lookup_noperm(struct qstr *name,
					   struct dentry *base)
{
	return lookup_one_len(name->name, base, name->len);
}
#endif

/*
 * A filesystem whose tree lives in the dcache alone marks its entries
 * persistent: the mark holds a reference, which simple_unlink() drops
 * (d_make_discardable()) and kill_anon_super() drops for every entry
 * left. Before, that reference was a plain one: simple_unlink() dropped
 * it with dput(), and kill_litter_super() dropped the rest (d_genocide())
 * before it called kill_anon_super().
 */
#ifndef LOOPFS_HAVE_D_MAKE_PERSISTENT
static inline struct dentry *d_make_persistent(struct dentry *dentry,
					       struct inode *inode)
{
	d_instantiate(dentry, inode);
	return dget(dentry);
}

#define kill_anon_super(sb)	kill_litter_super(sb)
#endif

/* A namespace's reference count was a field of its ns_common. */
#ifndef LOOPFS_HAVE_NS_REF_READ
#define ns_ref_read(__ns)	refcount_read(&(__ns)->ns.count)
#endif

/* Inode operations were handed the mount's user namespace. */
#ifndef LOOPFS_HAVE_MNT_IDMAP
#define mnt_idmap		user_namespace
#endif

/*
 * Whether buffered writes to @file honour IOCB_NOWAIT (elsewhere such a
 * write fails with -EINVAL). The answer moved from a bit its filesystem
 * sets in each open file's f_mode to a flag of its file_operations, which
 * the older struct does not have: no one expression serves both.
 */
static inline bool compat_file_buf_wasync(struct file *file)
{
#ifdef LOOPFS_HAVE_FOP_BUFFER_WASYNC
	return file->f_op->fop_flags & FOP_BUFFER_WASYNC;
#else
	return file->f_mode & FMODE_BUF_WASYNC;
#endif
}

/*
 * ->proc_handler took a table it could write to. A handler is written for
 * the const table, followed by COMPAT_PROC_HANDLER(fn), and named in its
 * table through compat_proc_handler(fn), as for block_device_operations.
 */
#ifdef LOOPFS_HAVE_CONST_PROC_HANDLER
#define COMPAT_PROC_HANDLER(fn)
#define compat_proc_handler(fn)	(fn)
#else
#define COMPAT_PROC_HANDLER(fn)						\
static int fn##_compat(struct ctl_table *table, int write,		\
		       void *buffer, size_t *lenp, loff_t *ppos)	\
{									\
	return fn(table, write, buffer, lenp, ppos);			\
}

#define compat_proc_handler(fn)	(fn##_compat)
#endif

/*
 * Before registration took the table's size, a table ended with an empty
 * entry. A table without one is registered as a copy that has it, made
 * once per call site and kept, as the kernel keeps the table.
 */
#ifndef LOOPFS_HAVE_REGISTER_SYSCTL_SZ
#define register_sysctl(path, table) ({				\
	static struct ctl_table __table[sizeof(table) /			\
					sizeof(struct ctl_table) + 1 +	\
					__must_be_array(table)];	\
									\
	memcpy(__table, table, sizeof(table));				\
	register_sysctl(path, __table);					\
})
#endif

#endif /* LOOPFS_COMPAT_H */
