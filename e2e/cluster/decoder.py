"""How the local test cluster turns a request body into a built-in kind,
the way the kube-apiserver's JSON codec does it (sigs.k8s.io/json
decoding into the Go structs of k8s.io/api, then the create and update
handlers of k8s.io/apiserver), so that it refuses the same bodies with
the same words.

A body goes through two steps, as on the real server:

 1. parse_json(): the body must be one JSON value; the codec first reads
    its apiVersion and kind with encoding/json (meta.go Interpret), so a
    body that is not JSON, or is an array, or has `"kind": 5`, fails
    here: `couldn't get version/kind; json parse error: ...`.
 2. decode(): the value is decoded into the kind's Go type, field by
    field, with the types in k8s_types.json (see gen_types.py):
    - a value of the wrong JSON type is an error: the first one, or the
      first error of a type with its own UnmarshalJSON (Time, MicroTime,
      Quantity, IntOrString, ...), which stops decoding at once;
    - fields the type does not have are dropped, and so are all but the
      last of a repeated key; with fieldValidation=Strict or Warn (Warn
      is the server's default) each is a strict error,
      `unknown field "spec.containers[0].foo"` or
      `duplicate field "metadata.name"`: Strict refuses the body with
      all of them, Warn returns them as warnings (the text inside the
      `Warning: 299 - "..."` headers);
    - times come back in UTC as the server stores them, byte fields
      come back in standard base64.
    The create and update handlers word a decode error as
    `Pod in version "v1" cannot be handled as a Pod: <error>`
    (transformDecodeError); the DELETE handler decodes DeleteOptions
    without strictness and returns the bare error (Kubernetes >= 1.35).

The type error text is Go's:
`json: cannot unmarshal string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64`:
the struct that holds the field, the path of JSON names from the root
without list indices or map keys (plus the name of an embedded struct the
field comes through: `Volume.spec.volumes.VolumeSource.hostPath`), and
the Go type. Strict errors instead name the full path with indices.

Custom resources (decode_custom()) decode into a map: only repeated keys
are strict errors at decoding; then unknown metadata fields
(`metadata.foo`) and the fields the CRD's schema prunes
(schema.unknown_fields(), sorted) join them, as in the
apiextensions-apiserver's schemaCoercingDecoder.

Standard library only.
"""
import base64
import copy
import json
import os
import re

import errors
import gojson
import gotime
import quantity
import schema

MODES = ("Strict", "Warn", "Ignore")
DELETE_OPTIONS = "meta.k8s.io/v1/DeleteOptions"
_TYPES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "k8s_types.json")
_TYPES = None
_ABSENT = object()  # a field that is not written back
_MAX_STRICT_ERRORS = 100  # sigs.k8s.io/json keeps at most 100
_INT_RANGES = {"int32": 1 << 31, "int64": 1 << 63}
_FINDKIND = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
             'Kind string "json:\\"kind,omitempty\\"" }')


def types():
    """k8s_types.json, loaded once."""
    global _TYPES
    if _TYPES is None:
        with open(_TYPES_PATH, encoding="utf-8") as f:
            _TYPES = json.load(f)
    return _TYPES


# ---------------------------------------------------------------- parsing

class GoFloat(float):
    """A JSON number with a fraction or exponent, with its literal text:
    Go's errors quote the literal (`number 1.5`), not a float."""

    def __new__(cls, text):
        self = float.__new__(cls, text)
        self.text = text
        return self


class _Pairs(dict):
    """A JSON object while parsing: the last value of each key wins, and
    the keys seen more than once are remembered."""

    @classmethod
    def from_pairs(cls, pairs):
        obj = cls(pairs)
        obj.pairs, obj.repeated = pairs, []
        if len(obj) != len(pairs):
            seen = set()
            for k, _ in pairs:
                if k in seen and k not in obj.repeated:
                    obj.repeated.append(k)
                seen.add(k)
        return obj


def _parse_int(text):
    """Python refuses int() of more than 4300 digits; such a literal fits
    no Go integer anyway, so it is kept as a number with its text."""
    return int(text) if len(text) < 4000 else GoFloat(text)


def _reject_constant(name):
    raise ValueError("not JSON: " + name)  # NaN, Infinity: Go's scanner says why


