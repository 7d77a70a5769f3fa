"""Starting a container of the local test cluster's node as a process:
its argv (the image's entrypoint or the container's command), its
environment, its user (node_security.py), and the sandbox (podsandbox.c)
that gives it the pod's /etc files, host name and volumes, and drops to
its user (see Images, Env, Users and Sandbox in node.py).

Standard library only.
"""
import os
import re
import shutil
import subprocess

from errors import ApiError
from node_const import HOST_IP, PODS
from node_security import ConfigError, identity
from node_volumes import MountError, field_value, source_data

HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class StartError(Exception):
    """A container that cannot be started, as the runtime reports it."""


class ImageError(Exception):
    """An image the node has no entrypoint for: the container waits
    (ErrImagePull), as for an image that cannot be pulled."""


def image_repository(image):
    """"registry:5000/team/mwj-worker:1.0@sha256:..." -> "mwj-worker"."""
    name = image.split("@")[0].rsplit("/", 1)[-1]
    return name.split(":")[0]


def expand(text, env):
    """Kubernetes' $(VAR) references: a defined variable is replaced, an
    undefined one is left as it is, and $$ is a literal $."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
                  text)


def container_command(node, run, c):
    """(argv, env, working directory, (uid, gid, groups)) of container c.
    ConfigError for one the kubelet would not create (its env cannot be
    made, runAsNonRoot), StartError for one the runtime cannot start."""
    spec = c.spec
    image = spec.get("image", "")
    entry = node.images.get(image_repository(image))
    user = identity(run.pod, spec, node.image_users.get(image_repository(image)))
    path = HOST_PATH if not entry else os.path.dirname(entry) + ":" + HOST_PATH
    # A runtime takes HOME from the image's /etc/passwd, else "/".
    env = {"PATH": path, "HOME": "/root" if user[0] == 0 else "/", "HOSTNAME": run.hostname,
           "KUBERNETES_SERVICE_HOST": HOST_IP,
           "KUBERNETES_SERVICE_PORT": str(node.server_port),
           "KUBERNETES_SERVICE_PORT_HTTPS": str(node.server_port),
           "KUBERNETES_PORT": "tcp://%s:%d" % (HOST_IP, node.server_port)}
    for src in spec.get("envFrom") or []:
        kind = "configMap" if src.get("configMapRef") else "secret"
        ref = src.get("configMapRef") or src.get("secretRef") or {}
        try:
            data = source_data(node, run, kind, ref)
        except MountError as e:
            raise ConfigError(str(e)) from e
        for k, v in data.items():
            env[src.get("prefix", "") + k] = v.decode("utf-8", "replace")
    try:
        pod = node.store.get(PODS, run.ns, run.name)
    except ApiError as e:
        raise StartError("the pod is gone") from e
    for e in spec.get("env") or []:
        name = e.get("name", "")
        if "valueFrom" not in e:
            env[name] = expand(str(e.get("value", "")), env)
            continue
        vf = e["valueFrom"] or {}
        try:
            if "fieldRef" in vf:
                env[name] = str(field_value(pod, vf["fieldRef"].get("fieldPath", "")))
            elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
                kind = "configMap" if "configMapKeyRef" in vf else "secret"
                ref = vf.get("configMapKeyRef") or vf.get("secretKeyRef") or {}
                data = source_data(node, run, kind, {
                    "name": ref.get("name", ""), "optional": ref.get("optional"),
                    "items": [{"key": ref.get("key"), "path": "v"}]})
                if "v" not in data:
                    continue  # optional, and not there
                env[name] = data["v"].decode("utf-8", "replace")
            else:
                raise ValueError("only fieldRef, configMapKeyRef and secretKeyRef are "
                                 "supported")
        except (ApiError, ValueError, MountError) as err:
            raise ConfigError('env %s: %s' % (name, err)) from err
    command = [expand(str(a), env) for a in spec.get("command") or []]
    args = [expand(str(a), env) for a in spec.get("args") or []]
    if not command:
        if not entry:
            raise ImageError('image "%s" is not known to the local test node (known: %s); '
                             "give the container a command, or map the image with "
                             "up.sh --image" % (image, ", ".join(sorted(node.images))))
        command = [entry]
    argv = command + args
    exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env["PATH"])
    if not exe or not os.access(exe, os.X_OK):
        raise StartError('exec: "%s": executable file not found in $PATH' % argv[0])
    # The node's own plumbing, which pods do not set themselves.
    env["LD_PRELOAD"] = node.podnet
    env["MWJ_LOCAL_POD_IP"] = run.ip
    # A sanitized binary must let the preloaded library come first.
    asan = os.environ.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    for k in ("UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    return [exe] + argv[1:], env, spec.get("workingDir") or "/", user


def spawn(node, run, c, argv, env, workdir, user):
    """Starts argv in a mount and UTS namespace of its own, with the
    pod's hosts, resolv.conf, host name and volumes, as user (uid, gid,
    groups) (podsandbox.c). Only the volumes c mounts are there."""
    uid, gid, groups = user
    # Mounted read-write, as the kubelet (makeHostsMount) and the runtime
    # mount them: files of root's, 0644.
    binds = ["rw", os.path.join(run.dir, "hosts"), "/etc/hosts",
             "rw", os.path.join(run.dir, "resolv.conf"), "/etc/resolv.conf"]
    for m in c.spec.get("volumeMounts") or []:
        mounted = run.mounts.get(m.get("name"))
        if mounted is None:
            raise StartError('volumeMount "%s": no volume of that name' % m.get("name"))
        src, read_only = mounted
        if m.get("subPath"):
            src = os.path.normpath(os.path.join(src, m["subPath"]))
            os.makedirs(src, exist_ok=True)
        binds += ["ro" if m.get("readOnly") or read_only else "rw", src,
                  m.get("mountPath", "")]
    logs = os.path.join(run.dir, "logs")
    os.makedirs(logs, exist_ok=True)
    out = open(os.path.join(logs, "%s-%d.log" % (c.name, c.restarts)), "ab")
    try:
        proc = subprocess.Popen(
            [node.sandbox, "-u", str(uid), "-g", str(gid), "-G", ",".join(map(str, groups)),
             run.hostname, workdir] + binds + ["--"] + argv,
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True)
        # For down.sh, should this process die without stopping its pods.
        with open(os.path.join(node.state, "process-groups"), "a") as f:
            f.write("%d\n" % proc.pid)
        return proc
    except OSError as e:
        raise StartError("cannot start the sandbox: %s" % e) from e
    finally:
        out.close()
