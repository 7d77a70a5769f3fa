"""The Pod Security Standards as k8s.io/pod-security-admission/policy
checks them (v1.31): one table entry per check (CHECKS: its ID, level,
whether a restricted check supersedes it, and its versions), each check a
function of the pod's metadata and spec giving None (allowed) or
(forbidden reason, detail) with the library's exact wording, and the
evaluator (registry.go) that picks the checks of a level and version.

Checks, in the order the library registers them (its files' names):

  allowPrivilegeEscalation   restricted  1.8+
  appArmorProfile            baseline
  capabilities_baseline      baseline (not in restricted)
  capabilities_restricted    restricted  1.22+
  hostNamespaces             baseline
  hostPathVolumes            baseline (not in restricted)
  hostPorts                  baseline
  privileged                 baseline
  procMount                  baseline
  restrictedVolumes          restricted
  runAsNonRoot               restricted
  runAsUser                  restricted  1.23+
  seLinuxOptions             baseline
  seccompProfile_baseline    baseline (not in restricted): annotations
                             before 1.19, fields since
  seccompProfile_restricted  restricted  1.19+
  sysctls                    baseline: the safe set grows in 1.27, 1.29
  windowsHostProcess         baseline

A policy is a level (privileged, baseline, restricted) and a version
("latest" or "v1.N"); a version newer than the newest check's, and
latest, evaluate as the newest (1.29).

Standard library only.
"""

LEVELS = ("privileged", "baseline", "restricted")
# Check.Versions are (major 1) minor versions; MAX_MINOR is the newest.


def _containers(spec):
    """visitContainers: init containers, containers, ephemeral containers."""
    out = []
    for field in ("initContainers", "containers", "ephemeralContainers"):
        out += [c for c in spec.get(field) or [] if isinstance(c, dict)]
    return out


def _sc(obj):
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else {}


def join_quote(items):
    """joinQuote: "a", "b"."""
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular, plural, n):
    return singular if n == 1 else plural


def _containers_phrase(names):
    return "%s %s" % (pluralize("container", "containers", len(names)), join_quote(names))


def _setters(pod_bad, containers):
    """The "pod and containers "a", "b"" list of bad setters."""
    out = ["pod"] if pod_bad else []
    if containers:
        out.append(_containers_phrase(containers))
    return out


# --- restricted checks ---

def allow_privilege_escalation(meta, spec):
    bad = [c.get("name", "") for c in _containers(spec)
           if _sc(c).get("allowPrivilegeEscalation") is not False]
    if bad:
        return ("allowPrivilegeEscalation != false", "%s must set "
                "securityContext.allowPrivilegeEscalation=false" % _containers_phrase(bad))
    return None


def capabilities_restricted(meta, spec):
    missing, adding, caps = [], [], set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if not isinstance(capabilities, dict):
            missing.append(c.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            missing.append(c.get("name", ""))
        forbidden = [x for x in capabilities.get("add") or [] if x != "NET_BIND_SERVICE"]
        if forbidden:
            adding.append(c.get("name", ""))
            caps.update(forbidden)
    details = []
    if missing:
        details.append('%s must set securityContext.capabilities.drop=["ALL"]'
                       % _containers_phrase(missing))
    if adding:
        details.append("%s must not include %s in securityContext.capabilities.add"
                       % (_containers_phrase(adding), join_quote(sorted(caps))))
    if details:
        return ("unrestricted capabilities", "; ".join(details))
    return None


ALLOWED_VOLUME_TYPES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                        "persistentVolumeClaim", "projected", "secret")


def restricted_volumes(meta, spec):
    bad = sorted({v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict)
                  and not any(v.get(t) is not None for t in ALLOWED_VOLUME_TYPES)})
    if bad:
        # fmt.Sprintf("volumes %q have restricted types", names) prints a
        # []string as ["a" "b"].
        return ("restricted volume types", "volumes [%s] have restricted types"
                % " ".join('"%s"' % n for n in bad))
    return None


