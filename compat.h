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
#include <linux/blk-cgroup.h>
#include <linux/blk-mq.h>
#include <linux/bvec.h>
#include <linux/dcache.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/memcontrol.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sysctl.h>
#include <linux/uio.h>
#include <linux/writeback.h>

/*
 * The block layer before a disk's whole block_device was its part0 (an
 * hd_struct was), and before the disk owned its queue and the lock around
 * its opens. What the driver needs of it comes under the later names.
 */

/*
 * The whole disk's block_device was an inode of the bdev filesystem, found
 * by device number. A driver that calls compat_disk_whole() holds it from
 * compat_disk_hold_whole(), after add_disk(), to compat_disk_drop_whole(),
 * before del_gendisk() (which unhashes it): the pointer found stays valid
 * all that time.
 */
#ifdef LOOPFS_HAVE_BDEV_PART0
#define compat_disk_whole(disk)		((disk)->part0)
#define compat_disk_hold_whole(disk)	0
#define compat_disk_drop_whole(disk)	do { } while (0)
#else
static inline struct block_device *compat_disk_whole(struct gendisk *disk)
{
	struct block_device *whole = bdget_disk(disk, 0);

	/* Found in the inode cache: the driver's reference holds it there. */
	bdput(whole);
	return whole;
}

static inline int compat_disk_hold_whole(struct gendisk *disk)
{
	return bdget_disk(disk, 0) ? 0 : -ENOMEM;
}

#define compat_disk_drop_whole(disk)	bdput(compat_disk_whole(disk))
#endif

/* The lock the block layer holds around ->open, ->release and rescans. */
#ifdef LOOPFS_HAVE_DISK_OPEN_MUTEX
#define compat_disk_open_mutex(disk)	(&(disk)->open_mutex)
#else
#define compat_disk_open_mutex(disk)	(&compat_disk_whole(disk)->bd_mutex)
#endif

#ifndef LOOPFS_HAVE_BDEV_PART0
#define disk_openers(disk)		(compat_disk_whole(disk)->bd_openers)

/*
 * The rescan took the whole disk's block_device and found the disk in it,
 * where only an open put it. For a disk nobody has open the caller's hold
 * of the open lock keeps any open out while the disk is set for the call.
 */
static inline int compat_bdev_disk_changed(struct gendisk *disk,
					   bool invalidate)
{
	struct block_device *whole = compat_disk_whole(disk);
	bool unopened = !whole->bd_disk;
	int ret;

	lockdep_assert_held(&whole->bd_mutex);
	if (unopened)
		whole->bd_disk = disk;
	ret = bdev_disk_changed(whole, invalidate);
	if (unopened)
		whole->bd_disk = NULL;
	return ret;
}

#define bdev_disk_changed	compat_bdev_disk_changed
#endif

/*
 * The disk of a partition's device in the block class, NULL for a whole
 * disk's. Before partitions were block_devices, every device of the class
 * was an hd_struct: the whole disk's is its part0, number 0.
 */
static inline struct gendisk *compat_partition_disk(struct device *dev)
{
#ifdef LOOPFS_HAVE_BDEV_PART0
	struct block_device *bdev = dev_to_bdev(dev);

	return bdev_is_partition(bdev) ? bdev->bd_disk : NULL;
#else
	struct hd_struct *part = dev_to_part(dev);

	return part->partno ? part_to_disk(part) : NULL;
#endif
}

/* The device numbers of @disk's partitions below @max; the last number. */
static inline int compat_disk_partitions(struct gendisk *disk, dev_t *devts,
					 int max)
{
	int last = 0;
#ifdef LOOPFS_HAVE_BDEV_PART0
	struct block_device *part;
	unsigned long idx;

	xa_for_each_start(&disk->part_tbl, idx, part, 1) {
		if (idx >= max)
			break;
		devts[idx] = part->bd_dev;
		last = idx;
	}
#else
	struct disk_part_iter iter;
	struct hd_struct *part;

	disk_part_iter_init(&iter, disk, 0);
	while ((part = disk_part_iter_next(&iter))) {
		if (part->partno >= max)
			continue;
		devts[part->partno] = part_devt(part);
		last = max(last, part->partno);
	}
	disk_part_iter_exit(&iter);
#endif
	return last;
}

/*
 * Whether a rescan may find partitions: a state bit of the disk, before
 * that a flag. The adapters set it whichever way the kernel keeps it.
 */
