#!/usr/bin/env bash
# The copy script (src/controllers/resize/copy_script.sh) on real files, as
# root:
#
#   tests/copy/copy_script_test.sh build/stateful-operator
#
# It writes the script with `stateful-operator copy-script`, builds a tree
# with everything a volume may hold (hard links within and across
# directories, every kind of symlink, sparse files, user xattrs, ACLs with
# default ACLs, awkward names, 60 levels of directories, empty files and
# directories, a 200 MB file, setuid/sticky/0000 modes, owners that exist
# nowhere, old and nanosecond mtimes, a FIFO), and checks by the trees'
# manifests (tree-manifest, built beside the binary: content, metadata,
# xattrs and ACLs, hard-link groups, holes) that:
#   - a full pass copies it exactly and stays sparse, under dash with GNU
#     tools and under busybox sh with busybox tools;
#   - precopy, changes to the source, then delta gives the same tree again
#     (deleted files gone);
#   - verification finds a target byte changed with size and mtime kept
#     (full: exit 4; delta: copied again by checksum);
#   - the fit check refuses data that does not fit (exit 3) and writes
#     nothing; the limit is the allocated size, exactly;
#   - progress lines add up to the totals, come at most about every 2 s,
#     and move within a large file; two pairs add up;
#   - usage errors exit 2, a missing rsync 5, SIGTERM stops rsync;
#   - block devices (loop devices on files here): data written at several
#     offsets (and the zeros between) is identical after the copy, under dash
#     with GNU tools and under busybox; a larger target keeps its bytes past
#     the source's size; a smaller one is refused (exit 3) untouched; a byte
#     the write path changed is caught by the verification (exit 4); a
#     device paired with a directory, another pass than full, or a device
#     with itself are usage errors.
# Missing tools (rsync, setfacl, setfattr, busybox) fail the test; nothing is
# skipped. The last line is "copy-script: N passed, N failed".
set -uo pipefail

bin=${1:?usage: tests/copy/copy_script_test.sh path/to/stateful-operator}
manifest=$(dirname "$bin")/tree-manifest
passed=0
failed=0

pass() {
	passed=$((passed + 1))
	echo "ok: $*"
}
fail() {
	failed=$((failed + 1))
	echo "FAIL: $*"
}
# check DESCRIPTION COMMAND...: one check.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
	echo "copy-script: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

for tool in rsync setfacl getfacl setfattr getfattr busybox truncate dash losetup blockdev sha256sum; do
	command -v "$tool" >/dev/null || fail "required tool $tool is missing (scripts/install-deps installs it)"
done
[ -x "$bin" ] || fail "$bin is not executable"
[ -x "$manifest" ] || fail "$manifest is missing (cmake --build builds it)"
[ "$(id -u)" = 0 ] || fail "must run as root (owners, setuid bits)"
[ "$failed" -eq 0 ] || finish

work=$(mktemp -d /tmp/sop-copy-test.XXXXXX)
loops=()
# The loop devices first: their backing files are in $work.
trap 'for l in "${loops[@]}"; do losetup -d "$l"; done; rm -rf "$work"' EXIT
script=$work/copy.sh
"$bin" copy-script >"$script" || fail "stateful-operator copy-script failed"
check "copy-script prints a sh script" test "$(head -n 1 "$script")" = "#!/bin/sh"

# run NAME [ENV...] -- ARGS...: runs the script under dash; output in
# $work/NAME.out, exit status in $rc.
run() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	env "${envs[@]}" dash "$script" "$@" >"$work/$name.out" 2>&1
	rc=$?
}

last_line() { tail -n 1 "$work/$1.out"; }

expect_rc() { # NAME WANT
	if [ "$rc" -eq "$2" ]; then
		pass "$1: exit $2"
	else
		fail "$1: exit $rc, want $2; output:"
		tail -n 30 "$work/$1.out"
	fi
}

expect_last() { # NAME PATTERN (grep -E)
	if last_line "$1" | grep -qE "$2"; then
		pass "$1: last line matches $2"
	else
		fail "$1: last line '$(last_line "$1")' does not match $2"
	fi
}

