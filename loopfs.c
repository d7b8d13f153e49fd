// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs - private loop device instances.
 *
 * Every mount of filesystem type "loop" is an instance: a root directory
 * holding loop-control and the instance's own loop<N> block nodes, numbered
 * from 0. Devices are charged per user, hierarchically across user
 * namespaces, and go away with the instance. The block devices themselves
 * are served by loop_shim.c.
 *
 * Every instance also has views of /sys/block and /sys/dev/block for its
 * own devices under their instance names, for a container to bind over
 * its own (loopfs_views.c), and announces its devices in the mounter's
 * network namespace where the kernel does not (loopfs_uevent.c).
 *
 * The steps whose failure has an unwind of its own are marked
 * ALLOW_ERROR_INJECTION (and kept out of line), so that a kernel with
 * fail_function can fail each of them in turn and check the unwind.
 *
 * Lock order: root directory inode lock -> instance->lock -> view
 * directory inode lock (a child of the root's) -> a disk's open_mutex ->
 * (the block driver's other locks); loopfs_limits_lock is innermost.
 *
 * A disk's open_mutex comes after every lock of loopfs: unlink of loop<N>
 * and LOOP_CTL_REMOVE take it (loop_dev_claim_for_removal(), del_gendisk())
 * under the root directory's inode lock and instance->lock, and a node sync
 * takes it to read the partition table under both. The block layer holds it
 * while partitions come and go (BLKPG, BLKRRPART, a scan, the last close of
 * an autoclear device, del_gendisk()), so nothing that learns of a change
 * under it may take a lock of loopfs there: it queues sync_work. The
 * partition nodes are made and removed before the syscall returns by the
 * instance node's own ioctl and release, after the block layer has let go
 * of open_mutex (loopfs_blk_ioctl(), loopfs_blk_release()), and by the
 * driver's loop ioctls, which call back without it.
 */
#define pr_fmt(fmt) "loopfs: " fmt

#include <linux/module.h>
#include <linux/blkpg.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/ctype.h>
#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/fsnotify.h>
#include <linux/idr.h>
#include <linux/loop.h>
#include <linux/namei.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <net/net_namespace.h>

#include "compat.h"
#include "loopfs_limits.h"
#include "loop_shim.h"
#include "loopfs.h"

/* How long the partition node worker waits before it tries busy locks again */
#define LOOPFS_SYNC_RETRY	(HZ / 10)

static DEFINE_IDA(loopfs_instance_ida);
static dev_t loopfs_ctl_devt;
static struct workqueue_struct *loopfs_wq;

/* ---- instances ---- */

static void loopfs_instance_free(struct kref *ref)
{
	struct loopfs_instance *inst =
		container_of(ref, struct loopfs_instance, ref);

	WARN_ON_ONCE(!xa_empty(&inst->devices));
	WARN_ON_ONCE(!list_empty(&inst->uevents));
	xa_destroy(&inst->devices);
	if (inst->net)
		put_net(inst->net);
	ida_free(&loopfs_instance_ida, inst->id);
	put_user_ns(inst->user_ns);
	cgroup_put(inst->tenant);
	mutex_destroy(&inst->lock);
	kfree(inst);
}

void loopfs_instance_put(struct loopfs_instance *inst)
{
	kref_put(&inst->ref, loopfs_instance_free);
}

/*
 * A tenant's task may hold the instance's locks, and a disk's open_mutex,
 * across a wait on its own backing file: LOOP_CHANGE_FD freezing a queue
 * whose reads a stopped FUSE daemon holds, a partition scan reading it.
 * Whatever else takes them (a listing by the host's supervisor, a kernel
 * worker) waits killably, or not at all.
 */
enum loopfs_wait {
	LOOPFS_WAIT_KILLABLE,	/* give up on a fatal signal */
	LOOPFS_WAIT_NONE,	/* only take what is free */
};

static bool loopfs_lock(struct mutex *lock, enum loopfs_wait wait)
{
	if (wait == LOOPFS_WAIT_NONE)
		return mutex_trylock(lock);
	return !mutex_lock_killable(lock);
}

/*
 * An active reference on the instance's superblock: NULL once it is gone,
 * ERR_PTR(-EAGAIN) if the instance's lock was not had.
 */
static struct super_block *loopfs_grab_sb(struct loopfs_instance *inst,
					  enum loopfs_wait wait)
{
	struct super_block *sb;

	if (!loopfs_lock(&inst->lock, wait))
		return ERR_PTR(-EAGAIN);
	sb = inst->sb;
	if (sb && !atomic_inc_not_zero(&sb->s_active))
		sb = NULL;
	mutex_unlock(&inst->lock);
	return sb;
}

/* ---- nodes ---- */

/*
 * Nodes and devices change together, under the root directory's inode lock
 * (the nodes) and then instance->lock (the devices).
 */
static void loopfs_assert_locked(struct super_block *sb)
{
	struct loopfs_instance *inst = loopfs_sb(sb);

	lockdep_assert_held(&d_inode(sb->s_root)->i_rwsem);
	lockdep_assert_held(&inst->lock);
}

/*
 * A block node names one partition of one device, never just a dev_t: the
 * dev_t is free again once the device or partition goes (extended minors of
 * partitions 16 and up even while the device lives), and a node kept by a
 * bind mount or an O_PATH descriptor would then open whatever disk reuses
 * it, maybe another tenant's. Block nodes carry the device's serial and the
 * partition number, and their open checks that the block device it got is
 * that one (ENXIO otherwise). The rest is the block layer's own file
 * operations, copied at module load.
 */
static const struct file_operations *loopfs_def_blk_fops;
static struct file_operations loopfs_blk_fops;

/* A block node's identity, kept in i_private: serial above, partno below. */
#define LOOPFS_IDENT_PART_BITS	8

static unsigned long loopfs_node_ident(struct loop_dev *ldev, int partno)
{
	BUILD_BUG_ON(LOOP_DEV_MAX_PARTS > 1 << LOOPFS_IDENT_PART_BITS);
	return loop_dev_serial(ldev) << LOOPFS_IDENT_PART_BITS | partno;
}

static unsigned long loopfs_ident_serial(const struct inode *node)
{
	return (unsigned long)node->i_private >> LOOPFS_IDENT_PART_BITS;
}

static int loopfs_ident_partno(const struct inode *node)
{
	unsigned long ident = (unsigned long)node->i_private;

	return ident & ((1UL << LOOPFS_IDENT_PART_BITS) - 1);
}

static int loopfs_blk_open(struct inode *inode, struct file *file)
{
	int err;

	err = loopfs_def_blk_fops->open(inode, file);
	if (err)
		return err;
	if (loop_dev_file_is(file, loopfs_ident_serial(inode),
			     loopfs_ident_partno(inode)))
		return 0;
	loopfs_def_blk_fops->release(inode, file);
	return -ENXIO;
}

static long loopfs_blk_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg);
#ifdef CONFIG_COMPAT
static long loopfs_blk_compat_ioctl(struct file *file, unsigned int cmd,
				    unsigned long arg);
#endif
static int loopfs_blk_release(struct inode *inode, struct file *file);

static int loopfs_blk_fops_init(void)
{
	struct inode *probe = kzalloc(sizeof(*probe), GFP_KERNEL);

	if (!probe)
		return -ENOMEM;
	/* Sets only i_mode, i_rdev and i_fop. */
	init_special_inode(probe, S_IFBLK, 0);
	loopfs_def_blk_fops = probe->i_fop;
	kfree(probe);
	loopfs_blk_fops = *loopfs_def_blk_fops;
	loopfs_blk_fops.owner = THIS_MODULE;
	loopfs_blk_fops.open = loopfs_blk_open;
	loopfs_blk_fops.release = loopfs_blk_release;
	loopfs_blk_fops.unlocked_ioctl = loopfs_blk_ioctl;
#ifdef CONFIG_COMPAT
	loopfs_blk_fops.compat_ioctl = loopfs_blk_compat_ioctl;
#endif
	return 0;
}

/* An inode of the instance, owned by the instance's root. */
struct inode *loopfs_new_inode(struct super_block *sb, umode_t mode)
{
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct inode *inode = new_inode(sb);

	if (!inode)
		return NULL;
	inode->i_ino = get_next_ino();
	inode->i_mode = mode;
	inode->i_uid = inst->root_uid;
	inode->i_gid = inst->root_gid;
	simple_inode_init_ts(inode);
	return inode;
}

/*
 * Give @inode the name @name in @dir, whose inode lock the caller holds,
 * and tell @dir's watchers, as a creation in userspace would. Returns the
 * new entry, valid as long as it stays in @dir (the caller holds no
 * reference), or an ERR_PTR() after dropping the inode.
 */
struct dentry *loopfs_add_entry(struct dentry *dir, const char *name,
				struct inode *inode)
{
	struct dentry *dentry;

	lockdep_assert_held(&d_inode(dir)->i_rwsem);
	dentry = lookup_noperm(&QSTR(name), dir);
	if (IS_ERR(dentry)) {
		iput(inode);
		return dentry;
	}
	if (d_really_is_positive(dentry)) {
		dput(dentry);
		iput(inode);
		return ERR_PTR(-EEXIST);
	}
	/*
	 * The entry stays in the dcache until simple_unlink() or the
	 * superblock's end (kill_anon_super()) makes it discardable; the
	 * lookup's own reference goes now.
	 */
	d_make_persistent(dentry, inode);
	if (S_ISDIR(inode->i_mode))
		fsnotify_mkdir(d_inode(dir), dentry);
	else
		fsnotify_create(d_inode(dir), dentry);
	dput(dentry);
	return dentry;
}

/*
 * Remove @name from @dir, whose inode lock the caller holds, and tell
 * @dir's watchers. simple_unlink() drops the entry's persistence; the
 * lookup's reference keeps it positive until d_delete(). A directory's
 * entries are its own to drop (the views make none persistent). Returns
 * whether @name was there.
 */
bool loopfs_remove_entry(struct dentry *dir, const char *name)
{
	struct dentry *dentry;
	bool found;

	lockdep_assert_held(&d_inode(dir)->i_rwsem);
	dentry = lookup_noperm(&QSTR(name), dir);
	if (IS_ERR(dentry))
		return false;
	found = d_really_is_positive(dentry);
	if (found) {
		simple_unlink(d_inode(dir), dentry);
		if (d_is_dir(dentry)) {
			clear_nlink(d_inode(dentry));
			fsnotify_rmdir(d_inode(dir), dentry);
		} else {
			fsnotify_unlink(d_inode(dir), dentry);
		}
		d_delete(dentry);
	}
	dput(dentry);
	return found;
}

/* @ident: what a block node names (loopfs_node_ident()). */
static noinline int loopfs_add_node(struct super_block *sb,
				    const char *name, umode_t mode, dev_t devt,
				    unsigned long ident,
				    const struct file_operations *fops)
{
	struct inode *inode;

	inode = loopfs_new_inode(sb, mode);
	if (!inode)
		return -ENOMEM;
	init_special_inode(inode, mode, devt);
	if (S_ISBLK(mode)) {
		inode->i_fop = &loopfs_blk_fops;
		inode->i_private = (void *)ident;
	}
	if (fops)
		inode->i_fop = fops;
	return PTR_ERR_OR_ZERO(loopfs_add_entry(sb->s_root, name, inode));
}

ALLOW_ERROR_INJECTION(loopfs_add_node, ERRNO);

static void loopfs_remove_node(struct super_block *sb, const char *name)
{
	loopfs_remove_entry(sb->s_root, name);
}

/* The device number of block node @name, 0 if there is none. */
static dev_t loopfs_node_devt(struct super_block *sb, const char *name,
			      unsigned long *ident)
{
	struct dentry *dentry;
	dev_t devt = 0;

	dentry = lookup_noperm(&QSTR(name), sb->s_root);
	if (IS_ERR(dentry))
		return 0;
	if (d_really_is_positive(dentry)) {
		devt = d_inode(dentry)->i_rdev;
		*ident = (unsigned long)d_inode(dentry)->i_private;
	}
	dput(dentry);
	return devt;
}

/* Remove partition node @name and announce it. */
static void loopfs_remove_part_node(struct super_block *sb,
				    struct loopfs_device *dev, int partno)
{
	unsigned long ident;
	char name[LOOPFS_NODE_NAME_SIZE];
	dev_t devt;

	snprintf(name, sizeof(name), LOOPFS_PART_NODE_FMT, dev->index, partno);
	devt = loopfs_node_devt(sb, name, &ident);
	if (!devt)
		return;
	loopfs_remove_node(sb, name);
	loopfs_uevent(dev->instance, "remove", dev->index, partno, devt);
}

/*
 * Make loop<N>p<M> nodes match the device's partitions. Returns false if
 * the partitions could not be read, the nodes left as they were.
 */
static bool loopfs_sync_partitions(struct super_block *sb,
				   struct loopfs_device *dev,
				   enum loopfs_wait wait)
{
	unsigned long ident, old;
	char name[LOOPFS_NODE_NAME_SIZE];
	dev_t *devts;
	int last, p;

	loopfs_assert_locked(sb);
	devts = kcalloc(LOOP_DEV_MAX_PARTS, sizeof(*devts), GFP_KERNEL);
	if (!devts)
		return false;
	if (wait == LOOPFS_WAIT_NONE)
		last = loop_dev_partitions_nowait(dev->ldev, devts,
						  LOOP_DEV_MAX_PARTS);
	else
		last = loop_dev_partitions(dev->ldev, devts,
					   LOOP_DEV_MAX_PARTS);
	if (last < 0)
		goto out;
	for (p = 1; p <= max(last, dev->nr_part_nodes); p++) {
		snprintf(name, sizeof(name), LOOPFS_PART_NODE_FMT,
			 dev->index, p);
		ident = loopfs_node_ident(dev->ldev, p);
		if (devts[p] && loopfs_node_devt(sb, name, &old) == devts[p] &&
		    old == ident)
			continue;
		loopfs_remove_part_node(sb, dev, p);
		if (devts[p] && !loopfs_add_node(sb, name, S_IFBLK | 0600,
						 devts[p], ident, NULL))
			loopfs_uevent(dev->instance, "add", dev->index, p,
				      devts[p]);
	}
	dev->nr_part_nodes = last;
out:
	kfree(devts);
	return last >= 0;
}

/* The root directory's inode lock, then the instance's. */
static bool loopfs_lock_sb(struct super_block *sb, enum loopfs_wait wait)
{
	struct inode *dir = d_inode(sb->s_root);

	if (wait == LOOPFS_WAIT_NONE) {
		if (!inode_trylock(dir))
			return false;
	} else if (inode_lock_killable(dir)) {
		return false;
	}
	if (loopfs_lock(&loopfs_sb(sb)->lock, wait))
		return true;
	inode_unlock(dir);
	return false;
}

static void loopfs_unlock_sb(struct super_block *sb)
{
	mutex_unlock(&loopfs_sb(sb)->lock);
	inode_unlock(d_inode(sb->s_root));
}

/*
 * Make every device's partition nodes match; the caller keeps @sb alive.
 * Returns false if some were left as they were, their locks not had.
 */
static bool loopfs_sync_nodes(struct super_block *sb, enum loopfs_wait wait)
{
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct loopfs_device *dev;
	unsigned long index;
	bool synced = true;

	if (!loopfs_lock_sb(sb, wait))
		return false;
	xa_for_each(&inst->devices, index, dev)
		synced &= loopfs_sync_partitions(sb, dev, wait);
	loopfs_unlock_sb(sb);
	return synced;
}

/* loopfs_sync_nodes() while the superblock lives; true once it is gone. */
static bool loopfs_sync_instance(struct loopfs_instance *inst,
				 enum loopfs_wait wait)
{
	struct super_block *sb = loopfs_grab_sb(inst, wait);
	bool synced;

	if (IS_ERR(sb))
		return false;
	if (!sb)
		return true;
	synced = loopfs_sync_nodes(sb, wait);
	deactivate_super(sb);
	return synced;
}

/*
 * A kernel worker cannot be killed: it takes the locks only when they are
 * free, and looks again a little later while somebody holds them, until it
 * has synced or the superblock is gone. It sleeps as an idle task, so a
 * tenant that holds the locks for good costs a worker, never a hung task.
 */
static void loopfs_sync_workfn(struct work_struct *work)
{
	struct loopfs_instance *inst =
		container_of(work, struct loopfs_instance, sync_work);

	while (!loopfs_sync_instance(inst, LOOPFS_WAIT_NONE))
		schedule_timeout_idle(LOOPFS_SYNC_RETRY);
	loopfs_instance_put(inst);
}

/*
 * Make the partition nodes of the device that block node @node names match
 * its partitions. The caller has a file of @node open, which keeps the
 * superblock alive, and holds no lock. Only a dying task gives up waiting
 * for the locks; the change it saw has queued sync_work as well.
 */
static void loopfs_sync_node_device(struct inode *node)
{
	unsigned long serial = loopfs_ident_serial(node);
	struct super_block *sb = node->i_sb;
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct loopfs_device *dev;
	unsigned long index;

	if (!loopfs_lock_sb(sb, LOOPFS_WAIT_KILLABLE))
		return;
	xa_for_each(&inst->devices, index, dev) {
		if (loop_dev_serial(dev->ldev) == serial) {
			loopfs_sync_partitions(sb, dev, LOOPFS_WAIT_KILLABLE);
			break;
		}
	}
	loopfs_unlock_sb(sb);
}

/*
 * BLKPG and BLKRRPART change partitions under the disk's open_mutex, where
 * the driver never hears of them; the nodes follow once the block layer
 * is done, before the caller sees the result.
 */
static long loopfs_blk_ioctl_done(struct file *file, unsigned int cmd,
				  long ret)
{
	if (cmd == BLKPG || cmd == BLKRRPART)
		loopfs_sync_node_device(file_inode(file));
	return ret;
}

static long loopfs_blk_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	return loopfs_blk_ioctl_done(file, cmd,
			loopfs_def_blk_fops->unlocked_ioctl(file, cmd, arg));
}

