#!/bin/sh
# stateful-operator's copy script: the command of a resize-by-copy Job, and
# runnable by hand (`stateful-operator copy-script > copy.sh`).
#
#   sh copy.sh PASS TARGET-BYTES SRC DST [SRC DST]...
#
# PASS          full: copy, then verify; precopy: copy while the workload
#               may still run, then check by checksum and leave a mark for
#               the delta pass (see "The precopy's check"); delta: copy again
#               once the workload has stopped, then verify.
# TARGET-BYTES  capacity of the target volume in bytes (the new claim's size),
#               0 if unknown: then the target filesystem alone decides.
# SRC DST       the contents of SRC go into DST (SRC/ -> DST/); both must be
#               existing directories, neither inside the other. DST ends up
#               identical to SRC: whatever else it holds is deleted.
#               Or both block devices (a volume in volumeMode Block): see
#               "Devices" below.
#
# Before it writes anything, every pass checks that the data fits: the
# allocated size of each SRC (du -k: sparse files count what they hold) must
# not exceed TARGET-BYTES, nor what DST's filesystem can hold (free space plus
# what DST already holds, which the copy replaces); sources whose targets
# share a filesystem are added up. Inodes are checked the same way where the
# filesystem counts them. Each SRC is one volume: the copy stays on SRC's
# filesystem (rsync -x, du -x), so nothing mounted below SRC is copied.
#
# The copy keeps hard links, ACLs, xattrs, holes, numeric owners, mtimes to
# the nanosecond (--modify-window=-1, also when comparing), and deletes what
# SRC no longer has. The verify pass compares content by checksum, so a
# difference with the same size and mtime is found; a copy counts only once
# it passed. In a delta pass a difference (a file rewritten within one
# timestamp tick during the precopy) is copied again by checksum, once, and
# verified again. A first copy into an empty target moves the bulk with GNU
# cp -a before rsync (see cp_pair).
#
# Devices: a pair of block devices is copied whole, only in a full pass
# (the workload must be stopped: there is no delta of a device). SRC's bytes
# (its size, N) go into DST's first N bytes; DST may be larger (the rest is
# left as it is), not smaller (exit 3 before anything is written;
# TARGET-BYTES does not apply, DST's own size decides). dd in 1 MiB blocks,
# flushed (fsync) every CHUNK; then the verify pass compares sha256 sums of
# both devices' first N bytes, read with O_DIRECT where dd and the device
# allow it (so DST's bytes come from the device, not from the page cache).
# A device counts as one entry of N bytes in the totals.
#
# Output: "SOP-PROGRESS bytes=N files=N totalBytes=N totalFiles=N" while
# copying, at most about every 2 s, and once more at the end (totals: the
# regular files' and symlinks' sizes, every name of a hard link counted, and
# all entries, from rsync's own count before the copy; summed over all
# pairs). The last line is "SOP-RESULT ok" or "SOP-RESULT fail REASON".
# Exit status: 0 ok, 2 usage, 3 the data does not fit, 4 verification found
# differences, 5 rsync (or the environment) failed.
#
# Needs a POSIX sh, awk, du, df, tr (busybox or GNU), rsync >= 3.1.3 built with
# ACL and xattr support (for directories), dd, sha256sum, stat and blockdev
# (or /sys) for devices, and a writable $TMPDIR (a few small files). Run as
# root to keep owners, setuid bits and trusted.* xattrs.

set -u
LC_ALL=C
export LC_ALL

tmp=""
rsync_pid=""
stream=""

say() {
	printf 'copy: %s\n' "$*"
}

cleanup() {
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
		tmp=""
	fi
}

# Stops a copy in flight, and waits until its output is read.
stop_rsync() {
	if [ -n "$tmp" ] && [ -s "$tmp/pid" ]; then
		read -r rsync_pid <"$tmp/pid" && kill "$rsync_pid" 2>/dev/null
	fi
	if [ -n "$stream" ]; then
		wait "$stream" 2>/dev/null
		stream=""
	fi
}

# finish CODE [REASON...]: prints the result line, the last one, and exits.
finish() {
	code=$1
	shift
	stop_rsync
	cleanup
	if [ "$code" -eq 0 ]; then
		result="SOP-RESULT ok"
	else
		result="SOP-RESULT fail $(printf '%s' "$*" | tr '\n\r\t' '   ' | cut -c1-200)"
	fi
	echo "$result"
	# In a pod, the totals and the result go to the termination message too,
	# which the operator reads from the pod's status (no log access needed).
	term=${SOP_TERMINATION_LOG-/dev/termination-log}
	if [ -n "$term" ] && [ -w "$term" ]; then
		printf 'SOP-PROGRESS bytes=%s files=%s totalBytes=%s totalFiles=%s\n%s\n' \
			"${done_bytes:-0}" "${done_files:-0}" "${total_bytes:-0}" "${total_files:-0}" "$result" >"$term" 2>/dev/null
	fi
	exit "$code"
}