# same_tree NAME A B: the trees' manifests are equal (and both could be made).
same_tree() {
	if ! "$manifest" "$2" >"$work/$1.a" || ! "$manifest" "$3" >"$work/$1.b"; then
		fail "$1: tree-manifest failed"
	elif diff "$work/$1.a" "$work/$1.b" >"$work/$1.diff"; then
		pass "$1: trees are identical ($(wc -l <"$work/$1.a") entries)"
	else
		fail "$1: trees differ:"
		head -n 40 "$work/$1.diff"
	fi
}

# differ_tree DESCRIPTION A B: the manifests differ (the manifest sees the change).
differ_tree() {
	local rc
	if ! "$manifest" "$2" >"$work/differ.a" || ! "$manifest" "$3" >"$work/differ.b"; then
		fail "$1: tree-manifest failed"
		return
	fi
	cmp -s "$work/differ.a" "$work/differ.b"
	rc=$?
	case $rc in
	1) pass "$1" ;;
	0) fail "$1: the manifests are equal" ;;
	*) fail "$1: cmp failed ($rc)" ;;
	esac
}

empty_dir() { # NAME DIR
	if [ -z "$(ls -A "$2")" ]; then pass "$1: the target is still empty"; else
		fail "$1: the target is not empty:"
		ls -lA "$2" | head
	fi
}

# progress_adds_up NAME: the progress lines are well formed, never go
# backwards, and the last one reaches the totals.
progress_adds_up() {
	awk -v name="$1" '
		/^SOP-PROGRESS / {
			n++
			if ($0 !~ /^SOP-PROGRESS bytes=[0-9]+ files=[0-9]+ totalBytes=[0-9]+ totalFiles=[0-9]+$/) { print name ": bad line: " $0; bad = 1 }
			split($0, f, /[ =]/)
			if (f[3] + 0 < b || f[5] + 0 < fl) { print name ": progress went back: " $0; bad = 1 }
			b = f[3] + 0; fl = f[5] + 0; tb = f[7]; tf = f[9]
		}
		END {
			if (n < 2) { print name ": " n " progress lines"; exit 1 }
			if (b != tb || fl != tf) { print name ": last progress " b "/" fl " is not the totals " tb "/" tf; exit 1 }
			exit bad
		}' "$work/$1.out"
}

# ---- the manifest sees every kind of difference ----

m=$work/manifest-self
mkdir -p "$m/a"
printf 'content one\n' >"$m/a/f"
ln "$m/a/f" "$m/a/g"
truncate -s 1M "$m/a/hole"
touch -d '2001-01-01 00:00:00.1' "$m/a/f" "$m/a/hole" "$m/a"
mutations=(
	"printf 'content two\\n' | dd of=f conv=notrunc status=none; touch -d '2001-01-01 00:00:00.1' f"
	"touch -d '2001-01-01 00:00:00.2' f"
	"chmod 0600 f"
	"chown 1:1 f"
	"setfattr -n user.x -v 1 f"
	"setfacl -m u:4242:r f"
	"setfacl -d -m u:4242:r ."
	"rm g; cp -p f g; touch -d '2001-01-01 00:00:00.1' ."
	"cp -p --sparse=never hole hole.tmp; mv hole.tmp hole; touch -d '2001-01-01 00:00:00.1' ."
	"touch -d '2001-01-01 00:00:00.2' ."
	"mv f 'f '; touch -d '2001-01-01 00:00:00.1' ."
)
for i in "${!mutations[@]}"; do
	rm -rf "$m/b"
	cp -a "$m/a" "$m/b"
	(cd "$m/b" && eval "${mutations[$i]}") || fail "manifest self-test: mutation failed: ${mutations[$i]}"
	differ_tree "manifest sees: ${mutations[$i]}" "$m/a" "$m/b"
done
rm -rf "$m/b"
cp -a "$m/a" "$m/b"
same_tree "manifest: cp -a copies equal" "$m/a" "$m/b"

# ---- the tree ----