def _join(path, key):
    return key if not path else path + "." + key


def _plain(v, path, dups):
    """A parsed value as plain dicts and lists; repeated keys are added to
    dups with their path, as the strict decoder would name them."""
    if isinstance(v, dict):
        for k in getattr(v, "repeated", ()):
            p = _join(path, k)
            if p not in dups:
                dups.append(p)
        return {k: _plain(x, _join(path, k), dups) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x, "%s[%d]" % (path, i), dups) for i, x in enumerate(v)]
    if isinstance(v, str) and re.search("[\ud800-\udfff]", v):
        return re.sub("[\ud800-\udfff]", "\ufffd", v)  # Go replaces lone surrogates
    return v


def _json_kind(v):
    """How Go names a JSON value in a type error."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", dict: "object", list: "array"}.get(type(v), "object")


def _interpret(obj):
    """meta.go Interpret: apiVersion and kind read with encoding/json
    (case-insensitive keys), then ParseGroupVersion. Returns the error
    text or None."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        return "json: cannot unmarshal %s into Go value of type %s" % (_json_kind(obj), _FINDKIND)
    api_version = ""
    for key, v in getattr(obj, "pairs", obj.items()):
        name = {"apiversion": "apiVersion", "kind": "kind"}.get(key.lower())
        if name is None or v is None:
            continue
        if not isinstance(v, str):
            return "json: cannot unmarshal %s into Go struct field .%s of type string" % (
                _json_kind(v), name)
        if name == "apiVersion":
            api_version = v
    if api_version not in ("", "/") and api_version.count("/") > 1:
        return "unexpected GroupVersion string: " + api_version
    return None


def _summary(raw):
    """summarizeData(body, 30) of the handlers."""
    if not raw:
        return "<empty>"
    if raw[:1] == b"{":
        text = raw[:30].decode("utf-8", "replace")
        return text + " ..." if len(raw) > 30 else text
    return raw[:30].hex() + (" ..." if len(raw) > 30 else "")


def parse_json(raw, kind=""):
    """Parses a request body (bytes) as the kube-apiserver's codec does
    before decoding. Returns (obj, duplicates): obj is the JSON value
    (None for `null`; numbers with a fraction or exponent are GoFloat,
    which keeps their literal), duplicates the paths of repeated keys as
    strict errors name them (`metadata.name`, `spec.containers[0].image`),
    in document order; pass them to decode().

    Raises errors.ApiError 400 BadRequest when the body is not one JSON
    value or its apiVersion/kind cannot be read. With kind (the kind the
    endpoint serves, e.g. "Pod") the message is the create/update
    handlers': `the object provided is unrecognized (must be of type
    Pod): couldn't get version/kind; json parse error: <Go's text>
    (<first 30 bytes>)`; without it, the bare error, as the DELETE
    handler gives it."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    err, obj = None, None
    try:
        obj = json.loads(raw.decode("utf-8", "replace"), object_pairs_hook=_Pairs.from_pairs,
                         parse_float=GoFloat, parse_int=_parse_int,
                         parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        # Valid for Go yet refused by Python can only be nesting deeper
        # than Python's recursion limit (Go allows 10000 levels): refused
        # anyway, the stricter reading, and said so.
        why = gojson.syntax_error(raw) or (
            "nesting too deep for the local test cluster" if isinstance(e, RecursionError)
            else str(e))
        err = "couldn't get version/kind; json parse error: " + why
    if err is None:
        why = _interpret(obj)
        if why is not None:
            err = why if why.startswith("unexpected") else \
                "couldn't get version/kind; json parse error: " + why
    if err is not None:
        if kind:
            err = "the object provided is unrecognized (must be of type %s): %s (%s)" % (
                kind, err, _summary(raw))
        raise errors.ApiError(400, "BadRequest", err)
    dups = []
    try:
        return _plain(obj, "", dups), dups
    except RecursionError:  # see above: the stricter reading
        raise errors.ApiError(400, "BadRequest", "couldn't get version/kind; json parse "
                              "error: nesting too deep for the local test cluster")


# --------------------------------------------------------------- decoding

class GoTypeError:
    """encoding/json's *UnmarshalTypeError."""

    def __init__(self, value, go_type):
        self.value, self.go_type, self.struct, self.field = value, go_type, "", ""

    def __str__(self):
        if self.struct or self.field:
            return "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (
                self.value, self.struct, self.field, self.go_type)
        return "json: cannot unmarshal %s into Go value of type %s" % (self.value, self.go_type)