usage() {
	say "usage: sh copy.sh full|precopy|delta TARGET-BYTES SRC DST [SRC DST]... (directories, or block devices)"
	say "$1"
	finish 2 "usage: $1"
}

trap 'finish 5 "interrupted by a signal"' HUP INT TERM
trap cleanup EXIT

# physical PATH: prints the absolute physical path of directory PATH (also
# when it ends in a newline); empty if it cannot be entered.
physical() {
	case $1 in
	/*) p=$1 ;;
	*) p=./$1 ;;
	esac
	p=$(cd "$p" 2>/dev/null && pwd -P && echo .) || return 0
	printf '%s' "${p%??}"
}

if [ $# -lt 4 ] || [ $(($# % 2)) -ne 0 ]; then
	usage "expected a pass, the target size in bytes and pairs of directories"
fi
pass=$1
target=$2
shift 2
case $pass in
full | precopy | delta) ;;
*) usage "unknown pass '$pass' (full, precopy or delta)" ;;
esac
case $target in
'' | *[!0-9]*) usage "target-bytes must be a whole number of bytes (0: unknown)" ;;
esac
[ ${#target} -le 18 ] || usage "target-bytes is too large"

# device_id DEV: its major:minor (hex), empty if unknown.
device_id() {
	stat -L -c '%t:%T' "$1" 2>/dev/null
}

# device_bytes DEV: its size in bytes, empty if unknown.
device_bytes() {
	b=$(blockdev --getsize64 "$1" 2>/dev/null) || b=""
	case $b in
	'' | *[!0-9]*)
		b=""
		id=$(device_id "$1")
		case $id in
		*[!0-9a-f:]* | '' | :* | *:) ;;
		*)
			# /sys counts 512-byte sectors, whatever the device's block size.
			read -r sectors <"/sys/dev/block/$((0x${id%:*})):$((0x${id#*:}))/size" 2>/dev/null &&
				case $sectors in '' | *[!0-9]*) ;; *) b=$((sectors * 512)) ;; esac
			;;
		esac
		;;
	esac
	printf '%s' "$b"
}

npairs=0
ndevices=0
while [ $# -gt 0 ]; do
	npairs=$((npairs + 1))
	if [ -b "$1" ] || [ -b "$2" ]; then
		[ -b "$1" ] || usage "source $1 is not a block device, target $2 is one: pair devices with devices"
		[ -b "$2" ] || usage "target $2 is not a block device, source $1 is one: pair devices with devices"
		[ "$(device_id "$1")" != "$(device_id "$2")" ] || usage "target $2 is the source device $1"
		[ "$pass" = full ] ||
			usage "pass $pass: $1 is a block device, which is copied whole while the workload is stopped (pass full)"
		eval "src_$npairs=\$1; dst_$npairs=\$2; dev_$npairs=1"
		ndevices=$((ndevices + 1))
		shift 2
		continue
	fi
	[ -d "$1" ] || usage "source $1 is not a directory"
	[ -d "$2" ] || usage "target $2 is not a directory"
	s=$(physical "$1")
	d=$(physical "$2")
	[ -n "$s" ] || usage "cannot enter source $1"
	[ -n "$d" ] || usage "cannot enter target $2"
	case "$d/" in "$s/"*) usage "target $2 is the source $1 or inside it" ;; esac
	case "$s/" in "$d/"*) usage "source $1 is inside target $2" ;; esac
	eval "src_$npairs=\$s; dst_$npairs=\$d; dev_$npairs=0"
	shift 2
done

[ "$ndevices" -eq "$npairs" ] || command -v rsync >/dev/null 2>&1 || finish 5 "rsync not found"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sop-copy.XXXXXX" 2>/dev/null) || tmp=""
if [ -z "$tmp" ]; then
	tmp=${TMPDIR:-/tmp}/sop-copy.$$
	rm -rf "$tmp" # ours: no live process has our pid
	mkdir -m 700 "$tmp" 2>/dev/null || {
		tmp=""
		finish 5 "cannot create a temporary directory in ${TMPDIR:-/tmp}"
	}
fi

# Lines must reach awk as rsync writes them: progress lines end in \r, and
# GNU tr buffers its output unless stdbuf says otherwise; mawk reads ahead
# unless interactive. busybox tr and awk, and gawk, pass lines on at once.
unbuffer=""
if command -v stdbuf >/dev/null 2>&1 && stdbuf -o0 true 2>/dev/null; then
	unbuffer=stdbuf
fi
case $(awk -W version 2>&1 </dev/null) in
*mawk*) awk_interactive=1 ;;
*) awk_interactive=0 ;;
esac
split_lines() {
	if [ -n "$unbuffer" ]; then
		stdbuf -o0 tr '\r' '\n'
	else
		tr '\r' '\n'
	fi
}
stream_awk() {
	if [ "$awk_interactive" = 1 ]; then
		awk -W interactive "$@"
	else
		awk "$@"
	fi
}

pair() { # pair I: sets $s and $d to pair I's source and target, $dev to 1 for devices
	eval "s=\$src_$1; d=\$dst_$1; dev=\$dev_$1"
}

# --- Totals and the fit check: read only, before anything is written. ---

# A precopy's start, for its mark (see "The precopy's check" below): 10 s
# early, against coarse file timestamps and small clock steps.
since=$(($(date +%s) - 10))

total_bytes=0
total_files=0
: >"$tmp/fit"
i=1
while [ $i -le $npairs ]; do
	pair $i
	if [ "$dev" = 1 ]; then
		i=$((i + 1))
		continue
	fi
	# A target holding nothing (or only an empty lost+found, as mkfs leaves
	# it) gets its first copy by cp (see cp_pair). Only one that ls read and
	# found empty ("?": it failed): an unreadable target may hold an earlier
	# attempt's files, into which cp must not write.
	empty=0
	case $({ ls -A -- "$d" 2>/dev/null || echo '?'; } | head -n 2) in
	'') empty=1 ;;
	lost+found) [ -n "$({ ls -A -- "$d/lost+found" 2>/dev/null || echo '?'; } | head -n 1)" ] || empty=1 ;;
	esac
	# rsync's own count: the same entries and sizes the copy reports.
	if ! rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --dry-run --stats --no-h "$s/" "$d/" >"$tmp/stats" 2>"$tmp/stats.err"; then
		cat "$tmp/stats.err"
		finish 5 "rsync failed listing pair $i: $(head -n 1 "$tmp/stats.err")"
	fi
	read -r files bytes created deleted <<EOF
$(awk -F': ' '
		function num(v) { sub(/ .*/, "", v); gsub(/,/, "", v); return v + 0 }
		/^Number of files:/ { files = num($2) }
		/^Number of created files:/ { created = num($2) }
		/^Number of deleted files:/ { deleted = num($2) }
		/^Total file size:/ { bytes = num($2) }
		END { printf "%.0f %.0f %.0f %.0f\n", files, bytes, created, deleted }' "$tmp/stats")