#ifdef CONFIG_COMPAT
static long loopfs_blk_compat_ioctl(struct file *file, unsigned int cmd,
				    unsigned long arg)
{
	return loopfs_blk_ioctl_done(file, cmd,
			loopfs_def_blk_fops->compat_ioctl(file, cmd, arg));
}
#endif

/*
 * The last close of an autoclear device drops its partitions under the
 * disk's open_mutex and can only queue sync_work there (it counts
 * part_events first): if anything was dropped meanwhile, the device's
 * nodes go here, before close() returns.
 */
static int loopfs_blk_release(struct inode *inode, struct file *file)
{
	struct loopfs_instance *inst = loopfs_sb(inode->i_sb);
	int events = atomic_read(&inst->part_events);
	int ret = loopfs_def_blk_fops->release(inode, file);

	if (atomic_read(&inst->part_events) != events)
		loopfs_sync_node_device(inode);
	return ret;
}

static void loopfs_partitions_changed(struct loop_dev *ldev, bool can_block)
{
	struct loopfs_device *dev = loop_dev_owner(ldev);
	struct loopfs_instance *inst = dev->instance;

	atomic_inc(&inst->part_events);
	if (can_block && loopfs_sync_instance(inst, LOOPFS_WAIT_KILLABLE))
		return;
	kref_get(&inst->ref);
	if (!queue_work(loopfs_wq, &inst->sync_work))
		loopfs_instance_put(inst);
}

