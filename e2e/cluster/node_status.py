"""The status the local test cluster's node writes for a pod, as the
kubelet generates it from its containers' statuses
(pkg/kubelet/kubelet_pods.go, generateAPIPodStatus and getPhase;
pkg/kubelet/status/generate.go for the conditions): the phase follows
the init containers and the containers, a sidecar (an init container
with restartPolicy Always) only keeps a pod Running or Pending while it
runs; the conditions carry the kubelet's reasons and messages.

Standard library only.
"""
from node_const import HOST_IP
from store import now

# Conditions the kubelet owns (kubetypes.PodConditionByKubelet), in the
# order generateAPIPodStatus appends them.
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled")


def is_sidecar(spec):
    return spec.get("restartPolicy") == "Always"


def _by_name(statuses):
    return {s["name"]: s for s in statuses}


def _started_regular(spec, ctrs):
    """kubecontainer.HasAnyRegularContainerStarted: a container running
    or having run."""
    names = {c.get("name") for c in spec.get("containers") or []}
    return any(s["name"] in names and ("running" in s["state"] or "terminated" in s["state"] or
                                       "terminated" in s.get("lastState", {}))
               for s in ctrs)


def phase(spec, inits, ctrs, terminal):
    """getPhase (with ContainerRestartRules off, its default)."""
    policy = spec.get("restartPolicy", "Always")
    init_st, ctr_st = _by_name(inits), _by_name(ctrs)
    pending_init = failed_init = pending_sidecars = 0
    for c in spec.get("initContainers") or []:
        if is_sidecar(c):
            continue
        s = init_st.get(c.get("name"))
        if s is None:
            pending_init += 1
        elif "running" in s["state"]:
            pending_init += 1
        elif "terminated" in s["state"]:
            failed_init += s["state"]["terminated"].get("exitCode") != 0
        elif "waiting" in s["state"] and "terminated" in s.get("lastState", {}):
            failed_init += s["lastState"]["terminated"].get("exitCode") != 0
        else:
            pending_init += 1
    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.get("initContainers") or []:
        if not is_sidecar(c):
            continue
        s = init_st.get(c.get("name"))
        if s is None:
            unknown += 1
        elif "running" in s["state"]:
            pending_sidecars += not s.get("started")
            running += 1
        elif "terminated" in s["state"]:
            pass  # a stopped sidecar does not count for the phase
        elif "waiting" in s["state"]:
            if "terminated" not in s.get("lastState", {}):
                pending_sidecars += 1
                waiting += 1
        else:
            pending_sidecars += 1
            unknown += 1
    for c in spec.get("containers") or []:
        s = ctr_st.get(c.get("name"))
        if s is None:
            unknown += 1
        elif "running" in s["state"]:
            running += 1
        elif "terminated" in s["state"]:
            stopped += 1
            succeeded += s["state"]["terminated"].get("exitCode") == 0
        elif "waiting" in s["state"] and "terminated" in s.get("lastState", {}):
            stopped += 1
        elif "waiting" in s["state"]:
            waiting += 1
        else:
            unknown += 1
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or (pending_sidecars and not _started_regular(spec, ctrs)) or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _go_list(names):
    """fmt's %s of a []string: [a b]."""
    return "[%s]" % " ".join(names)


def _condition(ctype, ok, reason=None, message=None):
    c = {"type": ctype, "status": "True" if ok else "False"}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def _listed(ctype, reason, unknown, what, names):
    """ctype True, or False with reason and the message that lists the
    containers of unknown status and those of status what."""
    messages = []
    if unknown:
        messages.append("containers with unknown status: " + _go_list(unknown))
    if names:
        messages.append("containers with %s status: %s" % (what, _go_list(names)))
    if messages:
        return _condition(ctype, False, reason, ", ".join(messages))
    return _condition(ctype, True)


