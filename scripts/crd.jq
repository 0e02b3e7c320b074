# The StatefulCluster CRD from its source (input: the source CRD as JSON) and
# the Kubernetes OpenAPI v3 document $api (--slurpfile api: an array of one).
# Every "x-upstream: <schema>" node becomes that schema of $api inlined into
# structural form, with the rest of the node laid over it (used by
# scripts/crd-gen).
#
# Structural form, as the CRD API wants it: no $ref (inlined), no oneOf
# (IntOrString and Quantity are x-kubernetes-int-or-string), no defaults
# (a list-map whose keys are not all required is kept atomic instead), a
# free-form object (no properties, no additionalProperties) keeps its
# unknown fields, a format the API server does not know is left out, and any
# other keyword is an error (so a new one is seen, not dropped unnoticed).
#
# No `?` or try below: jq 1.6 loses every value of a `|=` whose right side
# has one.

def schemas: $api[0].components.schemas;
def refname: ltrimstr("#/components/schemas/");

# String formats the API server knows (apiextensions-apiserver's formats.go,
# compared with "-" removed), k8s-short-name and k8s-long-name since 1.34.
def string_formats: ["bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid",
	"uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
	"byte", "password", "date", "duration", "datetime", "k8sshortname", "k8slongname"];
def format_ok:
	if .type == "integer" then .format == "int32" or .format == "int64"
	elif .type == "number" then .format == "float" or .format == "double"
	elif .type == "string" then (.format | gsub("-"; "")) as $f | string_formats | index([$f]) != null
	else false end;

def kept: ["description", "type", "format", "items", "properties", "required", "additionalProperties",
	"maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "pattern",
	"enum", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type"];
def dropped: ["default", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-unions"];

# Upstream descriptions are cut to their first sentence: in full they make the
# CRD 348 KB of JSON, more than kubectl apply's last-applied annotation may
# hold (256 KiB). `kubectl explain pod.spec...` has the full text.
def first_sentence:
	[match("^.*?(?<!e\\.g|i\\.e)[.](?=\\s|$)"; "s").string] | if . == [] then null else .[0] end;
def short_description:
	if has("description") then .description = ((.description | first_sentence) // .description) else . end;

# A node with its $ref (or allOf of one $ref) replaced by the schema it names;
# the node's own keys (a field's description) win over the schema's.
def resolve:
	if has("$ref") then
		(.["$ref"] | refname) as $n | (schemas[$n] // error("no schema \($n)")) + {"x-name": $n} + del(.["$ref"])
	elif (.allOf // [] | length) == 1 and (.allOf[0] | has("$ref")) then
		(.allOf[0]["$ref"] | refname) as $n
		| (schemas[$n] // error("no schema \($n)")) + {"x-name": $n} + del(.allOf)
	else . end;

# The field's own description of an int-or-string node (the type's is generic).
def field_description: if .description and .description != schemas[.["x-name"]].description then {description} else {} end;

def structural($depth):
	if $depth > 40 then error("schema nested deeper than 40 (a recursive type?)") else . end
	| resolve
	| if .["x-name"] == "io.k8s.apimachinery.pkg.util.intstr.IntOrString" then
		({"x-kubernetes-int-or-string": true, anyOf: [{type: "integer"}, {type: "string"}]} + field_description)
		| short_description
	elif .["x-name"] == "io.k8s.apimachinery.pkg.api.resource.Quantity" then
		# a string ("1Gi") or a number (0.5), as a pod takes it
		({"x-kubernetes-int-or-string": true} + field_description) | short_description
	else
		short_description
		| . as $raw
		| (keys - kept - dropped - ["x-name"]) as $unknown
		| if $unknown != [] then error("keywords \($unknown) at \(.["x-name"] // "?") are not handled") else . end
		| with_entries(select(.key as $k | kept | index([$k])))
		| if has("properties") then .properties |= map_values(structural($depth + 1)) else . end
		| if has("items") then .items |= structural($depth + 1) else . end
		| if (.additionalProperties | type) == "object" then .additionalProperties |= structural($depth + 1)
		  elif has("additionalProperties") then error("additionalProperties \(.additionalProperties) is not handled")
		  else . end
		| if .type == "object" and (has("properties") | not) and (has("additionalProperties") | not)
		  then .["x-kubernetes-preserve-unknown-fields"] = true else . end
		| if has("format") and (format_ok | not) then del(.format) else . end
		# list-map keys must be required or defaulted; a default would change what a stored object reads as
		# (a port without protocol read back with protocol: TCP, so its template hash, so a roll): such a
		# list is kept atomic instead, as a whole (server-side apply then owns it whole).
		| if .["x-kubernetes-list-type"] == "map"
		     and ([.["x-kubernetes-list-map-keys"][] as $k | (.items.required // []) | index([$k])] | all | not)
		  then .["x-kubernetes-list-type"] = "atomic" | del(.["x-kubernetes-list-map-keys"])
		  else . end
	end;

# Lays $o over the node: keys of $o win, properties/items/additionalProperties
# merge, required lists add up.
def overlay($o):
	reduce ($o | keys_unsorted[]) as $k (.;
		if $k == "required" then (.required // []) as $r | .required = $r + ($o.required - $r)
		elif $k == "properties" then
			.properties = reduce ($o.properties | to_entries[]) as $e (.properties // {};
				.[$e.key] = ((.[$e.key] // {}) | overlay($e.value)))
		elif ($k == "items" or $k == "additionalProperties") and ($o[$k] | type) == "object" then
			.[$k] = ((.[$k] // {}) | overlay($o[$k]))
		else .[$k] = $o[$k] end);

def upstream($n): {"$ref": "#/components/schemas/\($n)"} | structural(0);

(if .metadata.annotations == {} then del(.metadata.annotations) else . end)
| .spec.versions[].schema.openAPIV3Schema |= walk(
	if type == "object" and has("x-upstream") then
		.["x-upstream"] as $n | del(.["x-upstream"]) as $o | upstream($n) | overlay($o)
	else . end)
