"""GET /openapi/v2: the Swagger 2.0 document of every kind the cluster
serves, as kube-apiserver publishes it, in JSON or in the protobuf form
(gnostic's openapi_v2.Document) that client-go's discovery client asks
for (Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf)
and that kubectl's and helm's client-side schema validation parse.

The definitions come from the same field table the decoder uses
(k8s_types.json): each built-in kind and the types it reaches, with the
JSON type and format of every field, and the x-kubernetes-group-version-kind
extension on the kinds; a served CRD version contributes its structural
schema (what Swagger 2.0 can say of it), with metadata as ObjectMeta.
What the JavaScript models lost is missing here too: descriptions, the
required lists and the enum values, which only make the real document
stricter for client-side validation, never more lenient on the server.

Standard library only.
"""
import json

import decoder
import kinds
import protobuf as pb

MEDIA_TYPES = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
               "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
REPLY_TYPE = MEDIA_TYPES[1]
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# The types of k8s.io/apimachinery that the kinds share.
META_TYPES = {"V1ObjectMeta", "V1OwnerReference", "V1ManagedFieldsEntry", "V1LabelSelector",
              "V1LabelSelectorRequirement", "V1Condition", "V1DeleteOptions",
              "V1Preconditions", "V1ListMeta", "V1Status", "V1StatusDetails", "V1StatusCause"}
# Core types first reached from another group's kind.
CORE_TYPES = {"V1PodTemplateSpec"}
SCALARS = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
    "float64": {"type": "number", "format": "double"},
    "bytes": {"type": "string", "format": "byte"},
    "Time": {"$ref": "#/definitions/" + META + "Time"},
    "MicroTime": {"$ref": "#/definitions/" + META + "MicroTime"},
    "Quantity": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
    "IntOrString": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
    "JSON": {}, "SchemaOrBool": {}, "SchemaOrArray": {}, "SchemaOrStringArray": {},
}
# The named scalar types, as kube-openapi defines them.
SCALAR_DEFINITIONS = {
    META + "Time": {"type": "string", "format": "date-time"},
    META + "MicroTime": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string",
                                                         "format": "int-or-string"},
}


# The query parameters of a write that clients look for (kubectl checks
# fieldValidation before it leaves validation to the server).
WRITE_PARAMETERS = [{"name": n, "in": "query", "type": "string", "uniqueItems": True}
                    for n in ("dryRun", "fieldManager", "fieldValidation")]


def _package(group_version):
    """The Go package a kind's definitions are named in."""
    group, _, version = group_version.rpartition("/")
    if group == "apiextensions.k8s.io":
        return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.%s." % version
    if group == "meta.k8s.io":
        return META
    short = {"": "core", "coordination.k8s.io": "coordination", "events.k8s.io": "events",
             "networking.k8s.io": "networking", "rbac.authorization.k8s.io": "rbac",
             "authentication.k8s.io": "authentication"}.get(group, group)
    return "io.k8s.api.%s.%s." % (short, version)


class Builder:
    """Names every reachable model class once, then writes its schema."""

    def __init__(self):
        self.t = decoder.types()
        self.names = {}   # model class -> definition name
        self.defs = dict(SCALAR_DEFINITIONS)

    def name(self, cls, package):
        if cls not in self.names:
            go = self.t["types"][cls]["go"]
            if cls in META_TYPES:
                package = META
            elif cls in CORE_TYPES:
                package = "io.k8s.api.core.v1."
            self.names[cls] = package + go
            self.defs[self.names[cls]] = self.model(cls, package)
        return self.names[cls]

    def model(self, cls, package):
        self.defs[self.names[cls]] = {}  # a placeholder against recursion
        props = {}
        for field, texpr in sorted(self.t["types"][cls]["fields"].items()):
            props[field] = self.schema(texpr[0] if isinstance(texpr, list) else texpr, package)
        return {"type": "object", "properties": props}

    def schema(self, texpr, package):
        if texpr.startswith("[]"):
            return {"type": "array", "items": self.schema(texpr[2:], package)}
        if texpr.startswith("map[string]"):
            return {"type": "object",
                    "additionalProperties": self.schema(texpr[len("map[string]"):], package)}
        if texpr in SCALARS:
            return dict(SCALARS[texpr])
        return {"$ref": "#/definitions/" + self.name(texpr, package)}


def _crd_schema(s):
    """A CRD's structural schema as Swagger 2.0 can hold it: v3-only
    keywords dropped, metadata left to ObjectMeta."""
    if not isinstance(s, dict):
        return {}
    out = {}
    for k in ("type", "format", "description", "required", "enum", "maximum", "minimum",
              "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
              "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
              "x-kubernetes-embedded-resource", "x-kubernetes-list-type",
              "x-kubernetes-map-type"):
        if k in s:
            out[k] = s[k]
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    if isinstance(s.get("properties"), dict):
        out["properties"] = {k: _crd_schema(v) for k, v in s["properties"].items()}
    if isinstance(s.get("items"), dict):
        out["items"] = _crd_schema(s["items"])
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        out["additionalProperties"] = _crd_schema(ap)
    elif isinstance(ap, bool):
        out["additionalProperties"] = ap
    return out