src=$work/src
mkdir -p "$src"
(
	set -e
	cd "$src"
	mkdir -p a b c/d empty1 empty2/inner
	echo "plain text" >a/plain
	: >empty-file
	: >a/empty-too
	echo "linked content" >a/h1
	ln a/h1 a/h2
	ln a/h1 b/h3
	ln a/h1 h4
	echo "second group" >b/g1
	ln b/g1 c/d/g2
	ln -s ../a/h1 b/rel-link
	ln -s /etc/hostname abs-link
	ln -s nowhere/at/all dangling
	ln -s a dir-link
	ln -s . self-link
	# Sparse: 1 GiB with two islands of data, and 512 MiB of hole only.
	truncate -s 1G sparse-big
	head -c 1048576 /dev/urandom | dd of=sparse-big bs=1M seek=100 conv=notrunc status=none
	head -c 4096 /dev/urandom | dd of=sparse-big bs=4096 seek=$((1024 * 256 - 1)) conv=notrunc status=none
	truncate -s 512M sparse-hole
	head -c $((200 * 1024 * 1024)) /dev/urandom >large
	# xattrs, on files, a hard-linked file and a directory; binary values too.
	setfattr -n user.comment -v "a comment" a/plain
	setfattr -n user.binary -v 0x00ff10ee00 a/plain
	setfattr -n user.on-link-group -v yes a/h1
	setfattr -n user.dir -v "on a directory" c
	setfattr -n user.empty a/empty-too
	# POSIX ACLs: named users and groups that exist nowhere, a default ACL.
	setfacl -m u:54321:rwx,g:65432:r-x,m::rwx a/plain
	setfacl -m u:1234:r-- b/g1
	mkdir acl-dir
	setfacl -m u:54321:rwx acl-dir
	setfacl -d -m u:54321:rwx,g:65432:rx,o::- acl-dir
	echo inherits >acl-dir/child
	mkdir acl-dir/subdir
	# Awkward names.
	echo space >"with space"
	echo newline >"$(printf 'new\nline')"
	echo tab >"$(printf 'tab\there')"
	echo utf8 >"ünïcødé-日本語-😀"
	echo dash >-rf
	echo dashes >--help
	echo star >'*?[]'
	echo quote >"quote'\"\\back"
	mkdir -- "-dir with space"
	echo inner >"-dir with space/-x"
	# 60 levels deep.
	deep=deep
	for i in $(seq 1 60); do deep=$deep/l$i; done
	mkdir -p "$deep"
	echo bottom >"$deep/file"
	# Modes and owners.
	echo suid >setuid
	chmod 4755 setuid
	echo sgid >setgid
	chmod 2711 setgid
	mkdir sticky
	chmod 1777 sticky
	echo nothing >mode-0000
	chmod 0000 mode-0000
	mkdir locked
	echo secret >locked/inside
	chmod 0000 locked
	echo nobody >owned
	chown 54321:65432 owned
	chown -h 43210:43211 abs-link
	chown 12345:12346 b
	mkfifo fifo
	# mtimes: old, before 1970, far ahead, nanoseconds, symlinks too.
	touch -d '1990-05-06 07:08:09' a/plain
	touch -d '1965-03-04 05:06:07.123456789' owned
	touch -d '2099-12-31 23:59:59.999999999' -- -rf
	touch -h -d '2001-02-03 04:05:06.5' b/rel-link
	touch -d '2010-01-01 00:00:00.000000001' large
	# Directories last: creating entries moves their mtime.
	find . -depth -type d -name 'l[0-9]*' -exec touch -d '2005-05-05 05:05:05.555555555' {} +
	touch -d '1999-09-09 09:09:09.9' a b c c/d empty1 empty2 empty2/inner acl-dir sticky locked .
) || fail "building the source tree failed"
[ "$failed" -eq 0 ] || finish
src_kib=$(du -sk "$src" | cut -f1)
echo "source tree: $("$manifest" "$src" | wc -l) entries, $src_kib KiB allocated, $(du -sk --apparent-size "$src" | cut -f1) KiB apparent"

# ---- full pass, GNU tools ----

mkdir "$work/dst-full"
SECONDS=0
run full -- full 0 "$src" "$work/dst-full"
elapsed=$SECONDS
expect_rc full 0
expect_last full '^SOP-RESULT ok$'
same_tree full "$src" "$work/dst-full"
check "full: progress adds up" progress_adds_up full
check "full: the first copy went by cp -a" grep -q '^copy: pair 1: first copy by cp -a; rsync makes it exact$' "$work/full.out"

