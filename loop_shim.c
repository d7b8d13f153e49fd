// SPDX-License-Identifier: GPL-2.0
/*
 * loop_shim - the block driver behind loopfs: blk-mq devices backed by a
 * file, speaking the loop(4) ioctl ABI with the in-tree driver's errnos.
 * This half makes and configures devices; loop_shim_io.c serves their
 * requests.
 *
 * Locks, in the order they nest:
 *   disk->open_mutex: held by the block layer around ->open and ->release
 *     (the last close unbinds an autoclear or orphaned device under it),
 *     and by loop_dev_orphan() and loop_dev_claim_for_removal() around
 *     ->lock. Every opener of the disk waits for it unkillably, so under
 *     it ->lock is only tried (->open reads the state without it), or
 *     taken when no ioctl can hold it: the last close, an orphaning.
 *   ldev->lock: one device's state and configuration. May be held while
 *     the device's queue freezes or its backing file syncs, so nothing
 *     outside that device waits on it; user tasks take it killably.
 *   loop_dev_chain_lock: global, innermost, held only to check a new backing
 *     file and publish it (never across I/O or a freeze), so following a
 *     chain of loop devices backing each other sees stable states. Its
 *     holder allocates without I/O (loop_dev_lock_chain()).
 *   loop_dev_intf_lock: global, taken once per device creation around the
 *     registration of the block class interface; none of the others.
 * The class interface's callbacks run under a disk's open_mutex and the
 * block class's mutex and take no lock of the driver's or the owner's.
 * The I/O path takes none of them: state changes freeze the queue. Each
 * device runs its requests on its own workqueue.
 *
 * Steps whose failure has an unwind of its own are marked
 * ALLOW_ERROR_INJECTION (static ones kept out of line), so that a kernel
 * with fail_function can fail each of them in turn and check the unwind.
 */
#define pr_fmt(fmt) "loopfs: " fmt

#include <linux/module.h>
#include <linux/backing-dev.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/compat.h>
#include <linux/cred.h>
#include <linux/error-injection.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/loop.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "loop_shim_internal.h"

#define LOOP_DEV_MINORS		16	/* whole disk + 15 partitions */
#define LOOP_DEV_QUEUE_DEPTH	128
/* 1280 KiB per request, as the in-tree driver allows. */
#define LOOP_DEV_MAX_HW_SECTORS	2560
/* Percent of the host's dirty threshold one device's pages may take. */
#define LOOP_DEV_MAX_DIRTY_RATIO	1

static int loop_dev_major;
static DEFINE_IDA(loop_dev_minor_ida);
static struct workqueue_struct *loop_dev_destroy_wq;
static atomic_t loop_dev_live = ATOMIC_INIT(0);
static atomic_long_t loop_dev_last_serial = ATOMIC_LONG_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(loop_dev_gone_wait);
/*
 * Serialises binding and unbinding so that following a chain of loop
 * devices backing each other (loop_dev_validate_file) sees stable states.
 */
static DEFINE_MUTEX(loop_dev_chain_lock);

static const struct block_device_operations loop_dev_fops;

/*
 * The disk's open lock (gendisk->open_mutex, the whole disk's bd_mutex
 * before 5.13): opens and closes, partition scans and partition changes
 * hold it.
 */
static void loop_dev_lock_open(struct gendisk *disk)
{
	mutex_lock(compat_disk_open_mutex(disk));
}

static int loop_dev_lock_open_killable(struct gendisk *disk)
{
	return mutex_lock_killable(compat_disk_open_mutex(disk));
}

static bool loop_dev_trylock_open(struct gendisk *disk)
{
	return mutex_trylock(compat_disk_open_mutex(disk));
}

static void loop_dev_unlock_open(struct gendisk *disk)
{
	mutex_unlock(compat_disk_open_mutex(disk));
}

/*
 * Partition scanning runs every partition parser built into the kernel on
 * the image. Host root may refuse it to devices whose user namespace is
 * not the initial one; the refusal is EPERM and changes nothing.
 */
static bool container_partscan = true;
module_param(container_partscan, bool, 0644);
MODULE_PARM_DESC(container_partscan,
		 "Allow partition scanning on devices of instances owned by a non-initial user namespace (default: yes)");

static bool loop_dev_partscan_allowed(struct loop_dev *ldev)
{
	return ldev->user_ns == &init_user_ns || READ_ONCE(container_partscan);
}

/*
 * A bound device's page cache may hold LOOP_DEV_MAX_DIRTY_RATIO percent of
 * the host's dirty threshold, strictly (see loop_dev_create()), which it
 * keeps when its backing file stops answering. Its owner grants such
 * shares, only so many to one tenant however many devices it binds; a
 * device without one holds none, and its writers wait for the writeback of
 * what they dirty.
 */
static void loop_dev_take_dirty_share(struct loop_dev *ldev)
{
	ldev->dirty_share = !ldev->ops->charge(ldev, LOOP_DEV_CHARGE_DIRTY);
	bdi_set_max_ratio(compat_disk_bdi(ldev->disk),
			  ldev->dirty_share ? LOOP_DEV_MAX_DIRTY_RATIO : 0);
}

static void loop_dev_drop_dirty_share(struct loop_dev *ldev)
{
	if (ldev->dirty_share)
		ldev->ops->uncharge(ldev, LOOP_DEV_CHARGE_DIRTY);
	ldev->dirty_share = false;
}

static loff_t loop_dev_size(loff_t offset, loff_t sizelimit, struct file *file)
{
	loff_t size = i_size_read(file->f_mapping->host);

	if (offset > 0)
		size -= offset;
	if (size < 0)
		return 0;
	if (sizelimit > 0 && sizelimit < size)
		size = sizelimit;
	return size >> SECTOR_SHIFT;
}

static struct block_device *loop_dev_backing_bdev(struct file *file)
{
	struct inode *inode = file->f_mapping->host;

	if (S_ISBLK(inode->i_mode))
		return I_BDEV(inode);
	return inode->i_sb->s_bdev;
}

/* ---- configuration ---- */

/*
 * The block device a file leads to the device's I/O through, if one of
 * ours: a node of one of our disks or of a partition of one (partitions
 * past the disk's minors have the extended major), or a file on a
 * filesystem mounted from one.
 */
static struct block_device *loop_dev_file_bdev(struct file *file)
{
	struct inode *inode = file->f_mapping->host;
	struct block_device *bdev;

	bdev = S_ISBLK(inode->i_mode) ? I_BDEV(inode) : inode->i_sb->s_bdev;
	if (!bdev || bdev->bd_disk->fops != &loop_dev_fops)
		return NULL;
	return bdev;
}

/*
 * Refuse a backing file that is, or is stacked on, the device itself: a
 * node of it (EBADF), a node of one of its partitions or of a device whose
 * chain of backing files leads back to it, or a file on a filesystem
 * mounted from one of these (EINVAL). The device would wait on its own
 * I/O.
 */
static int loop_dev_validate_file(struct file *file, struct block_device *bdev)
{
	struct file *f = file;

	lockdep_assert_held(&loop_dev_chain_lock);
	for (;;) {
		struct block_device *below = loop_dev_file_bdev(f);
		struct inode *inode = f->f_mapping->host;
		struct loop_dev *l;

		if (!below)
			break;
		if (below->bd_disk == bdev->bd_disk)
			return S_ISBLK(inode->i_mode) &&
			       inode->i_rdev == bdev->bd_dev ? -EBADF : -EINVAL;
		l = below->bd_disk->private_data;
		if (l->state != LOOP_DEV_BOUND)
			return -EINVAL;
		f = l->file;
	}
	if (!S_ISREG(file_inode(f)->i_mode) && !S_ISBLK(file_inode(f)->i_mode))
		return -EINVAL;
	return 0;
}

/* Can the device do its I/O through @file at all? */
static int loop_dev_check_file_ops(struct file *file)
{
	if (!file->f_op->read_iter)
		return -EINVAL;
	/*
	 * A device reads its file: never through an fd not open for reading.
	 * (Other file types get the in-tree driver's EINVAL further on.)
	 */
	if (!(file->f_mode & FMODE_READ) &&
	    (S_ISREG(file_inode(file)->i_mode) ||
	     S_ISBLK(file_inode(file)->i_mode)))
		return -EBADF;
	if ((file->f_mode & FMODE_WRITE) && !file->f_op->write_iter)
		return -EINVAL;
	return 0;
}