def run_as_non_root(meta, spec):
    pod_sc = _sc(spec)
    pod_bad, pod_true = False, False
    if pod_sc.get("runAsNonRoot") is not None:
        pod_bad, pod_true = pod_sc["runAsNonRoot"] is False, pod_sc["runAsNonRoot"] is True
    explicit, implicit = [], []
    for c in _containers(spec):
        v = _sc(c).get("runAsNonRoot")
        if v is not None:
            if v is False:
                explicit.append(c.get("name", ""))
        elif not pod_true:
            implicit.append(c.get("name", ""))
    setters = _setters(pod_bad, explicit)
    if setters:
        return ("runAsNonRoot != true", "%s must not set securityContext.runAsNonRoot=false"
                % " and ".join(setters))
    if implicit:
        return ("runAsNonRoot != true", "pod or %s must set securityContext.runAsNonRoot=true"
                % _containers_phrase(implicit))
    return None


def run_as_user(meta, spec):
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    setters = _setters(_sc(spec).get("runAsUser") == 0, bad)
    if setters:
        return ("runAsUser=0", "%s must not set runAsUser=0" % " and ".join(setters))
    return None


def _valid_seccomp(t):
    return t in ("RuntimeDefault", "Localhost")


def _seccomp_type(sc):
    profile = sc.get("seccompProfile")
    return (profile.get("type") or "") if isinstance(profile, dict) else None


def seccomp_restricted(meta, spec):
    values = set()
    pod_type = _seccomp_type(_sc(spec))
    pod_bad = pod_type is not None and not _valid_seccomp(pod_type)
    pod_set = pod_type is not None and not pod_bad
    if pod_bad:
        values.add(pod_type)
    explicit, implicit = [], []
    for c in _containers(spec):
        t = _seccomp_type(_sc(c))
        if t is not None:
            if not _valid_seccomp(t):
                explicit.append(c.get("name", ""))
                values.add(t)
        elif not pod_set:
            implicit.append(c.get("name", ""))
    setters = _setters(pod_bad, explicit)
    if setters:
        return ("seccompProfile", "%s must not set securityContext.seccompProfile.type to %s"
                % (" and ".join(setters), join_quote(sorted(values))))
    if implicit:
        return ("seccompProfile", 'pod or %s must set securityContext.seccompProfile.type to '
                '"RuntimeDefault" or "Localhost"' % _containers_phrase(implicit))
    return None


# --- baseline checks ---

def _allowed_apparmor_annotation(v):
    return not v or v == "runtime/default" or v.startswith("localhost/")


def app_armor_profile(meta, spec):
    values = set()
    pod_profile = _sc(spec).get("appArmorProfile")
    pod_bad = isinstance(pod_profile, dict) and \
        pod_profile.get("type") not in ("RuntimeDefault", "Localhost")
    if pod_bad:
        values.add(pod_profile.get("type") or "")
    bad = []
    for c in _containers(spec):
        p = _sc(c).get("appArmorProfile")
        if isinstance(p, dict) and p.get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append(c.get("name", ""))
            values.add(p.get("type") or "")
    setters = _setters(pod_bad, bad)
    annotations = sorted('%s="%s"' % (k, v) for k, v in (meta.get("annotations") or {}).items()
                         if k.startswith("container.apparmor.security.beta.kubernetes.io/")
                         and not _allowed_apparmor_annotation(v))
    listed = sorted(values) + annotations
    if annotations:
        setters.append(pluralize("annotation", "annotations", len(annotations)))
    if setters:
        return (pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles",
                          len(listed)),
                "%s must not set AppArmor profile type to %s" % (" and ".join(setters),
                                                                join_quote(listed)))
    return None


BASELINE_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
                         "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID",
                         "SYS_CHROOT")


def capabilities_baseline(meta, spec):
    bad, caps = [], set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if not isinstance(capabilities, dict):
            continue
        extra = [x for x in capabilities.get("add") or [] if x not in BASELINE_CAPABILITIES]
        if extra:
            bad.append(c.get("name", ""))
            caps.update(extra)
    if bad:
        return ("non-default capabilities", "%s must not include %s in "
                "securityContext.capabilities.add" % (_containers_phrase(bad),
                                                      join_quote(sorted(caps))))
    return None


def host_namespaces(meta, spec):
    used = sorted(n for n in ("hostNetwork", "hostPID", "hostIPC") if spec.get(n) is True)
    if used:
        return ("host namespaces", ", ".join(used))
    return None


def host_path_volumes(meta, spec):
    names = [v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict)
             and v.get("hostPath") is not None]
    if names:
        return ("hostPath volumes", "%s %s" % (pluralize("volume", "volumes", len(names)),
                                               join_quote(names)))
    return None


