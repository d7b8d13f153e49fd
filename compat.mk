# SPDX-License-Identifier: GPL-2.0
#
# Feature probes for compat.h, included by Kbuild. Each one greps the target
# kernel's own headers for an interface and defines LOOPFS_HAVE_<name> when
# the kernel has it; compat.h supplies what it lacks. Headers, not version
# numbers, decide: distribution kernels carry backported interfaces.

# $(call loopfs_probe,headers,extended regex without parentheses or commas,name):
# the interface is in any of the (space-separated) headers.
loopfs_probe = $(if $(shell grep -qsE '$(2)' $(addprefix $(srctree)/include/linux/,$(1)) && echo y),-DLOOPFS_HAVE_$(3))
# $(call loopfs_probe_export,symbol): the kernel exports symbol to modules
# (its Module.symvers lists it), as LOOPFS_HAVE_EXPORT_<symbol>.
loopfs_probe_export = $(if $(shell grep -qsE '^0x[0-9a-f]+[[:space:]]+$(1)[[:space:]]' $(objtree)/Module.symvers && echo y),-DLOOPFS_HAVE_EXPORT_$(1))
# The same for an interface whose removal is the feature: LOOPFS_HAVE_<name>
# when the header (which must exist) no longer matches.
loopfs_probe_gone = $(if $(shell test -f $(srctree)/include/linux/$(1) && ! grep -qE '$(2)' $(srctree)/include/linux/$(1) && echo y),-DLOOPFS_HAVE_$(3))

ccflags-y += $(call loopfs_probe,blkdev.h,typedef unsigned int __bitwise blk_mode_t,BLK_MODE_T)
ccflags-y += $(call loopfs_probe,blkdev.h,int .\*open..struct gendisk .disk. blk_mode_t mode.;,BDOPS_OPEN_DISK)
ccflags-y += $(call loopfs_probe,blkdev.h,void .\*release..struct gendisk .disk.;,BDOPS_RELEASE_DISK)
ccflags-y += $(call loopfs_probe,blkdev.h,int bd_prepare_to_claim.struct block_device .bdev. void .holder.$$,BD_CLAIM_HOLDER_OPS)
ccflags-y += $(call loopfs_probe,blkdev.h,void disk_force_media_change.struct gendisk .disk.;,DISK_FORCE_MEDIA_CHANGE_1)
ccflags-y += $(call loopfs_probe,blkdev.h,static inline u8 bdev_partno,BDEV_PARTNO)
ccflags-y += $(call loopfs_probe,blkdev.h,int queue_limits_commit_update,QUEUE_LIMITS)
ccflags-y += $(call loopfs_probe,blkdev.h,static inline bool bdev_rot,BDEV_ROT)
ccflags-y += $(call loopfs_probe,blk-mq.h,void blk_mq_freeze_queue_nomemsave,FREEZE_MEMFLAGS)
ccflags-y += $(call loopfs_probe_gone,blk-mq.h,BLK_MQ_F_SHOULD_MERGE,MERGE_BY_DEFAULT)
ccflags-y += $(call loopfs_probe,fs.h,int filemap_flush_range.struct address_space,FILEMAP_FLUSH_RANGE)
ccflags-y += $(call loopfs_probe,fs.h,struct timespec64 simple_inode_init_ts,SIMPLE_INODE_INIT_TS)
ccflags-y += $(call loopfs_probe,fs.h,int inode_lock_killable,INODE_LOCK_KILLABLE)
ccflags-y += $(call loopfs_probe,fs.h,int .\*create. .struct mnt_idmap,MNT_IDMAP)
ccflags-y += $(call loopfs_probe,fs.h,define FOP_BUFFER_WASYNC,FOP_BUFFER_WASYNC)
ccflags-y += $(call loopfs_probe,fs.h,int inode_just_drop.struct inode,INODE_JUST_DROP)
ccflags-y += $(call loopfs_probe,dcache.h,define QSTR.n. ,QSTR)
ccflags-y += $(call loopfs_probe,dcache.h,void set_default_d_op.struct super_block,SET_DEFAULT_D_OP)
ccflags-y += $(call loopfs_probe,dcache.h,struct dentry .d_make_persistent.struct dentry,D_MAKE_PERSISTENT)
ccflags-y += $(call loopfs_probe,ns_common.h,define ns_ref_read,NS_REF_READ)
ccflags-y += $(call loopfs_probe,namei.h,struct dentry .lookup_noperm.struct qstr,LOOKUP_NOPERM)
ccflags-y += $(call loopfs_probe,device/class.h,add_dev.[[:space:]]+.struct device .dev.;,CLASS_INTF_DEV_ONLY)
ccflags-y += $(call loopfs_probe,sysctl.h,typedef int proc_handler.const struct ctl_table,CONST_PROC_HANDLER)
ccflags-y += $(call loopfs_probe,sysctl.h,register_sysctl_sz,REGISTER_SYSCTL_SZ)

