"""What the Kubernetes API server does with a custom resource and its CRD's
structural OpenAPI v3 schema, in the order it does it: prune the fields the
schema does not know (unless x-kubernetes-preserve-unknown-fields), apply
defaults, then validate. Validation errors carry the field path and read
like the API server's, e.g.

    spec.workers: Invalid value: 0: spec.workers in body should be greater than or equal to 1
    spec.template: Required value
    spec.restartPolicy: Unsupported value: "Sometimes": supported values: "ExitCode", "Never"

Standard library only: this is part of the local test cluster.
"""
import copy
import datetime
import re

from errors import Cause, GoRaw

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
}


def _type_ok(kind, value):
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (
            isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _json(value):
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _join(path, key):
    return key if not path else "%s.%s" % (path, key)


def prune(schema, obj):
    """Returns obj without the fields schema does not describe."""
    if isinstance(obj, dict) and schema.get("type", "object") == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        keep = schema.get("x-kubernetes-preserve-unknown-fields", False)
        out = {}
        for k, v in obj.items():
            if props and k in props:
                out[k] = prune(props[k], v)
            elif isinstance(extra, dict):
                out[k] = prune(extra, v)
            elif keep or extra is True:
                out[k] = v
        return out
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [prune(schema["items"], v) for v in obj]
    return obj


_META_FIELDS = ("apiVersion", "kind", "metadata")


def unknown_fields(schema, obj):
    """The paths of the fields prune() drops from a custom resource, as
    the API server reports them with fieldValidation=Strict or Warn
    (`unknown field "spec.foo"`, `spec.workers[0].bar`): keys joined by
    ".", list indices as "[i]", sorted as Go's sort.Strings sorts them
    (apiextensions-apiserver pruning.PruneWithOptions). The root's
    apiVersion, kind and metadata are never reported: the server keeps
    them (metadata has its own check, decoder.decode_custom)."""
    found = []
    root = {k: v for k, v in obj.items() if k not in _META_FIELDS} \
        if isinstance(obj, dict) else obj
    _unknown(schema, root, "", found)
    return sorted(found)


def _unknown(schema, obj, path, found):
    """Walks obj the way prune() does, recording what it would drop."""
    if isinstance(obj, dict) and schema.get("type", "object") == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        keep = schema.get("x-kubernetes-preserve-unknown-fields", False)
        for k, v in obj.items():
            if props and k in props:
                _unknown(props[k], v, _join(path, k), found)
            elif isinstance(extra, dict):
                _unknown(extra, v, _join(path, k), found)
            elif not (keep or extra is True):
                found.append(_join(path, k))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(obj):
            _unknown(schema["items"], v, "%s[%d]" % (path, i), found)


def apply_defaults(schema, obj):
    """Fills in the defaults of absent properties, recursively, in place;
    returns obj."""
    if isinstance(obj, dict):
        for k, sub in (schema.get("properties") or {}).items():
            if k not in obj and "default" in sub:
                obj[k] = copy.deepcopy(sub["default"])
            if k in obj:
                apply_defaults(sub, obj[k])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k, v in obj.items():
                if k not in (schema.get("properties") or {}):
                    apply_defaults(extra, v)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for v in obj:
            apply_defaults(schema["items"], v)
    return obj


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _format_ok(fmt, value):
    if fmt == "date-time":
        if not _DATE_TIME.match(value):
            return False
        try:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return False
    return True


def validate_causes(schema, obj, path=""):
    """The field errors (errors.Cause) of obj against schema, empty when
    valid. path is the dotted field path of obj."""
    errs = []
    _check(schema, obj, path, errs)
    return errs


def validate(schema, obj, path=""):
    """The same errors as strings, as a Status message shows them."""
    return [str(c) for c in validate_causes(schema, obj, path)]


def _type_name(v):
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(v), "number")


