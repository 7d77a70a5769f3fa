"""Protobuf request bodies (Content-Type application/vnd.kubernetes.protobuf),
as the clientsets of client-go 1.32 and later send them for built-in kinds
(kubernetes.NewForConfig defaults to protobuf, accepting protobuf then
JSON). helm 3.17 keeps its releases through such a clientset: a Secret (or
ConfigMap) created, updated and deleted in protobuf.

A real kube-apiserver decodes protobuf for every built-in kind and answers
415 for a custom resource, whose only encodings are JSON and YAML. Here a
body is translated into the JSON the rest of the request path decodes
(decoder.py), so that a protobuf request is checked exactly as the same
object sent as JSON. The kinds translated are those in MESSAGES; a
protobuf body of another kind is answered 415 and says which are, rather
than misread. Answers are always JSON, which the clients accept (their
Accept header lists application/json after protobuf, and they decode by
the response's Content-Type).

The wire format (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): the
4 magic bytes "k8s\\0", then a runtime.Unknown message: typeMeta (1:
apiVersion 1, kind 2), raw (2: the object's own message), contentEncoding
(3), contentType (4). The field numbers of each message are those of the
generated.proto files of k8s.io/api and k8s.io/apimachinery. gogo-protobuf
writes every non-pointer field, zero values included; JSON omits them
(omitempty), so a zero value of a field not marked optional ("?") is
dropped here, as the Go decoder followed by the JSON encoder would drop it.

Standard library only.
"""
import base64
import datetime
import json

from errors import ApiError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
# Nested deeper than this, a body is refused rather than followed.
MAX_DEPTH = 32