EOF
	total_files=$((total_files + files))
	total_bytes=$((total_bytes + bytes))
	eval "files_$i=\$files; bytes_$i=\$bytes; empty_$i=\$empty"
	need=$(du -skx "$s" | awk 'NR == 1 { print $1 }')
	held=$(du -skx "$d" | awk 'NR == 1 { print $1 }')
	# The filesystem's line: device and mount point name it, the rest is numbers.
	space=$(df -Pk "$d" | awk 'NR == 2 { avail = $4; k = $0; sub(/ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+% +/, " ", k); print avail "\t" k }')
	[ -n "$space" ] || finish 5 "cannot read the free space of the target of pair $i (df)"
	inodes=$(df -Pi "$d" 2>/dev/null | awk 'NR == 2 { print $2 "\t" $4 }')
	[ -n "$inodes" ] || inodes="0	0"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "${need:-0}" "${held:-0}" "$created" "$deleted" "$inodes" "$space" >>"$tmp/fit"
	i=$((i + 1))
done

# Per target filesystem: fields i, need KiB, held KiB, created, deleted,
# inodes, free inodes, available KiB, filesystem.
awk -F '\t' -v target="$target" '
	{
		k = $9
		if (!(k in need)) { order[++n] = k; pairs[k] = $1 } else pairs[k] = pairs[k] "," $1
		need[k] += $2; held[k] += $3; newi[k] += $4 - $5
		inodes[k] = $6; ifree[k] = $7; avail[k] = $8
	}
	END {
		for (j = 1; j <= n; j++) {
			k = order[j]
			room = (avail[k] + held[k]) * 1024
			limit = room
			if (target + 0 > 0 && target + 0 < limit)
				limit = target + 0
			if (need[k] * 1024 > limit)
				printf "pair %s needs %.0f bytes (allocated), the target can take %.0f bytes (target-bytes %.0f, filesystem: %.0f bytes free + %.0f bytes already in the target)\n", pairs[k], need[k] * 1024, limit, target, avail[k] * 1024, held[k] * 1024
			else if (inodes[k] > 0 && newi[k] > ifree[k])
				printf "pair %s needs %.0f more inodes, the target filesystem has %.0f free\n", pairs[k], newi[k], ifree[k]
		}
	}' "$tmp/fit" >"$tmp/nofit"