static void loopfs_device_released(struct loop_dev *ldev)
{
	struct loopfs_device *dev = loop_dev_owner(ldev);
	struct loopfs_instance *inst = dev->instance;

	loopfs_uncharge(inst->user_ns, inst->root_uid);
	kfree(dev);
	loopfs_instance_put(inst);
}

/*
 * A file opened through an instance's mount pins that mount. A device
 * backed by a node of any instance could keep that instance, and through
 * it itself, alive for ever (a cycle no umount breaks), so such files are
 * refused; the host's node /dev/loopfs<ID>-<N> pins no instance.
 */
static int loopfs_check_backing(struct loop_dev *ldev, struct file *file)
{
	if (file->f_path.mnt->mnt_sb->s_magic == LOOPFS_SUPER_MAGIC)
		return -EINVAL;
	return 0;
}

/*
 * Scanning devices and dirty shares count against the host user of a
 * container's instance; the host's own instances have as many as they like.
 */
static int loopfs_charge_dev(struct loop_dev *ldev, enum loop_dev_charge what)
{
	struct loopfs_device *dev = loop_dev_owner(ldev);
	struct loopfs_instance *inst = dev->instance;

	if (inst->user_ns == &init_user_ns)
		return 0;
	return loopfs_charge_host(inst->user_ns, inst->root_uid, what);
}