# message -> field number -> (JSON name, type). Types: string, bytes,
# int64, int32, bool, Time (metav1.Time: seconds 1, nanos 2), RawJSON (a
# message whose field 1 holds JSON bytes: metav1.FieldsV1), a message name,
# "[]T" (repeated), "map[string]T". A trailing "?" marks a Go pointer
# (*bool, *int64, *string): kept when zero.
MESSAGES = {
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"),
                   3: ("namespace", "string"), 4: ("selfLink", "string"),
                   5: ("uid", "string"), 6: ("resourceVersion", "string"),
                   7: ("generation", "int64"), 8: ("creationTimestamp", "Time"),
                   9: ("deletionTimestamp", "Time"),
                   10: ("deletionGracePeriodSeconds", "int64?"),
                   11: ("labels", "map[string]string"),
                   12: ("annotations", "map[string]string"),
                   13: ("ownerReferences", "[]OwnerReference"),
                   14: ("finalizers", "[]string"),
                   17: ("managedFields", "[]ManagedFieldsEntry")},
    "OwnerReference": {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                       5: ("apiVersion", "string"), 6: ("controller", "bool?"),
                       7: ("blockOwnerDeletion", "bool?")},
    "ManagedFieldsEntry": {1: ("manager", "string"), 2: ("operation", "string"),
                           3: ("apiVersion", "string"), 4: ("time", "Time"),
                           6: ("fieldsType", "string"), 7: ("fieldsV1", "RawJSON"),
                           8: ("subresource", "string")},
    "Preconditions": {1: ("uid", "string?"), 2: ("resourceVersion", "string?")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int64?"),
                      2: ("preconditions", "Preconditions"),
                      3: ("orphanDependents", "bool?"), 4: ("propagationPolicy", "string?"),
                      5: ("dryRun", "[]string"),
                      6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool?")},
    "Secret": {1: ("metadata", "ObjectMeta"), 2: ("data", "map[string]bytes"),
               3: ("type", "string"), 4: ("stringData", "map[string]string"),
               5: ("immutable", "bool?")},
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 2: ("data", "map[string]string"),
                  3: ("binaryData", "map[string]bytes"), 4: ("immutable", "bool?")},
    # authentication.k8s.io/v1, which `kubectl create token` sends.
    "TokenRequest": {1: ("metadata", "ObjectMeta"), 2: ("spec", "TokenRequestSpec"),
                     3: ("status", "TokenRequestStatus")},
    "TokenRequestSpec": {1: ("audiences", "[]string"), 3: ("boundObjectRef",
                                                           "BoundObjectReference"),
                         4: ("expirationSeconds", "int64?")},
    "BoundObjectReference": {1: ("kind", "string"), 2: ("apiVersion", "string"),
                             3: ("name", "string"), 4: ("uid", "string")},
    "TokenRequestStatus": {1: ("token", "string"), 2: ("expirationTimestamp", "Time")},
    # authentication.k8s.io/v1, which a delegating server's clientset sends.
    # UserInfo's extra (4: map<string, ExtraValue>) is skipped: the server
    # writes status.user, a client never needs to send it.
    "TokenReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "TokenReviewSpec"),
                    3: ("status", "TokenReviewStatus")},
    "TokenReviewSpec": {1: ("token", "string"), 2: ("audiences", "[]string")},
    "TokenReviewStatus": {1: ("authenticated", "bool"), 2: ("user", "UserInfo"),
                          3: ("error", "string"), 4: ("audiences", "[]string")},
    "UserInfo": {1: ("username", "string"), 2: ("uid", "string"), 3: ("groups", "[]string")},
    # authorization.k8s.io/v1, which `kubectl auth can-i` sends.
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"),
                                2: ("spec", "SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                    2: ("nonResourceAttributes", "NonResourceAttributes")},
    "ResourceAttributes": {1: ("namespace", "string"), 2: ("verb", "string"),
                           3: ("group", "string"), 4: ("version", "string"),
                           5: ("resource", "string"), 6: ("subresource", "string"),
                           7: ("name", "string")},
    "NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},
}
# (apiVersion, kind) of a body -> its message.
KINDS = {("v1", "Secret"): "Secret", ("v1", "ConfigMap"): "ConfigMap",
         ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
         ("authentication.k8s.io/v1", "TokenReview"): "TokenReview",
         ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
         ("v1", "DeleteOptions"): "DeleteOptions",
         ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions"}

VARINT, I64, LEN, I32 = 0, 1, 2, 5


class DecodeError(ValueError):
    pass


def _varint(buf, i):
    """(value, next index) of the varint at buf[i]."""
    shift, value = 0, 0
    while True:
        if i >= len(buf):
            raise DecodeError("unexpected EOF")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift >= 64:
            raise DecodeError("integer overflow")


def fields(buf):
    """Yields (field number, wire type, value) of a message: an int for
    varints and fixed-size fields, bytes for length-delimited ones."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise DecodeError("illegal tag 0")
        if wire == VARINT:
            value, i = _varint(buf, i)
        elif wire == LEN:
            n, i = _varint(buf, i)
            if n > len(buf) - i:
                raise DecodeError("unexpected EOF")
            value, i = bytes(buf[i:i + n]), i + n
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
            if size > len(buf) - i:
                raise DecodeError("unexpected EOF")
            value, i = int.from_bytes(buf[i:i + size], "little"), i + size
        else:
            raise DecodeError("illegal wireType %d for field %d" % (wire, num))
        yield num, wire, value


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _time(buf):
    seconds, _ = 0, 0
    for num, wire, v in fields(buf):
        if num == 1 and wire == VARINT:
            seconds = _signed(v)
    if seconds == 0:
        return None  # the zero Time, which JSON writes as null
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + \
        datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(texpr, wire, v, depth):
    base = texpr.rstrip("?")
    if base in ("string", "bytes", "Time", "RawJSON") or base in MESSAGES or \
            base.startswith("map["):
        if wire != LEN:
            raise DecodeError("wrong wireType %d for a %s" % (wire, base))
    elif wire != VARINT:
        raise DecodeError("wrong wireType %d for a %s" % (wire, base))
    if base == "string":
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError("invalid UTF-8 in a string") from e
    if base == "bytes":
        return base64.b64encode(v).decode()
    if base == "int64":
        return _signed(v)
    if base == "int32":
        return _signed(v)  # a negative int32 is sign-extended to 64 bits
    if base == "bool":
        return bool(v)
    if base == "Time":
        return _time(v)
    if base == "RawJSON":
        for num, w, raw in fields(v):
            if num == 1 and w == LEN:
                try:
                    return json.loads(raw.decode("utf-8"))
                except ValueError as e:
                    raise DecodeError("fieldsV1: %s" % e) from e
        return None
    return message(base, v, depth + 1)


def _map_entry(vtype, buf, depth):
    key, value = "", _zero(vtype)
    for num, wire, v in fields(buf):
        if num == 1:
            key = _scalar("string", wire, v, depth)
        elif num == 2:
            value = _scalar(vtype, wire, v, depth)
    return key, value


def _zero(texpr):
    return {"string": "", "bytes": "", "int64": 0, "int32": 0, "bool": False}.get(texpr)


def _is_zero(v):
    return v is None or v == "" or v == 0 or v is False or v == {} or v == []


def message(name, buf, depth=0):
    """The JSON object of message name encoded in buf."""
    if depth > MAX_DEPTH:
        raise DecodeError("nested too deeply")
    table = MESSAGES[name]
    out = {}
    for num, wire, v in fields(buf):
        if num not in table:
            continue  # unknown fields are skipped, as by the Go decoder
        json_name, texpr = table[num]
        if texpr.startswith("map[string]"):
            if wire != LEN:
                raise DecodeError("wrong wireType %d for %s" % (wire, json_name))
            k, val = _map_entry(texpr[len("map[string]"):], v, depth)
            out.setdefault(json_name, {})[k] = val
        elif texpr.startswith("[]"):
            out.setdefault(json_name, []).append(_scalar(texpr[2:], wire, v, depth))
        else:
            out[json_name] = _scalar(texpr, wire, v, depth)
    for num, (json_name, texpr) in table.items():
        if json_name in out and not texpr.endswith("?") and _is_zero(out[json_name]) \
                and not texpr.startswith("map["):
            del out[json_name]
    return out


def decode(raw):
    """The JSON object of a protobuf request body. Raises ApiError: 400
    for a body that is not one, 415 for a kind not translated here."""
    if not raw.startswith(MAGIC):
        raise ApiError(400, "BadRequest", "provided data does not appear to be a protobuf "
                       "message, expected prefix [107 56 115 0]")
    try:
        type_meta, inner, encoding = {}, b"", ""
        for num, wire, v in fields(raw[len(MAGIC):]):
            if num == 1 and wire == LEN:
                for n, w, tv in fields(v):
                    if n in (1, 2) and w == LEN:
                        type_meta[{1: "apiVersion", 2: "kind"}[n]] = tv.decode("utf-8")
            elif num == 2 and wire == LEN:
                inner = v
            elif num == 3 and wire == LEN:
                encoding = v.decode("utf-8")
        if encoding:
            raise DecodeError("content encoding %r is not supported" % encoding)
        key = (type_meta.get("apiVersion", ""), type_meta.get("kind", ""))
        if key[1] == "DeleteOptions":
            # Registered in every group: a typed client of any group sends it
            # with its own group version.
            key = ("meta.k8s.io/v1", "DeleteOptions")
        if key not in KINDS:
            raise ApiError(415, "UnsupportedMediaType", "the local test cluster decodes "
                           "protobuf bodies of %s only, not %s %s; send application/json"
                           % (", ".join(sorted("%s %s" % k for k in KINDS)), key[0], key[1]))
        obj = {"kind": key[1], "apiVersion": key[0]}
        obj.update(message(KINDS[key], inner))
        return obj
    except DecodeError as e:
        raise ApiError(400, "BadRequest", "the object provided is unrecognized: "
                       "unable to decode protobuf: %s" % e) from None


def to_json(raw):
    """decode(), as the JSON bytes the request path reads."""
    return json.dumps(decode(raw)).encode()


# --- encoding, for the answers that exist only in protobuf (/openapi/v2) ---

def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):
    """A length-delimited field: a string, bytes or a nested message."""
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | LEN) + varint(len(data)) + data


def field_varint(num, v):
    return varint(num << 3 | VARINT) + varint(int(v))