/*
 * The file @fd names, for LOOP_CONFIGURE (LOOP_SET_FD) or LOOP_CHANGE_FD,
 * if the device can do its I/O through it; an ERR_PTR() if not.
 */
static struct file *loop_dev_fget_backing(unsigned int fd)
{
	struct file *file = fget(fd);
	int err;

	if (!file)
		return ERR_PTR(-EBADF);
	err = loop_dev_check_file_ops(file);
	if (err) {
		fput(file);
		return ERR_PTR(err);
	}
	return file;
}

/*
 * May @file back @ldev, opened as @bdev, with @flags? The same checks for
 * a first bind and for LOOP_CHANGE_FD, in the in-tree driver's order: the
 * chain of backing files, the owner's policy, then the flags.
 */
static noinline int loop_dev_may_back(struct loop_dev *ldev,
				      struct block_device *bdev,
				      struct file *file, u32 flags)
{
	int err;

	err = loop_dev_validate_file(file, bdev);
	if (!err)
		err = ldev->ops->check_backing(ldev, file);
	if (err)
		return err;
	if (flags & ~LOOP_CONFIGURE_SETTABLE_FLAGS)
		return -EINVAL;
	if ((flags & LO_FLAGS_PARTSCAN) && !loop_dev_partscan_allowed(ldev))
		return -EPERM;
	return 0;
}

ALLOW_ERROR_INJECTION(loop_dev_may_back, ERRNO);

/*
 * Device writes land at any offset of the file: only a file its opener may
 * write anywhere gives a writable device. An O_APPEND fd, an append-only or
 * an immutable file gives a read-only one, as an fd without write access
 * does.
 */
static bool loop_dev_file_writable(struct file *file)
{
	struct inode *inode = file_inode(file);

	if (!(file->f_mode & FMODE_WRITE) || !file->f_op->write_iter)
		return false;
	return !(file->f_flags & O_APPEND) && !IS_APPEND(inode) &&
	       !IS_IMMUTABLE(inode);
}

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
#define LOOP_DEV_HAVE_QUEUE_LIMITS	true

static struct gendisk *loop_dev_alloc_disk(struct blk_mq_tag_set *set,
					   void *data,
					   unsigned int max_hw_sectors)
{
	struct queue_limits lim = { .max_hw_sectors = max_hw_sectors };

	return blk_mq_alloc_disk(set, &lim, data);
}

static int loop_dev_commit_limits(struct request_queue *q,
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
#define LOOP_DEV_HAVE_QUEUE_LIMITS	false

static struct gendisk *loop_dev_alloc_disk(struct blk_mq_tag_set *set,
					   void *data,
					   unsigned int max_hw_sectors)
{
	struct gendisk *disk = blk_mq_alloc_disk(set, data);

	if (!IS_ERR(disk))
		blk_queue_max_hw_sectors(disk->queue, max_hw_sectors);
	return disk;
}

/* No commit step here to reject a bad block size: check as it would. */
static int loop_dev_commit_limits(struct request_queue *q,
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
#ifdef QUEUE_FLAG_DISCARD
	/* Discard was also a flag of the queue. */
	if (dl->max_discard_sectors)
		blk_queue_flag_set(QUEUE_FLAG_DISCARD, q);
	else
		blk_queue_flag_clear(QUEUE_FLAG_DISCARD, q);
#endif
	return 0;
}
#endif

/*
 * Discard and write-zeroes punch holes in (or zero) the backing file, so
 * both exist when it can: a block device passes on what it has; a file
 * needs fallocate and works in units of its filesystem's blocks.
 */
static void loop_dev_discard_config(struct loop_dev *ldev,
				    struct loop_dev_limits *lim)
{
	struct file *file = ldev->file;
	struct inode *inode = file->f_mapping->host;
	unsigned int sectors = 0, granularity = 0;

	if (S_ISBLK(inode->i_mode)) {
		struct block_device *bdev = I_BDEV(inode);

		sectors = bdev_write_zeroes_sectors(bdev);
		granularity = bdev_physical_block_size(bdev);
	} else if (file->f_op->fallocate) {
		sectors = UINT_MAX >> SECTOR_SHIFT;
		granularity = max_t(unsigned int, lim->logical_block_size,
				    inode->i_sb->s_blocksize);
	}
	lim->max_discard_sectors = sectors;
	lim->max_write_zeroes_sectors = sectors;
	lim->discard_granularity = sectors ? granularity : 0;
}

/*
 * One block size for all: the device reads and writes its file in units
 * of @bsize, so that is also its physical block and minimum I/O size.
 * Without one given, 512 bytes, or under direct I/O the backing device's
 * logical block size.
 */
static unsigned int loop_dev_block_size(struct loop_dev *ldev,
					unsigned int bsize)
{
	struct block_device *backing = loop_dev_backing_bdev(ldev->file);

	if (bsize)
		return bsize;
	if ((ldev->flags & LO_FLAGS_DIRECT_IO) && backing)
		return bdev_logical_block_size(backing);
	return SECTOR_SIZE;
}

/*
 * Caller has the queue frozen or the device unbound. The freeze comes
 * before the queue-limits lock, which the commit takes: a freeze waits for
 * the requests in flight, which a tenant's stalled backing file holds for
 * as long as it likes, and whoever reads or changes this queue's limits in
 * sysfs (udev, lsblk) takes that lock unkillably, so it is never held
 * across the wait. (The in-tree driver, on kernels with
 * queue_limits_commit_update_frozen(), takes the lock first.)
 *
 * The kernel's own order, lock then freeze (a write of a queue attribute),
 * closes no cycle with ours: a second freezer waits only for requests to
 * leave the queue, and none can enter a queue already frozen, and nobody
 * waits for this queue to unfreeze while holding the lock (no I/O and no
 * allocation that could reclaim through this device is made under it).
 * Lockdep, which tracks the freeze as a lock since 6.14, records the
 * freeze, taken as a trylock, before the lock here and never after it.
 */
static noinline int loop_dev_apply_limits(struct loop_dev *ldev,
					  unsigned int bsize)
{
	struct block_device *backing = loop_dev_backing_bdev(ldev->file);
	struct loop_dev_limits lim = { };

	lockdep_assert_held(&ldev->lock);
	bsize = loop_dev_block_size(ldev, bsize);
	lim.logical_block_size = bsize;
	lim.physical_block_size = bsize;
	lim.io_min = bsize;
	loop_dev_discard_config(ldev, &lim);
	/* A flush means an fsync of the file, pointless when read-only. */
	lim.write_cache = ldev->file->f_op->fsync &&
			 !(ldev->flags & LO_FLAGS_READ_ONLY);
	lim.rotational = backing && bdev_rot(backing);
	return loop_dev_commit_limits(ldev->disk->queue, &lim);
}

ALLOW_ERROR_INJECTION(loop_dev_apply_limits, ERRNO);

/*
 * The queue is frozen when the device is bound. Switching between buffered
 * and direct I/O syncs the file when @sync.
 */
static void __loop_dev_update_dio(struct loop_dev *ldev, bool dio, bool sync)
{
	struct file *file = ldev->file;
	struct block_device *backing = loop_dev_backing_bdev(file);
	unsigned int lbs = queue_logical_block_size(ldev->disk->queue);
	bool use = dio && compat_file_can_odirect(file);

	lockdep_assert_held(&ldev->lock);
	if (use && backing && (lbs < bdev_logical_block_size(backing) ||
			       (ldev->offset & (bdev_logical_block_size(backing) - 1))))
		use = false;
	if (sync && use != ldev->use_dio)
		vfs_fsync(file, 0);
	ldev->use_dio = use;
	if (use)
		ldev->flags |= LO_FLAGS_DIRECT_IO;
	else
		ldev->flags &= ~LO_FLAGS_DIRECT_IO;
	ldev->io_mode = loop_dev_pick_io_mode(ldev);
}

static void loop_dev_update_dio(struct loop_dev *ldev, bool dio)
{
	__loop_dev_update_dio(ldev, dio, true);
}

/*
 * Freeze @q as blk_mq_freeze_queue() does, its allocation flags saved in
 * @memflags for blk_mq_unfreeze_queue(), waiting for requests in flight,
 * which may wait on the backing file for as long as it pleases; -EINTR,
 * unfrozen, on a fatal signal.
 */
static int loop_dev_freeze_killable(struct request_queue *q,
				    unsigned int *memflags)
{
	*memflags = memalloc_noio_save();
	blk_freeze_queue_start(q);
	while (!blk_mq_freeze_queue_wait_timeout(q, HZ / 10)) {
		if (fatal_signal_pending(current)) {
			blk_mq_unfreeze_queue(q, *memflags);
			return -EINTR;
		}
	}
	return 0;
}

static void loop_dev_set_capacity(struct loop_dev *ldev, sector_t sectors)
{
	if (!set_capacity_and_notify(ldev->disk, sectors))
		kobject_uevent(&disk_to_dev(ldev->disk)->kobj, KOBJ_CHANGE);
}

static int loop_dev_status_from_info(struct loop_dev *ldev,
				     const struct loop_info64 *info)
{
	if ((unsigned int)info->lo_encrypt_key_size > LO_KEY_SIZE)
		return -EINVAL;
	/* Encryption left the in-tree driver years ago. */
	if (info->lo_encrypt_type != LO_CRYPT_NONE)
		return -EINVAL;
	if (info->lo_offset > LLONG_MAX || info->lo_sizelimit > LLONG_MAX)
		return -EOVERFLOW;
	ldev->offset = info->lo_offset;
	ldev->sizelimit = info->lo_sizelimit;
	memcpy(ldev->file_name, info->lo_file_name, LO_NAME_SIZE);
	ldev->file_name[LO_NAME_SIZE - 1] = 0;
	return 0;
}

static void loop_dev_partitions_changed(struct loop_dev *ldev, bool can_block)
{
	if (!READ_ONCE(ldev->orphan))
		ldev->ops->partitions_changed(ldev, can_block);
}

static void loop_dev_reread_partitions(struct loop_dev *ldev)
{
	int ret;

	loop_dev_lock_open(ldev->disk);
	ret = bdev_disk_changed(ldev->disk, false);
	loop_dev_unlock_open(ldev->disk);
	if (ret)
		pr_warn("%s: partition scan failed (%d)\n",
			ldev->disk->disk_name, ret);
	loop_dev_partitions_changed(ldev, true);
}

/* ---- sysfs: /sys/block/<name>/loop/ ---- */

static struct loop_dev *loop_dev_from_dev(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

static ssize_t backing_file_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct loop_dev *ldev = loop_dev_from_dev(dev);
	struct file *file;
	char *p = NULL;
	ssize_t ret;

	spin_lock(&ldev->file_lock);
	file = ldev->file;
	if (file)
		get_file(file);
	spin_unlock(&ldev->file_lock);
	if (!file)
		return 0;
	p = file_path(file, buf, PAGE_SIZE - 1);
	fput(file);
	if (IS_ERR(p))
		return PTR_ERR(p);
	ret = strlen(p);
	memmove(buf, p, ret);
	buf[ret++] = '\n';
	buf[ret] = 0;
	return ret;
}

static ssize_t offset_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct loop_dev *ldev = loop_dev_from_dev(dev);

	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)READ_ONCE(ldev->offset));
}

