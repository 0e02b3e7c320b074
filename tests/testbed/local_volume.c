/* The test bed's real volumes (see local_volume.h). */
#include "local_volume.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/xalloc.h"

/* Where the file system is mounted. */
static char *mount_point(const char *dir, const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

/*
 * A directory inside the file system, not its root: while the test bed has
 * it unmounted (ext4 growth), the path does not exist, so the kubelet's
 * mount for a pod fails and is retried instead of handing the pod the empty
 * mount point. Also keeps lost+found out of the pods' view.
 */
#define VOLUME_SUBDIR "volume"

char *local_volume_path(const char *dir, const char *name)
{
	return xasprintf("%s/%s/" VOLUME_SUBDIR, dir, name);
}

static char *image_path(const char *dir, const char *name)
{
	return xasprintf("%s/%s.img", dir, name);
}

/*
 * Runs argv (searched in PATH) with stdout and stderr captured into *out
 * (malloc'd, NUL-terminated, trailing newline removed). Returns the exit
 * status, or -1 when it could not run or died of a signal.
 */
static int run(const char *const argv[], char **out)
{
	int fds[2];
	*out = NULL;
	if (pipe(fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	size_t len = 0, cap = 256;
	char *buf = xmalloc(cap);
	ssize_t n;
	while ((n = read(fds[0], buf + len, cap - len - 1)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
		if (cap - len < 64)
			buf = xrealloc(buf, cap *= 2);
	}
	close(fds[0]);
	while (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	*out = buf;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs argv; on failure sets *err to "<what>: <output>" and returns -1. */
static int run_or_fail(const char *what, const char *const argv[], char **out, char **err)
{
	char *text;
	int rc = run(argv, &text);
	if (rc != 0) {
		*err = xasprintf("%s: %s (exit %d)", what, text && *text ? text : "no output", rc);
		free(text);
		return -1;
	}
	if (out)
		*out = text;
	else
		free(text);
	return 0;
}

/* The loop device backing img ("/dev/loopN", malloc'd), or NULL when none. */
static char *loop_of(const char *img)
{
	const char *argv[] = {"losetup", "--noheadings", "--output", "NAME", "--associated", img, NULL};
	char *out;
	if (run(argv, &out) != 0 || !*out) {
		free(out);
		return NULL;
	}
	out[strcspn(out, "\n")] = '\0';
	return out;
}

/*
 * Counts the mounts whose source is dev, and says whether one of them is
 * mounted at mnt. /proc/self/mounts escapes spaces as \040; our paths have none.
 */
static int mounts_of(const char *dev, const char *mnt, bool *at_mnt)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char src[4096], where[4096];
	int n = 0;
	*at_mnt = false;
	if (!f)
		return -1;
	while (fscanf(f, "%4095s %4095s %*[^\n]", src, where) == 2) {
		if (dev && !strcmp(src, dev))
			n++;
		if (!strcmp(where, mnt))
			*at_mnt = true;
	}
	fclose(f);
	return n;
}

/* The file system type mounted at mnt (malloc'd), or NULL. */
static char *fstype_at(const char *mnt)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char src[4096], where[4096], type[64];
	char *found = NULL;
	if (!f)
		return NULL;
	while (fscanf(f, "%4095s %4095s %63s %*[^\n]", src, where, type) == 3)
		if (!strcmp(where, mnt)) {
			free(found);
			found = xstrdup(type);
		}
	fclose(f);
	return found;
}

static void detach_loops(const char *img)
{
	char *dev;
	while ((dev = loop_of(img))) {
		const char *argv[] = {"losetup", "--detach", dev, NULL};
		char *out;
		int rc = run(argv, &out);
		free(out);
		free(dev);
		if (rc != 0)
			break;
	}
}

/* A new sparse backing file img of bytes in dir (one left before goes). 0, or -1 with *err set. */
static int new_image(const char *dir, const char *img, int64_t bytes, char **err)
{
	unlink(img);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		*err = xasprintf("mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	int fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, bytes) < 0) {
		*err = xasprintf("%s: %s", img, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The backing file img and its loop device dev grown to bytes (never shrunk). 0, or -1 with *err set. */
static int grow_image(const char *img, const char *dev, int64_t bytes, char **err)
{
	struct stat st;
	if (stat(img, &st) < 0) {
		*err = xasprintf("%s: %s", img, strerror(errno));
		return -1;
	}
	if (st.st_size < bytes && truncate(img, bytes) < 0) {
		*err = xasprintf("truncate %s: %s", img, strerror(errno));
		return -1;
	}
	const char *refresh[] = {"losetup", "--set-capacity", dev, NULL};
	return run_or_fail("losetup --set-capacity", refresh, NULL, err);
}

int local_volume_create(const char *dir, const char *name, int64_t bytes, const char *fstype, char **err)
{
	char *img = image_path(dir, name), *mnt = mount_point(dir, name), *dev = NULL;
	int rc = -1;
	*err = NULL;
	if (strcmp(fstype, "ext4") && strcmp(fstype, "xfs")) {
		*err = xasprintf("fsType \"%s\": the test bed makes ext4 or xfs", fstype);
		goto out;
	}
	if (bytes <= 0) {
		*err = xasprintf("size %lld: must be positive", (long long)bytes);
		goto out;
	}
	bool at_mnt;
	if (mounts_of(NULL, mnt, &at_mnt) < 0) {
		*err = xasprintf("/proc/self/mounts: %s", strerror(errno));
		goto out;
	}
	if (at_mnt) /* mounted before a crash: make sure of the rest */
		goto subdir;
	/* A half-made volume (no mount, so no PV points at it yet) is made again. */
	detach_loops(img);
	if (new_image(dir, img, bytes, err) < 0)
		goto out;
	/* ext4 without the 5 % kept for root: df shows what the claim asked for. */
	const char *mkfs_ext4[] = {"mkfs.ext4", "-q", "-F", "-m", "0", img, NULL};
	const char *mkfs_xfs[] = {"mkfs.xfs", "-q", "-f", img, NULL};
	if (run_or_fail("mkfs", strcmp(fstype, "xfs") ? mkfs_ext4 : mkfs_xfs, NULL, err) < 0)
		goto out;
	const char *attach[] = {"losetup", "--find", "--show", img, NULL};
	if (run_or_fail("losetup", attach, &dev, err) < 0)
		goto out;
	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		*err = xasprintf("mkdir %s: %s", mnt, strerror(errno));
		goto out;
	}
	const char *mount_argv[] = {"mount", "-t", fstype, dev, mnt, NULL};
	if (run_or_fail("mount", mount_argv, NULL, err) < 0)
		goto out;
subdir:;
	char *data = local_volume_path(dir, name);
	if (mkdir(data, 0755) < 0 && errno != EEXIST) {
		*err = xasprintf("mkdir %s: %s", data, strerror(errno));
		free(data);
		goto out;
	}
	free(data);
	rc = 0;
out:
	free(dev);
	free(mnt);
	free(img);
	return rc;
}

int local_volume_create_block(const char *dir, const char *name, int64_t bytes, char **dev, char **err)
{
	char *img = image_path(dir, name);
	int rc = -1;
	*err = NULL;
	*dev = NULL;
	if (bytes <= 0) {
		*err = xasprintf("size %lld: must be positive", (long long)bytes);
		goto out;
	}
	if ((*dev = loop_of(img))) { /* made before a crash */
		rc = 0;
		goto out;
	}
	if (new_image(dir, img, bytes, err) < 0)
		goto out;
	const char *attach[] = {"losetup", "--find", "--show", img, NULL};
	rc = run_or_fail("losetup", attach, dev, err);
out:
	free(img);
	return rc;
}

int local_volume_grow_block(const char *dir, const char *name, int64_t bytes, char **err)
{
	char *img = image_path(dir, name);
	char *dev = loop_of(img);
	int rc = -1;
	*err = NULL;
	if (!dev)
		*err = xasprintf("%s is not attached", img);
	else /* the pods see the new size at once: the device is theirs, no file system to grow */
		rc = grow_image(img, dev, bytes, err);
	free(dev);
	free(img);
	return rc;
}

int local_volume_grow(const char *dir, const char *name, int64_t bytes, char **err)
{
	char *img = image_path(dir, name), *mnt = mount_point(dir, name);
	char *dev = loop_of(img), *type = fstype_at(mnt);
	int rc = -1;
	*err = NULL;
	if (!dev || !type) {
		*err = xasprintf("%s is not attached and mounted at %s", img, mnt);
		goto out;
	}
	if (grow_image(img, dev, bytes, err) < 0)
		goto out;
	if (!strcmp(type, "xfs")) {
		/* Online, in place (a no-op when it fills the device already). */
		const char *xfs[] = {"xfs_growfs", mnt, NULL};
		rc = run_or_fail("xfs_growfs", xfs, NULL, err);
		goto out;
	}
	/*
	 * ext4 grows unmounted: online growth (EXT4_IOC_RESIZE_FS) needs
	 * CAP_SYS_RESOURCE, which root lacks on the machines this test bed
	 * runs on. So only while no pod has it mounted (our mount is the only one).
	 */
	bool at_mnt;
	if (mounts_of(dev, mnt, &at_mnt) > 1) {
		*err = xasprintf("ext4 grows here only while no pod uses it (online resize2fs needs "
				 "CAP_SYS_RESOURCE); use an xfs class for online expansion");
		goto out;
	}
	if (umount2(mnt, 0) < 0) {
		*err = xasprintf("umount %s: %s", mnt, strerror(errno));
		goto out;
	}
	const char *check[] = {"e2fsck", "-f", "-p", dev, NULL};
	const char *ext4[] = {"resize2fs", dev, NULL};
	const char *mount_argv[] = {"mount", "-t", type, dev, mnt, NULL};
	rc = run_or_fail("e2fsck", check, NULL, err);
	if (rc == 0)
		rc = run_or_fail("resize2fs", ext4, NULL, err);
	/* Mounted again whatever happened: the PV points there. */
	char *remount_err = NULL;
	if (run_or_fail("mount", mount_argv, NULL, &remount_err) < 0 && rc == 0) {
		*err = remount_err;
		remount_err = NULL;
		rc = -1;
	}
	free(remount_err);
out:
	free(type);
	free(dev);
	free(mnt);
	free(img);
	return rc;
}

int local_volume_delete(const char *dir, const char *name, char **err)
{
	char *img = image_path(dir, name), *mnt = mount_point(dir, name);
	char *dev = loop_of(img);
	int rc = -1;
	bool at_mnt;
	*err = NULL;
	int n = mounts_of(dev, mnt, &at_mnt);
	if (n < 0) {
		*err = xasprintf("/proc/self/mounts: %s", strerror(errno));
		goto out;
	}
	/* A pod's bind mount of it is still there: the kubelet has not unmounted yet. */
	if (n > (at_mnt ? 1 : 0)) {
		rc = 1;
		goto out;
	}
	if (at_mnt && umount2(mnt, 0) < 0) {
		if (errno == EBUSY) {
			rc = 1;
			goto out;
		}
		*err = xasprintf("umount %s: %s", mnt, strerror(errno));
		goto out;
	}
	detach_loops(img);
	if ((unlink(img) < 0 && errno != ENOENT) || (rmdir(mnt) < 0 && errno != ENOENT)) {
		*err = xasprintf("removing %s: %s", img, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(dev);
	free(mnt);
	free(img);
	return rc;
}