# Devices: the source's bytes into the target's first ones.
i=1
while [ $i -le $npairs ]; do
	pair $i
	if [ "$dev" = 1 ]; then
		n=$(device_bytes "$s")
		t=$(device_bytes "$d")
		[ -n "$n" ] && [ -n "$t" ] || finish 5 "cannot read the size of device $s or $d (blockdev --getsize64)"
		[ $((n % 512)) -eq 0 ] || finish 5 "device $s has $n bytes, not a whole number of 512-byte sectors"
		if [ "$t" -lt "$n" ]; then
			echo "pair $i: source device $s has $n bytes, target device $d only $t; a device is copied whole, into one at least as large" >>"$tmp/nofit"
		fi
		eval "bytes_$i=\$n"
		total_files=$((total_files + 1))
		total_bytes=$((total_bytes + n))
	fi
	i=$((i + 1))
done
if [ -s "$tmp/nofit" ]; then
	while IFS= read -r line; do
		say "does not fit: $line"
	done <"$tmp/nofit"
	finish 3 "does not fit: $(head -n 1 "$tmp/nofit")"
fi

# --- Copy ---

done_bytes=0
done_files=0
cur_bytes=0
cur_files=0

progress() {
	if [ -s "$tmp/state" ] && read -r b f <"$tmp/state" 2>/dev/null; then
		case "$b.$f" in
		*[!0-9.]* | .* | *.) ;;
		*)
			cur_bytes=$b
			cur_files=$f
			;;
		esac
	fi
	# After a first copy by cp, rsync counts the pair again from 0: never back.
	[ "$cur_bytes" -ge "$floor_bytes" ] || cur_bytes=$floor_bytes
	[ "$cur_files" -ge "$floor_files" ] || cur_files=$floor_files
	echo "SOP-PROGRESS bytes=$((done_bytes + cur_bytes)) files=$((done_files + cur_files)) totalBytes=$total_bytes totalFiles=$total_files"
}
floor_bytes=0
floor_files=0

# The loops that watch cp or rsync report every 2 s and end as soon as the
# job does: the job's subshell sends USR1 when it ends, which cuts the wait
# for the nap short. One sleep per report, not a poll every 0.2 s: under a
# tight CPU limit (copy-resources) a fork per tick starved the reports.
job_ended=0
trap 'job_ended=1' USR1
nap() { # the flag is taken once: a late signal costs one early report, never a busy loop
	if [ "$job_ended" = 1 ]; then
		job_ended=0
		return 0
	fi
	sleep 2 &
	napper=$!
	wait "$napper" 2>/dev/null
	kill "$napper" 2>/dev/null
	napper=""
}

# cp_pair I: the first copy of pair I, of large files, into an empty target by GNU cp -a
# (links, xattrs and ACLs, holes, owners by number, nanosecond times, one
# file system), about twice as fast as rsync on large files (bench/copy-scale:
# one process reading and writing, no pipe between two). It is only the bulk:
# the rsync that follows (copy_pair) makes the target exact, deleting,
# fixing attributes and copying what changed meanwhile or what cp could not,
# and the verification judges the result. Progress: the bytes the target's
# file system gained, the entries in proportion. $SOP_COPY_CP=0 turns it off.
cp_pair() {
	pair "$1"
	eval "pb=\$bytes_$1; pf=\$files_$1"
	base=$(used_kib "$d")
	case $base in '' | *[!0-9]*) return 0 ;; esac
	rm -f "$tmp/cp.rc" "$tmp/cp.err"
	job_ended=0
	{
		cp -a --one-file-system -- "$s/." "$d/" 2>"$tmp/cp.err" &
		echo $! >"$tmp/pid"
		wait $!
		echo $? >"$tmp/cp.rc"
		kill -USR1 $$ 2>/dev/null
	} &
	cp_job=$!
	while [ ! -s "$tmp/cp.rc" ] && kill -0 "$cp_job" 2>/dev/null; do
		nap
		[ ! -s "$tmp/cp.rc" ] || break
		used=$(used_kib "$d")
		case $used in '' | *[!0-9]*) continue ;; esac
		b=$(((used - base) * 1024))
		[ $b -le "$pb" ] || b=$pb
		[ $b -ge 0 ] || b=0
		floor_bytes=$b
		floor_files=0
		[ "$pb" -eq 0 ] || floor_files=$((pf * (b / 1024) / (pb / 1024 + 1)))
		progress
	done
	wait "$cp_job"
	rm -f "$tmp/pid"
	cprc=99
	[ -s "$tmp/cp.rc" ] && read -r cprc <"$tmp/cp.rc"
	if [ "$cprc" -eq 0 ]; then
		say "pair $1: first copy by cp -a; rsync makes it exact"
	else
		say "pair $1: cp stopped (exit $cprc: $(head -n 1 "$tmp/cp.err" | tr -d '\r' | cut -c1-200)); rsync copies the rest"
	fi
}

