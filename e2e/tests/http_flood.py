#!/usr/bin/python3
"""Loads an HTTP server with connections as a careless or hostile client
would, while a probe asks it what Kubernetes' probes and Prometheus ask,
and reports how long each answer took.

    http_flood.py [--idle N] [--burst N] [--deadline S] URL [URL ...]

Phases, each with the probe running (a process of its own, so that the
load's work never delays the probe's clock):

  quiet  no load, 2 s
  idle   N connections to each listener (each host:port among the URLs)
         opened and held without a byte sent (a client that went silent);
         one the server closes is opened again at once, so that N stay
         held, until the end
  burst  with the idle ones still held, N connections at once to each
         listener, in three
         kinds: a third send GET /healthz, half-close (FIN) and read the
         answer; a third send it and close at once without reading; a
         third connect and close with nothing sent
  after  the idle ones closed, 2 s

The probe asks every URL in turn, each on a new connection (as kubelet
does), waiting up to --deadline seconds for the whole answer. One JSON
line per phase and URL: {"phase", "url", "n", "p50_ms", "p99_ms",
"max_ms", "failed"} (failed: no whole 200 or 503 answer within the
deadline; the error of the first is in "error"). Exits 1 when any probe
failed. The idle count and the burst need about N + 1,000 descriptors:
the soft RLIMIT_NOFILE is raised to the hard one.
"""
import argparse
import json
import multiprocessing
import resource
import socket
import sys
import threading
import time
import urllib.parse

PHASES = ("quiet", "idle", "burst", "after")


def parse_url(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname or not u.port:
        raise ValueError(f"{url}: expected http://host:port/path")
    return u.hostname, u.port, u.path or "/"


def request(host, port, path, deadline_s):
    """One GET on a new connection. Returns (ms, error or None)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=deadline_s) as s:
            s.settimeout(max(0.001, deadline_s - (time.monotonic() - t0)))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                s.settimeout(max(0.001, deadline_s - (time.monotonic() - t0)))
    except OSError as e:
        return (time.monotonic() - t0) * 1000, f"{type(e).__name__}: {e}"
    ms = (time.monotonic() - t0) * 1000
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1:2]
    if status not in ([b"200"], [b"503"]):
        return ms, f"answer {head[:60]!r}"
    length = [line.split(b":", 1)[1] for line in head.split(b"\r\n")
              if line.lower().startswith(b"content-length:")]
    if length and int(length[0]) != len(body):
        return ms, f"cut short: {len(body)} of {int(length[0])} bytes"
    return ms, None


def probe(urls, deadline_s, phase, stop, out):
    """The probe's process: asks the URLs in turn until stop is set; sends
    (phase, url, ms, error) for each answer."""
    targets = [(u, *parse_url(u)) for u in urls]
    while not stop.is_set():
        for url, host, port, path in targets:
            started_in = PHASES[phase.value]
            ms, error = request(host, port, path, deadline_s)
            out.put((started_in, url, ms, error))
        time.sleep(0.05)
    out.put(None)


class Idle:
    """n connections held open, nothing sent; reopened when the server
    closes one."""

    def __init__(self, host, port, n):
        self.host, self.port, self.n = host, port, n
        self.socks = []
        self.opened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_one(self):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect_ex((self.host, self.port))
        except OSError:
            s.close()
            return
        self.socks.append(s)
        self.opened += 1

    def run(self):
        import selectors
        sel = selectors.DefaultSelector()
        while len(self.socks) < self.n:
            self.open_one()
        for s in self.socks:
            sel.register(s, selectors.EVENT_READ)
        while not self.stop.is_set():
            for key, _ in sel.select(timeout=0.1):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    continue
                sel.unregister(s)
                s.close()
                self.socks.remove(s)
                self.open_one()
                sel.register(self.socks[-1], selectors.EVENT_READ)
        for s in self.socks:
            s.close()


def burst(host, port, n):
    """n connections at once, in the three kinds the docstring names."""
    req = f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()

    def one(kind):
        try:
            with socket.create_connection((host, port), timeout=30) as s:
                if kind == 2:
                    return
                s.sendall(req)
                if kind == 1:
                    return
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
        except OSError:
            pass

    threads = [threading.Thread(target=one, args=(k % 3,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def percentile(sorted_ms, q):
    if not sorted_ms:
        return None
    return round(sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))], 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--idle", type=int, default=500)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--deadline", type=float, default=10.0,
                    help="seconds a probe waits for its answer")
    ap.add_argument("--hold", type=float, default=3.0,
                    help="seconds the idle phase lasts before the burst, and the burst after it")
    ap.add_argument("urls", nargs="+")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    listeners = sorted({parse_url(u)[:2] for u in args.urls})

    ctx = multiprocessing.get_context("fork")
    phase, stop, out = ctx.Value("i", 0), ctx.Event(), ctx.Queue()
    prober = ctx.Process(target=probe, args=(args.urls, args.deadline, phase, stop, out))
    prober.start()
    time.sleep(2)
    idle = [Idle(host, port, args.idle) for host, port in listeners]
    phase.value = 1
    for i in idle:
        i.thread.start()
    time.sleep(args.hold)
    phase.value = 2
    bursts = [threading.Thread(target=burst, args=(host, port, args.burst), daemon=True)
              for host, port in listeners]
    for b in bursts:
        b.start()
    time.sleep(args.hold)
    for b in bursts:
        b.join(timeout=60)
    for i in idle:
        i.stop.set()
        i.thread.join()
    phase.value = 3
    time.sleep(2)
    stop.set()
    results = {}
    while True:
        item = out.get()
        if item is None:
            break
        results.setdefault((item[0], item[1]), []).append(item[2:])
    prober.join()
    bad = 0
    for p in PHASES:
        for url in args.urls:
            got = results.get((p, url), [])
            ms = sorted(m for m, _ in got)
            errors = [e for _, e in got if e]
            line = {"phase": p, "url": url, "n": len(got), "p50_ms": percentile(ms, 0.5),
                    "p99_ms": percentile(ms, 0.99), "max_ms": round(ms[-1], 1) if ms else None,
                    "failed": len(errors)}
            if errors:
                line["error"] = errors[0]
            if p in ("idle", "burst"):
                line["idle_opened"] = sum(i.opened for i in idle)
            bad += len(errors) + (len(got) == 0)
            print(json.dumps(line), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
