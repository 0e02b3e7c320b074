/*
 * The test bed's real volumes: a file system of exactly the requested size
 * on a loop device, mounted where a `local` PV points, so that the kubelet
 * and the pods see a real file system (statfs, df, ENOSPC). It stands in for
 * a CSI driver: none is offered by the Go module proxy here.
 *
 * Layout under dir: <name>.img (sparse backing file), <name>/ (mount point),
 * <name>/volume/ (what the PV points at); a Block volume has only
 * <name>.img, and the PV points at its loop device.
 * Create and delete are idempotent, so a caller that crashed half-way calls
 * again; so is an xfs grow. An ext4 grow unmounts for a moment each time.
 * The tools are Debian's: losetup, mkfs.ext4/mkfs.xfs, mount, umount,
 * resize2fs, xfs_growfs. Runs as root. Test-bed code, not product code.
 */
#ifndef SOP_TESTBED_LOCAL_VOLUME_H
#define SOP_TESTBED_LOCAL_VOLUME_H

#include <stdint.h>

/* fstype "ext4" or "xfs" (xfs needs at least 300 MiB). Returns 0 or -1, *err set. */
int local_volume_create(const char *dir, const char *name, int64_t bytes, const char *fstype, char **err);

/*
 * Grows the backing file, the loop device and the file system to bytes
 * (never shrinks): xfs online; ext4 only while no pod has it mounted
 * (unmounted, checked, grown, mounted again), because online ext4 growth
 * needs CAP_SYS_RESOURCE, which root lacks on this test bed's machines.
 */
int local_volume_grow(const char *dir, const char *name, int64_t bytes, char **err);

/*
 * A volume in volumeMode Block: the loop device itself, of bytes, no file
 * system; *dev its path (malloc'd), what the PV's spec.local.path names.
 * Idempotent (an attached one is found again). Returns 0 or -1, *err set.
 */
int local_volume_create_block(const char *dir, const char *name, int64_t bytes, char **dev, char **err);

/* Grows a Block volume's backing file and loop device to bytes (never shrinks), online. */
int local_volume_grow_block(const char *dir, const char *name, int64_t bytes, char **err);

/*
 * Unmounts, detaches and deletes. Returns 1 while the mount is still in use
 * (a pod's bind mount not yet gone; try later), 0 when gone, -1 on error.
 */
int local_volume_delete(const char *dir, const char *name, char **err);

/* Where the PV's spec.local.path points (malloc'd): a directory inside the mounted file system. */
char *local_volume_path(const char *dir, const char *name);

#endif