# The same with rsync alone (a target that is not empty, busybox's cp, or
# SOP_COPY_CP=0): the same tree.
mkdir "$work/dst-rsync"
run rsync-only SOP_COPY_CP=0 -- full 0 "$src" "$work/dst-rsync"
expect_rc rsync-only 0
same_tree rsync-only "$src" "$work/dst-rsync"
check "rsync-only: no cp" bash -c "! grep -q 'by cp' '$work/rsync-only.out'"
rm -rf "$work/dst-rsync"
check "full: at most one progress line per 2 s (+2)" \
	test "$(grep -c '^SOP-PROGRESS ' "$work/full.out")" -le $((elapsed / 2 + 2))
kib=$(du -sk "$work/dst-full/sparse-big" | cut -f1)
check "full: sparse-big is still sparse in the target ($kib KiB allocated of 1 GiB)" test "$kib" -lt 8192
kib=$(du -sk "$work/dst-full/sparse-hole" | cut -f1)
check "full: sparse-hole allocates nothing in the target ($kib KiB)" test "$kib" -le 4
check "full: the ACL of a/plain reads the same" \
	test "$(cd "$src" && getfacl -n a/plain 2>/dev/null)" = "$(cd "$work/dst-full" && getfacl -n a/plain 2>/dev/null)"
check "full: the default ACL of acl-dir reads the same" \
	test "$(cd "$src" && getfacl -n -d acl-dir 2>/dev/null)" = "$(cd "$work/dst-full" && getfacl -n -d acl-dir 2>/dev/null)"

# ---- full pass again over the copy: nothing to do, still verified ----

run again -- full 0 "$src" "$work/dst-full"
expect_rc again 0
check "again: progress adds up over unchanged files" progress_adds_up again

# ---- verification: a changed byte with size and mtime kept ----

corrupt() { # FILE REFERENCE: flips a byte in FILE, keeps its size and mtime
	printf '\x5a' | dd of="$1" bs=1 seek=12345 conv=notrunc status=none
	[ "$(head -c 12346 "$1" | tail -c 1 | od -An -tx1 | tr -d ' ')" = 5a ] ||
		printf '\x5b' | dd of="$1" bs=1 seek=12345 conv=notrunc status=none
	touch -r "$2" "$1"
}
corrupt "$work/dst-full/large" "$src/large"
run verify -- full 0 "$src" "$work/dst-full"
expect_rc verify 4
expect_last verify '^SOP-RESULT fail verification found 1 difference'
check "verify: names the changed file" grep -q '^copy: difference: >fc.* large$' "$work/verify.out"

# ---- precopy, changes, delta ----

mkdir "$work/dst-delta"
run precopy -- precopy 0 "$src" "$work/dst-delta"
expect_rc precopy 0
expect_last precopy '^SOP-RESULT ok$'
check "precopy: does not verify" bash -c "! grep -q 'verified' '$work/precopy.out'"
check "precopy: checked, it leaves its mark in the target" \
	grep -qE "^stateful-operator precopy since=[0-9]+ inode=$(stat -c %i "$work/dst-delta/.stateful-operator-precopy")\$" \
	"$work/dst-delta/.stateful-operator-precopy"
(
	set -e
	cd "$src"
	echo "changed after the precopy" >>a/plain
	touch -d '1990-05-06 07:08:09' a/plain
	printf 'X' | dd of=large bs=1 seek=1000 conv=notrunc status=none
	rm -- -rf b/h3 "$(printf 'new\nline')"
	echo new >brand-new
	ln brand-new c/brand-new-link
	mv empty1 empty1-renamed
	chmod 0640 b/g1
	setfattr -n user.comment -v "changed" a/plain
	setfattr -x user.dir c
	setfacl -m u:999:rw- a/h1
	chown 777:778 owned
	truncate -s 2G sparse-big
	touch -d '1999-09-09 09:09:09.9' a b c .
) || fail "changing the source failed"
run delta -- delta 0 "$src" "$work/dst-delta"
expect_rc delta 0
expect_last delta '^SOP-RESULT ok$'
same_tree delta "$src" "$work/dst-delta"
check "delta: the deleted -rf is gone from the target" test ! -e "$work/dst-delta/-rf"
check "delta: the deleted hard link b/h3 is gone" test ! -e "$work/dst-delta/b/h3"
check "delta: progress adds up" progress_adds_up delta
check "delta: verified by checksum only what changed since the precopy" \
	grep -q '^copy: pair 1: checked every entry.s metadata, and by checksum the content of the [0-9]* file(s) changed' "$work/delta.out"