static inline void compat_disk_suppress_part_scan(struct gendisk *disk,
						  bool suppress)
{
#ifdef LOOPFS_HAVE_GD_SUPPRESS_PART_SCAN
	if (suppress)
		set_bit(GD_SUPPRESS_PART_SCAN, &disk->state);
	else
		clear_bit(GD_SUPPRESS_PART_SCAN, &disk->state);
#else
	if (suppress)
		disk->flags |= GENHD_FL_NO_PART_SCAN;
	else
		disk->flags &= ~GENHD_FL_NO_PART_SCAN;
#endif
}

/*
 * Partitions numbered past the disk's own minors take device numbers of
 * the extended major. Where the flag exists, only a disk that sets it gets
 * them (the in-tree loop driver does); later kernels give them to every
 * disk.
 */
static inline void compat_disk_allow_ext_devt(struct gendisk *disk)
{
#ifdef GENHD_FL_EXT_DEVT
	disk->flags |= GENHD_FL_EXT_DEVT;
#endif
}

/* A disk's writeback state was its queue's. */
#ifdef LOOPFS_HAVE_DISK_BDI
#define compat_disk_bdi(disk)		((disk)->bdi)
#else
#define compat_disk_bdi(disk)		((disk)->queue->backing_dev_info)
#endif

/*
 * A disk and its queue were allocated on their own; del_gendisk() left the
 * queue to the driver, which shut it down before dropping the disk.
 */
#ifndef LOOPFS_HAVE_BLK_MQ_ALLOC_DISK
static inline struct gendisk *blk_mq_alloc_disk(struct blk_mq_tag_set *set,
						void *queuedata)
{
	struct request_queue *q = blk_mq_init_queue_data(set, queuedata);
	struct gendisk *disk;

	if (IS_ERR(q))
		return ERR_CAST(q);
	disk = alloc_disk_node(0, set->numa_node);
	if (!disk) {
		blk_cleanup_queue(q);
		return ERR_PTR(-ENOMEM);
	}
	disk->queue = q;
	return disk;
}

#define del_gendisk(disk) do {						\
	struct gendisk *__disk = (disk);				\
									\
	del_gendisk(__disk);						\
	blk_cleanup_queue(__disk->queue);				\
} while (0)

/* A disk never added (no device number yet) is put with its queue. */
#define put_disk(disk) do {						\
	struct gendisk *__disk = (disk);				\
									\
	if (!disk_devt(__disk)) {					\
		blk_cleanup_queue(__disk->queue);			\
		__disk->queue = NULL;					\
	}								\
	put_disk(__disk);						\
} while (0)
#endif

#ifndef LOOPFS_HAVE_ADD_DISK_ERR
#define add_disk(disk)		({ add_disk(disk); 0; })
#endif

/*
 * ->free_disk, called when the last reference to an added disk is gone,
 * did not exist. The disk's struct device releases its managed resources
 * at that same moment, so there the driver's function runs as one. The
 * function is written as ->free_disk, followed by COMPAT_FREE_DISK(fn),
 * set in the table through COMPAT_BDOPS_FREE_DISK(fn) and registered for
 * each disk with compat_disk_watch_free(disk, fn) before add_disk().
 */
#ifdef LOOPFS_HAVE_FREE_DISK
#define COMPAT_FREE_DISK(fn)
#define COMPAT_BDOPS_FREE_DISK(fn)	.free_disk = (fn),
#define compat_disk_watch_free(disk, fn)	0
#else
#define COMPAT_FREE_DISK(fn)						\
static void fn##_compat(void *disk)					\
{									\
	fn(disk);							\
}

#define COMPAT_BDOPS_FREE_DISK(fn)
#define compat_disk_watch_free(disk, fn)	compat_watch_free(disk, fn##_compat)

static inline int compat_watch_free(struct gendisk *disk,
				    void (*action)(void *))
{
	return devm_add_action(disk_to_dev(disk), action, disk);
}
#endif

#ifndef LOOPFS_HAVE_INVALIDATE_DISK
static inline void invalidate_disk(struct gendisk *disk)
{
	struct block_device *whole = compat_disk_whole(disk);

	invalidate_bdev(whole);
	whole->bd_inode->i_mapping->wb_err = 0;
	set_capacity(disk, 0);
	bd_set_nr_sectors(whole, 0);
}
#endif

/* The size of the whole device's inode followed the disk's only on request. */
#ifndef LOOPFS_HAVE_SET_CAPACITY_AND_NOTIFY
#define set_capacity_and_notify(disk, size)				\
	set_capacity_revalidate_and_notify(disk, size, true)
#endif

/* A queue of its tag set's got the default I/O scheduler. */
#ifndef LOOPFS_HAVE_NO_SCHED_BY_DEFAULT
#define BLK_MQ_F_NO_SCHED_BY_DEFAULT	0
#endif

