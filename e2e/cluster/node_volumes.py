"""The volumes of the local test cluster's node, made ready as host
folders and files, and the configMaps, secrets and downward API fields
that volumes and a container's env both read (see Volumes in node.py).

Modes and owners are the kubelet's:
- configMap, secret, downwardAPI and projected files get the item's mode,
  else the volume's defaultMode (0644 by default), owned by root
  (pkg/volume/secret, configmap, downwardapi, projected: MakePayload and
  CollectData). Their folder is the emptyDir they are written into: on
  disk for configMap (0777), in memory for the others (a tmpfs: 1777).
  They are always mounted read-only (kubelet_pods.go makeMounts:
  mount.ReadOnly || the plugin's GetAttributes().ReadOnly).
- A serviceAccountToken file gets defaultMode, but 0600 when the pod has
  an fsGroup or all its containers share one runAsUser, and is then owned
  by that user (projected.go collectData, FsUserFrom).
- A serviceAccountToken file holds a token of the pod's ServiceAccount
  bound to the pod, for the source's audience (the API server's when it
  names none) and expirationSeconds, as the kubelet's token manager asks
  the TokenRequest API for one (pkg/kubelet/token/token_manager.go). It is
  rewritten with a fresh token once the one it holds is older than 80% of
  its expirationSeconds or than 24 hours, less a jitter of up to 10 s
  (requiresRefresh): the pod's thread asks refresh_tokens() when that is
  due (node_pod.py). The new file replaces the old one by a rename, so a
  reader never sees half a token; a failed refresh keeps the old token and
  is tried again a minute later, as at the kubelet's next sync of the pod.
- emptyDir folders are 0777 (pkg/volume/emptydir), as are claims' folders:
  kind's local-path provisioner makes them with `mkdir -m 0777`
  (rancher/local-path-provisioner's setup script) as hostPath volumes.
- With an fsGroup, every file and folder of an emptyDir, configMap,
  secret, downwardAPI or projected volume gets the group fsGroup and the
  group's read (and write, for emptyDir) bits; folders also setgid and
  the group's x bit (pkg/volume/volume_linux.go, SetVolumeOwnership and
  changeFilePermission: 0400 becomes 0440). hostPath and claims (hostPath
  persistent volumes, whose plugin does not manage ownership) are left
  as they are.

Standard library only.
"""
import base64
import os
import random
import re
import stat
import time

from errors import ApiError
from node_const import CONFIGMAPS, PODS, PVCS, SECRETS, SERVICEACCOUNTS
from node_security import fs_group, fs_user
from tokens import AUDIENCES

MODE_DEFAULT = 0o644
RW_MASK, RO_MASK, EXEC_MASK = 0o660, 0o440, 0o110  # volume_linux.go
DIR_DISK, DIR_MEMORY = 0o777, 0o1777  # an emptyDir on disk; a fresh tmpfs
# The kinds the kubelet always mounts read-only.
READ_ONLY_KINDS = ("configMap", "secret", "downwardAPI", "projected")
# token_manager.go: maxTTL, maxJitter; and how soon a failed refresh is
# tried again (the kubelet's --sync-frequency, 1 minute).
TOKEN_MAX_TTL, TOKEN_MAX_JITTER, TOKEN_RETRY = 24 * 3600, 10, 60


class MountError(Exception):
    """A volume that cannot be set up: the pod waits (FailedMount)."""


