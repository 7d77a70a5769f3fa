"""Server-side tables, which kubectl get asks for (Accept: ...;as=Table):
a Name column, then a kind's printer columns (a CRD's
additionalPrinterColumns, else Age), each row with the object's metadata.

Standard library only.
"""
import datetime


def age(stamp):
    """A creation time as kubectl shows it: "45s", "12m", "3h", "2d"."""
    try:
        t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except ValueError:
        return stamp
    s = max(0, int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= 2 * size:
            return "%d%s" % (s // size, unit)
    return "%ds" % s


def _cell(obj, column):
    v = obj
    for part in column["jsonPath"].strip(".").split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if column["type"] == "date" and isinstance(v, str):
        v = age(v)
    return v


def table(kind, items, rv):
    """The Table of items of kind at resourceVersion rv."""
    cols = [{"name": "Name", "type": "string", "format": "name"}] + \
        [c for c in kind.table_columns() if c["name"] != "Name"]
    rows = [{"cells": [obj["metadata"]["name"]] + [_cell(obj, c) for c in cols[1:]],
             "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": obj["metadata"]}} for obj in items]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": rv},
            "columnDefinitions": [{"name": c["name"], "type": c["type"],
                                   "format": c.get("format", ""),
                                   "description": c.get("description", ""),
                                   "priority": c.get("priority", 0)} for c in cols],
            "rows": rows}
