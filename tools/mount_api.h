/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The new mount API (fsopen, fsconfig, fsmount, move_mount, open_tree,
 * mount_setattr) under the names a C library of 2.36 or later declares in
 * <sys/mount.h>. An older one has no wrappers for these calls, and older
 * kernel headers lack what ID-mapped mounts added: both are supplied here.
 * Include this instead of <sys/mount.h>.
 */
#ifndef LOOPFS_MOUNT_API_H
#define LOOPFS_MOUNT_API_H

#include <sys/mount.h>

#if !__GLIBC_PREREQ(2, 36)
/* After <sys/mount.h>: the C library's mount flags come first. */
#include <linux/mount.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP	0x00100000
struct mount_attr {
	__u64 attr_set;
	__u64 attr_clr;
	__u64 propagation;
	__u64 userns_fd;
};
#endif

#ifndef MOUNT_ATTR_NOSYMFOLLOW
#define MOUNT_ATTR_NOSYMFOLLOW	0x00200000
#endif

#ifndef SYS_mount_setattr
#define SYS_mount_setattr	442
#endif

static inline int fsopen(const char *fstype, unsigned int flags)
{
	return syscall(SYS_fsopen, fstype, flags);
}

static inline int fsconfig(int fd, unsigned int cmd, const char *key,
			   const void *value, int aux)
{
	return syscall(SYS_fsconfig, fd, cmd, key, value, aux);
}

static inline int fsmount(int fd, unsigned int flags, unsigned int attrs)
{
	return syscall(SYS_fsmount, fd, flags, attrs);
}

static inline int move_mount(int from_dfd, const char *from_path, int to_dfd,
			     const char *to_path, unsigned int flags)
{
	return syscall(SYS_move_mount, from_dfd, from_path, to_dfd, to_path,
		       flags);
}

static inline int open_tree(int dfd, const char *path, unsigned int flags)
{
	return syscall(SYS_open_tree, dfd, path, flags);
}

static inline int mount_setattr(int dfd, const char *path, unsigned int flags,
				struct mount_attr *attr, size_t size)
{
	return syscall(SYS_mount_setattr, dfd, path, flags, attr, size);
}
#endif

#endif /* LOOPFS_MOUNT_API_H */