class _Abort(Exception):
    """An UnmarshalJSON error: decoding stops, this error wins."""

    def __init__(self, err):
        super().__init__(str(err))
        self.err = err


class _Ctx:
    """Where the decoder is: the strict path (with indices), the Go field
    stack of the type errors (JSON names, embedded struct names, no
    indices) and the struct that holds the current field."""
    __slots__ = ("path", "stack", "struct")

    def __init__(self, path="", stack=(), struct=""):
        self.path, self.stack, self.struct = path, stack, struct

    def place(self, err):
        """addErrorContext: names the struct and field of a type error."""
        if isinstance(err, GoTypeError) and (self.struct or self.stack):
            err.struct = self.struct
            err.field = ".".join(self.stack + ((err.field,) if err.field else ()))
        return err


class _State:
    """One decode (one Go Unmarshal call): its first error, and its strict
    errors when strict."""

    def __init__(self, strict, dups=()):
        self.strict, self.dups, self.saved = strict, set(dups), None
        self.found = []  # (what, path): "unknown" or "duplicate"

    def save(self, err, ctx):
        if self.saved is None:
            self.saved = ctx.place(err)

    def strict_error(self, what, path):
        if self.strict and (what, path) not in self.found \
                and len(self.found) < _MAX_STRICT_ERRORS:
            self.found.append((what, path))

    @property
    def errors(self):
        """The strict errors as sigs.k8s.io/json words them."""
        return ["%s field %s" % (what, gojson.go_quote(p)) for what, p in self.found]


_GO_NAMES = {"bytes": "[]uint8", "Time": "v1.Time", "MicroTime": "v1.MicroTime",
             "Quantity": "resource.Quantity", "IntOrString": "intstr.IntOrString",
             "JSON": "v1.JSON", "SchemaOrBool": "v1.JSONSchemaPropsOrBool",
             "SchemaOrArray": "v1.JSONSchemaPropsOrArray",
             "SchemaOrStringArray": "v1.JSONSchemaPropsOrStringArray"}


def _go_type(texpr, go=None):
    """The Go type string a type error prints for a type expression."""
    if go:
        return go
    if texpr.startswith("[]"):
        return "[]" + _go_type(texpr[2:])
    if texpr.startswith("map[string]"):
        return "map[string]" + _go_type(texpr[11:])
    if texpr in _GO_NAMES or texpr[:1].islower():
        return _GO_NAMES.get(texpr, texpr)
    return "v1." + types()["types"][texpr]["go"]


def _elem_go(go, texpr):
    """The Go type of the elements of a named list or map type."""
    if go and go.startswith("[]"):
        return go[2:]
    if go and go.startswith("map["):
        depth = 0
        for i, c in enumerate(go):
            depth += (c == "[") - (c == "]")
            if depth == 0 and c == "]":
                return go[i + 1:]
    return None


def _zero(texpr):
    """What a JSON null in a list or map becomes (Go's zero value)."""
    if texpr in ("string",):
        return ""
    if texpr in ("int32", "int64", "float64", "IntOrString"):
        return 0
    if texpr == "bool":
        return False
    if texpr == "Quantity":
        return "0"
    if texpr[:1].isupper() and texpr in types()["types"]:
        return {}
    return None


def _number_text(v):
    return v.text if isinstance(v, GoFloat) else repr(v) if isinstance(v, float) else str(v)


def _walk(v, texpr, go, ctx, st):
    """Decodes JSON value v (not None) as texpr; returns the value as
    stored, or _ABSENT after a type error (already saved in st)."""
    if texpr.startswith("[]"):
        return _list(v, texpr[2:], go, ctx, st)
    if texpr.startswith("map[string]"):
        return _map(v, texpr[11:], go, ctx, st)
    scalar = _SCALARS.get(texpr)
    if scalar is not None:
        return scalar(v, texpr, go, ctx, st)
    if not isinstance(v, dict):
        st.save(GoTypeError(_json_kind(v), _go_type(texpr)), ctx)
        return _ABSENT
    return _struct(v, texpr, ctx, st)


