# The chart's values as the schema describes them (scripts/chart-readme,
# tests/chart/chart_render.sh). Input: values.schema.json; $values:
# values.yaml as JSON; $mode:
#   table  the README's rows, one per value of the schema, in its order;
#   check  one line per fault: a value of the schema without a description
#          or missing from values.yaml, a key of values.yaml (where the
#          schema lists the properties) missing from the schema.
def resolve($root):
	if has("$ref") then $root.definitions[.["$ref"] | split("/") | last] + del(.["$ref"]) else . end;
# {path, schema} of every property, depth first in the schema's order.
def props($root; $prefix):
	(.properties // {}) | to_entries[] | .key as $k | (.value | resolve($root)) as $s
	| {path: ($prefix + [$k]), schema: $s}, ($s | props($root; $prefix + [$k]));
def type_of:
	if .enum then .enum | map(tojson) | join(", ")
	elif .anyOf then .anyOf | map(if has("const") then .const | tojson else .type end) | join(" or ")
	elif .type == "array" and .items.enum then "list of " + (.items.enum | map(tojson) | join(", "))
	else .type // "any" end;
def cell: gsub("\\|"; "\\|") | gsub("\n"; " ");
. as $root
| [props($root; []) | select(.path != ["global"])] as $all
| if $mode == "table" then
	$all[] | .path as $p
	| "| `" + ($p | join(".")) + "` | " + (.schema | type_of | cell) + " | "
		+ (if .schema.properties then "" else "`" + ($values | getpath($p) | tojson | cell) + "`" end)
		+ " | " + ((.schema.description // "") | cell) + " |"
else
	($all[] | .path as $p | ($p | join(".")) as $name
		| (if (.schema.description // "") == "" then "\($name): no description in values.schema.json" else empty end),
		  (if ($values | [paths] | index([$p])) == null then "\($name): in values.schema.json, not in values.yaml" else empty end)),
	($values | paths | . as $p | select(all(type == "string"))
		| select(($p | length) == 1 or ($all | any(.path == $p[:-1] and .schema.properties != null)))
		| select($all | any(.path == $p) | not)
		| "\($p | join(".")): in values.yaml, not in values.schema.json")
end