# After a precopy, a rewrite that keeps the file's size and mtime (within one
# timestamp tick of the precopy's read, or a program that sets the mtime
# back): its ctime still moved, so the delta pass checksums the file, finds
# the difference and copies it again.
tick=$work/tick
mkdir -p "$tick/src/old" "$tick/dst"
head -c 3000000 /dev/urandom >"$tick/src/old/f"
head -c 3000000 /dev/urandom >"$tick/src/g"
touch -d '2001-01-01' "$tick/src/old/f" "$tick/src/g" "$tick/src/old"
sleep 11 # past the precopy's 10 s of slack: these ctimes are older than it
run tick-precopy -- precopy 0 "$tick/src" "$tick/dst"
expect_rc tick-precopy 0
corrupt "$tick/src/old/f" "$tick/dst/old/f"
run tick-delta -- delta 0 "$tick/src" "$tick/dst"
expect_rc tick-delta 0
check "tick-delta: the rewrite was found by checksum and copied again" \
	grep -q '^copy: copied again: >fc.* old/f$' "$work/tick-delta.out"
check "tick-delta: checksummed only the changed file" \
	grep -q 'by checksum the content of the 1 file(s) changed since the precopy started' "$work/tick-delta.out"
same_tree tick-delta "$tick/src" "$tick/dst"

# A mark that is not the precopy's own (a file of that name with another
# inode: copied from a source, say) is ignored: the delta pass then checksums
# everything, and finds a difference in a file that did not change.
rm -rf "$tick/dst"
mkdir "$tick/dst"
run forged-precopy -- precopy 0 "$tick/src" "$tick/dst"
expect_rc forged-precopy 0
cp "$tick/dst/.stateful-operator-precopy" "$tick/mark"
mv "$tick/mark" "$tick/dst/.stateful-operator-precopy"
corrupt "$tick/dst/g" "$tick/src/g"
run forged-delta -- delta 0 "$tick/src" "$tick/dst"
expect_rc forged-delta 0
check "forged-delta: checksummed everything and copied the file again" \
	grep -q '^copy: copied again: >fc.* g$' "$work/forged-delta.out"
check "forged-delta: did not take the mark" bash -c "! grep -q 'changed since the precopy' '$work/forged-delta.out'"
same_tree forged-delta "$tick/src" "$tick/dst"

# A target ls cannot read (an I/O error, say) is not taken for empty: it may
# hold an earlier attempt's files, into which cp -a must not write.
nols=$work/nols-bin
mkdir "$nols"
printf '#!/bin/sh\necho "ls: reading directory: Input/output error" >&2\nexit 2\n' >"$nols/ls"
chmod +x "$nols/ls"
mkdir -p "$work/unreadable/src" "$work/unreadable/dst"
head -c 6000000 /dev/urandom >"$work/unreadable/src/big" # large: cp would take it
run unreadable PATH="$nols:$PATH" -- full 0 "$work/unreadable/src" "$work/unreadable/dst"
expect_rc unreadable 0
check "unreadable: no first copy by cp -a into a target ls could not read" \
	bash -c "! grep -q 'first copy by cp' '$work/unreadable.out'"
same_tree unreadable "$work/unreadable/src" "$work/unreadable/dst"

# A difference the delta's quick check cannot see (same size and mtime, as
# when the precopy read a file within one timestamp tick of a write) is
# found by the verify and copied again by checksum.
corrupt "$work/dst-delta/large" "$src/large"
run delta-repair -- delta 0 "$src" "$work/dst-delta"
expect_rc delta-repair 0
check "delta-repair: reported and copied the file again" grep -q '^copy: copied again: >fc.* large$' "$work/delta-repair.out"
same_tree delta-repair "$src" "$work/dst-delta"

# ---- busybox: sh, awk, du, df, tr, sleep... and rsync only ----