static void loopfs_uncharge_dev(struct loop_dev *ldev,
				enum loop_dev_charge what)
{
	struct loopfs_device *dev = loop_dev_owner(ldev);
	struct loopfs_instance *inst = dev->instance;

	if (inst->user_ns != &init_user_ns)
		loopfs_uncharge_host(inst->user_ns, inst->root_uid, what);
}

static const struct loop_dev_ops loopfs_device_ops = {
	.partitions_changed	= loopfs_partitions_changed,
	.released		= loopfs_device_released,
	.check_backing		= loopfs_check_backing,
	.charge			= loopfs_charge_dev,
	.uncharge		= loopfs_uncharge_dev,
};

/* ---- devices ---- */

/* The node loop<N> and the view's loop<N>: both, or neither. */
static int loopfs_add_names(struct super_block *sb, struct loopfs_device *dev)
{
	char name[LOOPFS_NODE_NAME_SIZE];
	int err;

	snprintf(name, sizeof(name), LOOPFS_NODE_FMT, dev->index);
	err = loopfs_add_node(sb, name, S_IFBLK | 0600,
			      loop_dev_devt(dev->ldev),
			      loopfs_node_ident(dev->ldev, 0), NULL);
	if (err)
		return err;
	err = loopfs_add_view_dir(dev->instance, dev->index);
	if (err)
		loopfs_remove_node(sb, name);
	return err;
}

