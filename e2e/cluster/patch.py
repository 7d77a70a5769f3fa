"""The three patch types the API server takes on PATCH, applied to the JSON
of the stored object:

- JSON merge patch (RFC 7386), application/merge-patch+json: for every kind;
- strategic merge patch, application/strategic-merge-patch+json: for
  built-in kinds only (custom resources answer 415, see registry.py); maps
  merge, lists of named items merge by their key;
- JSON patch (RFC 6902), application/json-patch+json: for every kind. A
  malformed patch is 400 with the decoder's message; an operation that
  cannot apply (a failed `test`, a missing path) is 422 with the generic
  text of apimachinery's NewGenericServerResponse, which drops the reason,
  as the real server's patch handler does.

Standard library only.
"""
import copy
import json

from errors import ApiError

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
# kube-apiserver refuses a JSON patch of more operations than this.
MAX_JSON_PATCH_OPERATIONS = 10000


def merge_patch(target, patch):
    """RFC 7386: null removes a key, objects merge, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# Lists that strategic merge patch merges by a key instead of replacing (the
# patchMergeKey tags of the built-in types).
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name",
               "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
               "conditions": "type", "ownerReferences": "uid", "imagePullSecrets": "name",
               "tolerations": None}


def strategic_merge_patch(target, patch, field=None):
    """The strategic merge patch of Kubernetes for the cases that matter
    here: objects merge as in a merge patch, lists in _MERGE_KEYS merge
    item by item on their key ($patch: delete removes an item), other lists
    are replaced."""
    key = _MERGE_KEYS.get(field)
    if isinstance(patch, list) and key and isinstance(target, list):
        out = copy.deepcopy(target)
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                return copy.deepcopy(patch)
            idx = next((i for i, t in enumerate(out)
                        if isinstance(t, dict) and t.get(key) == item[key]), None)
            if item.get("$patch") == "delete":
                if idx is not None:
                    out.pop(idx)
            elif idx is None:
                out.append(copy.deepcopy(item))
            else:
                out[idx] = strategic_merge_patch(out[idx], item)
        return out
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = strategic_merge_patch(out.get(k), v, k)
    return out


class _Failed(Exception):
    """An operation of a JSON patch that cannot apply."""


def _unescape(token):
    return token.replace("~1", "/").replace("~0", "~")


def _split(path):
    """A JSON pointer as its reference tokens."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise _Failed("invalid path %s" % path)
    return [_unescape(t) for t in path[1:].split("/")]


def _index(container, token, adding):
    """The list index a token names; "-" is the end when adding."""
    if token == "-" and adding:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise _Failed("invalid array index %s" % token)
    i = int(token)
    if i > len(container) or (i == len(container) and not adding):
        raise _Failed("index out of bounds")
    return i


def _parent(doc, tokens):
    """The container holding the last token, walking the others."""
    node = doc
    for t in tokens[:-1]:
        if isinstance(node, dict) and t in node:
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, False)]
        else:
            raise _Failed("missing path")
    if not isinstance(node, (dict, list)):
        raise _Failed("missing path")
    return node


def _get(doc, tokens):
    if not tokens:
        return doc
    node = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(node, dict):
        if last not in node:
            raise _Failed("missing path")
        return node[last]
    return node[_index(node, last, False)]


def _add(doc, tokens, value):
    if not tokens:
        return value
    node = _parent(doc, tokens)
    if isinstance(node, dict):
        node[tokens[-1]] = value
    else:
        node.insert(_index(node, tokens[-1], True), value)
    return doc


def _remove(doc, tokens):
    if not tokens:
        raise _Failed("cannot remove the whole document")
    node = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(node, dict):
        if last not in node:
            raise _Failed("missing path")
        return node.pop(last)
    return node.pop(_index(node, last, False))


def _operation(doc, op):
    """Applies one operation to doc; returns the new document."""
    kind, path = op["op"], _split(op["path"])
    if kind == "add":
        return _add(doc, path, copy.deepcopy(op["value"]))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        _get(doc, path)
        if not path:
            return copy.deepcopy(op["value"])
        _remove(doc, path)
        return _add(doc, path, copy.deepcopy(op["value"]))
    if kind == "move":
        value = _remove(doc, _split(op["from"]))
        return _add(doc, path, value)
    if kind == "copy":
        return _add(doc, path, copy.deepcopy(_get(doc, _split(op["from"]))))
    if kind == "test":
        if _get(doc, path) != op["value"]:
            raise _Failed("testing value %s failed: test failed" % op["path"])
        return doc
    raise _Failed("Unexpected kind: %s" % kind)


def _check_operations(patch):
    """What evanphx/json-patch's DecodePatch and the handler refuse before
    applying anything: 400, or 413 for too many operations."""
    if not isinstance(patch, list):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal %s into Go value of type "
                       "jsonpatch.Patch" % ("object" if isinstance(patch, dict)
                                            else "string" if isinstance(patch, str)
                                            else "number"))
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(413, "RequestEntityTooLarge",
                       "Request entity too large: The allowed maximum operations in a JSON "
                       "patch is %d, got %d" % (MAX_JSON_PATCH_OPERATIONS, len(patch)))
    for op in patch:
        if not isinstance(op, dict):
            raise ApiError(400, "BadRequest", "json: cannot unmarshal %s into Go value of "
                           "type jsonpatch.Operation" % type(op).__name__)


def json_patch(target, patch):
    """RFC 6902 over a copy of target. Raises ApiError 400 for a patch that
    is not a list of operations, 422 when an operation cannot apply."""
    _check_operations(patch)
    doc = copy.deepcopy(target)
    try:
        for op in patch:
            if "op" not in op or "path" not in op or \
                    (op["op"] in ("add", "replace", "test") and "value" not in op) or \
                    (op["op"] in ("move", "copy") and "from" not in op):
                raise _Failed("invalid operation %s" % json.dumps(op))
            doc = _operation(doc, op)
    except _Failed:
        # NewGenericServerResponse(422, ...) keeps neither the operation's
        # error nor any detail: this is all a client of the real server sees.
        raise ApiError(422, "Invalid",
                       "the server rejected our request due to an error in our request",
                       {}) from None
    return doc