def _struct(obj, cls, ctx, st):
    t = types()["types"][cls]
    via = {f: name for name, fs in t.get("inline", {}).items() for f in fs}
    out = {}
    for key, val in obj.items():
        path = _join(ctx.path, key)
        spec = t["fields"].get(key)
        if spec is None:
            st.strict_error("unknown", path)
            continue
        if path in st.dups:
            st.strict_error("duplicate", path)
        if val is None:
            continue  # pointers, maps and lists become nil; other zero values are dropped too
        stack = ctx.stack + ((via[key],) if key in via else ()) + (key,)
        texpr, go = (spec, None) if isinstance(spec, str) else spec
        r = _walk(val, texpr, go, _Ctx(path, stack, t["go"]), st)
        if r is not _ABSENT:
            out[key] = r
    return out


def _list(v, elem, go, ctx, st):
    if not isinstance(v, list):
        st.save(GoTypeError(_json_kind(v), _go_type("[]" + elem, go)), ctx)
        return _ABSENT
    ego = _elem_go(go, elem)
    out = []
    for i, x in enumerate(v):
        c = _Ctx("%s[%d]" % (ctx.path, i), ctx.stack, ctx.struct)
        r = _zero(elem) if x is None else _walk(x, elem, ego, c, st)
        out.append(_zero(elem) if r is _ABSENT else r)
    return out


def _map(v, elem, go, ctx, st):
    if not isinstance(v, dict):
        st.save(GoTypeError(_json_kind(v), _go_type("map[string]" + elem, go)), ctx)
        return _ABSENT
    ego = _elem_go(go, elem)
    out = {}
    for key, x in v.items():
        path = _join(ctx.path, key)
        if path in st.dups:
            st.strict_error("duplicate", path)
        r = _zero(elem) if x is None else _walk(x, elem, ego, _Ctx(path, ctx.stack, ctx.struct), st)
        out[key] = _zero(elem) if r is _ABSENT else r
    return out


# Scalars: each returns the stored value or _ABSENT.

def _string(v, texpr, go, ctx, st):
    if isinstance(v, str):
        return v
    st.save(GoTypeError(_json_kind(v), go or "string"), ctx)
    return _ABSENT


def _bool(v, texpr, go, ctx, st):
    if isinstance(v, bool):
        return v
    st.save(GoTypeError(_json_kind(v), go or "bool"), ctx)
    return _ABSENT


def _int(v, texpr, go, ctx, st):
    """An int32 or int64: a JSON integer in range; 1.0 and 1e3 are not."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        limit = _INT_RANGES[texpr]
        if isinstance(v, int) and -limit <= v < limit:
            return v
        st.save(GoTypeError("number " + _number_text(v), go or texpr), ctx)
        return _ABSENT
    st.save(GoTypeError(_json_kind(v), go or texpr), ctx)
    return _ABSENT


def _float(v, texpr, go, ctx, st):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        f = float(v)
        if f in (float("inf"), float("-inf")):
            st.save(GoTypeError("number " + _number_text(v), "float64"), ctx)
            return _ABSENT
        # Go writes an integral float64 without a fraction (1.0 -> 1).
        return int(f) if f.is_integer() and abs(f) < 1e21 else f
    st.save(GoTypeError(_json_kind(v), "float64"), ctx)
    return _ABSENT


def _bytes(v, texpr, go, ctx, st):
    """[]byte: a standard base64 string (or a JSON array of bytes);
    stored re-encoded, as the server writes it."""
    if isinstance(v, list):
        return _bytes_from_list(v, ctx, st)
    if not isinstance(v, str):
        st.save(GoTypeError(_json_kind(v), "[]uint8"), ctx)
        return _ABSENT
    data, err = gojson.decode_base64(v)
    if err is not None:
        st.save(err, ctx)  # not a type error: Go saves it as it is
        return _ABSENT
    return base64.b64encode(data).decode("ascii")


def _bytes_from_list(v, ctx, st):
    data = bytearray()
    for x in v:
        if x is None:
            data.append(0)
        elif isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 256:
            data.append(x)
        else:
            kind = _json_kind(x)
            st.save(GoTypeError(kind + (" " + _number_text(x) if kind == "number" else ""),
                                "uint8"), ctx)
            return _ABSENT
    return base64.b64encode(bytes(data)).decode("ascii")


def _time(v, texpr, go, ctx, st):
    """metav1.Time / MicroTime: UnmarshalJSON decodes a string with
    encoding/json, then time.Parse; either error stops decoding."""
    if not isinstance(v, str):
        raise _Abort(ctx.place(GoTypeError(_json_kind(v), "string")))
    micro = texpr == "MicroTime"
    try:
        secs, nsec = gotime.parse(v, micro)
    except gotime.TimeError as e:
        raise _Abort(str(e))
    if gotime.is_zero(secs, nsec):
        return _ABSENT  # the zero time is written as null
    return gotime.format_utc(secs, nsec, micro)


def _quantity(v, texpr, go, ctx, st):
    """resource.Quantity: a string (trimmed) or a number; stored in the
    server's canonical form."""
    try:
        return str(quantity.from_json(v))
    except quantity.QuantityError as e:
        raise _Abort(str(e))