def host_ports(meta, spec):
    bad, ports = [], set()
    for c in _containers(spec):
        used = [p.get("hostPort") for p in c.get("ports") or [] if isinstance(p, dict)
                and p.get("hostPort")]
        if used:
            bad.append(c.get("name", ""))
            ports.update(str(p) for p in used)
    if bad:
        return ("hostPort", "%s %s %s %s" % (
            _containers_phrase(bad), pluralize("uses", "use", len(bad)),
            pluralize("hostPort", "hostPorts", len(ports)), ", ".join(sorted(ports))))
    return None


def privileged(meta, spec):
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged") is True]
    if bad:
        return ("privileged", "%s must not set securityContext.privileged=true"
                % _containers_phrase(bad))
    return None


def proc_mount(meta, spec):
    bad, types = [], set()
    for c in _containers(spec):
        pm = _sc(c).get("procMount")
        if pm is not None and pm != "Default":
            bad.append(c.get("name", ""))
            types.add(pm)
    if bad:
        return ("procMount", "%s must not set securityContext.procMount to %s"
                % (_containers_phrase(bad), join_quote(sorted(types))))
    return None


SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t")


def se_linux_options(meta, spec):
    state = {"types": set(), "user": False, "role": False}

    def valid(opts):
        ok = True
        if (opts.get("type") or "") not in SELINUX_TYPES:
            ok = False
            state["types"].add(opts.get("type") or "")
        if opts.get("user"):
            ok, state["user"] = False, True
        if opts.get("role"):
            ok, state["role"] = False, True
        return ok

    pod_opts = _sc(spec).get("seLinuxOptions")
    pod_bad = isinstance(pod_opts, dict) and not valid(pod_opts)
    bad = [c.get("name", "") for c in _containers(spec)
           if isinstance(_sc(c).get("seLinuxOptions"), dict) and
           not valid(_sc(c)["seLinuxOptions"])]
    setters = _setters(pod_bad, bad)
    if not setters:
        return None
    data = []
    # The library adds the user and role notes only beside a bad type
    # (check_seLinuxOptions.go); so does this.
    if state["types"]:
        data.append("%s %s" % (pluralize("type", "types", len(state["types"])),
                               join_quote(sorted(state["types"]))))
        if state["user"]:
            data.append("user may not be set")
        if state["role"]:
            data.append("role may not be set")
    return ("seLinuxOptions", "%s set forbidden securityContext.seLinuxOptions: %s"
            % (" and ".join(setters), "; ".join(data)))


def _valid_seccomp_annotation(v):
    return v in ("runtime/default", "docker/default") or v.startswith("localhost/")


def seccomp_baseline_1_0(meta, spec):
    annotations = meta.get("annotations") or {}
    bad = set()
    pod_key = "seccomp.security.alpha.kubernetes.io/pod"
    if pod_key in annotations and not _valid_seccomp_annotation(annotations[pod_key]):
        bad.add('%s="%s"' % (pod_key, annotations[pod_key]))
    for c in _containers(spec):
        key = "container.seccomp.security.alpha.kubernetes.io/" + c.get("name", "")
        if key in annotations and not _valid_seccomp_annotation(annotations[key]):
            bad.add('%s="%s"' % (key, annotations[key]))
    if bad:
        return ("seccompProfile", "forbidden %s %s" % (
            pluralize("annotation", "annotations", len(bad)), ", ".join(sorted(bad))))
    return None


def seccomp_baseline_1_19(meta, spec):
    values = set()
    pod_type = _seccomp_type(_sc(spec))
    pod_bad = pod_type is not None and not _valid_seccomp(pod_type)
    if pod_bad:
        values.add(pod_type)
    bad = []
    for c in _containers(spec):
        t = _seccomp_type(_sc(c))
        if t is not None and not _valid_seccomp(t):
            bad.append(c.get("name", ""))
            values.add(t)
    setters = _setters(pod_bad, bad)
    if setters:
        return ("seccompProfile", "%s must not set securityContext.seccompProfile.type to %s"
                % (" and ".join(setters), join_quote(sorted(values))))
    return None


SYSCTLS_1_0 = ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
               "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
               "net.ipv4.ip_unprivileged_port_start")
