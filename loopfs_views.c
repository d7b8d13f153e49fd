// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs - an instance's views of /sys/block and /sys/dev/block, for a
 * container to bind over its own: the instance's devices under their
 * instance names, and nothing of the host's.
 *
 * The view of /sys/block holds a directory per device, loop<N>, made and
 * removed with the device under instance->lock. A loop<N> directory
 * stands for the disk's sysfs directory, whose entries it looks up and
 * lists in sysfs each time: which attributes a disk has depends on the
 * kernel and on the disk's state, and its partitions come and go. It
 * lists each entry as a symlink into the disk's directory, a partition
 * under the name of its node. sysfs is reached through a mount of the
 * module's own: the caller's /sys may be missing, or a container's view.
 *
 * The view of /sys/dev/block lists the instance's disks and partitions by
 * device number, each time from the devices themselves.
 *
 * Lock order: the root directory's inode lock -> instance->lock -> the
 * view directory's inode lock, taken as I_MUTEX_CHILD (it is of the root
 * directory's lockdep class).
 */
#define pr_fmt(fmt) "loopfs: " fmt

#include <linux/ctype.h>
#include <linux/error-injection.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/slab.h>

#include "compat.h"
#include "loop_shim.h"
#include "loopfs.h"

/*
 * Where device @index, or its partition @partno (0: the disk), is in the
 * view of /sys/block: "block/loop<N>[/loop<N>p<M>]", relative to /sys once
 * the view is bound over /sys/block.
 */
void loopfs_view_path(char *buf, size_t len, int index, int partno)
{
	int n = snprintf(buf, len, LOOPFS_VIEW_NAME "/" LOOPFS_NODE_FMT, index);

	if (partno)
		snprintf(buf + n, len - n, "/" LOOPFS_PART_NODE_FMT, index,
			 partno);
}

static struct vfsmount *loopfs_sysfs;

COMPAT_IOP_CREATE(loopfs_create)
static const struct inode_operations loopfs_disk_dir_iops;
static const struct file_operations loopfs_disk_dir_fops;

static void loopfs_lock_view(struct loopfs_instance *inst)
{
	lockdep_assert_held(&inst->lock);
	inode_lock_nested(d_inode(inst->view), I_MUTEX_CHILD);
}

static void loopfs_unlock_view(struct loopfs_instance *inst)
{
	inode_unlock(d_inode(inst->view));
}

/* A directory of the instance that nobody can change, nlink as usual. */
static struct inode *loopfs_new_dir(struct super_block *sb,
				    const struct inode_operations *iops,
				    const struct file_operations *fops)
{
	struct inode *inode = loopfs_new_inode(sb, S_IFDIR | 0555);

	if (!inode)
		return NULL;
	inode->i_op = iops;
	inode->i_fop = fops;
	set_nlink(inode, 2);
	return inode;
}

/* loopfs_add_entry() for directory @inode, which links back to @dir. */
static struct dentry *loopfs_add_dir(struct dentry *dir, const char *name,
				     struct inode *inode)
{
	struct dentry *dentry = loopfs_add_entry(dir, name, inode);

	if (!IS_ERR(dentry))
		inc_nlink(d_inode(dir));
	return dentry;
}

/* A symlink of the instance to @fmt..., NULL when out of memory. */
static __printf(2, 3) struct inode *loopfs_new_symlink(struct super_block *sb,
						       const char *fmt, ...)
{
	struct inode *inode = loopfs_new_inode(sb, S_IFLNK | 0777);
	va_list args;

	if (!inode)
		return NULL;
	va_start(args, fmt);
	/* Freed with the inode, after RCU path walks are done with it. */
	inode->i_link = kvasprintf(GFP_KERNEL, fmt, args);
	va_end(args);
	if (!inode->i_link) {
		iput(inode);
		return NULL;
	}
	inode->i_op = &simple_symlink_inode_operations;
	return inode;
}

noinline int loopfs_add_view_dir(struct loopfs_instance *inst, int index)
{
	struct dentry *dentry;
	struct inode *inode;
	char name[LOOPFS_NODE_NAME_SIZE];

	inode = loopfs_new_dir(inst->sb, &loopfs_disk_dir_iops,
			       &loopfs_disk_dir_fops);
	if (!inode)
		return -ENOMEM;
	inode->i_private = (void *)(long)index;
	snprintf(name, sizeof(name), LOOPFS_NODE_FMT, index);
	loopfs_lock_view(inst);
	dentry = loopfs_add_dir(inst->view, name, inode);
	loopfs_unlock_view(inst);
	return PTR_ERR_OR_ZERO(dentry);
}