def _int_or_string(v, texpr, go, ctx, st):
    """intstr.IntOrString: a string, or else whatever encoding/json makes
    of the value as an int32."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool) and -(1 << 31) <= v < (1 << 31):
        return v
    kind = _json_kind(v)
    value = "number " + _number_text(v) if kind == "number" else kind
    raise _Abort(ctx.place(GoTypeError(value, "int32")))


def _raw(v, texpr, go, ctx, st):
    """apiextensions JSON, metav1.FieldsV1: any JSON, kept as it is."""
    return copy.deepcopy(v)


def _nested(v, texpr, ctx):
    """A value decoded by a type's own UnmarshalJSON calling json.Unmarshal
    again (JSONSchemaPropsOr*): no strict errors inside, and its error,
    named from the inner decode, stops the outer one (the outer decoder
    names the struct and prefixes the path)."""
    st = _State(strict=False)
    try:
        r = _walk(v, texpr, None, _Ctx(), st)
        err = st.saved
    except _Abort as a:
        err = a.err
    if err is not None:
        raise _Abort(ctx.place(err))
    return r


def _schema_or_bool(v, texpr, go, ctx, st):
    if isinstance(v, bool):
        return v
    if isinstance(v, dict):
        return _nested(v, "V1JSONSchemaProps", ctx)
    raise _Abort("boolean or JSON schema expected")


def _schema_or_array(v, texpr, go, ctx, st):
    """An object is a schema, an array a list of them; anything else is
    silently nothing."""
    if isinstance(v, dict):
        return _nested(v, "V1JSONSchemaProps", ctx)
    if isinstance(v, list):
        return _nested(v, "[]V1JSONSchemaProps", ctx)
    return _ABSENT


def _schema_or_string_array(v, texpr, go, ctx, st):
    if isinstance(v, dict):
        return _nested(v, "V1JSONSchemaProps", ctx)
    if isinstance(v, list):
        return _nested(v, "[]string", ctx)
    return None


_SCALARS = {
    "string": _string, "bool": _bool, "int32": _int, "int64": _int, "float64": _float,
    "bytes": _bytes, "Time": _time, "MicroTime": _time, "Quantity": _quantity,
    "IntOrString": _int_or_string, "JSON": _raw, "SchemaOrBool": _schema_or_bool,
    "SchemaOrArray": _schema_or_array, "SchemaOrStringArray": _schema_or_string_array,
}


def _split_key(gvk_key):
    """("Pod", "v1") from "v1/Pod"; ("Deployment", "v1") from
    "apps/v1/Deployment"."""
    group_version, _, kind = gvk_key.rpartition("/")
    return kind, group_version.rpartition("/")[2]


def _cannot(kind, version, err):
    """transformDecodeError, when the body named its kind."""
    return "%s in version %s cannot be handled as a %s: %s" % (
        kind, gojson.go_quote(version), kind, err)


def _run(obj, root, st):
    """One Unmarshal: (value, error or None)."""
    if obj is None:
        return {}, None  # `null` decodes to the empty object
    try:
        out = _walk(obj, root, None, _Ctx(), st)
        return ({} if out is _ABSENT else out), st.saved
    except _Abort as a:
        return None, a.err


def decode(gvk_key, obj, mode="Warn", duplicates=()):
    """Decodes obj (from parse_json) as the kind gvk_key names, e.g.
    "v1/Pod", "apps/v1/Deployment", "meta.k8s.io/v1/DeleteOptions";
    mode is the fieldValidation parameter ("Strict", "Warn" - the
    server's default when absent - or "Ignore"); duplicates come from
    parse_json.

    Returns (clean_obj, warnings): clean_obj is obj without unknown fields
    and with nulls dropped, times in UTC, quantities canonical, byte
    fields in standard base64; warnings (Warn only) are the strict errors
    as the server words its Warning headers, e.g.
    `unknown field "spec.foo"`, `duplicate field "metadata.name"`.

    Raises errors.ApiError 400 BadRequest on a decode error, worded
    `Pod in version "v1" cannot be handled as a Pod: <error>`, and with
    Strict on strict errors, `... as a Pod: strict decoding error:
    unknown field "spec.foo", duplicate field "metadata.name"`. A
    DeleteOptions body is decoded without strictness whatever the mode,
    and its error is the bare decode error, as the DELETE handler does.
    Raises KeyError for an unknown gvk_key, ValueError for a bad mode."""
    if mode not in MODES:
        raise ValueError("fieldValidation must be one of %s, not %r" % (", ".join(MODES), mode))
    root = types()["kinds"][gvk_key]
    kind, version = _split_key(gvk_key)
    delete = gvk_key == DELETE_OPTIONS
    st = _State(strict=mode != "Ignore" and not delete, dups=duplicates)
    out, err = _run(obj, root, st)
    if err is not None:
        text = str(err) if delete else _cannot(kind, version, err)
        raise errors.ApiError(400, "BadRequest", text)
    return _strictness(out, st.errors, mode, kind, version)


def _strictness(out, strict_errors, mode, kind, version):
    """Strict refuses, Warn warns, Ignore (never has any) passes."""
    if strict_errors and mode == "Strict":
        raise errors.ApiError(400, "BadRequest", _cannot(
            kind, version, "strict decoding error: " + ", ".join(strict_errors)))
    return out, (list(strict_errors) if mode == "Warn" else [])


def _sorted_deep(v):
    """A value as json.Marshal writes a map: keys sorted, at every level."""
    if isinstance(v, dict):
        return {k: _sorted_deep(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [_sorted_deep(x) for x in v]
    return v


def decode_custom(kind, version, crd_schema, obj, mode="Warn", duplicates=()):
    """Decodes a custom resource obj (from parse_json) of kind/version
    whose CRD version has the structural schema crd_schema (the
    openAPIV3Schema), as the apiextensions-apiserver does for a create or
    update.

    Strict errors, in the server's order: every repeated key (decoding
    into a map finds them all), then the unknown fields of metadata
    (`metadata.foo`, metadata being re-read from a map, so in key
    order), then the fields pruning drops (schema.unknown_fields()).

    Returns (obj with metadata decoded as ObjectMeta, warnings); pruning
    and defaulting are left to schema.admit(). Raises errors.ApiError 400
    BadRequest as decode() does: `<Kind> in version "<v>" cannot be
    handled as a <Kind>: ...`; a type error in metadata is named from
    metadata (`Go struct field ObjectMeta.name`)."""
    if mode not in MODES:
        raise ValueError("fieldValidation must be one of %s, not %r" % (", ".join(MODES), mode))
    strict = mode != "Ignore"
    found = ["duplicate field " + gojson.go_quote(p) for p in duplicates] if strict else []
    out = dict(obj) if isinstance(obj, dict) else {}
    if isinstance(obj, dict) and "metadata" in obj:
        st = _State(strict=strict)
        meta = obj["metadata"]
        clean, err = ({}, None) if meta is None else _run(_sorted_deep(meta), "V1ObjectMeta", st)
        if err is not None:
            raise errors.ApiError(400, "BadRequest", _cannot(kind, version, err))
        # GetObjectMetaWithOptions keeps only the paths; the handler
        # words them with fmt `unknown field "%s"`, not strconv.Quote.
        found += ['unknown field "metadata.%s"' % p for _, p in st.found]
        out["metadata"] = clean
    if strict:
        found += ['unknown field "%s"' % p for p in schema.unknown_fields(crd_schema, out)]
    return _strictness(out, found, mode, kind, version)