/* Whether direct I/O can reach @file: its mapping had a method for it. */
static inline bool compat_file_can_odirect(struct file *file)
{
#ifdef LOOPFS_HAVE_FMODE_CAN_ODIRECT
	return file->f_mode & FMODE_CAN_ODIRECT;
#else
	return file->f_mapping->a_ops->direct_IO;
#endif
}

/*
 * An asynchronous kiocb's completion had a second result. The completion
 * is written the current way, followed by COMPAT_KI_COMPLETE(fn), and set
 * through compat_ki_complete(fn).
 */
#ifdef LOOPFS_HAVE_KI_COMPLETE_2
#define COMPAT_KI_COMPLETE(fn)
#define compat_ki_complete(fn)	(fn)
#else
#define COMPAT_KI_COMPLETE(fn)						\
static void fn##_compat(struct kiocb *iocb, long ret, long ret2)	\
{									\
	fn(iocb, ret);							\
}

#define compat_ki_complete(fn)	(fn##_compat)
#endif

#ifndef LOOPFS_HAVE_ITER_SOURCE
#define ITER_SOURCE		WRITE
#define ITER_DEST		READ
#endif

#ifndef LOOPFS_HAVE_BVEC_SET_PAGE
static inline void bvec_set_page(struct bio_vec *bv, struct page *page,
				 unsigned int len, unsigned int offset)
{
	bv->bv_page = page;
	bv->bv_len = len;
	bv->bv_offset = offset;
}
#endif

/*
 * A page's memory cgroup was a pointer of its own; a slab page kept its
 * objects' cgroups there instead, marked by the low bit.
 */
#if defined(CONFIG_MEMCG) && !defined(LOOPFS_HAVE_PAGE_MEMCG_CHECK)
static inline struct mem_cgroup *page_memcg_check(struct page *page)
{
	unsigned long memcg = (unsigned long)READ_ONCE(page->mem_cgroup);

	return memcg & 0x1UL ? NULL : (struct mem_cgroup *)memcg;
}
#endif

#ifdef CONFIG_MEMCG
/*
 * set_active_memcg() also served interrupts, through a per-CPU variable
 * the kernel did not export. The module sets it in process context only:
 * there it is the task's.
 */
#ifndef LOOPFS_HAVE_EXPORT_int_active_memcg
static inline struct mem_cgroup *compat_set_active_memcg(struct mem_cgroup *memcg)
{
	struct mem_cgroup *old = current->active_memcg;

	current->active_memcg = memcg;
	return old;
}

#define set_active_memcg	compat_set_active_memcg
#endif

/*
 * A cgroup's effective state of another controller was not exported: the
 * memory cgroup of a block cgroup is then not found (NULL), and what the
 * caller charges goes where it would without one.
 */
#ifndef LOOPFS_HAVE_EXPORT_cgroup_get_e_css
#define cgroup_get_e_css(cgrp, ss)	((struct cgroup_subsys_state *)NULL)
#endif
#endif

#ifndef LOOPFS_HAVE_BIO_BLKCG_CSS
static inline struct cgroup_subsys_state *bio_blkcg_css(struct bio *bio)
{
	struct blkcg *blkcg = bio_blkcg(bio);

	return blkcg ? &blkcg->css : NULL;
}
#endif

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

/*
 * Claims had no holder operations; before the whole disk's block_device
 * was found from any of its partitions', the caller named it too.
 */
#if defined(LOOPFS_HAVE_BD_CLAIM_HOLDER_OPS)
#elif defined(LOOPFS_HAVE_BDEV_PART0)
#define bd_prepare_to_claim(bdev, holder, hops)				\
	bd_prepare_to_claim(bdev, holder)
#else
static inline int compat_bd_prepare_to_claim(struct block_device *bdev,
					     void *holder)
{
	return bd_prepare_to_claim(bdev, bdev->bd_contains, holder);
}

static inline void compat_bd_abort_claiming(struct block_device *bdev,
					    void *holder)
{
	bd_abort_claiming(bdev, bdev->bd_contains, holder);
}

#define bd_prepare_to_claim(bdev, holder, hops)				\
	compat_bd_prepare_to_claim(bdev, holder)
#define bd_abort_claiming	compat_bd_abort_claiming
#endif

/*
 * The events to report came with a forced media change; before it, a
 * driver invalidated the whole device's cache and told udev itself.
 */
#if defined(LOOPFS_HAVE_DISK_FORCE_MEDIA_CHANGE_1)
#elif defined(LOOPFS_HAVE_DISK_FORCE_MEDIA_CHANGE)
#define disk_force_media_change(disk)					\
	disk_force_media_change(disk, DISK_EVENT_MEDIA_CHANGE)