# used_kib DIR: KiB in use on DIR's file system (GNU stat, as cp_pair is).
used_kib() {
	# shellcheck disable=SC2046 # three numbers, split on purpose
	set -- $(stat -f -c '%b %f %S' -- "$1" 2>/dev/null)
	[ $# -eq 3 ] || return 0
	case "$1$2$3" in *[!0-9]*) return 0 ;; esac
	echo $((($1 - $2) * $3 / 1024))
}

# Whether cp_pair may run: GNU cp (busybox cp keeps no ACLs or holes).
use_cp=0
if [ "${SOP_COPY_CP:-1}" != 0 ] && cp --version 2>/dev/null | head -n 1 | grep -q GNU; then
	use_cp=1
fi

# copy_pair I: one rsync of pair I with progress; sets rc and rsync_error.
# Per entry rsync logs "SOP-ITEM <itemize> <size>" (name2: unchanged ones
# too) and, while moving data, "<bytes moved> <pct>% ..." (progress2). Done
# bytes: the sizes of entries that needed no data plus the bytes moved; awk
# keeps them in $tmp/state for the reports.
copy_pair() {
	pair "$1"
	rm -f "$tmp/rc" "$tmp/pid" "$tmp/error" "$tmp/done"
	: >"$tmp/state"
	job_ended=0
	cur_bytes=0
	cur_files=0
	{
		rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --whole-file --no-h --info=progress2,name2 \
			--out-format='SOP-ITEM %i %l' "$s/" "$d/" 2>&1 &
		echo $! >"$tmp/pid"
		wait $!
		echo $? >"$tmp/rc"
	} | split_lines | stream_awk -v state="$tmp/state" -v errfile="$tmp/error" -v donefile="$tmp/done" -v parent=$$ '
		function save() {
			printf "%.0f %.0f\n", unmoved + moved, files > state
			close(state)
			pending = 0
			saved = unmoved + moved
		}
		/^SOP-ITEM / {
			y = substr($0, 10, 1)
			if (y == "*")
				next
			files++
			pending++
			x = substr($0, 11, 1)
			if (y != ">" && (x == "f" || x == "L"))
				unmoved += $NF
			if (pending >= 100)
				save()
			next
		}
		/^ *[0-9]+ +[0-9]+% / {
			moved = $1 + 0
			if (index($0, "xfr#") == 0 || unmoved + moved - saved >= 8388608)
				save()
			next
		}
		/[^ ]/ {
			print
			fflush()
			if (first == "" && $0 ~ /^rsync: /)
				first = $0
			last = $0
		}
		END {
			save()
			if (first == "")
				first = last
			if (first != "")
				print first > errfile
			print "" > donefile
			close(donefile)
			system("kill -USR1 " parent " 2>/dev/null")
		}' &
	stream=$!
	while [ ! -e "$tmp/done" ] && kill -0 "$stream" 2>/dev/null; do
		nap
		[ ! -e "$tmp/done" ] || break
		progress
	done
	wait "$stream"
	stream=""
	rc=99
	[ -s "$tmp/rc" ] && read -r rc <"$tmp/rc"
	rm -f "$tmp/pid"
	rsync_error=""
	[ -s "$tmp/error" ] && IFS= read -r rsync_error <"$tmp/error"
	progress >/dev/null # take the final state
	rm -f "$tmp/state"
	done_bytes=$((done_bytes + cur_bytes))
	done_files=$((done_files + cur_files))
	cur_bytes=0
	cur_files=0
}

# Devices go in chunks of CHUNK_MIB MiB, each flushed to the device before
# the next (so the copy's dirty pages stay few), with a progress report
# every ~2 s between chunks. $SOP_COPY_CHUNK_MIB sets another size (tests).
CHUNK_MIB=${SOP_COPY_CHUNK_MIB:-128}
case $CHUNK_MIB in '' | 0* | *[!0-9]*) CHUNK_MIB=128 ;; esac