def _check(s, v, path, errs):
    name = path or "<root>"
    if v is None:
        if not s.get("nullable", False):
            errs.append(Cause("FieldValueTypeInvalid", name, "%s in body must be of type %s: "
                              '"null"' % (name, s.get("type", "object")), "null"))
        return
    if s.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or _type_ok("integer", v)):
            errs.append(Cause("FieldValueInvalid", name, "%s in body must be of type integer "
                              "or string" % name, GoRaw(_json(v))))
        return
    kind = s.get("type")
    if kind and not _type_ok(kind, v):
        # InvalidTypeCode becomes field.TypeInvalid (apiextensions
        # validation.ValidateCustomResource), which blocks the CEL rules.
        errs.append(Cause("FieldValueTypeInvalid", name, '%s in body must be of type %s: "%s"'
                          % (name, kind, _type_name(v)), _type_name(v)))
        return
    if "enum" in s and v not in s["enum"]:
        errs.append(Cause("FieldValueNotSupported", name, "supported values: " +
                          ", ".join(_json(e) for e in s["enum"]), GoRaw(_json(v))))
    if kind in ("integer", "number"):
        _check_number(s, v, name, errs)
    elif kind == "string":
        _check_string(s, v, name, errs)
    elif kind == "array":
        _check_array(s, v, path, name, errs)
    elif kind == "object" or isinstance(v, dict):
        _check_object(s, v, path, name, errs)


def _check_number(s, v, name, errs):
    if "minimum" in s and v < s["minimum"]:
        errs.append(Cause("FieldValueInvalid", name, "%s in body should be greater than or "
                          "equal to %s" % (name, s["minimum"]), GoRaw(_json(v))))
    if "maximum" in s and v > s["maximum"]:
        errs.append(Cause("FieldValueInvalid", name, "%s in body should be less than or equal "
                          "to %s" % (name, s["maximum"]), GoRaw(_json(v))))


def _check_string(s, v, name, errs):
    if "minLength" in s and len(v) < s["minLength"]:
        errs.append(Cause("FieldValueInvalid", name, "%s in body should be at least %d chars "
                          "long" % (name, s["minLength"]), v))
    if "maxLength" in s and len(v) > s["maxLength"]:
        errs.append(Cause("FieldValueTooLong", name, "may not be longer than %d"
                          % s["maxLength"]))
    if "pattern" in s and not re.search(s["pattern"], v):
        errs.append(Cause("FieldValueInvalid", name, "%s in body should match '%s'"
                          % (name, s["pattern"]), v))
    if "format" in s and not _format_ok(s["format"], v):
        errs.append(Cause("FieldValueInvalid", name, "%s in body must be of type %s: %s"
                          % (name, s["format"], _json(v)), v))


def _check_array(s, v, path, name, errs):
    if "minItems" in s and len(v) < s["minItems"]:
        errs.append(Cause("FieldValueInvalid", name, "%s in body should have at least %d items"
                          % (name, s["minItems"]), len(v)))
    if "maxItems" in s and len(v) > s["maxItems"]:
        errs.append(Cause("FieldValueTooMany", name, "must have at most %d items"
                          % s["maxItems"], len(v)))
    items = s.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(v):
            _check(items, item, "%s[%d]" % (path, i), errs)
    if s.get("x-kubernetes-list-type") == "map":
        keys = s.get("x-kubernetes-list-map-keys", [])
        seen = set()
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                continue
            k = tuple(item.get(key) for key in keys)
            if k in seen:
                errs.append(Cause("FieldValueDuplicate", "%s[%d]" % (path, i), "", GoRaw(_json(
                    dict(zip(keys, k)) if len(keys) > 1 else k[0]))))
            seen.add(k)


def _check_object(s, v, path, name, errs):
    props = s.get("properties") or {}
    for req in s.get("required", []):
        if req not in v:
            errs.append(Cause("FieldValueRequired", _join(path, req)))
    if "minProperties" in s and len(v) < s["minProperties"]:
        errs.append(Cause("FieldValueInvalid", name, "%s in body should have at least %d "
                          "properties" % (name, s["minProperties"]), len(v)))
    if "maxProperties" in s and len(v) > s["maxProperties"]:
        errs.append(Cause("FieldValueTooMany", name, "must have at most %d items"
                          % s["maxProperties"], len(v)))
    extra = s.get("additionalProperties")
    for k, sub in v.items():
        if k in props:
            _check(props[k], sub, _join(path, k), errs)
        elif isinstance(extra, dict):
            _check(extra, sub, _join(path, k), errs)


def admit(schema, obj):
    """The API server's treatment of a new or updated object: returns
    (object as stored, errors)."""
    stored = prune(schema, copy.deepcopy(obj))
    # The root's apiVersion, kind and metadata are the server's, never pruned.
    for k in ("apiVersion", "kind", "metadata"):
        if k in obj:
            stored[k] = copy.deepcopy(obj[k])
    apply_defaults(schema, stored)
    # apiVersion, kind and metadata are the server's to check, not the schema's.
    return stored, validate(schema, stored)