/* Create device @index (-1: the lowest free one). Returns the index. */
static int loopfs_add_device(struct super_block *sb, int index)
{
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct loop_dev_config cfg = { };
	struct loopfs_device *dev;
	char name[DISK_NAME_LEN];
	u32 id;
	int err;

	loopfs_assert_locked(sb);
	if (index >= (int)LOOPFS_MAX_INDEX)
		return -EINVAL;
	if (index >= 0 && xa_load(&inst->devices, index))
		return -EEXIST;
	if (inst->nr_devices >= inst->max)
		return -ENOSPC;
	err = loopfs_charge(inst->user_ns, inst->root_uid);
	if (err)
		return err;
	err = -ENOMEM;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL_ACCOUNT);
	if (!dev)
		goto out_uncharge;
	if (index >= 0) {
		err = xa_insert(&inst->devices, index, dev, GFP_KERNEL);
		/* An index in use: what LOOP_CTL_ADD says for it. */
		if (err == -EBUSY)
			err = -EEXIST;
	} else {
		err = xa_alloc(&inst->devices, &id, dev,
			       XA_LIMIT(0, LOOPFS_MAX_INDEX - 1), GFP_KERNEL);
	}
	if (err)
		goto out_free;
	if (index < 0)
		index = id;
	dev->index = index;
	dev->instance = inst;

	snprintf(name, sizeof(name), LOOPFS_DISK_FMT, inst->id, index);
	cfg.disk_name = name;
	cfg.number = index;
	cfg.user_ns = inst->user_ns;
	cfg.tenant = inst->tenant;
	cfg.uid = inst->root_uid;
	cfg.gid = inst->root_gid;
	cfg.ops = &loopfs_device_ops;
	cfg.owner = dev;
	dev->ldev = loop_dev_create(&cfg);
	if (IS_ERR(dev->ldev)) {
		err = PTR_ERR(dev->ldev);
		goto out_erase;
	}
	/* From here on the device's release undoes charge and reference. */
	kref_get(&inst->ref);
	inst->nr_devices++;

	err = loopfs_add_names(sb, dev);
	if (err) {
		/*
		 * The disk is already visible on the host, where udev may
		 * have it open. It goes now all the same: the index is free
		 * again, and so must be the disk's name.
		 */
		xa_erase(&inst->devices, index);
		inst->nr_devices--;
		loop_dev_discard(dev->ldev);
		return err;
	}
	loopfs_uevent(inst, "add", index, 0, loop_dev_devt(dev->ldev));
	return index;

out_erase:
	xa_erase(&inst->devices, index);
out_free:
	kfree(dev);
out_uncharge:
	loopfs_uncharge(inst->user_ns, inst->root_uid);
	return err;
}

/*
 * Remove device @index if unbound and unopened. @node: also remove loop<N>
 * (an unlink removes it itself): callers say which with
 * loopfs_remove_device() or loopfs_remove_unlinked_device().
 */
static int __loopfs_remove_device(struct super_block *sb, int index, bool node)
{
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct loopfs_device *dev;
	char name[LOOPFS_NODE_NAME_SIZE];
	int err, p;

	loopfs_assert_locked(sb);
	if (index < 0)
		return -EINVAL;
	dev = xa_load(&inst->devices, index);
	if (!dev)
		return -ENODEV;
	err = loop_dev_claim_for_removal(dev->ldev);
	if (err)
		return err;
	xa_erase(&inst->devices, index);
	inst->nr_devices--;
	for (p = 1; p <= dev->nr_part_nodes; p++)
		loopfs_remove_part_node(sb, dev, p);
	if (node) {
		snprintf(name, sizeof(name), LOOPFS_NODE_FMT, index);
		loopfs_remove_node(sb, name);
	}
	loopfs_remove_view_dir(inst, index);
	loopfs_uevent(inst, "remove", index, 0, loop_dev_devt(dev->ldev));
	/* Under the lock, so the index cannot be reused before the name. */
	loop_dev_destroy(dev->ldev);
	return 0;
}