bb=$work/busybox-bin
mkdir "$bb"
for app in $(busybox --list); do ln -s "$(command -v busybox)" "$bb/$app"; done
ln -s "$(command -v rsync)" "$bb/rsync"
mkdir "$work/dst-busybox"
PATH=$bb "$(command -v busybox)" sh "$script" full 0 "$src" "$work/dst-busybox" >"$work/busybox.out" 2>&1
rc=$?
expect_rc busybox 0
expect_last busybox '^SOP-RESULT ok$'
same_tree busybox "$src" "$work/dst-busybox"
check "busybox: progress adds up" progress_adds_up busybox

# ---- the fit check ----

small=$work/small
mkdir -p "$small/x"
for i in $(seq 1 10); do head -c 65536 /dev/urandom >"$small/x/f$i"; done
truncate -s 1G "$small/hole" # counts as the blocks it holds: none
need=$(($(du -sk "$small" | cut -f1) * 1024))
mkdir "$work/dst-tight" "$work/dst-short" "$work/dst-tiny"
run tight -- full "$need" "$small" "$work/dst-tight"
expect_rc tight 0
same_tree tight "$small" "$work/dst-tight"
run short -- full $((need - 1)) "$small" "$work/dst-short"
expect_rc short 3
expect_last short '^SOP-RESULT fail does not fit: pair 1 needs [0-9]+ bytes'
empty_dir short "$work/dst-short"
run tiny -- full 1048576 "$src" "$work/dst-tiny"
expect_rc tiny 3
empty_dir tiny "$work/dst-tiny"
check "tiny: says what does not fit" grep -q '^copy: does not fit: pair 1 needs' "$work/tiny.out"
# A delta over an existing copy: what the target holds is room for the copy.
run tight-delta -- delta "$need" "$small" "$work/dst-tight"
expect_rc tight-delta 0

# ---- two pairs ----

mkdir -p "$work/two/a" "$work/two/b" "$work/two/da" "$work/two/db"
echo one >"$work/two/a/1"
head -c 100000 /dev/urandom >"$work/two/b/2"
run two -- full 0 "$work/two/a" "$work/two/da" "$work/two/b" "$work/two/db"
expect_rc two 0
same_tree two-a "$work/two/a" "$work/two/da"
same_tree two-b "$work/two/b" "$work/two/db"
check "two: progress adds up over both pairs" progress_adds_up two
check "two: totals are both pairs' (100004 bytes, 4 entries)" \
	grep -q '^SOP-PROGRESS bytes=100004 files=4 totalBytes=100004 totalFiles=4$' "$work/two.out"

# ---- progress while a large file moves (rsync slowed to 40 MB/s) ----

slow=$work/slow-bin
mkdir "$slow"
printf '#!/bin/sh\nexec %s --bwlimit=40000 "$@"\n' "$(command -v rsync)" >"$slow/rsync"
chmod +x "$slow/rsync"
mkdir -p "$work/one-large" "$work/dst-slow"
cp "$src/large" "$work/one-large/large"
PATH=$slow:$PATH SOP_COPY_CP=0 dash "$script" full 0 "$work/one-large" "$work/dst-slow" 2>&1 |
	while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$work/slow.times"
cut -d' ' -f2- "$work/slow.times" >"$work/slow.out"
expect_last slow '^SOP-RESULT ok$'
check "slow: progress adds up" progress_adds_up slow
check "slow: progress moves within the one large file (>= 2 distinct partial byte counts)" \
	test "$(grep -o 'bytes=[0-9]*' "$work/slow.out" | sort -u | grep -vc -e '^bytes=0$' -e "^bytes=$(stat -c %s "$src/large")\$")" -ge 2
check "slow: progress lines at least 1.5 s apart (but the last)" awk '
	$2 == "SOP-PROGRESS" { t[++n] = $1 }
	END { for (i = 2; i < n; i++) if (t[i] - t[i - 1] < 1.5) { print "lines " i - 1 " and " i " are " t[i] - t[i - 1] " s apart"; exit 1 } }' "$work/slow.times"

# ---- SIGTERM stops rsync ----

