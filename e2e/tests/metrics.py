#!/usr/bin/python3
"""Reads an operator's /metrics with Prometheus' own Python parser
(prometheus_client, Debian's python3-prometheus-client), which refuses
text that is not the exposition format, and checks that every family
has HELP and TYPE.

    metrics.py URL                        every sample: NAME{k="v",...} VALUE
    metrics.py URL NAME [LABEL=VALUE ...] that sample's value (exit 1 if absent)

Exits 1 with the parser's message when the page does not parse.
"""
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def samples(text):
    out = []
    for family in text_string_to_metric_families(text):
        if not family.documentation or family.type == "unknown":
            raise ValueError(f"family {family.name} lacks HELP or TYPE")
        for s in family.samples:
            out.append((s.name, dict(s.labels), s.value))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        ctype = r.headers.get("Content-Type", "")
        text = r.read().decode()
    if not ctype.startswith("text/plain; version=0.0.4"):
        sys.exit(f"Content-Type {ctype!r} is not the text format's")
    try:
        got = samples(text)
    except ValueError as e:
        sys.exit(f"does not parse: {e}")
    if len(sys.argv) == 2:
        for name, labels, value in got:
            inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            print(f"{name}{{{inner}}} {value:g}")
        return
    name, want = sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
    for n, labels, value in got:
        if n == name and all(labels.get(k) == v for k, v in want.items()):
            print(f"{value:g}")
            return
    sys.exit(f"no sample {name} {want}")


if __name__ == "__main__":
    main()