static int loopfs_remove_device(struct super_block *sb, int index)
{
	return __loopfs_remove_device(sb, index, true);
}

/* loopfs_remove_device() for an unlink of loop<N>, which removes the node. */
static int loopfs_remove_unlinked_device(struct super_block *sb, int index)
{
	return __loopfs_remove_device(sb, index, false);
}

static int loopfs_get_free(struct super_block *sb)
{
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct loopfs_device *dev;
	unsigned long index;

	xa_for_each(&inst->devices, index, dev)
		if (loop_dev_is_unbound(dev->ldev))
			return index;
	return loopfs_add_device(sb, -1);
}

static long loopfs_ctl_ioctl(struct file *file, unsigned int cmd,
			     unsigned long parm)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct inode *dir = d_inode(sb->s_root);
	long ret;

	switch (cmd) {
	case LOOP_CTL_ADD:
	case LOOP_CTL_REMOVE:
	case LOOP_CTL_GET_FREE:
		break;
	default:
		/* What the in-tree loop-control answers. */
		return -ENOSYS;
	}
	/*
	 * A device's lock may be held for as long as its backing file takes
	 * to answer: wait killably.
	 */
	if (inode_lock_killable(dir))
		return -EINTR;
	if (mutex_lock_killable(&inst->lock)) {
		inode_unlock(dir);
		return -EINTR;
	}
	if (cmd == LOOP_CTL_ADD)
		ret = loopfs_add_device(sb, (int)parm);
	else if (cmd == LOOP_CTL_REMOVE)
		ret = loopfs_remove_device(sb, (int)parm);
	else
		ret = loopfs_get_free(sb);
	mutex_unlock(&inst->lock);
	inode_unlock(dir);
	return ret;
}

static const struct file_operations loopfs_ctl_fops = {
	.owner		= THIS_MODULE,
	.open		= nonseekable_open,
	.unlocked_ioctl	= loopfs_ctl_ioctl,
	.compat_ioctl	= loopfs_ctl_ioctl,
	.llseek		= noop_llseek,
};

/* ---- the root directory ---- */

/* loop<N> (no partition suffix): returns N, else -1. */
static int loopfs_parse_index(const struct dentry *dentry)
{
	const char *name = dentry->d_name.name;
	unsigned int index;

	if (strncmp(name, "loop", 4) || !isdigit(name[4]))
		return -1;
	if (kstrtouint(name + 4, 10, &index) || index >= LOOPFS_MAX_INDEX)
		return -1;
	return index;
}

/*
 * loop-control and partition nodes cannot be unlinked; loop<N> can when
 * unbound and unopened, and takes its device with it. Renames are refused
 * (no ->rename), so a node's name always tells its index. The view
 * directory cannot go either (no ->rmdir: EPERM).
 */
static int loopfs_unlink(struct inode *dir, struct dentry *dentry)
{
	struct super_block *sb = dir->i_sb;
	struct loopfs_instance *inst = loopfs_sb(sb);
	int index = loopfs_parse_index(dentry);
	int err;

	if (index < 0 || !S_ISBLK(d_inode(dentry)->i_mode))
		return -EPERM;
	if (mutex_lock_killable(&inst->lock))
		return -EINTR;
	err = loopfs_remove_unlinked_device(sb, index);
	mutex_unlock(&inst->lock);
	if (err)
		return err;
	return simple_unlink(dir, dentry);
}

/*
 * Only loopfs makes nodes here, and in the views; the VFS says EACCES
 * without ->create.
 */
int loopfs_create(struct mnt_idmap *idmap, struct inode *dir,
		  struct dentry *dentry, umode_t mode, bool excl)
{
	return -EPERM;
}

COMPAT_IOP_CREATE(loopfs_create)

/*
 * Partitions added or dropped where neither the driver nor a node of the
 * instance saw it (BLKPG or BLKRRPART through the host's node, the last
 * close of a host opener) get their nodes from sync_work, and at the
 * latest when somebody lists the directory while nobody holds the locks.
 * A listing never waits for them: the host's supervisor lists the
 * instance, and a tenant may hold them for good.
 */
static int loopfs_dir_open(struct inode *inode, struct file *file)
{
	loopfs_sync_nodes(inode->i_sb, LOOPFS_WAIT_NONE);
	return dcache_dir_open(inode, file);
}

static const struct file_operations loopfs_dir_fops = {
	.open		= loopfs_dir_open,
	.release	= dcache_dir_close,
	.llseek		= dcache_dir_lseek,
	.read		= generic_read_dir,
	.iterate_shared	= dcache_readdir,
	.fsync		= noop_fsync,
};

static const struct inode_operations loopfs_dir_iops = {
	.lookup	= simple_lookup,
	.create	= compat_iop_create(loopfs_create),
	.unlink	= loopfs_unlink,
};

/* ---- superblock ---- */

/*
 * overlayfs keeps a private clone of each layer's mount for as long as the
 * overlay lives. With an instance as a layer, a device backed by a file on
 * that overlay would keep its own instance alive after every mount of it
 * is gone: a cycle no umount breaks. overlayfs refuses layers whose
 * dentries compare names themselves, so loopfs names compare here, byte
 * for byte as they would otherwise, and no instance can be a layer.
 */
