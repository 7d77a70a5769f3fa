"""Label and field selectors as the API server reads them from ?labelSelector=
and ?fieldSelector=: equality (=, ==, !=), set-based (in, notin) and
existence (key, !key) for labels; equality on a dotted field path
(metadata.name, metadata.namespace, status.phase, spec.nodeName, ...) for
fields. Standard library only."""
import re

from store import ApiError

_SET = re.compile(r"^\s*(!?)([A-Za-z0-9._/-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split(text):
    """Splits on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def label_matcher(text):
    """A function of a labels dict, or raises ApiError 400."""
    tests = []
    for part in _split(text or ""):
        m = re.match(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$", part)
        if m:
            k, op, v = m.groups()
            tests.append(lambda lb, k=k, op=op, v=v: (lb.get(k) == v) == (op != "!="))
            continue
        m = _SET.match(part)
        if not m:
            raise ApiError(400, "BadRequest", "unable to parse requirement: '%s'" % part)
        neg, k, op, values = m.groups()
        if op:
            vals = {x.strip() for x in values.split(",") if x.strip()}
            tests.append(lambda lb, k=k, op=op, vals=vals:
                         (k in lb and lb[k] in vals) if op == "in" else
                         not (k in lb and lb[k] in vals))
        else:
            tests.append(lambda lb, k=k, neg=neg: (k in lb) != bool(neg))
    return lambda labels: all(t(labels or {}) for t in tests)


def field_matcher(text):
    """A function of an object, or raises ApiError 400."""
    tests = []
    for part in _split(text or ""):
        m = re.match(r"^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise ApiError(400, "BadRequest", "invalid field selector: '%s'" % part)
        path, op, v = m.groups()

        def get(obj, path=path):
            for p in path.split("."):
                obj = obj.get(p) if isinstance(obj, dict) else None
            return "" if obj is None else str(obj)
        tests.append(lambda o, get=get, op=op, v=v: (get(o) == v) == (op != "!="))
    return lambda obj: all(t(obj) for t in tests)