static ssize_t sizelimit_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct loop_dev *ldev = loop_dev_from_dev(dev);

	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)READ_ONCE(ldev->sizelimit));
}

static ssize_t loop_dev_flag_show(struct device *dev, char *buf, int flag)
{
	struct loop_dev *ldev = loop_dev_from_dev(dev);

	return sysfs_emit(buf, "%s\n",
			  READ_ONCE(ldev->flags) & flag ? "1" : "0");
}

static ssize_t autoclear_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return loop_dev_flag_show(dev, buf, LO_FLAGS_AUTOCLEAR);
}

static ssize_t partscan_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return loop_dev_flag_show(dev, buf, LO_FLAGS_PARTSCAN);
}

static ssize_t dio_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	return loop_dev_flag_show(dev, buf, LO_FLAGS_DIRECT_IO);
}

/*
 * Where a device's data lives (a path in the owner's private directory, the
 * window into it) is the owner's business: readable by the owner of the
 * group (the instance owner) and host root only, unlike the in-tree
 * driver's. The flags say nothing of the kind.
 */
static DEVICE_ATTR_ADMIN_RO(backing_file);
static DEVICE_ATTR_ADMIN_RO(offset);
static DEVICE_ATTR_ADMIN_RO(sizelimit);
static DEVICE_ATTR_RO(autoclear);
static DEVICE_ATTR_RO(partscan);
static DEVICE_ATTR_RO(dio);

static struct attribute *loop_dev_attrs[] = {
	&dev_attr_backing_file.attr,
	&dev_attr_offset.attr,
	&dev_attr_sizelimit.attr,
	&dev_attr_autoclear.attr,
	&dev_attr_partscan.attr,
	&dev_attr_dio.attr,
	NULL,
};

static const struct attribute_group loop_dev_attr_group = {
	.name = "loop",
	.attrs = loop_dev_attrs,
};

/*
 * No attributes and no name: what sysfs_group_change_owner() changes for
 * it is the owner of the kobject's own directory, and nothing in it (a
 * device's sysfs_change_owner() did the same, but modules cannot call it).
 */
static const struct attribute_group loop_dev_dir_group = {};

static void loop_dev_sysfs_add(struct loop_dev *ldev)
{
	struct kobject *kobj = &disk_to_dev(ldev->disk)->kobj;

	if (sysfs_create_group(kobj, &loop_dev_attr_group))
		return;
	ldev->sysfs_added = true;
	if (sysfs_group_change_owner(kobj, &loop_dev_attr_group, ldev->uid,
				     ldev->gid))
		pr_warn("%s: cannot hand sysfs to the instance owner\n",
			ldev->disk->disk_name);
}

/* Only a group that was created may be removed (removal would WARN). */
static void loop_dev_sysfs_remove(struct loop_dev *ldev)
{
	if (!ldev->sysfs_added)
		return;
	sysfs_remove_group(&disk_to_dev(ldev->disk)->kobj,
			   &loop_dev_attr_group);
	ldev->sysfs_added = false;
}

/* ---- bind and unbind ---- */

/*
 * LOOP_CHANGE_FD takes the chain lock with its device's queue frozen: a
 * holder whose allocation reclaimed by writing back through that device
 * would wait for the queue, and the queue for the lock. So the holder
 * allocates without I/O; its saved flags are the lock's to keep.
 */
static unsigned int loop_dev_chain_noio;

static int loop_dev_lock_chain(void)
{
	if (mutex_lock_killable(&loop_dev_chain_lock))
		return -EINTR;
	loop_dev_chain_noio = memalloc_noio_save();
	return 0;
}

static void loop_dev_unlock_chain(void)
{
	memalloc_noio_restore(loop_dev_chain_noio);
	mutex_unlock(&loop_dev_chain_lock);
}

/*
 * Binding and clearing change the device's place in chains of loop
 * devices: they hold its lock, then the chain lock. Both are waited for
 * killably, since either may be held while a backing file takes its time.
 */
static int loop_dev_lock_for_bind(struct loop_dev *ldev)
{
	if (mutex_lock_killable(&ldev->lock))
		return -EINTR;
	if (loop_dev_lock_chain()) {
		mutex_unlock(&ldev->lock);
		return -EINTR;
	}
	return 0;
}

static void loop_dev_unlock_for_bind(struct loop_dev *ldev)
{
	loop_dev_unlock_chain();
	mutex_unlock(&ldev->lock);
}

/* An unbound device reports no configuration. */
static void loop_dev_reset_config(struct loop_dev *ldev)
{
	ldev->offset = 0;
	ldev->sizelimit = 0;
	ldev->flags = 0;
	ldev->use_dio = false;
	memset(ldev->file_name, 0, LO_NAME_SIZE);
}

/*
 * Make @file, or none, the backing file. Reclaim must not recurse into the
 * device through the file it writes to: while bound, a file's mapping
 * allocates without I/O or filesystem reclaim; the file being replaced
 * gets its own mask back.
 */
static void loop_dev_set_file(struct loop_dev *ldev, struct file *file)
{
	struct file *old = ldev->file;

	if (old)
		mapping_set_gfp_mask(old->f_mapping, ldev->old_gfp_mask);
	spin_lock(&ldev->file_lock);
	ldev->file = file;
	spin_unlock(&ldev->file_lock);
	if (!file)
		return;
	ldev->old_gfp_mask = mapping_gfp_mask(file->f_mapping);
	mapping_set_gfp_mask(file->f_mapping,
			     ldev->old_gfp_mask & ~(__GFP_IO | __GFP_FS));
}