# copy_device I: pair I's source device's bytes into its target's first ones.
copy_device() {
	pair "$1"
	eval "n=\$bytes_$1"
	mib=$((n / 1048576))
	off=0
	cur_bytes=0
	cur_files=0
	last=$(date +%s)
	while [ $off -lt $mib ]; do
		c=$((mib - off))
		[ $c -le $CHUNK_MIB ] || c=$CHUNK_MIB
		dd if="$s" of="$d" bs=1048576 skip=$off seek=$off count=$c conv=notrunc,fsync 2>"$tmp/dd.err" ||
			finish 5 "dd failed copying device pair $1 at MiB $off: $(tail -n 1 "$tmp/dd.err")"
		off=$((off + c))
		cur_bytes=$((off * 1048576))
		now=$(date +%s)
		if [ $((now - last)) -ge 2 ]; then
			last=$now
			progress
		fi
	done
	rest=$(((n - mib * 1048576) / 512))
	if [ $rest -gt 0 ]; then
		dd if="$s" of="$d" bs=512 skip=$((mib * 2048)) seek=$((mib * 2048)) count=$rest conv=notrunc,fsync \
			2>"$tmp/dd.err" || finish 5 "dd failed copying the last bytes of device pair $1: $(tail -n 1 "$tmp/dd.err")"
	fi
	done_bytes=$((done_bytes + n))
	done_files=$((done_files + 1))
	cur_bytes=0
}

# read_range DEV N TAG: DEV's first N bytes (whole sectors) to stdout, with
# $direct; $tmp/TAG.fail says why it failed.
read_range() {
	m=$(($2 / 1048576))
	r=$(($2 - m * 1048576))
	bs=512
	[ $((r % 4096)) -ne 0 ] || bs=4096
	if ! dd if="$1" bs=1048576 count=$m $direct 2>"$tmp/$3.err"; then
		tail -n 1 "$tmp/$3.err" >"$tmp/$3.fail"
	elif [ $r -gt 0 ] && ! dd if="$1" bs=$bs skip=$((m * 1048576 / bs)) count=$((r / bs)) $direct 2>"$tmp/$3.err"; then
		tail -n 1 "$tmp/$3.err" >"$tmp/$3.fail"
	fi
}

# verify_device I: sha256 of both devices' first N bytes, read side by side; sets ndiff.
verify_device() {
	pair "$1"
	eval "n=\$bytes_$1"
	direct=iflag=direct
	for x in "$s" "$d"; do
		dd if="$x" of=/dev/null bs=4096 count=1 $direct 2>/dev/null || direct=""
	done
	rm -f "$tmp/src.fail" "$tmp/dst.fail"
	read_range "$s" "$n" src | sha256sum >"$tmp/src.sum" &
	hashing=$!
	read_range "$d" "$n" dst | sha256sum >"$tmp/dst.sum"
	wait "$hashing"
	for x in src dst; do
		[ ! -s "$tmp/$x.fail" ] || finish 5 "dd failed reading the $x device of pair $1: $(cat "$tmp/$x.fail")"
	done
	read -r src_sum _ <"$tmp/src.sum"
	read -r dst_sum _ <"$tmp/dst.sum"
	ndiff=0
	if [ -z "$src_sum" ] || [ "$src_sum" != "$dst_sum" ]; then
		say "difference: the first $n bytes of $s (sha256 $src_sum) and $d (sha256 $dst_sum) differ"
		ndiff=1
	fi
}

# count_differences LABEL: reads rsync's itemized lines; prints the first 100
# as "copy: LABEL: ...", keeps them all in $tmp/diffs, and the count in $tmp/ndiff.
count_differences() {
	awk -v out="$tmp/ndiff" -v all="$tmp/diffs" -v label="$1" '
		{ n++; print > all; if (n <= 100) print "copy: " label ": " $0 }
		END {
			if (n > 100)
				printf "copy: ... and %d more\n", n - 100
			printf "%d\n", n > out
			close(all)
		}'
}

# read_differences I: sets ndiff from $tmp/ndiff; rsync's exit status from
# $tmp/rc (and $tmp/rc2 when there) must be 0.
read_differences() {
	for f in "$tmp/rc" "$tmp/rc2"; do
		[ -e "$f" ] || continue
		rc=99
		[ -s "$f" ] && read -r rc <"$f"
		[ "$rc" -eq 0 ] || finish 5 "rsync failed verifying pair $1 (exit $rc)"
	done
	ndiff=0
	[ -s "$tmp/ndiff" ] && read -r ndiff <"$tmp/ndiff"
}

