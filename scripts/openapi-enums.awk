# Go's generated OpenAPI (k8s.io/kubernetes pkg/generated/openapi) to lines
# "<schema name>\t<property>\t<items: 0|1>\t<JSON array of the values>".
function tabs(s) { match(s, /^\t*/); return RLENGTH }
/^\t\t"[^"]+": +schema_[A-Za-z0-9_]+\(ref\),$/ {
	name = $1; gsub(/[":]/, "", name)
	fn = $2; sub(/\(ref\),$/, "", fn)
	sub(/^k8s\.io\//, "io.k8s.", name); gsub(/\//, ".", name)
	type_of[fn] = name
	next
}
/^func schema_/ { fn = $2; sub(/\(.*/, "", fn); prop = ""; next }
tabs($0) == 5 && /^\t*"[A-Za-z0-9_]+": \{$/ { prop = $1; gsub(/[":]/, "", prop); next }
/^\t*Enum: +\[\]interface\{\}\{.*\},$/ {
	if (!(fn in type_of) || prop == "") { print "enum outside a property at line " NR > "/dev/stderr"; exit 1 }
	values = $0; sub(/^[^{]*\{\}\{/, "", values); sub(/\},$/, "", values)
	depth = tabs($0)
	if (depth != 7 && depth != 10) { print "enum at an unknown depth at line " NR > "/dev/stderr"; exit 1 }
	printf "%s\t%s\t%d\t[%s]\n", type_of[fn], prop, depth == 10, values
}