static int loop_dev_configure(struct loop_dev *ldev, blk_mode_t mode,
			      struct block_device *bdev,
			      const struct loop_config *config)
{
	struct file *file;
	bool partscan;
	int err;

	file = loop_dev_fget_backing(config->fd);
	if (IS_ERR(file))
		return PTR_ERR(file);
	/*
	 * Direct I/O starts with a sync of the file, which may wait on its
	 * filesystem for good: done here, before any lock is taken.
	 */
	if ((config->info.lo_flags & LO_FLAGS_DIRECT_IO) &&
	    compat_file_can_odirect(file)) {
		vfs_fsync(file, 0);
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			goto out_putf;
		}
	}
	/* Nobody may change the device under an exclusive opener. */
	if (!(mode & BLK_OPEN_EXCL)) {
		err = bd_prepare_to_claim(bdev, loop_dev_configure, NULL);
		if (err)
			goto out_putf;
	}
	err = loop_dev_lock_for_bind(ldev);
	if (err)
		goto out_claim;
	/* A bound device's configuration is not this call's to undo. */
	err = -EBUSY;
	if (ldev->state != LOOP_DEV_UNBOUND)
		goto out_unlock;
	err = loop_dev_may_back(ldev, bdev, file, config->info.lo_flags);
	if (err)
		goto out_reset;
	err = -EINVAL;
	if (config->block_size && blk_validate_block_size(config->block_size))
		goto out_reset;
	err = loop_dev_status_from_info(ldev, &config->info);
	if (err)
		goto out_reset;
	if (config->info.lo_flags & LO_FLAGS_PARTSCAN) {
		err = ldev->ops->charge(ldev, LOOP_DEV_CHARGE_PARTSCAN);
		if (err)
			goto out_reset;
	}
	ldev->flags = config->info.lo_flags;
	if (!loop_dev_file_writable(file) || !(mode & BLK_OPEN_WRITE))
		ldev->flags |= LO_FLAGS_READ_ONLY;
	loop_dev_take_dirty_share(ldev);

	dev_set_uevent_suppress(disk_to_dev(ldev->disk), 1);
	disk_force_media_change(ldev->disk);
	set_disk_ro(ldev->disk, ldev->flags & LO_FLAGS_READ_ONLY);

	/*
	 * No freeze (an RCU grace period): while the device is unbound the
	 * I/O path reads none of this, and the state is published last.
	 */
	loop_dev_set_file(ldev, file);
	ldev->use_dio = false;
	err = loop_dev_apply_limits(ldev, config->block_size);
	if (err) {
		loop_dev_set_file(ldev, NULL);
		dev_set_uevent_suppress(disk_to_dev(ldev->disk), 0);
		goto out_uncharge;
	}
	__loop_dev_update_dio(ldev, ldev->flags & LO_FLAGS_DIRECT_IO, false);
	loop_dev_set_capacity(ldev, loop_dev_size(ldev->offset,
						  ldev->sizelimit, file));
	/* Publish file and I/O mode before the state (loop_dev_queue_rq). */
	smp_store_release(&ldev->state, LOOP_DEV_BOUND);
	loop_dev_unlock_chain();
	/*
	 * Not under the chain lock: sysfs takes kernfs's lock, which others
	 * hold across allocations that may reclaim through a frozen device.
	 */
	loop_dev_sysfs_add(ldev);
	partscan = ldev->flags & LO_FLAGS_PARTSCAN;
	if (partscan)
		compat_disk_suppress_part_scan(ldev->disk, false);
	dev_set_uevent_suppress(disk_to_dev(ldev->disk), 0);
	kobject_uevent(&disk_to_dev(ldev->disk)->kobj, KOBJ_CHANGE);
	mutex_unlock(&ldev->lock);

	if (partscan)
		loop_dev_reread_partitions(ldev);
	if (!(mode & BLK_OPEN_EXCL))
		bd_abort_claiming(bdev, loop_dev_configure);
	return 0;

out_uncharge:
	loop_dev_drop_dirty_share(ldev);
	if (ldev->flags & LO_FLAGS_PARTSCAN)
		ldev->ops->uncharge(ldev, LOOP_DEV_CHARGE_PARTSCAN);
out_reset:
	loop_dev_reset_config(ldev);
out_unlock:
	loop_dev_unlock_for_bind(ldev);
out_claim:
	if (!(mode & BLK_OPEN_EXCL))
		bd_abort_claiming(bdev, loop_dev_configure);
out_putf:
	fput(file);
	return err;
}

/*
 * Release the backing file of a device in LOOP_DEV_RUNDOWN. @open_mutex_held
 * tells whether the caller (the last close) already holds the disk's
 * open_mutex, which the partition drop needs: callers say which with
 * loop_dev_unbind() or loop_dev_unbind_open_locked().
 */
static void __loop_dev_unbind(struct loop_dev *ldev, bool open_mutex_held)
{
	struct request_queue *q = ldev->disk->queue;
	struct loop_dev_limits lim = {
		.logical_block_size = SECTOR_SIZE,
		.physical_block_size = SECTOR_SIZE,
		.io_min = SECTOR_SIZE,
	};
	struct file *file = ldev->file;
	bool partscan = ldev->flags & LO_FLAGS_PARTSCAN;
	unsigned int memflags;

	memflags = blk_mq_freeze_queue(q);
	loop_dev_set_file(ldev, NULL);
	loop_dev_commit_limits(q, &lim);
	blk_mq_unfreeze_queue(q, memflags);

	invalidate_disk(ldev->disk);
	loop_dev_sysfs_remove(ldev);
	kobject_uevent(&disk_to_dev(ldev->disk)->kobj, KOBJ_CHANGE);
	disk_force_media_change(ldev->disk);
	if (partscan) {
		int err;

		if (!open_mutex_held)
			loop_dev_lock_open(ldev->disk);
		err = bdev_disk_changed(ldev->disk, false);
		if (!open_mutex_held)
			loop_dev_unlock_open(ldev->disk);
		if (err)
			pr_warn("%s: partition drop failed (%d)\n",
				ldev->disk->disk_name, err);
	}
	compat_disk_suppress_part_scan(ldev->disk, true);
	if (partscan)
		ldev->ops->uncharge(ldev, LOOP_DEV_CHARGE_PARTSCAN);

	mutex_lock(&ldev->lock);
	loop_dev_drop_dirty_share(ldev);
	loop_dev_reset_config(ldev);
	WRITE_ONCE(ldev->state,
		   ldev->orphan ? LOOP_DEV_DELETING : LOOP_DEV_UNBOUND);
	mutex_unlock(&ldev->lock);
	/* fput() may close a device below us: no lock of ours held. */
	fput(file);
}

static void loop_dev_unbind(struct loop_dev *ldev)
{
	__loop_dev_unbind(ldev, false);
}

/* loop_dev_unbind() for the last close, which holds the disk's open_mutex. */
static void loop_dev_unbind_open_locked(struct loop_dev *ldev)
{
	__loop_dev_unbind(ldev, true);
}

static int loop_dev_clr_fd(struct loop_dev *ldev)
{
	bool now;
	int err;

	err = loop_dev_lock_for_bind(ldev);
	if (err)
		return err;
	if (ldev->state != LOOP_DEV_BOUND) {
		loop_dev_unlock_for_bind(ldev);
		return -ENXIO;
	}
	/* With other openers, clear on the last close (autoclear). */
	ldev->flags |= LO_FLAGS_AUTOCLEAR;
	now = disk_openers(ldev->disk) == 1;
	if (now)
		WRITE_ONCE(ldev->state, LOOP_DEV_RUNDOWN);
	loop_dev_unlock_for_bind(ldev);
	if (now) {
		loop_dev_unbind(ldev);
		loop_dev_partitions_changed(ldev, true);
	}
	return 0;
}