static int loopfs_d_compare(const struct dentry *dentry, unsigned int len,
			    const char *str, const struct qstr *name)
{
	return len != name->len || memcmp(str, name->name, len);
}

static const struct dentry_operations loopfs_dentry_ops = {
	.d_compare	= loopfs_d_compare,
	.d_delete	= always_delete_dentry,
};

static int loopfs_show_options(struct seq_file *seq, struct dentry *root)
{
	struct loopfs_instance *inst = loopfs_sb(root->d_sb);

	if (inst->max != LOOPFS_MAX_INDEX)
		seq_printf(seq, ",max=%u", inst->max);
	return 0;
}

/* The view's symlinks own their targets. */
static void loopfs_free_inode(struct inode *inode)
{
	if (S_ISLNK(inode->i_mode))
		kfree(inode->i_link);
	free_inode_nonrcu(inode);
}

static const struct super_operations loopfs_super_ops = {
	.free_inode	= loopfs_free_inode,
	.statfs		= simple_statfs,
	.drop_inode	= inode_just_drop,
	.show_options	= loopfs_show_options,
};

struct loopfs_fs_context {
	unsigned int max;
	bool max_set;
};

enum { LOOPFS_OPT_MAX };

static const struct fs_parameter_spec loopfs_fs_parameters[] = {
	fsparam_u32("max", LOOPFS_OPT_MAX),
	{}
};

static int loopfs_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct loopfs_fs_context *ctx = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, loopfs_fs_parameters, param, &result);
	if (opt < 0)
		return opt;
	/* An instance that may hold no device only makes losetup -f fail. */
	if (!result.uint_32)
		return invalfc(fc, "max must be at least 1");
	if (result.uint_32 > LOOPFS_MAX_INDEX)
		return invalfc(fc, "max must be at most %u", LOOPFS_MAX_INDEX);
	ctx->max = result.uint_32;
	ctx->max_set = true;
	return 0;
}

static struct loopfs_instance *loopfs_instance_new(struct super_block *sb,
						   unsigned int max)
{
	struct user_namespace *ns = sb->s_user_ns;
	struct loopfs_instance *inst;

	inst = kzalloc(sizeof(*inst), GFP_KERNEL);
	if (!inst)
		return NULL;
	inst->id = ida_alloc(&loopfs_instance_ida, GFP_KERNEL);
	if (inst->id < 0) {
		kfree(inst);
		return NULL;
	}
	kref_init(&inst->ref);
	mutex_init(&inst->lock);
	xa_init_flags(&inst->devices, XA_FLAGS_ALLOC);
	INIT_WORK(&inst->sync_work, loopfs_sync_workfn);
	inst->max = max;
	inst->mount_max = max;
	inst->sb = sb;
	inst->user_ns = get_user_ns(ns);
	/*
	 * The instance is made for the mounter's cgroup. A hook that makes
	 * it for a container runs in the container's cgroup (as OCI
	 * createContainer hooks and LXC's autodev hook do), so that every
	 * process of the container, and none of another, opens its disks.
	 */
	rcu_read_lock();
	inst->tenant = task_dfl_cgroup(current);
	cgroup_get(inst->tenant);
	rcu_read_unlock();
	loopfs_uevent_instance_init(inst);
	inst->root_uid = make_kuid(ns, 0);
	if (!uid_valid(inst->root_uid))
		inst->root_uid = GLOBAL_ROOT_UID;
	inst->root_gid = make_kgid(ns, 0);
	if (!gid_valid(inst->root_gid))
		inst->root_gid = GLOBAL_ROOT_GID;
	return inst;
}

static int loopfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct loopfs_fs_context *ctx = fc->fs_private;
	struct loopfs_instance *inst;
	struct inode *root;
	int err;

	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_magic = LOOPFS_SUPER_MAGIC;
	sb->s_op = &loopfs_super_ops;
	set_default_d_op(sb, &loopfs_dentry_ops);
	sb->s_time_gran = 1;
	/*
	 * The superblock may belong to a user namespace; its nodes must
	 * still open. Nothing in it can be executed.
	 */
	sb->s_iflags &= ~SB_I_NODEV;
	sb->s_iflags |= SB_I_NOEXEC;

	inst = loopfs_instance_new(sb, ctx->max_set ? ctx->max :
				   LOOPFS_MAX_INDEX);
	if (!inst)
		return -ENOMEM;
	sb->s_fs_info = inst;

	root = new_inode(sb);
	if (!root)
		return -ENOMEM;
	root->i_ino = 1;
	root->i_mode = S_IFDIR | 0755;
	root->i_uid = inst->root_uid;
	root->i_gid = inst->root_gid;
	root->i_op = &loopfs_dir_iops;
	root->i_fop = &loopfs_dir_fops;
	set_nlink(root, 2);
	simple_inode_init_ts(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;

	inode_lock(root);
	err = loopfs_add_node(sb, LOOPFS_CONTROL_NAME, S_IFCHR | 0600,
			      loopfs_ctl_devt, 0, &loopfs_ctl_fops);
	if (!err)
		err = loopfs_add_view(sb);
	inode_unlock(root);
	return err;
}

static int loopfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, loopfs_fill_super);
}

