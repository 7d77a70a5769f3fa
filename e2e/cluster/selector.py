"""Label and field selectors as the API server reads them from ?labelSelector=
and ?fieldSelector=: equality (=, ==, !=), set-based (in, notin) and
existence (key, !key) for labels; equality on the fields a kind supports
(kinds.py says which, and how the value is read) for fields; and the
metav1.LabelSelector objects of a Deployment, a ReplicaSet or a ClusterRole
aggregation rule (selector_matches). Standard library only."""
import re

from errors import ApiError

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


def field_matcher(text, getter):
    """A function of an object, or raises ApiError 400. getter(label)
    gives the function reading that field, or raises ValueError with the
    kind's message for a field it does not support."""
    tests = []
    for part in _split(text or ""):
        m = re.match(r"^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise ApiError(400, "BadRequest", "invalid selector: '%s'; can't understand '%s'"
                           % (text, part))
        path, op, v = m.groups()
        try:
            get = getter(path)
        except ValueError as e:
            raise ApiError(400, "BadRequest", str(e)) from None
        tests.append(lambda o, get=get, op=op, v=v: (get(o) == v) == (op != "!="))
    return lambda obj: all(t(obj) for t in tests)


def selector_matches(sel, labels):
    """metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn,
    Exists, DoesNotExist). An empty selector matches nothing here, as for
    the controllers (validation refuses it on apps/v1 anyway)."""
    if not isinstance(sel, dict) or not (sel.get("matchLabels") or sel.get("matchExpressions")):
        return False
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