static int loop_dev_change_fd(struct loop_dev *ldev, struct block_device *bdev,
			      unsigned int fd)
{
	struct file *file, *old;
	unsigned int memflags;
	bool partscan;
	int err;

	file = loop_dev_fget_backing(fd);
	if (IS_ERR(file))
		return PTR_ERR(file);
	err = mutex_lock_killable(&ldev->lock);
	if (err)
		goto out_putf;
	err = -ENXIO;
	if (ldev->state != LOOP_DEV_BOUND)
		goto out_unlock;
	/* Only a read-only device may switch its backing file. */
	err = -EINVAL;
	if (!(ldev->flags & LO_FLAGS_READ_ONLY))
		goto out_unlock;
	/*
	 * Requests in flight may wait on the old file for good: wait for
	 * them before, not while, holding the chain lock.
	 */
	err = loop_dev_freeze_killable(ldev->disk->queue, &memflags);
	if (err)
		goto out_unlock;
	err = loop_dev_lock_chain();
	if (err)
		goto out_unfreeze;
	err = loop_dev_may_back(ldev, bdev, file, ldev->flags);
	old = ldev->file;
	if (!err && loop_dev_size(ldev->offset, ldev->sizelimit, file) !=
		    loop_dev_size(ldev->offset, ldev->sizelimit, old))
		err = -EINVAL;
	if (err) {
		loop_dev_unlock_chain();
		goto out_unfreeze;
	}
	loop_dev_set_file(ldev, file);
	loop_dev_unlock_chain();

	disk_force_media_change(ldev->disk);
	loop_dev_update_dio(ldev, ldev->use_dio);
	blk_mq_unfreeze_queue(ldev->disk->queue, memflags);
	partscan = ldev->flags & LO_FLAGS_PARTSCAN;
	mutex_unlock(&ldev->lock);

	fput(old);
	if (partscan)
		loop_dev_reread_partitions(ldev);
	kobject_uevent(&disk_to_dev(ldev->disk)->kobj, KOBJ_CHANGE);
	return 0;

out_unfreeze:
	blk_mq_unfreeze_queue(ldev->disk->queue, memflags);
out_unlock:
	mutex_unlock(&ldev->lock);
out_putf:
	fput(file);
	return err;
}

static int loop_dev_set_status(struct loop_dev *ldev,
			       const struct loop_info64 *info)
{
	struct block_device *whole = compat_disk_whole(ldev->disk);
	bool partscan = false, charged = false;
	unsigned int memflags;
	int prev, err;

	err = mutex_lock_killable(&ldev->lock);
	if (err)
		return err;
	if (ldev->state != LOOP_DEV_BOUND) {
		err = -ENXIO;
		goto out_unlock;
	}
	if ((info->lo_flags & LO_FLAGS_PARTSCAN) &&
	    !(ldev->flags & LO_FLAGS_PARTSCAN)) {
		err = loop_dev_partscan_allowed(ldev) ?
		      ldev->ops->charge(ldev, LOOP_DEV_CHARGE_PARTSCAN) : -EPERM;
		if (err)
			goto out_unlock;
		charged = true;
	}
	if (ldev->offset != info->lo_offset ||
	    ldev->sizelimit != info->lo_sizelimit) {
		sync_blockdev(whole);
		invalidate_bdev(whole);
	}
	memflags = blk_mq_freeze_queue(ldev->disk->queue);
	prev = ldev->flags;
	err = loop_dev_status_from_info(ldev, info);
	if (err)
		goto out_unfreeze;
	/* AUTOCLEAR may be set or cleared, PARTSCAN only set. */
	ldev->flags = (info->lo_flags & LOOP_SET_STATUS_SETTABLE_FLAGS) |
		      (prev & ~LOOP_SET_STATUS_SETTABLE_FLAGS) |
		      (prev & ~LOOP_SET_STATUS_CLEARABLE_FLAGS);
	loop_dev_set_capacity(ldev, loop_dev_size(ldev->offset,
						  ldev->sizelimit,
						  ldev->file));
	loop_dev_update_dio(ldev, ldev->use_dio);
	if ((ldev->flags & LO_FLAGS_PARTSCAN) && !(prev & LO_FLAGS_PARTSCAN)) {
		compat_disk_suppress_part_scan(ldev->disk, false);
		partscan = true;
	}
out_unfreeze:
	blk_mq_unfreeze_queue(ldev->disk->queue, memflags);
	if (err && charged)
		ldev->ops->uncharge(ldev, LOOP_DEV_CHARGE_PARTSCAN);
out_unlock:
	mutex_unlock(&ldev->lock);
	if (partscan)
		loop_dev_reread_partitions(ldev);
	return err;
}

static int loop_dev_get_status(struct loop_dev *ldev, struct loop_info64 *info)
{
	struct kstat stat;
	struct path path;
	int ret;

	ret = mutex_lock_killable(&ldev->lock);
	if (ret)
		return ret;
	if (ldev->state != LOOP_DEV_BOUND) {
		mutex_unlock(&ldev->lock);
		return -ENXIO;
	}
	memset(info, 0, sizeof(*info));
	info->lo_number = ldev->number;
	info->lo_offset = ldev->offset;
	info->lo_sizelimit = ldev->sizelimit;
	info->lo_flags = ldev->flags;
	memcpy(info->lo_file_name, ldev->file_name, LO_NAME_SIZE);
	path = ldev->file->f_path;
	path_get(&path);
	mutex_unlock(&ldev->lock);

	/* No lock held while the filesystem answers. */
	ret = vfs_getattr(&path, &stat, STATX_INO, AT_STATX_SYNC_AS_STAT);
	if (!ret) {
		info->lo_device = huge_encode_dev(stat.dev);
		info->lo_inode = stat.ino;
		info->lo_rdevice = huge_encode_dev(stat.rdev);
	}
	path_put(&path);
	return ret;
}

/*
 * LOOP_SET_STATUS and LOOP_GET_STATUS pass struct loop_info, whose fields
 * are narrower than those of struct loop_info64: as in-tree, a value it
 * cannot hold fails LOOP_GET_STATUS with -EOVERFLOW.
 */
static void loop_dev_info_from_old(const struct loop_info *old,
				   struct loop_info64 *info)
{
	*info = (struct loop_info64) {
		.lo_number	= old->lo_number,
		.lo_device	= old->lo_device,
		.lo_inode	= old->lo_inode,
		.lo_rdevice	= old->lo_rdevice,
		.lo_offset	= old->lo_offset,
		.lo_flags	= old->lo_flags,
	};
	memcpy(info->lo_file_name, old->lo_name, LO_NAME_SIZE);
}

static int loop_dev_info_to_old(const struct loop_info64 *info,
				struct loop_info *old)
{
	memset(old, 0, sizeof(*old));
	old->lo_number = info->lo_number;
	old->lo_device = info->lo_device;
	old->lo_inode = info->lo_inode;
	old->lo_rdevice = info->lo_rdevice;
	old->lo_offset = info->lo_offset;
	old->lo_flags = info->lo_flags;
	memcpy(old->lo_name, info->lo_file_name, LO_NAME_SIZE);
	if (old->lo_device != info->lo_device ||
	    old->lo_rdevice != info->lo_rdevice ||
	    old->lo_inode != info->lo_inode ||
	    old->lo_offset != info->lo_offset)
		return -EOVERFLOW;
	return 0;
}

/*
 * LOOP_SET_BLOCK_SIZE's argument, read as the running kernel's in-tree
 * driver reads it: validated up front before atomic queue limits; since,
 * its low 32 bits, 0 meaning the default, and the limits commit rejects
 * the rest.
 */
static int loop_dev_block_size_arg(unsigned long arg, unsigned int *bsize)
{
	*bsize = (unsigned int)arg;
	if (LOOP_DEV_HAVE_QUEUE_LIMITS)
		return 0;
	return blk_validate_block_size(arg);
}

static int loop_dev_set_block_size(struct loop_dev *ldev, blk_mode_t mode,
				   struct block_device *bdev, unsigned long arg)
{
	unsigned int bsize, memflags;
	int err;

	if (!(mode & BLK_OPEN_EXCL)) {
		err = bd_prepare_to_claim(bdev, loop_dev_set_block_size, NULL);
		if (err)
			return err;
	}
	err = mutex_lock_killable(&ldev->lock);
	if (err)
		goto out_claim;
	if (ldev->state != LOOP_DEV_BOUND) {
		err = -ENXIO;
		goto out_unlock;
	}
	err = loop_dev_block_size_arg(arg, &bsize);
	if (err || queue_logical_block_size(ldev->disk->queue) == bsize)
		goto out_unlock;
	sync_blockdev(compat_disk_whole(ldev->disk));
	invalidate_bdev(compat_disk_whole(ldev->disk));
	memflags = blk_mq_freeze_queue(ldev->disk->queue);
	err = loop_dev_apply_limits(ldev, bsize);
	loop_dev_update_dio(ldev, ldev->use_dio);
	blk_mq_unfreeze_queue(ldev->disk->queue, memflags);
out_unlock:
	mutex_unlock(&ldev->lock);
out_claim:
	if (!(mode & BLK_OPEN_EXCL))
		bd_abort_claiming(bdev, loop_dev_set_block_size);
	return err;
}