ALLOW_ERROR_INJECTION(loopfs_add_view_dir, ERRNO);

void loopfs_remove_view_dir(struct loopfs_instance *inst, int index)
{
	char name[LOOPFS_NODE_NAME_SIZE];

	snprintf(name, sizeof(name), LOOPFS_NODE_FMT, index);
	loopfs_lock_view(inst);
	if (loopfs_remove_entry(inst->view, name))
		drop_nlink(d_inode(inst->view));
	loopfs_unlock_view(inst);
}

/* A loop<N> directory of the view: its index. */
static int loopfs_disk_dir_index(struct inode *dir)
{
	return (int)(long)dir->i_private;
}

/* A loop<N> directory of the view: the disk's host name. */
static void loopfs_disk_dir_disk(struct inode *dir, char *buf, size_t len)
{
	snprintf(buf, len, LOOPFS_DISK_FMT, loopfs_sb(dir->i_sb)->id,
		 loopfs_disk_dir_index(dir));
}

/* A loop<N> directory of the view: the disk's sysfs directory's path. */
static void loopfs_disk_dir_path(struct inode *dir, char *buf, size_t len)
{
	snprintf(buf, len, LOOPFS_SYSFS_DISK_FMT, loopfs_sb(dir->i_sb)->id,
		 loopfs_disk_dir_index(dir));
}

/*
 * The length of @name's host disk name prefix when @name, @len bytes, is
 * a partition of @disk (@disk "p" digits), else 0.
 */
static size_t loopfs_host_part(const char *disk, const char *name, int len)
{
	size_t n = strlen(disk);
	int i;

	if (len <= n + 1 || memcmp(name, disk, n) || name[n] != 'p')
		return 0;
	for (i = n + 1; i < len; i++)
		if (!isdigit(name[i]))
			return 0;
	return n;
}

/*
 * The entry of the disk's sysfs directory that @name of a loop<N>
 * directory stands for: the host name of partition loop<N>p<M>, @name
 * itself for everything else, NULL for the host names of partitions.
 */
static const char *loopfs_disk_entry(struct inode *dir, const char *name,
				     char *buf, size_t len)
{
	char disk[LOOPFS_DISK_NAME_SIZE];
	size_t n;

	loopfs_disk_dir_disk(dir, disk, sizeof(disk));
	if (loopfs_host_part(disk, name, strlen(name)))
		return NULL;
	snprintf(buf, len, LOOPFS_NODE_FMT, loopfs_disk_dir_index(dir));
	n = loopfs_host_part(buf, name, strlen(name));
	if (!n)
		return name;
	snprintf(buf, len, "%sp%s", disk, name + n + 1);
	return buf;
}

static struct dentry *loopfs_disk_dir_lookup(struct inode *dir,
					     struct dentry *dentry,
					     unsigned int flags)
{
	char path[LOOPFS_SYSFS_DISK_SIZE + LOOPFS_SYSFS_ENTRY_SIZE];
	char entry[LOOPFS_SYSFS_ENTRY_SIZE];
	struct inode *inode = NULL;
	const char *name;
	struct file *found;
	int len;

	/* Its device is gone (maybe another holds the index by now). */
	if (!dir->i_nlink)
		return d_splice_alias(NULL, dentry);
	name = loopfs_disk_entry(dir, dentry->d_name.name, entry, sizeof(entry));
	if (!name)
		return d_splice_alias(NULL, dentry);
	loopfs_disk_dir_path(dir, path, sizeof(path));
	len = strlen(path);
	if (snprintf(path + len, sizeof(path) - len, "/%s", name) >=
	    sizeof(path) - len)
		return d_splice_alias(NULL, dentry);
	/* Whether it is there; a symlink of sysfs (bdi, subsystem) too. */
	found = file_open_root_mnt(loopfs_sysfs, path, O_PATH | O_NOFOLLOW, 0);
	if (IS_ERR(found))
		return d_splice_alias(NULL, dentry);
	fput(found);
	/* From loop<N> in /sys/block: ../.. is /sys. */
	inode = loopfs_new_symlink(dir->i_sb, "../../%s", path);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	return d_splice_alias(inode, dentry);
}

struct loopfs_disk_dir_ctx {
	struct dir_context ctx;		/* of the sysfs directory */
	struct dir_context *out;	/* of the caller's loop<N> */
	const char *disk;
	int index;
	loff_t skip;			/* entries listed by earlier calls */
};