# verify_pair I [LABEL]: a checksum dry-run of the whole pair that must list
# nothing: content is compared by checksum, not by size and mtime. Prints
# what it lists (the first 100 lines) and sets ndiff.
verify_pair() {
	pair "$1"
	rm -f "$tmp/rc" "$tmp/rc2" "$tmp/ndiff" "$tmp/diffs"
	{
		rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --dry-run --checksum --out-format='%i %n' --no-h "$s/" "$d/"
		echo $? >"$tmp/rc"
	} | count_differences "${2:-difference}"
	read_differences "$1"
}

# verify_changed I: after a checked precopy (since_I set), the delta pass's
# verification: every entry's metadata and names (size, mtime, owners, modes,
# links, ACLs, xattrs, deletions) over the whole pair, and by checksum the
# content of what changed in the source since the precopy started (ctime,
# which no write, rename, link or chmod can leave behind, and no program can
# set back). What did not change was checked by checksum after the precopy.
verify_changed() {
	pair "$1"
	eval "t=\$since_$1"
	rm -f "$tmp/rc" "$tmp/rc2" "$tmp/ndiff" "$tmp/diffs"
	(cd "$s" && find . -xdev ! -type d -newerct "@$t" -print0) >"$tmp/changed" ||
		finish 5 "find failed listing what changed in pair $1 since the precopy"
	# A file of the mark's name in the source replaced the mark in the target.
	[ ! -e "$s/$MARK" ] || printf './%s\000' "$MARK" >>"$tmp/changed"
	nchanged=$(tr -cd '\000' <"$tmp/changed" | wc -c)
	{
		rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --dry-run --out-format='%i %n' --no-h "$s/" "$d/"
		echo $? >"$tmp/rc"
		rsync -aHAXSx --numeric-ids --modify-window=-1 --dry-run --checksum --out-format='%i %n' --no-h \
			--from0 --files-from="$tmp/changed" "$s/" "$d/"
		echo $? >"$tmp/rc2"
	} | count_differences difference
	read_differences "$1"
	say "pair $1: checked every entry's metadata, and by checksum the content of the $nchanged file(s) changed since the precopy started"
}

# --- The precopy's check, and its mark (what lets the delta pass verify
# only what changed, so a replica's time down does not grow with its data) ---
#
# After copying, a precopy verifies the pair by checksum while the workload
# still runs. Every difference must be explained by a change to the source
# since the precopy started: the entry's ctime, or for a name gone from the
# source its directory's ctime, at or after $since (taken 10 s before the
# copy, against coarse timestamps and small clock steps). Then the precopy
# leaves $MARK in the target's root: "stateful-operator precopy since=T
# inode=N", N the mark's own inode number (a file of that name copied from
# the source cannot know it). The delta pass reads the mark before its copy
# deletes it (the source has no such file), and verifies by checksum only
# what changed since T. Without a valid mark (another precopy, a crash in
# between, a difference the precopy could not explain), or where the source
# is not a local file system whose ctimes come from this node's clock, the
# delta pass verifies everything by checksum, as a full pass does.
MARK=.stateful-operator-precopy

# local_ctimes DIR: whether DIR's file system keeps ctimes from this node's
# clock (disk file systems and tmpfs, not network or FUSE ones) and find can
# select by them.
local_ctimes() {
	case $(stat -f -c %T "$1" 2>/dev/null) in
	ext2/ext3 | ext4 | xfs | btrfs | f2fs | tmpfs | zfs) ;;
	*) return 1 ;;
	esac
	find "$1" -maxdepth 0 -newerct @0 >/dev/null 2>&1
}

# explained I: whether every difference in $tmp/diffs is a change to pair
# I's source since $since.
explained() {
	pair "$1"
	while IFS= read -r line; do
		name=${line#???????????}
		name=${name# }
		case $name in '' | *'\#'*) return 1 ;; esac
		p=$s/$name
		if [ ! -e "$p" ] && [ ! -L "$p" ]; then
			p=$(dirname -- "$p")
			[ -d "$p" ] || return 1
		fi
		c=$(stat -c %Z -- "$p" 2>/dev/null) || return 1
		case $c in '' | *[!0-9]*) return 1 ;; esac
		[ "$c" -ge "$since" ] || return 1
	done <"$tmp/diffs"
}

# write_mark I: the mark in pair I's target root.
write_mark() {
	pair "$1"
	m=$d/$MARK
	rm -rf -- "$m" && : >"$m" || return 1
	ino=$(stat -c %i -- "$m") || return 1
	printf 'stateful-operator precopy since=%s inode=%s\n' "$since" "$ino" >"$m"
}

