/*
 * The copy script, kept here as lines (ISO C compilers need not take a
 * string literal past 4095 characters), and the reader of its progress.
 *
 * Why the script looks the way it does:
 * - rsync is the only tool beyond POSIX sh, awk, du, df and tr, so the Job
 *   runs on any image with rsync (busybox or GNU userland).
 * - rsync -x / du -x: a source is one volume; whatever is mounted below it
 *   is not part of it.
 * - The totals come from rsync's own dry-run count, so the progress it
 *   logs per entry (--info=name2: unchanged entries too) and per chunk
 *   (--info=progress2) adds up to exactly those totals.
 * - The verify pass is a checksum dry-run: size and mtime can match while
 *   the content does not. --modify-window=-1 everywhere: rsync otherwise
 *   compares mtimes to the second, and leaves a directory's nanoseconds as
 *   they were.
 * The lines below are the script's source: edit them here, check with
 * `stateful-operator copy-script | shellcheck -s sh -` and
 * tests/copy/copy_script_test.sh.
 */
#include "controllers/resize/copy_script.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/strbuf.h"

static const char *const script_lines[] = {
	"#!/bin/sh",
	"# stateful-operator's copy script: the command of a resize-by-copy Job, and",
	"# runnable by hand (`stateful-operator copy-script > copy.sh`).",
	"#",
	"#   sh copy.sh PASS TARGET-BYTES SRC DST [SRC DST]...",
	"#",
	"# PASS          full: copy, then verify; precopy: copy only (the workload may",
	"#               still be running); delta: copy again once the workload has",
	"#               stopped, then verify.",
	"# TARGET-BYTES  capacity of the target volume in bytes (the new claim's size),",
	"#               0 if unknown: then the target filesystem alone decides.",
	"# SRC DST       the contents of SRC go into DST (SRC/ -> DST/); both must be",
	"#               existing directories, neither inside the other. DST ends up",
	"#               identical to SRC: whatever else it holds is deleted.",
	"#",
	"# Before it writes anything, every pass checks that the data fits: the",
	"# allocated size of each SRC (du -k: sparse files count what they hold) must",
	"# not exceed TARGET-BYTES, nor what DST's filesystem can hold (free space plus",
	"# what DST already holds, which the copy replaces); sources whose targets",
	"# share a filesystem are added up. Inodes are checked the same way where the",
	"# filesystem counts them. Each SRC is one volume: the copy stays on SRC's",
	"# filesystem (rsync -x, du -x), so nothing mounted below SRC is copied.",
	"#",
	"# The copy keeps hard links, ACLs, xattrs, holes, numeric owners, mtimes to",
	"# the nanosecond (--modify-window=-1, also when comparing), and deletes what",
	"# SRC no longer has. The verify pass compares content by checksum, so a",
	"# difference with the same size and mtime is found; a copy counts only once",
	"# it passed. In a delta pass a difference (a file rewritten within one",
	"# timestamp tick during the precopy) is copied again by checksum, once, and",
	"# verified again.",
	"#",
	"# Output: \"SOP-PROGRESS bytes=N files=N totalBytes=N totalFiles=N\" while",
	"# copying, at most about every 2 s, and once more at the end (totals: the",
	"# regular files' and symlinks' sizes, every name of a hard link counted, and",
	"# all entries, from rsync's own count before the copy; summed over all",
	"# pairs). The last line is \"SOP-RESULT ok\" or \"SOP-RESULT fail REASON\".",
	"# Exit status: 0 ok, 2 usage, 3 the data does not fit, 4 verification found",
	"# differences, 5 rsync (or the environment) failed.",
	"#",
	"# Needs a POSIX sh, awk, du, df, tr (busybox or GNU), rsync >= 3.1.3 built with",
	"# ACL and xattr support, and a writable $TMPDIR (a few small files). Run as",
	"# root to keep owners, setuid bits and trusted.* xattrs.",
	"",
	"set -u",
	"LC_ALL=C",
	"export LC_ALL",
	"",
	"tmp=\"\"",
	"rsync_pid=\"\"",
	"stream=\"\"",
	"",
	"say() {",
	"\tprintf 'copy: %s\\n' \"$*\"",
	"}",
	"",
	"cleanup() {",
	"\tif [ -n \"$tmp\" ]; then",
	"\t\trm -rf \"$tmp\"",
	"\t\ttmp=\"\"",
	"\tfi",
	"}",
	"",
	"# Stops a copy in flight, and waits until its output is read.",
	"stop_rsync() {",
	"\tif [ -n \"$tmp\" ] && [ -s \"$tmp/pid\" ]; then",
	"\t\tread -r rsync_pid <\"$tmp/pid\" && kill \"$rsync_pid\" 2>/dev/null",
	"\tfi",
	"\tif [ -n \"$stream\" ]; then",
	"\t\twait \"$stream\" 2>/dev/null",
	"\t\tstream=\"\"",
	"\tfi",
	"}",
	"",
	"# finish CODE [REASON...]: prints the result line, the last one, and exits.",
	"finish() {",
	"\tcode=$1",
	"\tshift",
	"\tstop_rsync",
	"\tcleanup",
	"\tif [ \"$code\" -eq 0 ]; then",
	"\t\tresult=\"SOP-RESULT ok\"",
	"\telse",
	"\t\tresult=\"SOP-RESULT fail $(printf '%s' \"$*\" | tr '\\n\\r\\t' '   ' | cut -c1-200)\"",
	"\tfi",
	"\techo \"$result\"",
	"\t# In a pod, the totals and the result go to the termination message too,",
	"\t# which the operator reads from the pod's status (no log access needed).",
	"\tterm=${SOP_TERMINATION_LOG-/dev/termination-log}",
	"\tif [ -n \"$term\" ] && [ -w \"$term\" ]; then",
	"\t\tprintf 'SOP-PROGRESS bytes=%s files=%s totalBytes=%s totalFiles=%s\\n%s\\n' \\",
	"\t\t\t\"${done_bytes:-0}\" \"${done_files:-0}\" \"${total_bytes:-0}\" \"${total_files:-0}\" \"$result\" >\"$term\" 2>/dev/null",
	"\tfi",
	"\texit \"$code\"",
	"}",
	"",
	"usage() {",
	"\tsay \"usage: sh copy.sh full|precopy|delta TARGET-BYTES SRC DST [SRC DST]...\"",
	"\tsay \"$1\"",
	"\tfinish 2 \"usage: $1\"",
	"}",
	"",
	"trap 'finish 5 \"interrupted by a signal\"' HUP INT TERM",
	"trap cleanup EXIT",
	"",
	"# physical PATH: prints the absolute physical path of directory PATH (also",
	"# when it ends in a newline); empty if it cannot be entered.",
	"physical() {",
	"\tcase $1 in",
	"\t/*) p=$1 ;;",
	"\t*) p=./$1 ;;",
	"\tesac",
	"\tp=$(cd \"$p\" 2>/dev/null && pwd -P && echo .) || return 0",
	"\tprintf '%s' \"${p%?\?}\"",
	"}",
	"",
	"if [ $# -lt 4 ] || [ $(($# % 2)) -ne 0 ]; then",
	"\tusage \"expected a pass, the target size in bytes and pairs of directories\"",
	"fi",
	"pass=$1",
	"target=$2",
	"shift 2",
	"case $pass in",
	"full | precopy | delta) ;;",
	"*) usage \"unknown pass '$pass' (full, precopy or delta)\" ;;",
	"esac",
	"case $target in",
	"'' | *[!0-9]*) usage \"target-bytes must be a whole number of bytes (0: unknown)\" ;;",
	"esac",
	"[ ${#target} -le 18 ] || usage \"target-bytes is too large\"",
	"",
	"npairs=0",
	"while [ $# -gt 0 ]; do",
	"\tnpairs=$((npairs + 1))",
	"\t[ -d \"$1\" ] || usage \"source $1 is not a directory\"",
	"\t[ -d \"$2\" ] || usage \"target $2 is not a directory\"",
	"\ts=$(physical \"$1\")",
	"\td=$(physical \"$2\")",
	"\t[ -n \"$s\" ] || usage \"cannot enter source $1\"",
	"\t[ -n \"$d\" ] || usage \"cannot enter target $2\"",
	"\tcase \"$d/\" in \"$s/\"*) usage \"target $2 is the source $1 or inside it\" ;; esac",
	"\tcase \"$s/\" in \"$d/\"*) usage \"source $1 is inside target $2\" ;; esac",
	"\teval \"src_$npairs=\\$s; dst_$npairs=\\$d\"",
	"\tshift 2",
	"done",
	"",
	"command -v rsync >/dev/null 2>&1 || finish 5 \"rsync not found\"",
	"tmp=$(mktemp -d \"${TMPDIR:-/tmp}/sop-copy.XXXXXX\" 2>/dev/null) || tmp=\"\"",
	"if [ -z \"$tmp\" ]; then",
	"\ttmp=${TMPDIR:-/tmp}/sop-copy.$$",
	"\trm -rf \"$tmp\" # ours: no live process has our pid",
	"\tmkdir -m 700 \"$tmp\" 2>/dev/null || {",
	"\t\ttmp=\"\"",
	"\t\tfinish 5 \"cannot create a temporary directory in ${TMPDIR:-/tmp}\"",
	"\t}",
	"fi",
	"",
	"# Lines must reach awk as rsync writes them: progress lines end in \\r, and",
	"# GNU tr buffers its output unless stdbuf says otherwise; mawk reads ahead",
	"# unless interactive. busybox tr and awk, and gawk, pass lines on at once.",
	"unbuffer=\"\"",
	"if command -v stdbuf >/dev/null 2>&1 && stdbuf -o0 true 2>/dev/null; then",
	"\tunbuffer=stdbuf",
	"fi",
	"case $(awk -W version 2>&1 </dev/null) in",
	"*mawk*) awk_interactive=1 ;;",
	"*) awk_interactive=0 ;;",
	"esac",
	"split_lines() {",
	"\tif [ -n \"$unbuffer\" ]; then",
	"\t\tstdbuf -o0 tr '\\r' '\\n'",
	"\telse",
	"\t\ttr '\\r' '\\n'",
	"\tfi",
	"}",
	"stream_awk() {",
	"\tif [ \"$awk_interactive\" = 1 ]; then",
	"\t\tawk -W interactive \"$@\"",
	"\telse",
	"\t\tawk \"$@\"",
	"\tfi",
	"}",
	"",
	"pair() { # pair I: sets $s and $d to pair I's source and target",
	"\teval \"s=\\$src_$1; d=\\$dst_$1\"",
	"}",
	"",
	"# --- Totals and the fit check: read only, before anything is written. ---",
	"",
	"total_bytes=0",
	"total_files=0",
	": >\"$tmp/fit\"",
	"i=1",
	"while [ $i -le $npairs ]; do",
	"\tpair $i",
	"\t# rsync's own count: the same entries and sizes the copy reports.",
	"\tif ! rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --dry-run --stats --no-h \"$s/\" \"$d/\" >\"$tmp/stats\" 2>\"$tmp/stats.err\"; then",
	"\t\tcat \"$tmp/stats.err\"",
	"\t\tfinish 5 \"rsync failed listing pair $i: $(head -n 1 \"$tmp/stats.err\")\"",
	"\tfi",
	"\tread -r files bytes created deleted <<EOF",
	"$(awk -F': ' '",
	"\t\tfunction num(v) { sub(/ .*/, \"\", v); gsub(/,/, \"\", v); return v + 0 }",
	"\t\t/^Number of files:/ { files = num($2) }",
	"\t\t/^Number of created files:/ { created = num($2) }",
	"\t\t/^Number of deleted files:/ { deleted = num($2) }",
	"\t\t/^Total file size:/ { bytes = num($2) }",
	"\t\tEND { printf \"%.0f %.0f %.0f %.0f\\n\", files, bytes, created, deleted }' \"$tmp/stats\")",
	"EOF",
	"\ttotal_files=$((total_files + files))",
	"\ttotal_bytes=$((total_bytes + bytes))",
	"\tneed=$(du -skx \"$s\" | awk 'NR == 1 { print $1 }')",
	"\theld=$(du -skx \"$d\" | awk 'NR == 1 { print $1 }')",
	"\t# The filesystem's line: device and mount point name it, the rest is numbers.",
	"\tspace=$(df -Pk \"$d\" | awk 'NR == 2 { avail = $4; k = $0; sub(/ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+% +/, \" \", k); print avail \"\\t\" k }')",
	"\t[ -n \"$space\" ] || finish 5 \"cannot read the free space of the target of pair $i (df)\"",
	"\tinodes=$(df -Pi \"$d\" 2>/dev/null | awk 'NR == 2 { print $2 \"\\t\" $4 }')",
	"\t[ -n \"$inodes\" ] || inodes=\"0\t0\"",
	"\tprintf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \"$i\" \"${need:-0}\" \"${held:-0}\" \"$created\" \"$deleted\" \"$inodes\" \"$space\" >>\"$tmp/fit\"",
	"\ti=$((i + 1))",
	"done",
	"",
	"# Per target filesystem: fields i, need KiB, held KiB, created, deleted,",
	"# inodes, free inodes, available KiB, filesystem.",
	"awk -F '\\t' -v target=\"$target\" '",
	"\t{",
	"\t\tk = $9",
	"\t\tif (!(k in need)) { order[++n] = k; pairs[k] = $1 } else pairs[k] = pairs[k] \",\" $1",
	"\t\tneed[k] += $2; held[k] += $3; newi[k] += $4 - $5",
	"\t\tinodes[k] = $6; ifree[k] = $7; avail[k] = $8",
	"\t}",
	"\tEND {",
	"\t\tfor (j = 1; j <= n; j++) {",
	"\t\t\tk = order[j]",
	"\t\t\troom = (avail[k] + held[k]) * 1024",
	"\t\t\tlimit = room",
	"\t\t\tif (target + 0 > 0 && target + 0 < limit)",
	"\t\t\t\tlimit = target + 0",
	"\t\t\tif (need[k] * 1024 > limit)",
	"\t\t\t\tprintf \"pair %s needs %.0f bytes (allocated), the target can take %.0f bytes (target-bytes %.0f, filesystem: %.0f bytes free + %.0f bytes already in the target)\\n\", pairs[k], need[k] * 1024, limit, target, avail[k] * 1024, held[k] * 1024",
	"\t\t\telse if (inodes[k] > 0 && newi[k] > ifree[k])",
	"\t\t\t\tprintf \"pair %s needs %.0f more inodes, the target filesystem has %.0f free\\n\", pairs[k], newi[k], ifree[k]",
	"\t\t}",
	"\t}' \"$tmp/fit\" >\"$tmp/nofit\"",
	"if [ -s \"$tmp/nofit\" ]; then",
	"\twhile IFS= read -r line; do",
	"\t\tsay \"does not fit: $line\"",
	"\tdone <\"$tmp/nofit\"",
	"\tfinish 3 \"does not fit: $(head -n 1 \"$tmp/nofit\")\"",
	"fi",
	"",
	"# --- Copy ---",
	"",
	"done_bytes=0",
	"done_files=0",
	"cur_bytes=0",
	"cur_files=0",
	"",
	"progress() {",
	"\tif [ -s \"$tmp/state\" ] && read -r b f <\"$tmp/state\" 2>/dev/null; then",
	"\t\tcase \"$b.$f\" in",
	"\t\t*[!0-9.]* | .* | *.) ;;",
	"\t\t*)",
	"\t\t\tcur_bytes=$b",
	"\t\t\tcur_files=$f",
	"\t\t\t;;",
	"\t\tesac",
	"\tfi",
	"\techo \"SOP-PROGRESS bytes=$((done_bytes + cur_bytes)) files=$((done_files + cur_files)) totalBytes=$total_bytes totalFiles=$total_files\"",
	"}",
	"",
	"if sleep 0.2 2>/dev/null; then",
	"\ttick=0.2 ticks_per_report=10",
	"else",
	"\ttick=1 ticks_per_report=2",
	"fi",
	"ticks=0",
	"",
	"# copy_pair I: one rsync of pair I with progress; sets rc and rsync_error.",
	"# Per entry rsync logs \"SOP-ITEM <itemize> <size>\" (name2: unchanged ones",
	"# too) and, while moving data, \"<bytes moved> <pct>% ...\" (progress2). Done",
	"# bytes: the sizes of entries that needed no data plus the bytes moved; awk",
	"# keeps them in $tmp/state for the reports.",
	"copy_pair() {",
	"\tpair \"$1\"",
	"\trm -f \"$tmp/rc\" \"$tmp/pid\" \"$tmp/error\" \"$tmp/done\"",
	"\t: >\"$tmp/state\"",
	"\tcur_bytes=0",
	"\tcur_files=0",
	"\t{",
	"\t\trsync -aHAXSx --numeric-ids --modify-window=-1 --delete --whole-file --no-h --info=progress2,name2 \\",
	"\t\t\t--out-format='SOP-ITEM %i %l' \"$s/\" \"$d/\" 2>&1 &",
	"\t\techo $! >\"$tmp/pid\"",
	"\t\twait $!",
	"\t\techo $? >\"$tmp/rc\"",
	"\t} | split_lines | stream_awk -v state=\"$tmp/state\" -v errfile=\"$tmp/error\" -v donefile=\"$tmp/done\" '",
	"\t\tfunction save() {",
	"\t\t\tprintf \"%.0f %.0f\\n\", unmoved + moved, files > state",
	"\t\t\tclose(state)",
	"\t\t\tpending = 0",
	"\t\t\tsaved = unmoved + moved",
	"\t\t}",
	"\t\t/^SOP-ITEM / {",
	"\t\t\ty = substr($0, 10, 1)",
	"\t\t\tif (y == \"*\")",
	"\t\t\t\tnext",
	"\t\t\tfiles++",
	"\t\t\tpending++",
	"\t\t\tx = substr($0, 11, 1)",
	"\t\t\tif (y != \">\" && (x == \"f\" || x == \"L\"))",
	"\t\t\t\tunmoved += $NF",
	"\t\t\tif (pending >= 100)",
	"\t\t\t\tsave()",
	"\t\t\tnext",
	"\t\t}",
	"\t\t/^ *[0-9]+ +[0-9]+% / {",
	"\t\t\tmoved = $1 + 0",
	"\t\t\tif (index($0, \"xfr#\") == 0 || unmoved + moved - saved >= 8388608)",
	"\t\t\t\tsave()",
	"\t\t\tnext",
	"\t\t}",
	"\t\t/[^ ]/ {",
	"\t\t\tprint",
	"\t\t\tfflush()",
	"\t\t\tif (first == \"\" && $0 ~ /^rsync: /)",
	"\t\t\t\tfirst = $0",
	"\t\t\tlast = $0",
	"\t\t}",
	"\t\tEND {",
	"\t\t\tsave()",
	"\t\t\tif (first == \"\")",
	"\t\t\t\tfirst = last",
	"\t\t\tif (first != \"\")",
	"\t\t\t\tprint first > errfile",
	"\t\t\tprint \"\" > donefile",
	"\t\t}' &",
	"\tstream=$!",
	"\twhile [ ! -e \"$tmp/done\" ] && kill -0 \"$stream\" 2>/dev/null; do",
	"\t\tsleep $tick",
	"\t\tticks=$((ticks + 1))",
	"\t\tif [ $ticks -ge $ticks_per_report ]; then",
	"\t\t\tticks=0",
	"\t\t\tprogress",
	"\t\tfi",
	"\tdone",
	"\twait \"$stream\"",
	"\tstream=\"\"",
	"\trc=99",
	"\t[ -s \"$tmp/rc\" ] && read -r rc <\"$tmp/rc\"",
	"\trm -f \"$tmp/pid\"",
	"\trsync_error=\"\"",
	"\t[ -s \"$tmp/error\" ] && IFS= read -r rsync_error <\"$tmp/error\"",
	"\tprogress >/dev/null # take the final state",
	"\trm -f \"$tmp/state\"",
	"\tdone_bytes=$((done_bytes + cur_bytes))",
	"\tdone_files=$((done_files + cur_files))",
	"\tcur_bytes=0",
	"\tcur_files=0",
	"}",
	"",
	"# verify_pair I: a checksum dry-run that must list nothing: content is",
	"# compared by checksum, not by size and mtime. Prints what it lists (the",
	"# first 100 lines) and sets ndiff.",
	"verify_pair() {",
	"\tpair \"$1\"",
	"\trm -f \"$tmp/rc\" \"$tmp/ndiff\"",
	"\t{",
	"\t\trsync -aHAXSx --numeric-ids --modify-window=-1 --delete --dry-run --checksum --itemize-changes --no-h \"$s/\" \"$d/\"",
	"\t\techo $? >\"$tmp/rc\"",
	"\t} | awk -v out=\"$tmp/ndiff\" '",
	"\t\t{ n++; if (n <= 100) print \"copy: difference: \" $0 }",
	"\t\tEND {",
	"\t\t\tif (n > 100)",
	"\t\t\t\tprintf \"copy: ... and %d more differences\\n\", n - 100",
	"\t\t\tprintf \"%d\\n\", n > out",
	"\t\t}'",
	"\trc=99",
	"\t[ -s \"$tmp/rc\" ] && read -r rc <\"$tmp/rc\"",
	"\tndiff=0",
	"\t[ -s \"$tmp/ndiff\" ] && read -r ndiff <\"$tmp/ndiff\"",
	"\t[ \"$rc\" -eq 0 ] || finish 5 \"rsync failed verifying pair $1 (exit $rc)\"",
	"}",
	"",
	"# repair_pair I: copies again what differs by content (checksums both trees).",
	"repair_pair() {",
	"\tpair \"$1\"",
	"\trm -f \"$tmp/rc\"",
	"\t{",
	"\t\trsync -aHAXSx --numeric-ids --modify-window=-1 --delete --whole-file --checksum --itemize-changes --no-h \"$s/\" \"$d/\"",
	"\t\techo $? >\"$tmp/rc\"",
	"\t} | awk '{ n++; if (n <= 100) print \"copy: copied again: \" $0 }'",
	"\trc=99",
	"\t[ -s \"$tmp/rc\" ] && read -r rc <\"$tmp/rc\"",
	"\t[ \"$rc\" -eq 0 ] || finish 5 \"rsync failed copying pair $1 again (exit $rc)\"",
	"}",
	"",
	"say \"$pass pass: $npairs pair(s), $total_files entries, $total_bytes bytes\"",
	"progress",
	"i=1",
	"while [ $i -le $npairs ]; do",
	"\tcopy_pair $i",
	"\tcase $rc in",
	"\t0) ;;",
	"\t24)",
	"\t\t# Files vanished during the copy: expected while the workload runs.",
	"\t\t[ \"$pass\" = precopy ] || finish 5 \"files vanished while copying pair $i: is the source still in use?\"",
	"\t\tsay \"pair $i: some files vanished during the precopy; the delta pass copies what is left\"",
	"\t\t;;",
	"\t*) finish 5 \"rsync failed copying pair $i (exit $rc): $rsync_error\" ;;",
	"\tesac",
	"\ti=$((i + 1))",
	"done",
	"progress",
	"",
	"if [ \"$pass\" != precopy ]; then",
	"\ti=1",
	"\twhile [ $i -le $npairs ]; do",
	"\t\tverify_pair $i",
	"\t\tif [ \"$ndiff\" -gt 0 ] && [ \"$pass\" = delta ]; then",
	"\t\t\tsay \"pair $i: $ndiff difference(s) after the delta copy; copying them again by checksum\"",
	"\t\t\trepair_pair $i",
	"\t\t\tverify_pair $i",
	"\t\tfi",
	"\t\t[ \"$ndiff\" -eq 0 ] || finish 4 \"verification found $ndiff difference(s) in pair $i\"",
	"\t\ti=$((i + 1))",
	"\tdone",
	"\tsay \"verified: the target is identical to the source\"",
	"fi",
	"finish 0",
	NULL,
};