static bool loopfs_disk_dir_fill(struct dir_context *ctx, const char *name,
				 int len, loff_t offset, u64 ino,
				 unsigned int type)
{
	struct loopfs_disk_dir_ctx *dd =
		container_of(ctx, struct loopfs_disk_dir_ctx, ctx);
	char part[LOOPFS_NODE_NAME_SIZE];
	size_t n;

	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return true;
	if (dd->skip) {
		dd->skip--;
		return true;
	}
	n = loopfs_host_part(dd->disk, name, len);
	if (n) {
		len = snprintf(part, sizeof(part), LOOPFS_NODE_FMT "p%.*s",
			       dd->index, (int)(len - n - 1), name + n + 1);
		name = part;
	}
	if (!dir_emit(dd->out, name, len, ino, DT_LNK))
		return false;
	dd->out->pos++;
	return true;
}

COMPAT_FILLDIR(loopfs_disk_dir_fill)

static int loopfs_disk_dir_iterate(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct loopfs_disk_dir_ctx dd = {
		.ctx.actor = compat_filldir(loopfs_disk_dir_fill),
		.out = ctx,
		.index = loopfs_disk_dir_index(dir),
	};
	char path[LOOPFS_SYSFS_DISK_SIZE], disk[LOOPFS_DISK_NAME_SIZE];
	struct file *sysfs_dir;
	int err;

	if (!dir_emit_dots(file, ctx) || !dir->i_nlink)
		return 0;
	dd.skip = ctx->pos - 2;
	loopfs_disk_dir_disk(dir, disk, sizeof(disk));
	dd.disk = disk;
	loopfs_disk_dir_path(dir, path, sizeof(path));
	sysfs_dir = file_open_root_mnt(loopfs_sysfs, path,
				       O_RDONLY | O_DIRECTORY, 0);
	/* The disk is going: nothing to list. */
	if (IS_ERR(sysfs_dir))
		return 0;
	err = iterate_dir(sysfs_dir, &dd.ctx);
	fput(sysfs_dir);
	return err;
}

/* Nothing can be made or removed in a loop<N> directory, as in the view. */
static const struct inode_operations loopfs_disk_dir_iops = {
	.lookup	= loopfs_disk_dir_lookup,
	.create	= compat_iop_create(loopfs_create),
};

static const struct file_operations loopfs_disk_dir_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= loopfs_disk_dir_iterate,
};

struct loopfs_devt_walk {
	/* Called under instance->lock; false stops the walk. */
	bool (*fn)(struct loopfs_devt_walk *walk, dev_t devt, int index,
		   int partno);
};

static int loopfs_walk_devts(struct loopfs_instance *inst,
			     struct loopfs_devt_walk *walk)
{
	struct loopfs_device *dev;
	unsigned long index;
	dev_t *devts;
	int last = 0, p;

	devts = kcalloc(LOOP_DEV_MAX_PARTS, sizeof(*devts), GFP_KERNEL);
	if (!devts)
		return -ENOMEM;
	if (mutex_lock_killable(&inst->lock)) {
		kfree(devts);
		return -EINTR;
	}
	xa_for_each(&inst->devices, index, dev) {
		memset(devts, 0, LOOP_DEV_MAX_PARTS * sizeof(*devts));
		last = loop_dev_partitions(dev->ldev, devts,
					   LOOP_DEV_MAX_PARTS);
		if (last < 0)
			goto out;
		devts[0] = loop_dev_devt(dev->ldev);
		for (p = 0; p <= last; p++)
			if (devts[p] && !walk->fn(walk, devts[p], index, p))
				goto out;
	}
out:
	mutex_unlock(&inst->lock);
	kfree(devts);
	return min(last, 0);
}

/* What "MAJ:MIN" in the view of /sys/dev/block points to. */
static struct inode *loopfs_dev_view_symlink(struct super_block *sb,
					     int index, int partno)
{
	char path[LOOPFS_VIEW_PATH_SIZE];

	/* From MAJ:MIN in /sys/dev/block: ../.. is /sys. */
	loopfs_view_path(path, sizeof(path), index, partno);
	return loopfs_new_symlink(sb, "../../%s", path);
}

struct loopfs_dev_find {
	struct loopfs_devt_walk walk;
	dev_t devt;
	int index;
	int partno;
};

static bool loopfs_dev_find_fn(struct loopfs_devt_walk *walk, dev_t devt,
			       int index, int partno)
{
	struct loopfs_dev_find *find =
		container_of(walk, struct loopfs_dev_find, walk);

	if (devt != find->devt)
		return true;
	find->index = index;
	find->partno = partno;
	return false;
}