static int loop_dev_simple_ioctl(struct loop_dev *ldev, unsigned int cmd,
				 unsigned long arg)
{
	int err = mutex_lock_killable(&ldev->lock);
	unsigned int memflags;

	if (err)
		return err;
	if (cmd != LOOP_SET_CAPACITY && cmd != LOOP_SET_DIRECT_IO) {
		err = -EINVAL;
	} else if (ldev->state != LOOP_DEV_BOUND) {
		err = -ENXIO;
	} else if (cmd == LOOP_SET_CAPACITY) {
		loop_dev_set_capacity(ldev, loop_dev_size(ldev->offset,
							  ldev->sizelimit,
							  ldev->file));
	} else {
		memflags = blk_mq_freeze_queue(ldev->disk->queue);
		loop_dev_update_dio(ldev, !!arg);
		blk_mq_unfreeze_queue(ldev->disk->queue, memflags);
		if (ldev->use_dio != !!arg)
			err = -EINVAL;
	}
	mutex_unlock(&ldev->lock);
	return err;
}

/*
 * What the in-tree driver allows to CAP_SYS_ADMIN in the initial user
 * namespace, loopfs allows to CAP_SYS_ADMIN in the instance's namespace.
 */
static bool loop_dev_may_admin(struct loop_dev *ldev, blk_mode_t mode)
{
	return (mode & BLK_OPEN_WRITE) ||
	       ns_capable(ldev->user_ns, CAP_SYS_ADMIN);
}

static int loop_dev_ioctl(struct block_device *bdev, blk_mode_t mode,
			  unsigned int cmd, unsigned long arg)
{
	struct loop_dev *ldev = bdev->bd_disk->private_data;
	void __user *argp = (void __user *)arg;
	struct loop_config config;
	struct loop_info64 info;
	struct loop_info old;
	int err;

	switch (cmd) {
	case LOOP_SET_FD:
		memset(&config, 0, sizeof(config));
		config.fd = arg;
		return loop_dev_configure(ldev, mode, bdev, &config);
	case LOOP_CONFIGURE:
		if (copy_from_user(&config, argp, sizeof(config)))
			return -EFAULT;
		return loop_dev_configure(ldev, mode, bdev, &config);
	case LOOP_CHANGE_FD:
		return loop_dev_change_fd(ldev, bdev, arg);
	case LOOP_CLR_FD:
		return loop_dev_clr_fd(ldev);
	case LOOP_SET_STATUS:
		if (!loop_dev_may_admin(ldev, mode))
			return -EPERM;
		if (copy_from_user(&old, argp, sizeof(old)))
			return -EFAULT;
		loop_dev_info_from_old(&old, &info);
		return loop_dev_set_status(ldev, &info);
	case LOOP_SET_STATUS64:
		if (!loop_dev_may_admin(ldev, mode))
			return -EPERM;
		if (copy_from_user(&info, argp, sizeof(info)))
			return -EFAULT;
		return loop_dev_set_status(ldev, &info);
	case LOOP_GET_STATUS:
		if (!argp)
			return -EINVAL;
		err = loop_dev_get_status(ldev, &info);
		if (!err)
			err = loop_dev_info_to_old(&info, &old);
		if (!err && copy_to_user(argp, &old, sizeof(old)))
			err = -EFAULT;
		return err;
	case LOOP_GET_STATUS64:
		if (!argp)
			return -EINVAL;
		err = loop_dev_get_status(ldev, &info);
		if (!err && copy_to_user(argp, &info, sizeof(info)))
			err = -EFAULT;
		return err;
	case LOOP_SET_BLOCK_SIZE:
		if (!loop_dev_may_admin(ldev, mode))
			return -EPERM;
		return loop_dev_set_block_size(ldev, mode, bdev, arg);
	case LOOP_SET_CAPACITY:
	case LOOP_SET_DIRECT_IO:
		if (!loop_dev_may_admin(ldev, mode))
			return -EPERM;
		fallthrough;
	default:
		return loop_dev_simple_ioctl(ldev, cmd, arg);
	}
}

#ifdef CONFIG_COMPAT
/* struct loop_info as a 32-bit process lays it out. */
struct compat_loop_info {
	compat_int_t	lo_number;
	compat_dev_t	lo_device;
	compat_ulong_t	lo_inode;
	compat_dev_t	lo_rdevice;
	compat_int_t	lo_offset;
	compat_int_t	lo_encrypt_type;
	compat_int_t	lo_encrypt_key_size;
	compat_int_t	lo_flags;
	char		lo_name[LO_NAME_SIZE];
	unsigned char	lo_encrypt_key[LO_KEY_SIZE];
	compat_ulong_t	lo_init[2];
	char		reserved[4];
};

static int loop_dev_info_from_compat(const struct compat_loop_info __user *arg,
				     struct loop_info64 *info)
{
	struct compat_loop_info c;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	*info = (struct loop_info64) {
		.lo_number	= c.lo_number,
		.lo_device	= c.lo_device,
		.lo_inode	= c.lo_inode,
		.lo_rdevice	= c.lo_rdevice,
		.lo_offset	= c.lo_offset,
		.lo_flags	= c.lo_flags,
	};
	memcpy(info->lo_file_name, c.lo_name, LO_NAME_SIZE);
	return 0;
}

static int loop_dev_info_to_compat(const struct loop_info64 *info,
				   struct compat_loop_info __user *arg)
{
	struct compat_loop_info c;
	struct loop_info old;
	int err;

	err = loop_dev_info_to_old(info, &old);
	if (err)
		return err;
	memset(&c, 0, sizeof(c));
	c.lo_number = old.lo_number;
	c.lo_device = old.lo_device;
	c.lo_inode = old.lo_inode;
	c.lo_rdevice = old.lo_rdevice;
	c.lo_offset = old.lo_offset;
	c.lo_flags = old.lo_flags;
	memcpy(c.lo_name, old.lo_name, LO_NAME_SIZE);
	/* The 32-bit layout holds even less than the native one. */
	if (c.lo_device != old.lo_device ||
	    c.lo_rdevice != old.lo_rdevice ||
	    c.lo_inode != old.lo_inode)
		return -EOVERFLOW;
	return copy_to_user(arg, &c, sizeof(c)) ? -EFAULT : 0;
}

static int loop_dev_get_status_compat(struct loop_dev *ldev,
				      struct compat_loop_info __user *arg)
{
	struct loop_info64 info;
	int err;

	if (!arg)
		return -EINVAL;
	err = loop_dev_get_status(ldev, &info);
	if (err)
		return err;
	return loop_dev_info_to_compat(&info, arg);
}

static int loop_dev_set_status_compat(struct loop_dev *ldev,
				      struct compat_loop_info __user *arg)
{
	struct loop_info64 info;
	int err;

	err = loop_dev_info_from_compat(arg, &info);
	if (err)
		return err;
	return loop_dev_set_status(ldev, &info);
}

static int loop_dev_compat_ioctl(struct block_device *bdev, blk_mode_t mode,
				 unsigned int cmd, unsigned long arg)
{
	struct loop_dev *ldev = bdev->bd_disk->private_data;

	switch (cmd) {
	case LOOP_SET_STATUS:
		if (!loop_dev_may_admin(ldev, mode))
			return -EPERM;
		return loop_dev_set_status_compat(ldev, compat_ptr(arg));
	case LOOP_GET_STATUS:
		return loop_dev_get_status_compat(ldev, compat_ptr(arg));
	case LOOP_SET_CAPACITY:
	case LOOP_CLR_FD:
	case LOOP_GET_STATUS64:
	case LOOP_SET_STATUS64:
	case LOOP_CONFIGURE:
		arg = (unsigned long)compat_ptr(arg);
		fallthrough;
	case LOOP_SET_FD:
	case LOOP_CHANGE_FD:
	case LOOP_SET_BLOCK_SIZE:
	case LOOP_SET_DIRECT_IO:
		return loop_dev_ioctl(bdev, mode, cmd, arg);
	default:
		return -ENOIOCTLCMD;
	}
}
#endif

/* ---- open, release and lifetime ---- */

/*
 * Whoever holds CAP_MKNOD can make a node for any device number, and a
 * device-cgroup rule for the driver's major covers every device of every
 * tenant: the number is no secret and the node's mode no barrier. The
 * disk therefore opens only for tasks of its tenant's cgroup (or one
 * below it), however the node was made, and for host root. The block
 * layer asks here for every open of the whole disk, and for the opens of
 * a partition that find it closed (or all of them, on kernels that open
 * the whole disk for each).
 */