def containers_ready(spec, inits, ctrs, pod_phase):
    """GenerateContainersReadyCondition: the containers and the sidecars."""
    init_st, ctr_st = _by_name(inits), _by_name(ctrs)
    unknown, unready = [], []
    for c in [c for c in spec.get("initContainers") or [] if is_sidecar(c)]:
        s = init_st.get(c.get("name"))
        if s is None:
            unknown.append(c.get("name", ""))
        elif not s.get("ready"):
            unready.append(c.get("name", ""))
    for c in spec.get("containers") or []:
        s = ctr_st.get(c.get("name"))
        if s is None:
            unknown.append(c.get("name", ""))
        elif not s.get("ready"):
            unready.append(c.get("name", ""))
    if pod_phase == "Succeeded" and not unknown:
        return _condition("ContainersReady", False, "PodCompleted")
    if pod_phase == "Failed":
        return _condition("ContainersReady", False, "PodFailed")
    return _listed("ContainersReady", "ContainersNotReady", unknown, "unready", unready)


def pod_ready(spec, conditions, ready):
    """GeneratePodReadyCondition: ContainersReady, then readiness gates."""
    if ready["status"] != "True":
        return dict(ready, type="Ready")
    have = {c.get("type"): c for c in conditions}
    messages = []
    for gate in spec.get("readinessGates") or []:
        ctype = (gate or {}).get("conditionType", "")
        c = have.get(ctype)
        if c is None:
            messages.append('corresponding condition of pod readiness gate "%s" does not '
                            "exist." % ctype)
        elif c.get("status") != "True":
            messages.append('the status of pod readiness gate "%s" is not "True", but %s'
                            % (ctype, c.get("status")))
    if messages:
        return _condition("Ready", False, "ReadinessGatesNotReady", ", ".join(messages))
    return _condition("Ready", True)


def initialized(spec, inits, ctrs, pod_phase):
    """GeneratePodInitializedCondition: a regular init container must be
    ready (exited 0), a sidecar started."""
    init_st = _by_name(inits)
    unknown, incomplete = [], []
    for c in spec.get("initContainers") or []:
        s = init_st.get(c.get("name"))
        if s is None:
            unknown.append(c.get("name", ""))
        elif not (s.get("started") if is_sidecar(c) else s.get("ready")):
            incomplete.append(c.get("name", ""))
    if pod_phase == "Succeeded" and not unknown:
        return _condition("Initialized", True, "PodCompleted")
    if _started_regular(spec, ctrs):
        return _condition("Initialized", True)
    return _listed("Initialized", "ContainersNotInitialized", unknown, "incomplete", incomplete)


def pod_status(pod, ip, inits, ctrs, terminal=False, fixed_phase=None, reason=None):
    """Sets pod's status (in place) from its containers' statuses. A pod
    whose phase is terminal stays so (the kubelet never moves it back);
    fixed_phase overrides the computed one; reason is (reason, message)."""
    spec = pod.get("spec") or {}
    st = pod.setdefault("status", {})
    new = fixed_phase or phase(spec, inits, ctrs, terminal)
    if st.get("phase") in ("Succeeded", "Failed"):
        new = st["phase"]
    st.update({"phase": new, "hostIP": HOST_IP, "hostIPs": [{"ip": HOST_IP}],
               "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": st.get("qosClass", "BestEffort"),
               "containerStatuses": ctrs})
    st.setdefault("startTime", now())
    if inits:
        st["initContainerStatuses"] = inits
    if reason:
        st["reason"], st["message"] = reason
    old = {c.get("type"): c for c in st.get("conditions") or []}
    kept = [c for c in st.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]
    ready = containers_ready(spec, inits, ctrs, new)
    fresh = [_condition("PodReadyToStartContainers", True),
             initialized(spec, inits, ctrs, new),
             pod_ready(spec, kept, ready), ready,
             _condition("PodScheduled", True)]
    for c in fresh:
        before = old.get(c["type"])
        # The status manager keeps lastTransitionTime while the status stays.
        c["lastProbeTime"] = None
        c["lastTransitionTime"] = before.get("lastTransitionTime") if \
            before and before.get("status") == c["status"] else now()
    st["conditions"] = kept + fresh
