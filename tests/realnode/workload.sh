#!/bin/sh
# The workload of the real-node tests, run in localhost/testbed-tools:dev with
# its volume at /data and a host directory at /report (the test reads it).
#   - first start on an empty volume: writes known data (DATA_MB of random
#     bytes, hard links, xattrs, ACLs, a sparse file, a symlink, a fifo, odd
#     names, owners and modes);
#   - every start: /report/$POD_UID.start = tree-manifest of /data, and
#     /report/$POD_UID.df = df of /data, before anything writes;
#   - then a writer appends to /data/writer.log every 50 ms until SIGTERM;
#   - on SIGTERM: the writer stops, then /report/$POD_UID.stop = the manifest,
#     so a copy is checked against what the volume held when its pod stopped.
# Ready (readiness probe: /tmp/ready) once the writer runs. A volume holding
# /data/.exit-for-good makes every start exit 1 (a member that fails for good).
set -eu
DATA_MB=${DATA_MB:-8}
# A test can make this replica fail for good (every start exits 1).
if [ -e /data/.exit-for-good ]; then
	echo "workload: /data/.exit-for-good is there; exiting 1" >&2
	exit 1
fi
if [ ! -e /data/.populated ]; then
	mkdir -p /data/tree/sub "/data/tree/odd name" /data/tree/empty
	head -c $((DATA_MB * 1024 * 1024 * 3 / 4)) /dev/urandom >/data/tree/random-a
	head -c $((DATA_MB * 1024 * 1024 / 4)) /dev/urandom >/data/tree/sub/random-b
	ln /data/tree/random-a /data/tree/sub/hard-link-to-a
	ln -s ../random-a /data/tree/sub/symlink-to-a
	printf 'dash\n' >"/data/tree/odd name/-leading-dash"
	printf 'newline\n' >"/data/tree/odd name/new
line"
	printf 'utf8\n' >"/data/tree/odd name/ünïcødé ✓"
	printf 'tab\n' >"/data/tree/odd name/tab	in name"
	setfattr -n user.colour -v blue /data/tree/random-a
	setfattr -n user.empty /data/tree/sub
	setfacl -m u:1234:rw,g:4321:r /data/tree/sub/random-b
	setfacl -d -m u:1234:rwx /data/tree/sub
	truncate -s 24M /data/tree/sparse
	printf 'in the middle' | dd of=/data/tree/sparse bs=1 seek=12000000 conv=notrunc 2>/dev/null
	mkfifo /data/tree/fifo
	chown 1000:2000 /data/tree/sub/random-b
	chmod 4750 /data/tree/sub/random-b
	chmod 1777 /data/tree/empty
	touch -d '2001-02-03 04:05:06' "/data/tree/odd name/-leading-dash"
	touch /data/.populated
fi
df -B1 /data | tail -n 1 >"/report/$POD_UID.df.tmp"
mv "/report/$POD_UID.df.tmp" "/report/$POD_UID.df"
tree-manifest /data >"/report/$POD_UID.start.tmp"
mv "/report/$POD_UID.start.tmp" "/report/$POD_UID.start"

(
	i=0
	while :; do
		i=$((i + 1))
		echo "$POD_NAME $i $(date +%s.%N)" >>/data/writer.log
		sleep 0.05
	done
) &
writer=$!

stop() {
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	sync
	tree-manifest /data >"/report/$POD_UID.stop.tmp"
	mv "/report/$POD_UID.stop.tmp" "/report/$POD_UID.stop"
	exit 0
}
trap stop TERM INT
touch /tmp/ready
while :; do
	sleep 1 &
	wait $! || true
done