char *copy_script_text(void)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; script_lines[i]; i++)
		strbuf_appendf(&sb, "%s\n", script_lines[i]);
	return strbuf_detach(&sb);
}

/* p past the blanks before end (blank false: past the other characters). */
static const char *skip(const char *p, const char *end, bool blank)
{
	while (p < end && (*p == ' ' || *p == '\t') == blank)
		p++;
	return p;
}

/* Does line (len bytes) start with word followed by a blank or its end? Sets *rest past the blanks. */
static bool starts_with_word(const char *line, size_t len, const char *word, const char **rest)
{
	size_t n = strlen(word);
	if (len < n || memcmp(line, word, n) != 0 || (len > n && line[n] != ' ' && line[n] != '\t'))
		return false;
	*rest = skip(line + n, line + len, true);
	return true;
}

/* Parses a decimal number of exactly len digits into *v; refuses signs, overflow and "". */
static bool parse_count(const char *s, size_t len, long long *v)
{
	long long x = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		int d = s[i] - '0';
		if (x > (LLONG_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/* "bytes=N files=N totalBytes=N totalFiles=N", in any order; other keys are ignored. */
static bool parse_progress(const char *p, const char *end, struct copy_progress *out)
{
	static const char *const keys[] = {"bytes", "files", "totalBytes", "totalFiles"};
	long long v[4];
	bool seen[4] = {false, false, false, false};

	while (p < end) {
		const char *tok = p;
		p = skip(p, end, false);
		const char *eq = memchr(tok, '=', (size_t)(p - tok));
		if (!eq)
			return false;
		for (int k = 0; k < 4; k++) {
			if ((size_t)(eq - tok) == strlen(keys[k]) && memcmp(tok, keys[k], (size_t)(eq - tok)) == 0) {
				if (!parse_count(eq + 1, (size_t)(p - eq - 1), &v[k]))
					return false;
				seen[k] = true;
			}
		}
		p = skip(p, end, true);
	}
	for (int k = 0; k < 4; k++)
		if (!seen[k])
			return false;
	out->bytes = v[0];
	out->files = v[1];
	out->total_bytes = v[2];
	out->total_files = v[3];
	return true;
}

/* Length of the valid UTF-8 sequence at s (at most avail bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
	size_t n;
	unsigned int min;
	unsigned int c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
		c &= 0x07;
	} else {
		return 0;
	}
	if (n > avail)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

/*
 * Copies p..end into out->reason: blanks at both ends dropped, control
 * characters as spaces, invalid UTF-8 as '?', cut at a character boundary
 * (the reason ends up in Events, which must be valid UTF-8).
 */
static void set_reason(struct copy_progress *out, const char *p, const char *end)
{
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t o = 0;
	while (p < end) {
		const unsigned char *u = (const unsigned char *)p;
		size_t n = utf8_len(u, (size_t)(end - p));
		if (n == 0) {
			if (o + 1 >= sizeof(out->reason))
				break;
			out->reason[o++] = '?';
			p++;
			continue;
		}
		if (o + n >= sizeof(out->reason))
			break;
		if (n == 1 && (u[0] < 0x20 || u[0] == 0x7f)) {
			out->reason[o++] = ' ';
		} else {
			memcpy(out->reason + o, p, n);
			o += n;
		}
		p += n;
	}
	out->reason[o] = '\0';
	if (o == 0)
		snprintf(out->reason, sizeof(out->reason), "no reason given");
}

int copy_progress_parse(const char *log_text, struct copy_progress *out)
{
	bool found = false;
	memset(out, 0, sizeof(*out));
	if (!log_text)
		return -1;
	const char *p = log_text;
	while (*p) {
		size_t len = strcspn(p, "\r\n");
		const char *end = p + len;
		const char *rest;
		if (starts_with_word(p, len, "SOP-PROGRESS", &rest)) {
			if (parse_progress(rest, end, out))
				found = true;
		} else if (starts_with_word(p, len, "SOP-RESULT", &rest)) {
			const char *word_end = skip(rest, end, false);
			const char *after = skip(word_end, end, true);
			if (word_end - rest == 2 && memcmp(rest, "ok", 2) == 0 && after == end) {
				out->result = 1;
				out->reason[0] = '\0';
				found = true;
			} else if (word_end - rest == 4 && memcmp(rest, "fail", 4) == 0) {
				out->result = -1;
				set_reason(out, after, end);
				found = true;
			}
		}
		p = *end ? end + 1 : end;
	}
	return found ? 0 : -1;
}
