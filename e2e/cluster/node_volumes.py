"""The volumes of the local test cluster's node, made ready as host
folders and files, and the configMaps, secrets and downward API fields
that volumes and a container's env both read (see Volumes in node.py).

Standard library only.
"""
import base64
import os
import re

from errors import ApiError
from node_const import CONFIGMAPS, PODS, PVCS, SECRETS, SERVICEACCOUNTS


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
    """{volume name: host path} for each of run's volumes, made ready;
    MountError for one that cannot be."""
    out = {}
    spec = run.pod.get("spec") or {}
    for v in spec.get("volumes") or []:
        try:
            out[v.get("name")] = mount_volume(node, run, v)
        except OSError as e:
            raise MountError('volume "%s": %s' % (v.get("name"), e)) from e
    return out


def mount_volume(node, run, v):
    """The host path of volume v, made ready."""
    name = v.get("name")
    if "emptyDir" in v:
        path = os.path.join(run.dir, "volumes", name)
        os.makedirs(path, exist_ok=True)
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
        os.makedirs(path, exist_ok=True)
        return path
    if "configMap" in v:
        ref = v["configMap"] or {}
        return write_items(node, run, name, [("configMap", ref)])
    if "secret" in v:
        ref = dict(v["secret"] or {})
        ref["name"] = ref.get("secretName", "")
        return write_items(node, run, name, [("secret", ref)])
    if "projected" in v:
        sources = []
        for src in (v["projected"] or {}).get("sources") or []:
            for kind in ("serviceAccountToken", "configMap", "secret", "downwardAPI"):
                if kind in src:
                    sources.append((kind, src[kind] or {}))
        return write_items(node, run, name, sources)
    if "downwardAPI" in v:
        return write_items(node, run, name, [("downwardAPI", v["downwardAPI"] or {})])
    kinds = [k for k in v if k != "name"]
    raise MountError('volume "%s": %s volumes are not supported by the local test node'
                     % (name, kinds[0] if kinds else "empty"))


def source_data(node, run, kind, ref):
    """The files a volume source holds: {relative path: bytes}."""
    if kind == "serviceAccountToken":
        return {ref.get("path", "token"): pod_token(node, run, ref).encode()}
    if kind == "downwardAPI":
        pod = node.store.get(PODS, run.ns, run.name)
        return {it.get("path", ""): str(field_value(pod, (it.get("fieldRef") or {}).get(
            "fieldPath", ""))).encode() for it in ref.get("items") or []}
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
        out[it.get("path", "")] = data[it["key"]]
    return out


def pod_token(node, run, ref):
    """A token of the pod's ServiceAccount bound to the pod, as the
    kubelet asks the TokenRequest API for one (tokens.py): for the
    source's audience (the API server's when none) and expirationSeconds."""
    pod = node.store.get(PODS, run.ns, run.name)
    sa_name = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    sa = node.store.find(SERVICEACCOUNTS, run.ns, sa_name)
    if sa is None:
        raise MountError('serviceaccount "%s" not found' % sa_name)
    audiences = [ref["audience"]] if ref.get("audience") else None
    token, _ = node.api.tokens.issue(sa, audiences, int(ref.get("expirationSeconds") or 3600),
                                     dict(pod, kind="Pod"))
    return token


def write_items(node, run, name, sources):
    """A volume of files from configMap, secret, serviceAccountToken and
    downwardAPI sources, written into the pod's folder."""
    path = os.path.join(run.dir, "volumes", name)
    os.makedirs(path, exist_ok=True)
    for kind, ref in sources:
        for rel, content in source_data(node, run, kind, ref).items():
            target = os.path.normpath(os.path.join(path, rel))
            if not target.startswith(path + os.sep):
                raise MountError('volume "%s": bad path %r' % (name, rel))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(content)
    return path
