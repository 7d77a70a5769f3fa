"""Who a container of the local test cluster's node runs as: its user,
group and supplementary groups, as the kubelet and a runtime (containerd,
runc) work them out, and the kubelet's runAsNonRoot check (see Users in
node.py). The node runs as root; podsandbox drops to these ids before the
container's command runs.

- User: the container's securityContext.runAsUser, else the pod's, else
  the image's user (an image mapped with up.sh --image-user), else 0:
  an image whose user is not known runs as root, as an image without a
  USER does.
- Group: runAsGroup (container over pod), else the image's group when the
  user is the image's own, else 0: a runtime looks a runAsUser up in the
  image's /etc/passwd and, not finding it, uses group 0.
- Supplementary groups: the pod's fsGroup, then its supplementalGroups
  (pkg/kubelet/kuberuntime/security_context.go,
  determineEffectiveSecurityContext).
- runAsNonRoot (container over pod) with an effective user 0 refuses the
  container with the kubelet's message (verifyRunAsNonRoot,
  pkg/kubelet/kuberuntime/security_context_others.go); the container then
  waits, CreateContainerConfigError, as the kubelet's does.
- The projected service-account token's owner: the one runAsUser every
  container of the pod shares, if they share one (FsUserFrom,
  pkg/volume/util/util.go), which the token file is then owned by.

Standard library only.
"""


class ConfigError(Exception):
    """A container the kubelet would not create: it waits with
    CreateContainerConfigError and this message."""


def _sc_value(pod, container, field):
    """securityContext.field of the container, else of the pod, else None
    (securitycontext.DetermineEffectiveSecurityContext)."""
    for sc in ((container or {}).get("securityContext"),
               ((pod.get("spec") or {}).get("securityContext"))):
        if isinstance(sc, dict) and sc.get(field) is not None:
            return sc[field]
    return None


def _format_pod(pod):
    """format.Pod (pkg/kubelet/util/format): name_namespace(uid)."""
    md = pod.get("metadata") or {}
    return "%s_%s(%s)" % (md.get("name", ""), md.get("namespace", ""), md.get("uid", ""))


def _go_quote(text):
    """Go's %q of a plain string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def identity(pod, container, image_user):
    """(uid, gid, supplementary groups) container runs as; image_user is
    the image's (uid, gid), or None when not known. ConfigError when
    runAsNonRoot forbids the result."""
    run_as = _sc_value(pod, container, "runAsUser")
    image_uid, image_gid = image_user if image_user else (0, 0)
    uid = int(run_as) if run_as is not None else image_uid
    if _sc_value(pod, container, "runAsNonRoot") is True:
        where = "(pod: %s, container: %s)" % (_go_quote(_format_pod(pod)),
                                              container.get("name", ""))
        if run_as is not None and uid == 0:
            raise ConfigError("container's runAsUser breaks non-root policy " + where)
        if run_as is None and uid == 0:
            raise ConfigError("container has runAsNonRoot and image will run as root " + where)
    run_as_group = _sc_value(pod, container, "runAsGroup")
    if run_as_group is not None:
        gid = int(run_as_group)
    else:
        gid = image_gid if uid == image_uid else 0
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    groups = []
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    groups += [int(g) for g in pod_sc.get("supplementalGroups") or []]
    return uid, gid, groups


def all_containers(pod):
    spec = pod.get("spec") or {}
    return [c for field in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(field) or [] if isinstance(c, dict)]


def fs_user(pod):
    """The runAsUser every container of pod has (container over pod), or
    None when one has none or two differ (FsUserFrom)."""
    user = None
    for c in all_containers(pod):
        run_as = _sc_value(pod, c, "runAsUser")
        if run_as is None or (user is not None and user != int(run_as)):
            return None
        user = int(run_as)
    return user


def fs_group(pod):
    """The pod's fsGroup, or None."""
    value = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
    return None if value is None else int(value)