def document(registry):
    """The Swagger 2.0 document (a dict) of what registry serves."""
    b = Builder()
    kinds_table = b.t["kinds"]
    ordered = sorted(kinds_table.items(), key=lambda kv: (kv[0].count("/"), kv[0]))
    for key, cls in ordered:  # the core kinds first: their types are core's
        gv, _, kind = key.rpartition("/")
        name = b.name(cls, _package(gv))
        group, _, version = gv.rpartition("/")
        b.defs[name]["x-kubernetes-group-version-kind"] = [
            {"group": group if group != "meta.k8s.io" else "", "kind": kind,
             "version": version}]
    objmeta = b.names["V1ObjectMeta"]
    paths = {}
    for gv, plurals in sorted(registry.kinds().items()):
        group, _, version = gv.rpartition("/")
        prefix = "/api/v1" if gv == "v1" else "/apis/" + gv
        for plural, k in sorted(plurals.items()):
            if isinstance(k, kinds.Custom):
                schema = k.schema
                rev = ".".join(reversed(k.group.split(".")))
                name = "%s.%s.%s" % (rev, version, k.kind)
                sch = _crd_schema(schema or {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True})
                sch.setdefault("properties", {})["metadata"] = {
                    "$ref": "#/definitions/" + objmeta}
                sch["x-kubernetes-group-version-kind"] = [
                    {"group": group, "kind": k.kind, "version": version}]
                b.defs[name] = sch
            base = prefix + ("/namespaces/{namespace}" if k.namespaced else "") + "/" + plural
            gvk = {"group": group, "kind": k.kind, "version": version}
            op = {"x-kubernetes-group-version-kind": gvk,
                  "responses": {"200": {"description": "OK"}}}
            write = dict(op, parameters=WRITE_PARAMETERS)
            paths[base] = {"get": op, "post": write}
            paths[base + "/{name}"] = {"get": op, "put": write, "patch": write, "delete": op}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.31.0-mwj-local"},
            "paths": paths, "definitions": b.defs}


# --- the protobuf form: gnostic openapiv2/OpenAPIv2.proto ---

def _named(num, name, value_bytes):
    return pb.field_bytes(num, pb.field_bytes(1, name) + pb.field_bytes(2, value_bytes))


def _any(value):
    """Any {yaml = 2}: a vendor extension's value, which kube-openapi reads
    as YAML (JSON is YAML)."""
    return pb.field_bytes(2, json.dumps(value, sort_keys=True))


def _vendor(d, num):
    return b"".join(_named(num, k, _any(v)) for k, v in sorted(d.items())
                    if k.startswith("x-"))


def encode_schema(s):
    """Schema: _ref 1, format 2, description 4, required 19, enum 20,
    additional_properties 21, type 22, items 23, properties 25,
    vendor_extension 31."""
    out = b""
    if "$ref" in s:
        out += pb.field_bytes(1, s["$ref"])
    if s.get("format"):
        out += pb.field_bytes(2, s["format"])
    if s.get("description"):
        out += pb.field_bytes(4, s["description"])
    for r in s.get("required") or []:
        out += pb.field_bytes(19, r)
    for e in s.get("enum") or []:
        out += pb.field_bytes(20, _any(e))
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        out += pb.field_bytes(21, pb.field_bytes(1, encode_schema(ap)))
    elif isinstance(ap, bool):
        out += pb.field_bytes(21, pb.field_varint(2, ap))
    if s.get("type"):
        out += pb.field_bytes(22, pb.field_bytes(1, s["type"]))
    if isinstance(s.get("items"), dict):
        out += pb.field_bytes(23, pb.field_bytes(1, encode_schema(s["items"])))
    if s.get("properties"):
        props = b"".join(_named(1, k, encode_schema(v)) for k, v in sorted(
            s["properties"].items()))
        out += pb.field_bytes(25, props)
    return out + _vendor(s, 31)


def _parameter(p):
    """ParametersItem {parameter 1: Parameter {non_body_parameter 2:
    NonBodyParameter {query_parameter_sub_schema 3: {in 2, name 4,
    type 6, unique_items 20}}}}."""
    query = pb.field_bytes(2, p["in"]) + pb.field_bytes(4, p["name"]) + \
        pb.field_bytes(6, p["type"]) + pb.field_varint(20, p.get("uniqueItems", False))
    return pb.field_bytes(1, pb.field_bytes(2, pb.field_bytes(3, query)))


def _operation(op):
    """Operation: parameters 8, responses 9 (Responses: response_code 1 of
    ResponseValue {response 1: Response {description 1}}),
    vendor_extension 13."""
    params = b"".join(pb.field_bytes(8, _parameter(p)) for p in op.get("parameters") or [])
    codes = b"".join(_named(1, code, pb.field_bytes(1, pb.field_bytes(1, r.get(
        "description", "")))) for code, r in sorted(op.get("responses", {}).items()))
    return params + pb.field_bytes(9, codes) + _vendor(op, 13)


def encode(doc):
    """The gnostic Document of doc: swagger 1, info 2, paths 8 (Paths:
    path 2 of NamedPathItem), definitions 9 (NamedSchema 1)."""
    info = pb.field_bytes(1, doc["info"]["title"]) + pb.field_bytes(2, doc["info"]["version"])
    verbs = {"get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8}
    paths = b""
    for path, item in sorted(doc["paths"].items()):
        body = b"".join(pb.field_bytes(verbs[v], _operation(op))
                        for v, op in sorted(item.items()) if v in verbs)
        paths += _named(2, path, body)
    defs = b"".join(_named(1, k, encode_schema(v)) for k, v in sorted(
        doc["definitions"].items()))
    return pb.field_bytes(1, doc["swagger"]) + pb.field_bytes(2, info) + \
        pb.field_bytes(8, paths) + pb.field_bytes(9, defs)
