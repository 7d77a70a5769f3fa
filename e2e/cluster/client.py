"""A local test cluster for the cluster's own tests: up.sh in a fresh
folder, a plain HTTPS client with the cluster's token (or another, or
none), raw bodies and response headers when a test needs them, and watches
to read line by line. Standard library only."""
import http.client
import json
import os
import ssl
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


class Response:
    """A response: status, body (parsed JSON, or the text), raw bytes and
    headers (a list of (name, value), so repeated Warning headers stay)."""

    def __init__(self, status, raw, headers):
        self.status = status
        self.raw = raw
        self.headers = headers
        try:
            self.body = json.loads(raw or b"null")
        except ValueError:
            self.body = raw.decode("utf-8", "replace")

    def header_values(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]


class Cluster:
    """A running local test cluster. env adds variables for up.sh (e.g.
    MWJ_CLUSTER_BOOKMARK_SECONDS)."""

    def __init__(self, env=None):
        self.dir = tempfile.mkdtemp(prefix="mwj-cluster-test-")
        subprocess.run([os.path.join(HERE, "up.sh"), self.dir], check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))
        with open(os.path.join(self.dir, "token")) as f:
            self.token = f.read().strip()
        with open(os.path.join(self.dir, "kubeconfig")) as f:
            server = [line for line in f if "server:" in line][0].split("//")[1].strip()
        self.port = int(server.split(":")[1])
        self.ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "ca.crt"))

    def stop(self):
        subprocess.run([os.path.join(HERE, "down.sh"), self.dir], stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.dir])

    def conn(self):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)

    def request(self, method, path, body=None, ctype="application/json", token=True,
                headers=None):
        """One request. body: an object (sent as JSON), bytes (as they
        are) or None. token: True for the cluster's, a string for another,
        None for no Authorization header."""
        h = {"Content-Type": ctype}
        if token is True:
            h["Authorization"] = "Bearer " + self.token
        elif token:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        data = body if isinstance(body, bytes) or body is None else json.dumps(body)
        c = self.conn()
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = Response(r.status, r.read(), r.getheaders())
        c.close()
        return out

    def call(self, method, path, body=None, ctype="application/json"):
        """(status, parsed body), for the common case."""
        r = self.request(method, path, body, ctype)
        return r.status, r.body

    def watch(self, path):
        """Opens a watch; returns (connection, response) to read lines from."""
        c = self.conn()
        c.request("GET", path, headers={"Authorization": "Bearer " + self.token})
        return c, c.getresponse()
