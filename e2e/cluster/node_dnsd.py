#!/usr/bin/python3
"""Cluster DNS of the local test cluster: a small DNS server on UDP port
53 of an address of the node's own (127.0.x.y), which every pod's
/etc/resolv.conf names, answering what CoreDNS answers for the cluster's
headless Services: <svc>.<ns>.svc.cluster.local (every address behind
the Service) and <hostname>.<svc>.<ns>.svc.cluster.local (one pod).
Pods reach the shorter names through the search path their resolv.conf
gives, as on a real cluster.

The node (node_dns.py) writes the records into a file, one "name address"
a line, replaced by rename; this server reads it again whenever it has
changed. It runs as a process of its own, not as a thread of the API
server, so that a busy API server does not make pods' look-ups time out.

- A or ANY for a known name: its addresses (TTL 5 s, as CoreDNS's
  kubernetes plugin), as many as fit in a 512-byte answer.
- Any other type for a known name (AAAA, ...): no answer, NOERROR.
- A name under cluster.local it does not know: NXDOMAIN.
- Anything else: REFUSED (the cluster resolves no outside names).
- A malformed query: FORMERR when its header can be read, else nothing.

It exits when its parent (the API server) is gone.

  node_dnsd.py --address IP --records FILE [--port 53]

Standard library only.
"""
import argparse
import os
import socket
import struct
import sys
import threading
import time

DOMAIN = "cluster.local"
TTL = 5
MAX_UDP = 512
TYPE_A, TYPE_ANY, CLASS_IN = 1, 255, 1
NOERROR, FORMERR, NXDOMAIN, REFUSED = 0, 1, 3, 5


class Records:
    """The records file, read again when it changes."""

    def __init__(self, path):
        self.path = path
        self.stamp = None
        self.names = {}  # name -> [address bytes]

    def get(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return self.names
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp != self.stamp:
            names = {}
            try:
                with open(self.path) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) == 2:
                            try:
                                addr = socket.inet_aton(parts[1])
                            except OSError:
                                continue
                            names.setdefault(parts[0].lower(), []).append(addr)
            except OSError:
                return self.names
            self.names, self.stamp = names, stamp
        return self.names


def parse_question(msg):
    """(name, qtype, qclass, end offset) of the query's one question; a
    ValueError for anything malformed."""
    if len(msg) < 12:
        raise ValueError("short header")
    flags, qdcount = struct.unpack_from("!HH", msg, 2)
    if flags & 0x8000 or (flags >> 11) & 0xF != 0 or qdcount != 1:
        raise ValueError("not a standard query")
    labels, i = [], 12
    while True:
        if i >= len(msg):
            raise ValueError("name runs past the message")
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0 or i + 1 + n > len(msg):
            raise ValueError("bad label")
        labels.append(msg[i + 1:i + 1 + n].decode("ascii", "replace").lower())
        i += 1 + n
        if i - 12 > 255:
            raise ValueError("name too long")
    if i + 4 > len(msg):
        raise ValueError("no type and class")
    qtype, qclass = struct.unpack_from("!HH", msg, i)
    return ".".join(labels), qtype, qclass, i + 4


def answer(msg, records):
    """The reply to query msg, or None for one not worth a reply."""
    if len(msg) < 12:
        return None
    qid, flags = struct.unpack_from("!HH", msg, 0)
    rd = flags & 0x0100
    try:
        name, qtype, qclass, end = parse_question(msg)
    except ValueError:
        if flags & 0x8000:
            return None  # a reply: never answer one
        return struct.pack("!HHHHHH", qid, 0x8000 | rd | FORMERR, 0, 0, 0, 0)
    question = msg[12:end]
    addrs = []
    if name != DOMAIN and not name.endswith("." + DOMAIN):
        rcode, aa = REFUSED, 0
    else:
        known = records.get(name)
        rcode, aa = (NOERROR if known is not None else NXDOMAIN), 0x0400
        if known and qclass == CLASS_IN and qtype in (TYPE_A, TYPE_ANY):
            room = (MAX_UDP - 12 - len(question)) // 16
            addrs = known[:room]
    out = [struct.pack("!HHHHHH", qid, 0x8000 | aa | rd | rcode, 1, len(addrs), 0, 0),
           question]
    for a in addrs:
        # The name as a pointer to the question's (offset 12).
        out.append(struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL, 4) + a)
    return b"".join(out)


def watch_parent(parent):
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--address", required=True)
    p.add_argument("--port", type=int, default=53)
    p.add_argument("--records", required=True)
    a = p.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((a.address, a.port))
    except OSError as e:
        print("node_dnsd: bind %s:%d: %s" % (a.address, a.port, e), file=sys.stderr)
        return 2
    print("ready", flush=True)  # the node waits for this line
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    records = Records(a.records)
    while True:
        try:
            msg, peer = sock.recvfrom(4096)
        except InterruptedError:
            continue
        reply = answer(msg, records.get())
        if reply is not None:
            try:
                sock.sendto(reply, peer)
            except OSError:
                pass  # the asker is gone


if __name__ == "__main__":
    sys.exit(main())