rm -rf "$work/dst-slow"
mkdir "$work/dst-slow"
PATH=$slow:$PATH SOP_COPY_CP=0 dash "$script" full 0 "$work/one-large" "$work/dst-slow" >"$work/term.out" 2>&1 &
job=$!
sleep 2
kill -TERM "$job"
wait "$job"
rc=$?
expect_rc term 5
expect_last term '^SOP-RESULT fail interrupted'
sleep 0.5
check "term: no rsync left copying into the target" \
	bash -c "! pgrep -f -- '--bwlimit=4000[0]' >/dev/null"

# SIGTERM during the first copy by cp stops cp too (a cp that takes long).
slowcp=$work/slowcp-bin
mkdir "$slowcp"
printf '#!/bin/sh\n[ "$1" != --version ] || exec %s --version\nexec sleep 4242\n' "$(command -v cp)" >"$slowcp/cp"
chmod +x "$slowcp/cp"
rm -rf "$work/dst-slow"
mkdir "$work/dst-slow"
PATH=$slowcp:$PATH dash "$script" full 0 "$work/one-large" "$work/dst-slow" >"$work/term-cp.out" 2>&1 &
job=$!
sleep 2
kill -TERM "$job"
wait "$job"
rc=$?
expect_rc term-cp 5
expect_last term-cp '^SOP-RESULT fail interrupted'
sleep 0.5
check "term-cp: no cp left" bash -c "! pgrep -f -- 'sleep 424[2]' >/dev/null"

# ---- block devices ----

# loop NAME BYTES [FILL]: a loop device on a file of BYTES bytes (FILL: every
# byte that octal value, else zeros); its path in $dev.
loop() {
	local img=$work/$1.img
	if [ $# -gt 2 ]; then
		tr '\000' "\\$3" </dev/zero | head -c "$2" >"$img"
	else
		truncate -s "$2" "$img"
	fi
	dev=$(losetup -f --show "$img") || {
		fail "$1: losetup failed"
		finish
	}
	loops+=("$dev")
}
# put DEV OFFSET FILE: FILE's bytes at OFFSET of DEV.
put() { dd if="$3" of="$1" bs=4096 seek="$2" oflag=seek_bytes conv=notrunc,fsync status=none; }
# same_at NAME DEV OFFSET FILE: DEV holds FILE's bytes at OFFSET.
same_at() {
	if cmp -s "$4" <(dd if="$2" bs=4096 skip="$3" count="$(stat -c %s "$4")" iflag=skip_bytes,count_bytes status=none); then
		pass "$1: the bytes at offset $3 are the source's"
	else
		fail "$1: the bytes at offset $3 differ from the source's"
	fi
}
# sha_range DEV FROM BYTES: sha256 of BYTES bytes of DEV from FROM.
sha_range() {
	dd if="$1" bs=65536 skip="$2" count="$3" iflag=skip_bytes,count_bytes status=none | sha256sum | cut -d' ' -f1
}

# 40 MiB + 1536 bytes: whole MiB in chunks, then a tail of sectors.
n=$((40 * 1048576 + 1536))
loop bsrc "$n"
bsrc=$dev
offsets=(0 1048575 $((17 * 1048576 + 123)) $((33 * 1048576)) $((n - 4096)))
for o in "${offsets[@]}"; do
	head -c 4096 /dev/urandom >"$work/at-$o"
	put "$bsrc" "$o" "$work/at-$o"
done
# A larger target full of 0xab: the copy must write the source's zeros too, and nothing past its size.
loop bdst $((48 * 1048576)) 253
bdst=$dev
past=$(sha_range "$bdst" "$n" $((48 * 1048576 - n)))
run device SOP_COPY_CHUNK_MIB=8 -- full 0 "$bsrc" "$bdst"
expect_rc device 0
expect_last device '^SOP-RESULT ok$'
check "device: the target's first $n bytes are the source's (cmp)" cmp -n "$n" "$bsrc" "$bdst"
for o in "${offsets[@]}"; do same_at device "$bdst" "$o" "$work/at-$o"; done
check "device: the target's bytes past the source's size are untouched" \
	test "$(sha_range "$bdst" "$n" $((48 * 1048576 - n)))" = "$past"
check "device: progress adds up" progress_adds_up device
check "device: totals are the device (its bytes, one entry)" \
	grep -q "^SOP-PROGRESS bytes=$n files=1 totalBytes=$n totalFiles=1\$" "$work/device.out"
check "device: says it verified" grep -q '^copy: verified' "$work/device.out"

# busybox: its dd, stat, blockdev and sha256sum.
loop bbdst "$n"
PATH=$bb "$(command -v busybox)" sh "$script" full 0 "$bsrc" "$dev" >"$work/busybox-device.out" 2>&1
rc=$?
expect_rc busybox-device 0
check "busybox-device: the target's bytes are the source's" cmp -n "$n" "$bsrc" "$dev"

# A smaller target: refused before anything is written.
loop bsmall $((32 * 1048576)) 253
before=$(sha256sum <"$dev")
run device-small -- full 0 "$bsrc" "$dev"
expect_rc device-small 3
expect_last device-small "^SOP-RESULT fail does not fit: pair 1: source device $bsrc has $n bytes, target device $dev only 33554432"
check "device-small: the target is untouched" test "$(sha256sum <"$dev")" = "$before"

# A write path that changes one byte: a dd that, after writing the first
# chunk of a target, sets one of its bytes (5 MiB + 7, a zero in the source)
# to 1. The checksums differ, the copy fails.
flip=$work/flip-bin
mkdir "$flip"
real_dd=$(command -v dd)
cat >"$flip/dd" <<EOF
#!/bin/sh
$real_dd "\$@" || exit
out= seek=
for a in "\$@"; do
	case \$a in of=*) out=\${a#of=} ;; seek=*) seek=\${a#seek=} ;; esac
done
case \$out.\$seek in
/dev/loop*.0) printf '\\001' | $real_dd of="\$out" bs=1 seek=$((5 * 1048576 + 7)) conv=notrunc 2>/dev/null ;;
esac
EOF
chmod +x "$flip/dd"
loop bflip "$n"
PATH=$flip:$PATH SOP_COPY_CHUNK_MIB=8 dash "$script" full 0 "$bsrc" "$dev" >"$work/device-flip.out" 2>&1
rc=$?
expect_rc device-flip 4
expect_last device-flip '^SOP-RESULT fail verification found 1 difference\(s\) in pair 1'
check "device-flip: names the devices and both checksums" \
	grep -qE "^copy: difference: the first $n bytes of $bsrc \(sha256 [0-9a-f]{64}\) and $dev \(sha256 [0-9a-f]{64}\) differ" \
	"$work/device-flip.out"