# The block layer before the whole disk's block_device became the disk's
# part0, and what came soon after it; the VFS before ID-mapped mounts.
ccflags-y += $(call loopfs_probe,blkdev.h,struct block_device .part0;,BDEV_PART0)
ccflags-y += $(call loopfs_probe,blkdev.h,struct mutex[[:space:]]+open_mutex;,DISK_OPEN_MUTEX)
ccflags-y += $(call loopfs_probe,blkdev.h,void .\*free_disk.,FREE_DISK)
ccflags-y += $(call loopfs_probe,blk-mq.h,define blk_mq_alloc_disk,BLK_MQ_ALLOC_DISK)
ccflags-y += $(call loopfs_probe,blk-mq.h,BLK_MQ_F_NO_SCHED_BY_DEFAULT,NO_SCHED_BY_DEFAULT)
ccflags-y += $(call loopfs_probe,blkdev.h,GD_SUPPRESS_PART_SCAN,GD_SUPPRESS_PART_SCAN)
ccflags-y += $(call loopfs_probe,blkdev.h,struct backing_dev_info[[:space:]]+.bdi;,DISK_BDI)
ccflags-y += $(call loopfs_probe,blkdev.h,int __must_check add_disk,ADD_DISK_ERR)
ccflags-y += $(call loopfs_probe,blkdev.h,void invalidate_disk,INVALIDATE_DISK)
ccflags-y += $(call loopfs_probe,blkdev.h genhd.h,set_capacity_and_notify,SET_CAPACITY_AND_NOTIFY)
ccflags-y += $(call loopfs_probe,blk_types.h,define dev_to_bdev,DEV_TO_BDEV)
ccflags-y += $(call loopfs_probe,bvec.h,static inline void bvec_set_page,BVEC_SET_PAGE)
ccflags-y += $(call loopfs_probe,uio.h,ITER_SOURCE,ITER_SOURCE)
ccflags-y += $(call loopfs_probe,memcontrol.h,page_memcg_check,PAGE_MEMCG_CHECK)
ccflags-y += $(call loopfs_probe,blk-cgroup.h,bio_blkcg_css,BIO_BLKCG_CSS)
ccflags-y += $(call loopfs_probe,fs.h,FMODE_CAN_ODIRECT,FMODE_CAN_ODIRECT)
ccflags-y += $(call loopfs_probe,fs.h,void .\*ki_complete..struct kiocb .iocb. long ret.;,KI_COMPLETE_2)
ccflags-y += $(call loopfs_probe,fs.h,typedef bool .\*filldir_t.,FILLDIR_BOOL)
ccflags-y += $(call loopfs_probe,fs.h,file_open_root_mnt,FILE_OPEN_ROOT_MNT)
ccflags-y += $(call loopfs_probe,fs.h,int .\*create. .struct [a-z_]+ \*.[[:space:]]*struct inode,CREATE_IDMAP_ARG)
ccflags-y += $(call loopfs_probe,ns_common.h,refcount_t count;,NS_COMMON_COUNT)
ccflags-y += $(call loopfs_probe,fs.h,define FMODE_BUF_WASYNC,FMODE_BUF_WASYNC)
ccflags-y += $(call loopfs_probe,fs.h pagemap.h,int filemap_fdatawrite_wbc,FILEMAP_FDATAWRITE_WBC)
ccflags-y += $(call loopfs_probe,blkdev.h,bool disk_force_media_change.struct gendisk .disk. unsigned int events.;,DISK_FORCE_MEDIA_CHANGE)
ccflags-y += $(call loopfs_probe_export,int_active_memcg)
ccflags-y += $(call loopfs_probe_export,cgroup_get_e_css)