def field_value(pod, path):
    """The downward API's fieldRef paths."""
    md, spec, st = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    m = re.match(r"^metadata\.(labels|annotations)\['([^']+)'\]$", path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    simple = {"metadata.name": md.get("name"), "metadata.namespace": md.get("namespace"),
              "metadata.uid": md.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
              "status.podIP": st.get("podIP"), "status.podIPs": st.get("podIP"),
              "status.hostIP": st.get("hostIP"), "status.hostIPs": st.get("hostIP")}
    if path not in simple:
        raise ValueError("fieldRef %s is not supported" % path)
    return simple[path] or ""


def mount_volumes(node, run):
    """{volume name: (host path, read-only)} for each of run's volumes,
    made ready; MountError for one that cannot be."""
    out = {}
    spec = run.pod.get("spec") or {}
    for v in spec.get("volumes") or []:
        try:
            path = mount_volume(node, run, v)
        except OSError as e:
            raise MountError('volume "%s": %s' % (v.get("name"), e)) from e
        out[v.get("name")] = (path, any(k in v for k in READ_ONLY_KINDS))
    return out


def make_dir(path, mode):
    """A folder at path with exactly mode (whatever the umask)."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)


def set_ownership(path, group, read_only):
    """SetVolumeOwnership with the policy Always: everything under path
    gets group and the mask; folders setgid and x for the group too.
    Symbolic links are left alone."""
    mask = RO_MASK if read_only else RW_MASK

    def change(target):
        st = os.lstat(target)
        if stat.S_ISLNK(st.st_mode):
            return
        os.chown(target, -1, group)
        extra = mask | (stat.S_ISGID | EXEC_MASK if stat.S_ISDIR(st.st_mode) else 0)
        os.chmod(target, stat.S_IMODE(st.st_mode) | extra)
    change(path)
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            change(os.path.join(top, name))


def mount_volume(node, run, v):
    """The host path of volume v, made ready."""
    name = v.get("name")
    group = fs_group(run.pod)
    if "emptyDir" in v:
        path = os.path.join(run.dir, "volumes", name)
        make_dir(path, DIR_DISK)
        if group is not None:
            set_ownership(path, group, read_only=False)
        return path
    if "hostPath" in v:
        hp = v["hostPath"] or {}
        path, kind = hp.get("path", ""), hp.get("type", "")
        if not path.startswith("/"):
            raise MountError('hostPath of volume "%s" must be absolute: %r' % (name, path))
        if kind in ("", "DirectoryOrCreate") and not os.path.exists(path):
            os.makedirs(path, mode=0o755, exist_ok=True)
        elif kind == "FileOrCreate" and not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        checks = {"Directory": os.path.isdir, "DirectoryOrCreate": os.path.isdir,
                  "File": os.path.isfile, "FileOrCreate": os.path.isfile,
                  "Socket": os.path.exists, "CharDevice": os.path.exists,
                  "BlockDevice": os.path.exists, "": os.path.exists}
        if kind not in checks:
            raise MountError('hostPath type "%s" of volume "%s" is unknown' % (kind, name))
        if not checks[kind](path):
            raise MountError('MountVolume.SetUp failed for volume "%s" : hostPath type '
                             'check failed: %s is not a %s' % (name, path,
                                                               kind or "path that exists"))
        return path
    if "persistentVolumeClaim" in v:
        claim = (v["persistentVolumeClaim"] or {}).get("claimName", "")
        try:
            node.store.get(PVCS, run.ns, claim)
        except ApiError as e:
            raise MountError('persistentvolumeclaim "%s" not found' % claim) from e
        path = os.path.join(node.state, "volumes", run.ns, claim)
        if not os.path.isdir(path):
            make_dir(path, DIR_DISK)
        return path
    if "configMap" in v:
        ref = v["configMap"] or {}
        return write_items(node, run, name, ref, [("configMap", ref)], DIR_DISK)
    if "secret" in v:
        ref = dict(v["secret"] or {})
        ref["name"] = ref.get("secretName", "")
        return write_items(node, run, name, ref, [("secret", ref)], DIR_MEMORY)
    if "projected" in v:
        sources = []
        for src in (v["projected"] or {}).get("sources") or []:
            for kind in ("serviceAccountToken", "configMap", "secret", "downwardAPI"):
                if kind in src:
                    sources.append((kind, src[kind] or {}))
        return write_items(node, run, name, v["projected"] or {}, sources, DIR_MEMORY)
    if "downwardAPI" in v:
        ref = v["downwardAPI"] or {}
        return write_items(node, run, name, ref, [("downwardAPI", ref)], DIR_MEMORY)
    kinds = [k for k in v if k != "name"]
    raise MountError('volume "%s": %s volumes are not supported by the local test node'
                     % (name, kinds[0] if kinds else "empty"))


def source_data(node, run, kind, ref):
    """The files a volume source holds: {relative path: bytes}."""
    return {path: data for path, (data, _) in source_files(node, run, kind, ref).items()}


def source_files(node, run, kind, ref):
    """The files a volume source holds: {relative path: (bytes, the
    item's mode or None)}."""
    if kind == "serviceAccountToken":
        return {ref.get("path", "token"): (pod_token(node, run, ref)[0].encode(), None)}
    if kind == "downwardAPI":
        pod = node.store.get(PODS, run.ns, run.name)
        return {it.get("path", ""): (str(field_value(pod, (it.get("fieldRef") or {}).get(
            "fieldPath", ""))).encode(), it.get("mode")) for it in ref.get("items") or []}
    key = CONFIGMAPS if kind == "configMap" else SECRETS
    obj = node.store.find(key, run.ns, ref.get("name", ""))
    if obj is None:
        if ref.get("optional"):
            return {}
        raise MountError('%s "%s" not found' % (kind.lower(), ref.get("name")))
    if kind == "configMap":
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
    else:
        data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    items = ref.get("items") or [{"key": k, "path": k} for k in data]
    out = {}
    for it in items:
        if it.get("key") not in data:
            if ref.get("optional"):
                continue
            raise MountError('%s "%s": no key %r' % (kind.lower(), ref.get("name"),
                                                     it.get("key")))
        out[it.get("path", "")] = (data[it["key"]], it.get("mode"))
    return out


def pod_token(node, run, ref, now=None):
    """(token, its expirationTimestamp in seconds since the epoch): a
    token of the pod's ServiceAccount bound to the pod, as the kubelet asks
    the TokenRequest API for one (tokens.py): for the source's audience
    (the API server's when none) and expirationSeconds. MountError when
    the pod or its ServiceAccount is gone."""
    issuer = node.api.tokens
    try:
        pod = node.store.get(PODS, run.ns, run.name)
        sa_name = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        sa = node.store.find(SERVICEACCOUNTS, run.ns, sa_name)
        if sa is None:
            raise MountError('serviceaccount "%s" not found' % sa_name)
        # The pod this node runs, by uid: a pod recreated under its name
        # is a 409 to the old one's kubelet.
        bound = issuer.bound_object(run.ns, sa_name, {"apiVersion": "v1", "kind": "Pod",
                                                      "name": run.name, "uid": run.uid})
    except ApiError as e:
        raise MountError(e.message) from e
    audiences = [ref["audience"]] if ref.get("audience") else list(AUDIENCES)
    return issuer.request(sa, audiences, int(ref.get("expirationSeconds") or 3600), bound, now)


class ProjectedToken:
    """A serviceAccountToken file written into a pod's volume: what is
    needed to tell when it is due for a fresh token and to ask for one."""

    def __init__(self, ref, expiration):
        self.ref = ref
        self.seconds = int(ref.get("expirationSeconds") or 3600)
        self.expiration = expiration
        # requiresRefresh draws its jitter at every look; one draw per token
        # is the same refresh, a few seconds early at most.
        self.jitter = int(random.random() * TOKEN_MAX_JITTER)
        self.due = refresh_due(expiration, self.seconds, self.jitter)


def refresh_due(expiration, seconds, jitter):
    """The time after which token_manager.go's requiresRefresh says yes
    to a token of expirationSeconds seconds that expires at expiration:
    older than maxTTL, or within 20% of its TTL of its expiration, each
    less the jitter."""
    issued = expiration - seconds
    return min(issued + TOKEN_MAX_TTL - jitter, expiration - (seconds * 20) // 100 - jitter)


def refresh_tokens(node, run, now=None):
    """Rewrites the pod's serviceAccountToken files whose tokens are due
    for refresh (run.tokens: {host path: ProjectedToken})."""
    t = time.time() if now is None else now
    for target, held in list(run.tokens.items()):
        if t <= held.due:
            continue
        try:
            token, exp = pod_token(node, run, held.ref, t)
            replace_file(target, token.encode())
        except (MountError, OSError) as e:
            node.log("pod %s/%s: token %s not refreshed: %s" % (run.ns, run.name, target, e))
            held.due = t + TOKEN_RETRY
            continue
        run.tokens[target] = ProjectedToken(held.ref, exp)


def token_refresh_in(run, now=None):
    """Seconds until the first of the pod's tokens is due for refresh
    (None: it has none)."""
    if not run.tokens:
        return None
    t = time.time() if now is None else now
    return max(0.0, min(h.due for h in run.tokens.values()) - t)


def replace_file(target, content):
    """target's content replaced by a rename, keeping its mode and owner."""
    st = os.lstat(target)
    tmp = os.path.join(os.path.dirname(target), ".%s.tmp" % os.path.basename(target))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(content)
        os.fchown(f.fileno(), st.st_uid, st.st_gid)
        os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))
    os.rename(tmp, target)


def write_items(node, run, name, volume, sources, dir_mode):
    """A volume of files from configMap, secret, serviceAccountToken and
    downwardAPI sources, written into the pod's folder (volume: the
    volume's source, for its defaultMode), with the modes and owners of
    the module's docstring."""
    path = os.path.join(run.dir, "volumes", name)
    make_dir(path, dir_mode)
    default = volume.get("defaultMode")
    default = MODE_DEFAULT if default is None else int(default)
    user, group = fs_user(run.pod), fs_group(run.pod)
    for kind, ref in sources:
        files, held = {}, None
        if kind == "serviceAccountToken":
            token, exp = pod_token(node, run, ref)
            files[ref.get("path", "token")] = (token.encode(), None)
            held = ProjectedToken(ref, exp)
        else:
            files = source_files(node, run, kind, ref)
        for rel, (content, mode) in files.items():
            target = os.path.normpath(os.path.join(path, rel))
            if not target.startswith(path + os.sep):
                raise MountError('volume "%s": bad path %r' % (name, rel))
            # Folders of nested paths as the kubelet's AtomicWriter makes them.
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            owner = 0
            mode = default if mode is None else int(mode)
            if kind == "serviceAccountToken" and (user is not None or group is not None):
                # "When FsGroup is set, we depend on SetVolumeOwnership to
                # change from 0600 to 0640." (projected.go)
                mode, owner = 0o600, user if user is not None else 0
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                os.fchown(f.fileno(), owner, 0)
                os.fchmod(f.fileno(), mode & 0o7777)
            if held is not None:
                run.tokens[target] = held
    if group is not None:
        set_ownership(path, group, read_only=True)
    return path