mkdir "$work/device-dir"
run usage-device-dir -- full 0 "$bsrc" "$work/device-dir"
expect_rc usage-device-dir 2
run usage-device-pass -- precopy 0 "$bsrc" "$bdst"
expect_rc usage-device-pass 2
expect_last usage-device-pass '^SOP-RESULT fail usage: pass precopy: .* is a block device'
run usage-device-self -- full 0 "$bsrc" "$bsrc"
expect_rc usage-device-self 2

# ---- usage errors, missing rsync ----

mkdir -p "$work/u/src/inner" "$work/u/dst"
run usage-none -- 
expect_rc usage-none 2
run usage-pass -- copy 0 "$work/u/src" "$work/u/dst"
expect_rc usage-pass 2
expect_last usage-pass "^SOP-RESULT fail usage: unknown pass 'copy'"
run usage-size -- full 10Gi "$work/u/src" "$work/u/dst"
expect_rc usage-size 2
run usage-odd -- full 0 "$work/u/src" "$work/u/dst" "$work/u/src"
expect_rc usage-odd 2
run usage-missing -- full 0 "$work/u/nosuch" "$work/u/dst"
expect_rc usage-missing 2
run usage-inside -- full 0 "$work/u/src" "$work/u/src/inner"
expect_rc usage-inside 2
run usage-same -- full 0 "$work/u/src" "$work/u/src/."
expect_rc usage-same 2
empty_dir usage "$work/u/dst"
nobin=$work/no-rsync
mkdir "$nobin"
for app in sh awk du df tr sleep mktemp rm mkdir cut head cat; do ln -s "$(command -v busybox)" "$nobin/$app"; done
PATH=$nobin "$(command -v busybox)" sh "$script" full 0 "$work/u/src" "$work/u/dst" >"$work/no-rsync.out" 2>&1
rc=$?
expect_rc no-rsync 5
expect_last no-rsync '^SOP-RESULT fail rsync not found$'

finish