# read_mark I: sets since_I from a valid mark in pair I's target, or to "".
read_mark() {
	pair "$1"
	eval "since_$1="
	m=$d/$MARK
	[ -f "$m" ] && [ ! -L "$m" ] && local_ctimes "$s" || return 0
	line=$(head -c 100 -- "$m" | head -n 1)
	case $line in "stateful-operator precopy since="*" inode="*) ;; *) return 0 ;; esac
	t=${line#*since=}
	t=${t%% *}
	ino=${line##*inode=}
	case "$t.$ino" in *[!0-9.]* | .* | *.) return 0 ;; esac
	[ "$ino" = "$(stat -c %i -- "$m" 2>/dev/null)" ] || return 0
	now=$(date +%s)
	# Not in the future (a clock stepped back), nor older than 30 days.
	[ "$t" -le "$now" ] && [ "$t" -ge $((now - 2592000)) ] || return 0
	eval "since_$1=\$t"
}

# repair_pair I: copies again what differs by content (checksums both trees).
repair_pair() {
	pair "$1"
	rm -f "$tmp/rc"
	{
		rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --whole-file --checksum --itemize-changes --no-h "$s/" "$d/"
		echo $? >"$tmp/rc"
	} | awk '{ n++; if (n <= 100) print "copy: copied again: " $0 }'
	rc=99
	[ -s "$tmp/rc" ] && read -r rc <"$tmp/rc"
	[ "$rc" -eq 0 ] || finish 5 "rsync failed copying pair $1 again (exit $rc)"
}

# The delta pass reads each target's mark before its copy deletes it.
i=1
while [ $i -le $npairs ]; do
	pair $i
	eval "since_$i="
	[ "$dev" = 1 ] || [ "$pass" != delta ] || read_mark $i
	i=$((i + 1))
done

say "$pass pass: $npairs pair(s), $total_files entries, $total_bytes bytes"
progress
i=1
while [ $i -le $npairs ]; do
	pair $i
	if [ "$dev" = 1 ]; then
		copy_device $i
		i=$((i + 1))
		continue
	fi
	eval "empty=\$empty_$i; pb=\$bytes_$i; pf=\$files_$i"
	# cp only where files are large (1 MiB on average): on many small files
	# rsync's two processes, one reading and one writing, beat cp's one
	# (bench/copy-scale, 200,000 files: rsync 36 s, cp -a 55 s).
	if [ "$use_cp" = 1 ] && [ "$empty" = 1 ] && [ "$pass" != delta ] && [ $((pb / (pf + 1))) -ge 1048576 ]; then
		cp_pair $i
	fi
	copy_pair $i
	floor_bytes=0
	floor_files=0
	case $rc in
	0) ;;
	24)
		# Files vanished during the copy: expected while the workload runs.
		[ "$pass" = precopy ] || finish 5 "files vanished while copying pair $i: is the source still in use?"
		say "pair $i: some files vanished during the precopy; the delta pass copies what is left"
		;;
	*) finish 5 "rsync failed copying pair $i (exit $rc): $rsync_error" ;;
	esac
	i=$((i + 1))
done
progress

# The precopy's check, while the workload runs; its mark spares the delta
# pass (the workload stopped) a checksum of what did not change.
if [ "$pass" = precopy ]; then
	i=1
	while [ $i -le $npairs ]; do
		pair $i
		if [ "$dev" = 0 ] && local_ctimes "$s"; then
			verify_pair $i "changed while copying"
			if [ "$ndiff" -ne 0 ] && ! explained $i; then
				say "pair $i: a difference the source's changes since the precopy started do not explain; the delta pass verifies everything by checksum"
			elif ! write_mark $i; then
				say "pair $i: cannot write $MARK in the target; the delta pass verifies everything by checksum"
			fi
		fi
		i=$((i + 1))
	done
fi

if [ "$pass" != precopy ]; then
	i=1
	while [ $i -le $npairs ]; do
		pair $i
		if [ "$dev" = 1 ]; then
			verify_device $i
			[ "$ndiff" -eq 0 ] || finish 4 "verification found $ndiff difference(s) in pair $i: the devices' first $n bytes differ"
			i=$((i + 1))
			continue
		fi
		if eval "[ -n \"\$since_$i\" ]"; then
			verify_changed $i
		else
			verify_pair $i
		fi
		if [ "$ndiff" -gt 0 ] && [ "$pass" = delta ]; then
			say "pair $i: $ndiff difference(s) after the delta copy; copying them again by checksum"
			repair_pair $i
			verify_pair $i
		fi
		[ "$ndiff" -eq 0 ] || finish 4 "verification found $ndiff difference(s) in pair $i"
		i=$((i + 1))
	done
	say "verified: the target is identical to the source"
fi
finish 0