static struct dentry *loopfs_dev_view_lookup(struct inode *dir,
					     struct dentry *dentry,
					     unsigned int flags)
{
	struct loopfs_dev_find find = {
		.walk.fn = loopfs_dev_find_fn,
		.index = -1,
	};
	unsigned int major, minor;
	struct inode *inode;
	char name[LOOPFS_DEVT_NAME_SIZE];
	int err;

	/* Only the canonical spelling, as sysfs has it. */
	if (sscanf(dentry->d_name.name, "%u:%u", &major, &minor) != 2)
		return d_splice_alias(NULL, dentry);
	snprintf(name, sizeof(name), "%u:%u", major, minor);
	if (strcmp(name, dentry->d_name.name) || major > MAJOR(~0U) ||
	    minor > MINOR(~0U))
		return d_splice_alias(NULL, dentry);
	find.devt = MKDEV(major, minor);
	err = loopfs_walk_devts(loopfs_sb(dir->i_sb), &find.walk);
	if (err)
		return ERR_PTR(err);
	if (find.index < 0)
		return d_splice_alias(NULL, dentry);
	inode = loopfs_dev_view_symlink(dir->i_sb, find.index, find.partno);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	return d_splice_alias(inode, dentry);
}

struct loopfs_dev_list {
	struct loopfs_devt_walk walk;
	struct dir_context *ctx;
	loff_t n;			/* entries walked, dots included */
};

static bool loopfs_dev_list_fn(struct loopfs_devt_walk *walk, dev_t devt,
			       int index, int partno)
{
	struct loopfs_dev_list *list =
		container_of(walk, struct loopfs_dev_list, walk);
	char name[LOOPFS_DEVT_NAME_SIZE];
	int len;

	/* Listed by an earlier call. */
	if (list->n++ < list->ctx->pos)
		return true;
	len = snprintf(name, sizeof(name), "%u:%u", MAJOR(devt), MINOR(devt));
	if (!dir_emit(list->ctx, name, len, 1, DT_LNK))
		return false;
	list->ctx->pos++;
	return true;
}

static int loopfs_dev_view_iterate(struct file *file, struct dir_context *ctx)
{
	struct loopfs_dev_list list = {
		.walk.fn = loopfs_dev_list_fn,
		.ctx = ctx,
		.n = 2,
	};

	if (!dir_emit_dots(file, ctx))
		return 0;
	return loopfs_walk_devts(loopfs_sb(file_inode(file)->i_sb),
				 &list.walk);
}

static const struct inode_operations loopfs_dev_view_iops = {
	.lookup	= loopfs_dev_view_lookup,
	.create	= compat_iop_create(loopfs_create),
};

static const struct file_operations loopfs_dev_view_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= loopfs_dev_view_iterate,
};

int __init loopfs_views_init(void)
{
	struct file_system_type *sysfs = get_fs_type("sysfs");

	/* sysfs is built in: no module reference to drop. */
	if (!sysfs)
		return -ENODEV;
	loopfs_sysfs = kern_mount(sysfs);
	return PTR_ERR_OR_ZERO(loopfs_sysfs);
}

void loopfs_views_exit(void)
{
	kern_unmount(loopfs_sysfs);
}

/*
 * The view changes only with the devices: no ->unlink, ->mkdir, ->symlink,
 * ->rename (EPERM from the VFS) and a ->create that refuses alike.
 */
static const struct inode_operations loopfs_view_iops = {
	.lookup	= simple_lookup,
	.create	= compat_iop_create(loopfs_create),
};

/* The empty views of a new instance, read-only for everybody. */
noinline int loopfs_add_view(struct super_block *sb)
{
	struct loopfs_instance *inst = loopfs_sb(sb);
	struct dentry *dentry;
	struct inode *inode;

	inode = loopfs_new_dir(sb, &loopfs_view_iops, &simple_dir_operations);
	if (!inode)
		return -ENOMEM;
	dentry = loopfs_add_dir(sb->s_root, LOOPFS_VIEW_NAME, inode);
	if (IS_ERR(dentry))
		return PTR_ERR(dentry);
	inst->view = dentry;

	inode = loopfs_new_dir(sb, &loopfs_dev_view_iops,
			       &loopfs_dev_view_fops);
	if (!inode)
		return -ENOMEM;
	return PTR_ERR_OR_ZERO(loopfs_add_dir(sb->s_root,
					      LOOPFS_DEV_VIEW_NAME, inode));
}

ALLOW_ERROR_INJECTION(loopfs_add_view, ERRNO);
