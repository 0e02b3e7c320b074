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
#   - usage errors exit 2, a missing rsync 5, SIGTERM stops rsync.
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

for tool in rsync setfacl getfacl setfattr getfattr busybox truncate dash; do
	command -v "$tool" >/dev/null || fail "required tool $tool is missing (scripts/install-deps installs it)"
done
[ -x "$bin" ] || fail "$bin is not executable"
[ -x "$manifest" ] || fail "$manifest is missing (cmake --build builds it)"
[ "$(id -u)" = 0 ] || fail "must run as root (owners, setuid bits)"
[ "$failed" -eq 0 ] || finish

work=$(mktemp -d /tmp/sop-copy-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
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
PATH=$slow:$PATH dash "$script" full 0 "$work/one-large" "$work/dst-slow" 2>&1 |
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
PATH=$slow:$PATH dash "$script" full 0 "$work/one-large" "$work/dst-slow" >"$work/term.out" 2>&1 &
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