#else
static inline bool disk_force_media_change(struct gendisk *disk)
{
	char *envp[] = { "DISK_MEDIA_CHANGE=1", NULL };

	kobject_uevent_env(&disk_to_dev(disk)->kobj, KOBJ_CHANGE, envp);
	__invalidate_device(compat_disk_whole(disk), true);
	set_bit(GD_NEED_PART_SCAN, &disk->state);
	return true;
}
#endif

#if defined(LOOPFS_HAVE_BDEV_ROT)
#elif defined(LOOPFS_HAVE_BDEV_PART0)
static inline bool bdev_rot(struct block_device *bdev)
{
	return !bdev_nonrot(bdev);
}
#else
static inline bool bdev_rot(struct block_device *bdev)
{
	return !blk_queue_nonrot(bdev_get_queue(bdev));
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
 * it (BLK_MQ_F_SHOULD_MERGE); now every queue does. What differs from the
 * kernel's function of this name: this one also sets that flag in @set,
 * so that every kernel merges as the newest does.
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

/* Writeback of a range, started and not waited for. */
#if defined(LOOPFS_HAVE_FILEMAP_FLUSH_RANGE)
#elif defined(LOOPFS_HAVE_FILEMAP_FDATAWRITE_WBC)
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
#else
/*
 * No range writeback without waiting was exported: this one also waits
 * for pages of the range already under writeback before it writes them.
 */
#define filemap_flush_range	filemap_fdatawrite_range
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

/*
 * A namespace's reference count was a field of its ns_common, and before
 * that one of the namespace itself.
 */
#if defined(LOOPFS_HAVE_NS_REF_READ)
#elif defined(LOOPFS_HAVE_NS_COMMON_COUNT)
#define ns_ref_read(__ns)	refcount_read(&(__ns)->ns.count)
#else
#define ns_ref_read(__ns)	atomic_read(&(__ns)->count)
#endif

/* Inode operations were handed the mount's user namespace. */
#ifndef LOOPFS_HAVE_MNT_IDMAP
#define mnt_idmap		user_namespace
#endif

/*
 * Before ID-mapped mounts, inode operations were handed no mount at all.
 * ->create is written the current way, followed by COMPAT_IOP_CREATE(fn),
 * and named in its table through compat_iop_create(fn).
 */
#ifdef LOOPFS_HAVE_CREATE_IDMAP_ARG
#define COMPAT_IOP_CREATE(fn)
#define compat_iop_create(fn)	(fn)
#else
#define COMPAT_IOP_CREATE(fn)						\
static int fn##_compat(struct inode *dir, struct dentry *dentry,	\
		       umode_t mode, bool excl)				\
{									\
	return fn(NULL, dir, dentry, mode, excl);			\
}

#define compat_iop_create(fn)	(fn##_compat)
#endif

/*
 * A directory's entries were handed to an actor that returned 0 to go on,
 * an error to stop. The actor is written the current way, followed by
 * COMPAT_FILLDIR(fn), and named through compat_filldir(fn).
 */
#ifdef LOOPFS_HAVE_FILLDIR_BOOL
#define COMPAT_FILLDIR(fn)
#define compat_filldir(fn)	(fn)
#else
#define COMPAT_FILLDIR(fn)						\
static int fn##_compat(struct dir_context *ctx, const char *name,	\
		       int len, loff_t offset, u64 ino, unsigned int type) \
{									\
	return fn(ctx, name, len, offset, ino, type) ? 0 : -EINVAL;	\
}

#define compat_filldir(fn)	(fn##_compat)
#endif

#ifndef LOOPFS_HAVE_FILE_OPEN_ROOT_MNT
static inline struct file *file_open_root_mnt(struct vfsmount *mnt,
					      const char *name, int flags,
					      umode_t mode)
{
	return file_open_root(mnt->mnt_root, mnt, name, flags, mode);
}
#endif

/*
 * Whether buffered writes to @file honour IOCB_NOWAIT (elsewhere such a
 * write fails with -EINVAL). The answer moved from a bit its filesystem
 * sets in each open file's f_mode to a flag of its file_operations, which
 * the older struct does not have: no one expression serves both.
 */
static inline bool compat_file_buf_wasync(struct file *file)
{
#if defined(LOOPFS_HAVE_FOP_BUFFER_WASYNC)
	return file->f_op->fop_flags & FOP_BUFFER_WASYNC;
#elif defined(LOOPFS_HAVE_FMODE_BUF_WASYNC)
	return file->f_mode & FMODE_BUF_WASYNC;
#else
	/* No buffered write honoured IOCB_NOWAIT. */
	return false;
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
 * entry. What differs from the kernel's function of this name: this one
 * registers a copy of @table with that entry added, made once per call
 * site and kept (the kernel keeps the table it is given), not @table.
 * @table must be an array, not a pointer.
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