static bool loop_dev_may_open(struct loop_dev *ldev)
{
	bool inside;

	if (!ldev->tenant)
		return true;
	rcu_read_lock();
	inside = task_under_cgroup_hierarchy(current, ldev->tenant);
	rcu_read_unlock();
	return inside || capable(CAP_SYS_ADMIN);
}

static int loop_dev_open(struct gendisk *disk, blk_mode_t mode)
{
	struct loop_dev *ldev = disk->private_data;
	enum loop_dev_state state;

	if (!loop_dev_may_open(ldev))
		return -EPERM;
	/*
	 * The state is read without the device's lock: the block layer
	 * calls here under open_mutex, which every opener of the disk (host
	 * root's udev and blkid too) waits for unkillably, and the lock may
	 * be held across a wait on the backing file. Read with the lock
	 * and dropped at once, the state would be no fresher: the open may
	 * as well have come just before a change as after it.
	 */
	state = READ_ONCE(ldev->state);
	if (state == LOOP_DEV_DELETING || state == LOOP_DEV_RUNDOWN)
		return -ENXIO;
	return 0;
}

COMPAT_BDOPS_OPEN(loop_dev_open)

/* Called by the block layer with disk->open_mutex held. */
static void loop_dev_release(struct gendisk *disk)
{
	struct loop_dev *ldev = disk->private_data;
	bool clear, destroy;

	if (disk_openers(disk) > 0)
		return;
	mutex_lock(&ldev->lock);
	clear = ldev->state == LOOP_DEV_BOUND &&
		((ldev->flags & LO_FLAGS_AUTOCLEAR) || ldev->orphan);
	if (clear)
		WRITE_ONCE(ldev->state, LOOP_DEV_RUNDOWN);
	destroy = ldev->orphan;
	if (destroy && !clear)
		WRITE_ONCE(ldev->state, LOOP_DEV_DELETING);
	mutex_unlock(&ldev->lock);

	if (clear)
		loop_dev_unbind_open_locked(ldev);
	/* del_gendisk() cannot run under open_mutex: leave it to a worker. */
	if (destroy)
		queue_work(loop_dev_destroy_wq, &ldev->destroy_work);
	else if (clear)
		loop_dev_partitions_changed(ldev, false);
}

COMPAT_BDOPS_RELEASE(loop_dev_release)

static void loop_dev_free_rcu(struct rcu_head *head)
{
	kfree(container_of(head, struct loop_dev, free_rcu));
	if (atomic_dec_and_test(&loop_dev_live))
		wake_up(&loop_dev_gone_wait);
}

static void loop_dev_free_disk(struct gendisk *disk)
{
	struct loop_dev *ldev = disk->private_data;

	/* A worker may still be leaving after ending the last request. */
	destroy_workqueue(ldev->wq);
	blk_mq_free_tag_set(&ldev->tag_set);
	ida_free(&loop_dev_minor_ida, ldev->minor_id);
	if (ldev->ops)
		ldev->ops->released(ldev);
	mutex_destroy(&ldev->lock);
	/*
	 * The unload waiter must not run before this function is done with
	 * module text: the count drops in an RCU callback, after a grace
	 * period, and loop_dev_exit() waits for the callback to return.
	 */
	call_rcu(&ldev->free_rcu, loop_dev_free_rcu);
}

COMPAT_FREE_DISK(loop_dev_free_disk)

static const struct block_device_operations loop_dev_fops = {
	.owner		= THIS_MODULE,
	.open		= compat_bdops_open(loop_dev_open),
	.release	= compat_bdops_release(loop_dev_release),
	.ioctl		= loop_dev_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= loop_dev_compat_ioctl,
#endif
	COMPAT_BDOPS_FREE_DISK(loop_dev_free_disk)
};

static void loop_dev_destroy_workfn(struct work_struct *work)
{
	loop_dev_destroy(container_of(work, struct loop_dev, destroy_work));
}

/*
 * The block layer adds and deletes partitions without asking the driver:
 * BLKPG and BLKRRPART from any opener (the host's node too), a rescan on
 * open. Each passes through the interfaces of the block class, at once and
 * still under the disk's open_mutex, so the owner hears of every partition
 * of ours there and defers its sync. block_class is not exported: the
 * interface is registered with the class of the first disk made.
 */
static DEFINE_MUTEX(loop_dev_intf_lock);
static bool loop_dev_intf_registered;

static int loop_dev_part_added(struct device *dev)
{
	struct gendisk *disk = compat_partition_disk(dev);

	/* A disk's private_data lives until its free_disk. */
	if (disk && disk->fops == &loop_dev_fops)
		loop_dev_partitions_changed(disk->private_data, false);
	return 0;
}

COMPAT_CLASS_INTF_ADD(loop_dev_part_added)

static void loop_dev_part_removed(struct device *dev)
{
	loop_dev_part_added(dev);
}

COMPAT_CLASS_INTF_REMOVE(loop_dev_part_removed)

static struct class_interface loop_dev_intf = {
	.add_dev	= compat_class_intf_add(loop_dev_part_added),
	.remove_dev	= compat_class_intf_remove(loop_dev_part_removed),
};

/* Called before the first add_disk(), which has no partition to miss. */
static void loop_dev_watch_partitions(struct gendisk *disk)
{
	mutex_lock(&loop_dev_intf_lock);
	if (!loop_dev_intf_registered) {
		loop_dev_intf.class = disk_to_dev(disk)->class;
		if (class_interface_register(&loop_dev_intf))
			pr_warn_once("partition nodes follow BLKPG through the host's nodes only when listed\n");
		else
			loop_dev_intf_registered = true;
	}
	mutex_unlock(&loop_dev_intf_lock);
}

static int loop_dev_init_tag_set(struct loop_dev *ldev)
{
	struct blk_mq_tag_set *set = &ldev->tag_set;

	set->ops = &loop_dev_mq_ops;
	set->nr_hw_queues = min_t(unsigned int, num_online_cpus(),
				  LOOP_DEV_MAX_HW_QUEUES);
	set->queue_depth = LOOP_DEV_QUEUE_DEPTH;
	set->numa_node = NUMA_NO_NODE;
	set->cmd_size = sizeof(struct loop_dev_cmd);
	/* BLOCKING: inline service may sleep in the page cache. */
	set->flags = BLK_MQ_F_BLOCKING | BLK_MQ_F_STACKING |
		     BLK_MQ_F_NO_SCHED_BY_DEFAULT;
	set->driver_data = ldev;
	return blk_mq_alloc_tag_set(set);
}

struct loop_dev *loop_dev_create(const struct loop_dev_config *cfg)
{
	struct loop_dev *ldev;
	struct gendisk *disk;
	int err = -ENOMEM, i;

	ldev = kzalloc(sizeof(*ldev), GFP_KERNEL_ACCOUNT);
	if (!ldev)
		return ERR_PTR(-ENOMEM);
	ldev->number = cfg->number;
	ldev->serial = atomic_long_inc_return(&loop_dev_last_serial);
	ldev->user_ns = cfg->user_ns;
	ldev->tenant = cfg->tenant;
	ldev->uid = cfg->uid;
	ldev->gid = cfg->gid;
	ldev->ops = cfg->ops;
	ldev->owner = cfg->owner;
	ldev->state = LOOP_DEV_UNBOUND;
	mutex_init(&ldev->lock);
	spin_lock_init(&ldev->file_lock);
	INIT_WORK(&ldev->destroy_work, loop_dev_destroy_workfn);
	for (i = 0; i < LOOP_DEV_MAX_HW_QUEUES; i++)
		loop_dev_init_queue(ldev, &ldev->queues[i]);

