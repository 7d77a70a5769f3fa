#!/usr/bin/python3
"""Reads the logs of mwj-operator replicas (text format, one file each) and
checks that at most one ever acted at a time.

    acting.py [--now] LOG [LOG ...]

A replica acts (may write) from the moment it leads until it stops
leading, as its own log says:

  from  "leader election: became the leader", or, for a replica that does
        not elect, "leader election off" (it acts from then on)
  until "lost the Lease", "released the Lease", "stopped after" (the
        process' last line on SIGTERM); else, for a replica still running,
        now with --now, or the log's last line without it

Prints one line per interval (replica, from, until), per "created pod"
line and per time no replica acted between two intervals, then fails (exit 1), naming them, when two replicas' intervals
overlap, or when a pod was created by a replica outside its intervals.
The logs share one clock: the replicas run on one machine.
"""
import datetime
import os
import sys

START = ("leader election: became the leader", "leader election off")
END = ("leader election: lost the Lease", "leader election: released the Lease",
       "stopped after ")


def stamp(line):
    """The line's time in seconds, or None for a line without one."""
    try:
        t = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def read(path, now):
    """(intervals [(from, until)], creates [(time, line)]) of one log; an
    interval still open at its end closes at now, or at its last line when
    now is None."""
    intervals, creates, since, last = [], [], None, None
    with open(path, errors="replace") as f:
        for line in f:
            t = stamp(line)
            if t is None:
                continue
            last = t
            if since is None and any(s in line for s in START):
                since = t
            elif since is not None and any(e in line for e in END):
                intervals.append((since, t))
                since = None
            if "created pod" in line:
                creates.append((t, line.strip()))
    if since is not None:
        intervals.append((since, now if now is not None else last))
    return intervals, creates


def fmt(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def main():
    args = sys.argv[1:]
    now = None
    if args[:1] == ["--now"]:
        now, args = datetime.datetime.now(datetime.timezone.utc).timestamp(), args[1:]
    if not args:
        sys.exit(__doc__)
    replicas = {path: read(path, now) for path in args}
    names = {path: os.path.basename(os.path.dirname(os.path.dirname(path))) or path
             for path in replicas}
    bad = []
    for path, (intervals, creates) in replicas.items():
        for a, b in intervals:
            print(f"acts  {names[path]}  {fmt(a)} .. {fmt(b)}")
        for t, line in creates:
            print(f"create {names[path]}  {line.split('job ', 1)[-1]}")
            if not any(a <= t <= b for a, b in intervals):
                bad.append(f"{names[path]} created a pod at {fmt(t)} while not leading")
    paths = list(replicas)
    for i, p in enumerate(paths):
        for q in paths[i + 1:]:
            for a1, b1 in replicas[p][0]:
                for a2, b2 in replicas[q][0]:
                    if a1 < b2 and a2 < b1:
                        bad.append(f"{names[p]} ({fmt(a1)} .. {fmt(b1)}) and {names[q]} "
                                   f"({fmt(a2)} .. {fmt(b2)}) acted at once for "
                                   f"{min(b1, b2) - max(a1, a2):.3f} s")
    spans = sorted(i for v in replicas.values() for i in v[0])
    for (_, b1), (a2, _) in zip(spans, spans[1:]):
        if a2 > b1:
            print(f"none  {fmt(b1)} .. {fmt(a2)}  ({a2 - b1:.3f} s without a leader)")
    for b in bad:
        print("FAIL", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