/*
 * max= is a cap the instance's owner may lower but not lift: raising it
 * above the ceiling (the value given at mount time, or the last one a
 * privileged remount set) needs CAP_SYS_ADMIN over the parent of the
 * instance's user namespace. The owner of an initial-namespace instance
 * already has CAP_SYS_ADMIN there. The per-user charge stays the real limit: a tenant
 * can always mount another instance.
 */
static bool loopfs_may_raise_max(struct loopfs_instance *inst)
{
	struct user_namespace *parent = inst->user_ns->parent;

	if (!parent)
		return true;
	return ns_capable(parent, CAP_SYS_ADMIN);
}

static int loopfs_reconfigure(struct fs_context *fc)
{
	struct loopfs_fs_context *ctx = fc->fs_private;
	struct loopfs_instance *inst = loopfs_sb(fc->root->d_sb);

	if (ctx->max_set) {
		mutex_lock(&inst->lock);
		if (ctx->max > inst->mount_max) {
			if (!loopfs_may_raise_max(inst)) {
				errorfc(fc, "max above %u needs the parent namespace",
					inst->mount_max);
				mutex_unlock(&inst->lock);
				return -EPERM;
			}
			inst->mount_max = ctx->max;
		}
		inst->max = ctx->max;
		mutex_unlock(&inst->lock);
	}
	return 0;
}

static void loopfs_free_fc(struct fs_context *fc)
{
	kfree(fc->fs_private);
}

static const struct fs_context_operations loopfs_context_ops = {
	.free		= loopfs_free_fc,
	.parse_param	= loopfs_parse_param,
	.get_tree	= loopfs_get_tree,
	.reconfigure	= loopfs_reconfigure,
};

static int loopfs_init_fs_context(struct fs_context *fc)
{
	struct loopfs_fs_context *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	fc->fs_private = ctx;
	fc->ops = &loopfs_context_ops;
	return 0;
}

/*
 * The instance goes away: devices nobody has open go now (cleared first
 * if bound), open ones are cleared and destroyed on their last close.
 */
static void loopfs_instance_shutdown(struct loopfs_instance *inst)
{
	struct loopfs_device *dev;
	unsigned long index = 0;

	mutex_lock(&inst->lock);
	inst->sb = NULL;
	mutex_unlock(&inst->lock);
	/*
	 * The superblock is dying, so nothing adds devices any more. One at
	 * a time, so that nothing needs memory and no device can be lost.
	 */
	do {
		mutex_lock(&inst->lock);
		dev = xa_find(&inst->devices, &index, ULONG_MAX, XA_PRESENT);
		if (dev) {
			xa_erase(&inst->devices, index);
			inst->nr_devices--;
		}
		mutex_unlock(&inst->lock);
		if (dev)
			loop_dev_orphan(dev->ldev);
	} while (dev);
}

static void loopfs_kill_sb(struct super_block *sb)
{
	struct loopfs_instance *inst = loopfs_sb(sb);

	/* Its persistent entries go with the tree (loopfs_add_entry()). */
	kill_anon_super(sb);
	if (inst) {
		loopfs_instance_shutdown(inst);
		loopfs_instance_put(inst);
	}
}

static struct file_system_type loopfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= LOOPFS_FSTYPE,
	.init_fs_context	= loopfs_init_fs_context,
	.parameters		= loopfs_fs_parameters,
	.kill_sb		= loopfs_kill_sb,
	.fs_flags		= FS_USERNS_MOUNT,
};

static int __init loopfs_init(void)
{
	int err;

	err = loopfs_blk_fops_init();
	if (err)
		return err;
	loopfs_wq = alloc_workqueue("loopfs_nodes", WQ_UNBOUND, 0);
	if (!loopfs_wq)
		return -ENOMEM;
	err = alloc_chrdev_region(&loopfs_ctl_devt, 0, 1, "loopfs-control");
	if (err)
		goto out_wq;
	err = loop_dev_init();
	if (err)
		goto out_chrdev;
	err = loopfs_limits_init();
	if (err)
		goto out_blockdev;
	err = loopfs_views_init();
	if (err)
		goto out_limits;
	err = loopfs_uevent_init();
	if (err)
		goto out_views;
	err = register_filesystem(&loopfs_fs_type);
	if (err)
		goto out_uevent;
	return 0;

out_uevent:
	loopfs_uevent_exit();
out_views:
	loopfs_views_exit();
out_limits:
	loopfs_limits_exit();
out_blockdev:
	loop_dev_exit();
out_chrdev:
	unregister_chrdev_region(loopfs_ctl_devt, 1);
out_wq:
	destroy_workqueue(loopfs_wq);
	return err;
}

static void __exit loopfs_exit(void)
{
	unregister_filesystem(&loopfs_fs_type);
	loopfs_views_exit();
	/* Node syncs hold instance references that devices may need. */
	flush_workqueue(loopfs_wq);
	loopfs_uevent_exit();
	loop_dev_exit();
	loopfs_limits_exit();
	unregister_chrdev_region(loopfs_ctl_devt, 1);
	destroy_workqueue(loopfs_wq);
	ida_destroy(&loopfs_instance_ida);
}

module_init(loopfs_init);
module_exit(loopfs_exit);

MODULE_DESCRIPTION("loopfs: private loop device instances");
MODULE_LICENSE("GPL");
MODULE_VERSION(LOOPFS_VERSION);
MODULE_ALIAS_FS(LOOPFS_FSTYPE);
