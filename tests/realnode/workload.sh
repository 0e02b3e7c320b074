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
#
# With DEVICE set (a volume in volumeMode Block at that device path): on a
# device without its mark, 4 KiB of random bytes at each of OFFSETS (the
# first starting with the mark "SOPBLOCK"); at every start and stop the
# report ($POD_UID.start, .stop) has "size <device bytes>", "at <offset>
# <sha256 of its 4 KiB>" per offset and "first <HASH_BYTES> <sha256>".
set -eu
DATA_MB=${DATA_MB:-8}
if [ -n "${DEVICE:-}" ]; then
	block_report() { # NAME
		{
			echo "size $(blockdev --getsize64 "$DEVICE")"
			for o in $OFFSETS; do
				echo "at $o $(dd if="$DEVICE" bs=4096 skip="$o" count=1 iflag=skip_bytes status=none | sha256sum | cut -d' ' -f1)"
			done
			echo "first $HASH_BYTES $(head -c "$HASH_BYTES" "$DEVICE" | sha256sum | cut -d' ' -f1)"
		} >"/report/$POD_UID.$1.tmp"
		mv "/report/$POD_UID.$1.tmp" "/report/$POD_UID.$1"
	}
	if [ "$(head -c 8 "$DEVICE")" != SOPBLOCK ]; then
		for o in $OFFSETS; do
			head -c 4096 /dev/urandom | dd of="$DEVICE" bs=4096 seek="$o" oflag=seek_bytes conv=notrunc status=none
		done
		printf SOPBLOCK | dd of="$DEVICE" conv=notrunc status=none
		sync
	fi
	block_report start
	trap 'block_report stop; exit 0' TERM INT
	touch /tmp/ready
	while :; do
		sleep 1 &
		wait $! || true
	done
fi
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