	ldev->wq = alloc_workqueue("%s", WQ_UNBOUND | WQ_FREEZABLE, 0,
				   cfg->disk_name);
	if (!ldev->wq)
		goto out_free;
	ldev->minor_id = ida_alloc_max(&loop_dev_minor_ida,
				       (MINORMASK + 1) / LOOP_DEV_MINORS - 1,
				       GFP_KERNEL);
	if (ldev->minor_id < 0) {
		err = ldev->minor_id == -ENOSPC ? -ENOSPC : -ENOMEM;
		goto out_wq;
	}
	err = loop_dev_init_tag_set(ldev);
	if (err)
		goto out_minor;
	disk = loop_dev_alloc_disk(&ldev->tag_set, ldev, LOOP_DEV_MAX_HW_SECTORS);
	if (IS_ERR(disk)) {
		err = PTR_ERR(disk);
		goto out_tags;
	}
	ldev->disk = disk;
	disk->major = loop_dev_major;
	disk->first_minor = ldev->minor_id * LOOP_DEV_MINORS;
	disk->minors = LOOP_DEV_MINORS;
	disk->fops = &loop_dev_fops;
	disk->private_data = ldev;
	disk->events = DISK_EVENT_MEDIA_CHANGE;
	disk->event_flags = DISK_EVENT_FLAG_UEVENT;
	compat_disk_suppress_part_scan(disk, true);
	compat_disk_allow_ext_devt(disk);
	/*
	 * A device whose backing file stops answering (a tenant's FUSE daemon
	 * that hangs) must not collect dirty pages up to the host-wide limit,
	 * where every writer on the machine is throttled: as FUSE does for
	 * its own, the device's page cache and that of filesystems mounted
	 * from it keep within their share of the dirty threshold, strictly.
	 * Host root may raise it in /sys/class/bdi/.
	 */
	compat_disk_bdi(disk)->capabilities |= BDI_CAP_STRICTLIMIT;
	bdi_set_max_ratio(compat_disk_bdi(disk), LOOP_DEV_MAX_DIRTY_RATIO);
	strscpy(disk->disk_name, cfg->disk_name, DISK_NAME_LEN);
	loop_dev_watch_partitions(disk);
	err = compat_disk_watch_free(disk, loop_dev_free_disk);
	if (err)
		goto out_disk;

	atomic_inc(&loop_dev_live);
	err = add_disk(disk);
	if (err)
		goto out_live;
	err = compat_disk_hold_whole(disk);
	if (err)
		goto out_added;
	/*
	 * The instance owner gets the disk's directory (and the loop/ group
	 * once bound), nothing else: not uevent, which would let it send
	 * synthetic events to the host's udev, nor power/ or the writable
	 * block attributes. util-linux only reads sysfs.
	 */
	if (!uid_eq(ldev->uid, GLOBAL_ROOT_UID) ||
	    !gid_eq(ldev->gid, GLOBAL_ROOT_GID)) {
		err = sysfs_group_change_owner(&disk_to_dev(disk)->kobj,
					       &loop_dev_dir_group, ldev->uid,
					       ldev->gid);
		if (err)
			pr_warn("%s: cannot hand sysfs to the instance owner\n",
				disk->disk_name);
	}
	return ldev;

out_added:
	/* Added: loop_dev_free_disk() frees the rest, and tells no owner. */
	ldev->state = LOOP_DEV_DELETING;
	ldev->ops = NULL;
	del_gendisk(disk);
	put_disk(disk);
	return ERR_PTR(err);
out_live:
	atomic_dec(&loop_dev_live);
out_disk:
	put_disk(disk);
out_tags:
	blk_mq_free_tag_set(&ldev->tag_set);
out_minor:
	ida_free(&loop_dev_minor_ida, ldev->minor_id);
out_wq:
	destroy_workqueue(ldev->wq);
out_free:
	kfree(ldev);
	return ERR_PTR(err);
}

ALLOW_ERROR_INJECTION(loop_dev_create, ERRNO);

void *loop_dev_owner(struct loop_dev *ldev)
{
	return ldev->owner;
}

dev_t loop_dev_devt(struct loop_dev *ldev)
{
	return disk_devt(ldev->disk);
}

unsigned long loop_dev_serial(struct loop_dev *ldev)
{
	return ldev->serial;
}

bool loop_dev_file_is(struct file *file, unsigned long serial, int partno)
{
	struct block_device *bdev = I_BDEV(file->f_mapping->host);
	struct gendisk *disk = bdev->bd_disk;

	/* The open file holds the disk: private_data is valid. */
	if (disk->fops != &loop_dev_fops)
		return false;
	return ((struct loop_dev *)disk->private_data)->serial == serial &&
	       bdev_partno(bdev) == partno;
}

bool loop_dev_is_unbound(struct loop_dev *ldev)
{
	return READ_ONCE(ldev->state) == LOOP_DEV_UNBOUND;
}

int loop_dev_partitions(struct loop_dev *ldev, dev_t *devts, int max)
{
	struct gendisk *disk = ldev->disk;
	int last;

	if (loop_dev_lock_open_killable(disk))
		return -EINTR;
	last = compat_disk_partitions(disk, devts, max);
	loop_dev_unlock_open(disk);
	return last;
}

int loop_dev_partitions_nowait(struct loop_dev *ldev, dev_t *devts, int max)
{
	struct gendisk *disk = ldev->disk;
	int last;

	if (!loop_dev_trylock_open(disk))
		return -EAGAIN;
	last = compat_disk_partitions(disk, devts, max);
	loop_dev_unlock_open(disk);
	return last;
}

int loop_dev_claim_for_removal(struct loop_dev *ldev)
{
	int err;

	err = loop_dev_lock_open_killable(ldev->disk);
	if (err)
		return err;
	/*
	 * Under open_mutex, only a task in one of the device's ioctls can
	 * hold its lock, so the device is open and busy; and that task may
	 * hold the lock across a wait on the backing file (LOOP_CHANGE_FD
	 * freezing the queue), which must not keep open_mutex, and every
	 * opener of the disk behind it, waiting too.
	 */
	if (!mutex_trylock(&ldev->lock)) {
		err = -EBUSY;
		goto out;
	}
	if (ldev->state != LOOP_DEV_UNBOUND || disk_openers(ldev->disk) > 0)
		err = -EBUSY;
	else
		WRITE_ONCE(ldev->state, LOOP_DEV_DELETING);
	mutex_unlock(&ldev->lock);
out:
	loop_dev_unlock_open(ldev->disk);
	return err;
}

ALLOW_ERROR_INJECTION(loop_dev_claim_for_removal, ERRNO);

/* The device is LOOP_DEV_DELETING. The rest happens in loop_dev_free_disk(). */
void loop_dev_destroy(struct loop_dev *ldev)
{
	compat_disk_drop_whole(ldev->disk);
	del_gendisk(ldev->disk);
	put_disk(ldev->disk);
}

/*
 * Delete a device its owner never handed out, now, even if the host's udev
 * has it open (del_gendisk() copes with openers). One that a host opener
 * bound meanwhile is left to its last close, as an orphan.
 */
void loop_dev_discard(struct loop_dev *ldev)
{
	bool now;

	mutex_lock(&ldev->lock);
	now = ldev->state == LOOP_DEV_UNBOUND;
	if (now)
		WRITE_ONCE(ldev->state, LOOP_DEV_DELETING);
	mutex_unlock(&ldev->lock);
	if (now)
		loop_dev_destroy(ldev);
	else
		loop_dev_orphan(ldev);
}

void loop_dev_orphan(struct loop_dev *ldev)
{
	bool unbind = false, destroy = false;

	loop_dev_lock_open(ldev->disk);
	mutex_lock(&ldev->lock);
	WRITE_ONCE(ldev->orphan, true);
	if (!disk_openers(ldev->disk)) {
		unbind = ldev->state == LOOP_DEV_BOUND;
		destroy = true;
		WRITE_ONCE(ldev->state,
			   unbind ? LOOP_DEV_RUNDOWN : LOOP_DEV_DELETING);
	}
	mutex_unlock(&ldev->lock);
	if (unbind)
		loop_dev_unbind_open_locked(ldev);
	loop_dev_unlock_open(ldev->disk);
	if (destroy)
		loop_dev_destroy(ldev);
}

int loop_dev_init(void)
{
	loop_dev_destroy_wq = alloc_workqueue("loopfs",
					      WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!loop_dev_destroy_wq)
		return -ENOMEM;
	loop_dev_major = register_blkdev(0, "loopfs");
	if (loop_dev_major < 0) {
		destroy_workqueue(loop_dev_destroy_wq);
		return loop_dev_major;
	}
	return 0;
}

void loop_dev_exit(void)
{
	/* Devices orphaned at their last close may still be on their way. */
	flush_workqueue(loop_dev_destroy_wq);
	wait_event(loop_dev_gone_wait, !atomic_read(&loop_dev_live));
	/* The last loop_dev_free_rcu() may still return from wake_up(). */
	rcu_barrier();
	if (loop_dev_intf_registered)
		class_interface_unregister(&loop_dev_intf);
	unregister_blkdev(loop_dev_major, "loopfs");
	destroy_workqueue(loop_dev_destroy_wq);
	ida_destroy(&loop_dev_minor_ida);
}