SYSCTLS_1_27 = SYSCTLS_1_0 + ("net.ipv4.ip_local_reserved_ports",)
SYSCTLS_1_29 = SYSCTLS_1_27 + ("net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                               "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")


def _sysctls(allowed):
    def check(meta, spec):
        bad = [s.get("name", "") for s in _sc(spec).get("sysctls") or []
               if isinstance(s, dict) and s.get("name") not in allowed]
        if bad:
            return ("forbidden sysctls", ", ".join(bad))
        return None
    return check


def windows_host_process(meta, spec):
    def host(sc):
        opts = sc.get("windowsOptions")
        return isinstance(opts, dict) and opts.get("hostProcess") is True
    bad = [c.get("name", "") for c in _containers(spec) if host(_sc(c))]
    setters = _setters(host(_sc(spec)), bad)
    if setters:
        return ("hostProcess", "%s must not set securityContext.windowsOptions.hostProcess=true"
                % " and ".join(setters))
    return None


# (ID, level, overlap, [(minimum minor version, check)]), in registration order.
CHECKS = [
    ("allowPrivilegeEscalation", "restricted", False, [(8, allow_privilege_escalation)]),
    ("appArmorProfile", "baseline", False, [(0, app_armor_profile)]),
    ("capabilities_baseline", "baseline", True, [(0, capabilities_baseline)]),
    ("capabilities_restricted", "restricted", False, [(22, capabilities_restricted)]),
    ("hostNamespaces", "baseline", False, [(0, host_namespaces)]),
    ("hostPathVolumes", "baseline", True, [(0, host_path_volumes)]),
    ("hostPorts", "baseline", False, [(0, host_ports)]),
    ("privileged", "baseline", False, [(0, privileged)]),
    ("procMount", "baseline", False, [(0, proc_mount)]),
    ("restrictedVolumes", "restricted", False, [(0, restricted_volumes)]),
    ("runAsNonRoot", "restricted", False, [(0, run_as_non_root)]),
    ("runAsUser", "restricted", False, [(23, run_as_user)]),
    ("seLinuxOptions", "baseline", False, [(0, se_linux_options)]),
    ("seccompProfile_baseline", "baseline", True, [(0, seccomp_baseline_1_0),
                                                  (19, seccomp_baseline_1_19)]),
    ("seccompProfile_restricted", "restricted", False, [(19, seccomp_restricted)]),
    ("sysctls", "baseline", False, [(0, _sysctls(SYSCTLS_1_0)), (27, _sysctls(SYSCTLS_1_27)),
                                    (29, _sysctls(SYSCTLS_1_29))]),
    ("windowsHostProcess", "baseline", False, [(0, windows_host_process)]),
]
MAX_MINOR = max(v for _, _, _, versions in CHECKS for v, _ in versions)


def _version_of(versions, minor):
    """The check of a versioned list that applies at minor, or None."""
    found = None
    for least, fn in versions:
        if least <= minor:
            found = fn
    return found


def evaluate(level, version, meta, spec):
    """checkRegistry.EvaluatePod + AggregateCheckResults: the forbidden
    (reason, detail) pairs of a pod's metadata and spec under a policy
    level and version ("latest" or "v1.N"), in the library's order:
    baseline checks, then (baseline level) the baseline checks a
    restricted one supersedes, or (restricted level) the restricted ones."""
    if level == "privileged":
        return []
    minor = MAX_MINOR if version == "latest" else min(int(version[3:]), MAX_MINOR)
    groups = [("baseline", False), ("baseline", True) if level == "baseline" else
              ("restricted", False)]
    out = []
    for want_level, want_overlap in groups:
        for _, check_level, overlap, versions in CHECKS:
            if check_level != want_level or (check_level == "baseline" and
                                             overlap != want_overlap):
                continue
            fn = _version_of(versions, minor)
            result = fn(meta, spec) if fn else None
            if result:
                out.append(result)
    return out


def forbidden_detail(results):
    """AggregateCheckResult.ForbiddenDetail: reason (detail), ..."""
    return ", ".join("%s (%s)" % (r, d) if d else r for r, d in results)


def forbidden_reason(results):
    """AggregateCheckResult.ForbiddenReason: the reasons alone."""
    return ", ".join(r for r, _ in results)
