"""What the real kube-apiserver refuses in a pod's containers: names,
images, ports, env and envFrom, volume mounts and devices, resources,
probes, lifecycle hooks and security contexts (k8s.io/kubernetes
pkg/apis/core/validation validateContainers and validateInitContainers, at
Kubernetes v1.33; conventions in validation.py).

Environment variable names: v1.30 added the relaxed rule (any printable
ASCII, space included, but '='), beta and on by default from v1.32, GA in
v1.34; earlier servers, or a v1.30-31 server without the gate, demand
[-._a-zA-Z][-._a-zA-Z0-9]* (so no spaces, no leading digit). This follows
v1.33: RELAXED_ENV_VAR_NAMES; both rules are here.

`privileged: true` is accepted, as on a cluster started with
--allow-privileged (kind, kubeadm).
"""
import json

import errors
import quantity
import validation as v
import validation_volume as volume_rules

RELAXED_ENV_VAR_NAMES = True

ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

ENV_VAR_NAME_ERR = ("a valid environment variable name must consist of alphabetic characters, "
                    "digits, '_', '-', or '.', and must not start with a digit")

RELAXED_ENV_VAR_NAME_ERR = ("a valid environment variable name must consist only of printable "
                            "ASCII characters other than '='")

STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers"}

INTEGER_RESOURCES = {"pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
                     "configmaps", "persistentvolumeclaims", "services.nodeports",
                     "services.loadbalancers"}

d_, l_, s_ = v.dict_of, v.list_of, v.str_of


def is_env_var_name(name):
    """The strict rule (before v1.32 by default)."""
    errs = []
    if not v.matches(ENV_VAR_NAME_FMT, name):
        errs.append(v.regex_error(ENV_VAR_NAME_ERR, ENV_VAR_NAME_FMT, "my.env-name",
                                  "MY_ENV.NAME", "MyEnvName1"))
    return errs + v.chdir_prefix_errors(name)


def is_relaxed_env_var_name(name):
    """The relaxed rule: printable ASCII (space included) except '='."""
    errs = []
    if not name:
        errs.append("environment variable name must be non-empty")
    if any(not (" " <= c <= "~") or c == "=" for c in name):
        errs.append(RELAXED_ENV_VAR_NAME_ERR)
    return errs


def env_var_name_errors(name):
    return is_relaxed_env_var_name(name) if RELAXED_ENV_VAR_NAMES else is_env_var_name(name)


def _ports(ports, path):
    errs, names = [], set()
    for i, port in enumerate(ports):
        idx = "%s[%d]" % (path, i)
        name = s_(port, "name")
        if name:
            msgs = v.is_valid_port_name(name)
            if msgs:
                errs += v.invalid_each(idx + ".name", name, msgs)
            elif name in names:
                errs.append(errors.duplicate(idx + ".name", name))
            else:
                names.add(name)
        container_port = v.int_of(port, "containerPort") or 0
        if container_port == 0:
            errs.append(errors.required(idx + ".containerPort"))
        else:
            errs += v.invalid_each(idx + ".containerPort", container_port,
                                   v.is_valid_port_num(container_port))
        host_port = v.int_of(port, "hostPort") or 0
        if host_port:
            errs += v.invalid_each(idx + ".hostPort", host_port, v.is_valid_port_num(host_port))
        errs += v.validate_protocol(s_(port, "protocol"), idx + ".protocol")
    return errs


def _key_selector(ref, path):
    errs = v.invalid_each(path + ".name", s_(ref, "name"),
                          v.name_dns1123_subdomain(s_(ref, "name")))
    if not s_(ref, "key"):
        errs.append(errors.required(path + ".key"))
    else:
        errs += v.invalid_each(path + ".key", ref["key"], v.is_config_map_key(ref["key"]))
    return errs


def _env_value_from(env, path):
    source = env.get("valueFrom")
    if not isinstance(source, dict):
        return []
    errs, count = [], 0
    if isinstance(source.get("fieldRef"), dict):
        count += 1
        errs += volume_rules.object_field_selector(
            source["fieldRef"], volume_rules.ENV_FIELD_PATHS, path + ".fieldRef")
    if isinstance(source.get("resourceFieldRef"), dict):
        count += 1
        errs += volume_rules.resource_field_selector(source["resourceFieldRef"],
                                                     path + ".resourceFieldRef", False)
    for kind in ("configMapKeyRef", "secretKeyRef"):
        if isinstance(source.get(kind), dict):
            count += 1
            errs += _key_selector(source[kind], "%s.%s" % (path, kind))
    if count == 0:
        errs.append(errors.invalid(path, "", "must specify one of: `fieldRef`, "
                                   "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
    elif s_(env, "value"):
        errs.append(errors.invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(errors.invalid(path, "", "may not have more than one field specified at a "
                                   "time"))
    return errs


def _env(env_vars, path):
    errs = []
    for i, env in enumerate(env_vars):
        idx = "%s[%d]" % (path, i)
        name = s_(env, "name")
        if not name:
            errs.append(errors.required(idx + ".name"))
        else:
            errs += v.invalid_each(idx + ".name", name, env_var_name_errors(name))
        errs += _env_value_from(env, idx + ".valueFrom")
    return errs


def _env_from(sources, path):
    errs = []
    for i, source in enumerate(sources):
        idx = "%s[%d]" % (path, i)
        prefix = s_(source, "prefix")
        if prefix:
            errs += v.invalid_each(idx + ".prefix", prefix, env_var_name_errors(prefix))
        count = 0
        for kind in ("configMapRef", "secretRef"):
            ref = source.get(kind)
            if not isinstance(ref, dict):
                continue
            count += 1
            if not s_(ref, "name"):
                errs.append(errors.required("%s.%s.name" % (idx, kind)))
            else:
                errs += v.invalid_each("%s.%s.name" % (idx, kind), ref["name"],
                                       v.name_dns1123_subdomain(ref["name"], True))
        # Go names the list here, not the entry.
        if count == 0:
            errs.append(errors.invalid(path, "", "must specify one of: `configMapRef` or "
                                       "`secretRef`"))
        elif count > 1:
            errs.append(errors.invalid(path, "", "may not have more than one field specified at "
                                       "a time"))
    return errs


def _volume_mounts(mounts, devices, volumes, container, path):
    errs, mount_points = [], set()
    device_paths = {s_(d, "devicePath") for d in devices}
    device_names = {s_(d, "name") for d in devices}
    privileged = d_(container, "securityContext").get("privileged") is True
    for i, mount in enumerate(mounts):
        idx = "%s[%d]" % (path, i)
        name, mount_path = s_(mount, "name"), s_(mount, "mountPath")
        if not name:
            errs.append(errors.required(idx + ".name"))
        if name not in volumes:
            errs.append(errors.not_found(idx + ".name", name))
        if not mount_path:
            errs.append(errors.required(idx + ".mountPath"))
        if mount_path in mount_points:
            errs.append(errors.invalid(idx + ".mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
        if name in device_names:
            errs.append(errors.invalid(idx + ".name", name, "must not already exist in "
                                       "volumeDevices"))
        if mount_path in device_paths:
            errs.append(errors.invalid(idx + ".mountPath", mount_path, "must not already exist "
                                       "as a path in volumeDevices"))
        sub_path, sub_expr = s_(mount, "subPath"), s_(mount, "subPathExpr")
        if isinstance(volumes.get(name, {}).get("image"), dict):
            for field, value in (("subPath", sub_path), ("subPathExpr", sub_expr)):
                if value:
                    errs.append(errors.invalid(idx + "." + field, value,
                                               "not allowed in image volume sources"))
        # Go names the list, not the entry, for these three.
        if sub_path:
            errs += volume_rules.local_descending_path(sub_path, path + ".subPath")
        if sub_expr:
            if sub_path:
                errs.append(errors.invalid(idx + ".subPathExpr", sub_expr,
                                           "subPathExpr and subPath are mutually exclusive"))
            errs += volume_rules.local_descending_path(sub_expr, path + ".subPathExpr")
        propagation = mount.get("mountPropagation")
        if propagation is not None:
            supported = ["Bidirectional", "HostToContainer", "None"]
            if propagation not in supported:
                errs.append(errors.not_supported(path + ".mountPropagation", propagation,
                                                 supported))
            if propagation == "Bidirectional" and not privileged:
                errs.append(errors.forbidden(path + ".mountPropagation", "Bidirectional mount "
                                             "propagation is available only to privileged "
                                             "containers"))
        errs += _recursive_read_only(mount, path + ".recursiveReadOnly")
    return errs


def _recursive_read_only(mount, path):
    rro = mount.get("recursiveReadOnly")
    if rro is None or rro == "Disabled":
        return []
    if rro in ("Enabled", "IfPossible"):
        errs = []
        if mount.get("readOnly") is not True:
            errs.append(errors.forbidden(path, "may only be specified when readOnly is true"))
        if mount.get("mountPropagation") not in (None, "None"):
            errs.append(errors.forbidden(path, "may only be specified when mountPropagation is "
                                         "None or not specified"))
        return errs
    return [errors.not_supported(path, rro, ["Disabled", "Enabled", "IfPossible"])]


def _volume_devices(devices, mounts, volumes, path):
    errs, paths, names = [], set(), set()
    mount_names = {s_(m, "name") for m in mounts}
    mount_paths = {s_(m, "mountPath") for m in mounts}
    for i, dev in enumerate(devices):
        idx = "%s[%d]" % (path, i)
        name, dev_path = s_(dev, "name"), s_(dev, "devicePath")
        vol = volumes.get(name)
        if not name:
            errs.append(errors.required(idx + ".name"))
        if name in names:
            errs.append(errors.invalid(idx + ".name", name, "must be unique"))
        if vol is not None and not (isinstance(vol.get("persistentVolumeClaim"), dict)
                                    or isinstance(vol.get("ephemeral"), dict)):
            errs.append(errors.invalid(idx + ".name", name, "can only use volume source type of "
                                       "PersistentVolumeClaim or Ephemeral for block mode"))
        if vol is None:
            errs.append(errors.not_found(idx + ".name", name))
        if not dev_path:
            errs.append(errors.required(idx + ".devicePath"))
        if dev_path in paths:
            errs.append(errors.invalid(idx + ".devicePath", dev_path, "must be unique"))
        if dev_path and ".." in dev_path.split("/"):
            errs.append(errors.invalid(idx + ".devicePath", dev_path,
                                       "can not contain backsteps ('..')"))
        else:
            paths.add(dev_path)
        if name in mount_names:
            errs.append(errors.invalid(idx + ".name", name, "must not already exist in "
                                       "volumeMounts"))
        if dev_path in mount_paths:
            errs.append(errors.invalid(idx + ".devicePath", dev_path, "must not already exist as "
                                       "a path in volumeMounts"))
        if name:
            names.add(name)
    return errs


def _is_native(name):
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name):
    return name.startswith("hugepages-")


def _is_extended(name):
    if _is_native(name) or name.startswith("requests."):
        return False
    return not v.is_qualified_name("requests." + name)


def _overcommit_allowed(name):
    return _is_native(name) and not _is_hugepages(name)


def _container_resource_name(name, path):
    errs = v.invalid_each(path, name, v.is_qualified_name(name))
    if errs:
        return errs
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not name.startswith(("hugepages-",
                                                                   "requests.hugepages-")):
            return [errors.invalid(path, name, "must be a standard resource type or fully "
                                   "qualified")]
        if name not in ("cpu", "memory", "ephemeral-storage") and not _is_hugepages(name):
            return [errors.invalid(path, name, "must be a standard resource for containers")]
    elif not _is_native(name) and not _is_extended(name):
        return [errors.invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _quantity_value(name, q, path):
    """ValidateResourceQuantityValue: not negative; whole for counted ones."""
    errs = []
    if q.sign() < 0:
        errs.append(errors.invalid(path, str(q), v.IS_NEGATIVE))
    if (name in INTEGER_RESOURCES or _is_extended(name)) and q.milli_value() % 1000:
        errs.append(errors.invalid(path, v.GoValue(str(q)), "must be an integer"))
    return errs


def _hugepage_value(name, q, path):
    if not _is_hugepages(name):
        return []
    try:
        size = quantity.parse(name[len("hugepages-"):])
    except quantity.QuantityError:
        size = None
    ok = (size is not None and size.sign() > 0 and size.milli_value() % 1000 == 0
          and q.value_int() % size.value_int() == 0)
    if ok:
        return []
    return [errors.invalid(path, str(q), "%s is not positive integer multiple of %s" % (q, name))]


def validate_resources(resources, claim_names, path):
    """Names and quantities of limits and requests, each request within its
    limit (equal to it for resources that cannot be overcommitted)."""
    errs = []
    lim_path, req_path = path + ".limits", path + ".requests"
    limits = {k: v.parse_quantity(q) for k, q in d_(resources, "limits").items()}
    requests = {k: v.parse_quantity(q) for k, q in d_(resources, "requests").items()}
    qos = {"cpu", "memory"}
    for name, q in limits.items():
        p = "%s[%s]" % (lim_path, name)
        errs += _container_resource_name(name, p) + _quantity_value(name, q, p)
        errs += _hugepage_value(name, q, p)
    for name, q in requests.items():
        p = "%s[%s]" % (req_path, name)
        errs += _container_resource_name(name, p) + _quantity_value(name, q, p)
        limit = limits.get(name)
        if limit is not None:
            if q.cmp(limit) != 0 and not _overcommit_allowed(name):
                errs.append(errors.invalid(req_path, str(q), "must be equal to %s limit of %s"
                                           % (name, limit)))
            elif q.cmp(limit) > 0:
                errs.append(errors.invalid(req_path, str(q), "must be less than or equal to %s "
                                           "limit of %s" % (name, limit)))
        elif not _overcommit_allowed(name):
            errs.append(errors.required(lim_path, "Limit must be set for non overcommitable "
                                        "resources"))
        errs += _hugepage_value(name, q, p)
    huge = any(_is_hugepages(n) for n in list(limits) + list(requests))
    if huge and not (qos & (set(limits) | set(requests))):
        errs.append(errors.forbidden(path, "HugePages require cpu or memory"))
    return errs + _resource_claims(l_(resources, "claims"), claim_names, path + ".claims")


def _resource_claims(claims, claim_names, path):
    errs, seen = [], set()
    for i, claim in enumerate(claims):
        idx = "%s[%d]" % (path, i)
        name, request = s_(claim, "name"), s_(claim, "request")
        if not name:
            errs.append(errors.required(idx))
            continue
        if name in seen:
            errs.append(errors.duplicate(idx, name))
        else:
            key = name
            if request:
                errs += v.invalid_each(idx + ".request", request, v.is_dns1123_label(request))
                key += "/" + request
            if key in seen:
                errs.append(errors.duplicate(idx, key))
            elif not request:
                errs += [errors.duplicate(idx, name) for k in seen
                         if "/" in k and k.split("/", 1)[0] == name]
            seen.add(key)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += (": " + ", ".join(sorted(claim_names))) if claim_names else " which is empty"
            errs.append(errors.Cause("FieldValueNotFound", idx, detail, name))
    return errs


def _resize_policy(policies, path, restart_policy):
    errs, seen = [], set()
    for i, p in enumerate(policies):
        name, policy = s_(p, "resourceName"), s_(p, "restartPolicy")
        if name in seen:
            errs.append(errors.duplicate("%s[%d]" % (path, i), name))
        seen.add(name)
        if not name:
            errs.append(errors.required(path))
        elif name not in ("cpu", "memory"):
            errs.append(errors.not_supported(path, name, ["cpu", "memory"]))
        if not policy:
            errs.append(errors.required(path))
        elif policy not in ("NotRequired", "RestartContainer"):
            errs.append(errors.not_supported(path, policy, ["NotRequired", "RestartContainer"]))
        if restart_policy == "Never" and policy != "NotRequired":
            errs.append(errors.invalid(path, policy,
                                       "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return errs


def _handler(handler, grace, path, lifecycle):
    errs, count = [], 0
    kinds = ("exec", "httpGet", "tcpSocket", "grpc", "sleep") if lifecycle else \
        ("exec", "httpGet", "tcpSocket", "grpc")
    for kind in kinds:
        h = handler.get(kind)
        if not isinstance(h, dict):
            continue
        p = "%s.%s" % (path, kind)
        if count:
            errs.append(errors.forbidden(p, "may not specify more than 1 handler type"))
            continue
        count += 1
        if kind == "exec" and not l_(h, "command"):
            errs.append(errors.required(p + ".command"))
        elif kind == "httpGet":
            if not s_(h, "path"):
                errs.append(errors.required(p + ".path"))
            errs += v.validate_port_num_or_name(h.get("port"), p + ".port")
            if h.get("scheme") not in ("HTTP", "HTTPS"):
                errs.append(errors.not_supported(p + ".scheme", s_(h, "scheme"),
                                                 ["HTTP", "HTTPS"]))
            for header in l_(h, "httpHeaders"):
                errs += v.invalid_each(p + ".httpHeaders", s_(header, "name"),
                                       v.is_http_header_name(s_(header, "name")))
        elif kind == "tcpSocket":
            errs += v.validate_port_num_or_name(h.get("port"), p + ".port")
        elif kind == "grpc":
            errs += v.validate_port_num_or_name(v.int_of(h, "port") or 0, p + ".port")
        elif kind == "sleep":
            seconds = v.int_of(h, "seconds") or 0
            if grace is not None and not 0 <= seconds <= grace:
                errs.append(errors.invalid(p, seconds, "must be non-negative and less than "
                                           "terminationGracePeriodSeconds (%d)" % grace))
    if count == 0:
        errs.append(errors.required(path, "must specify a handler type"))
    return errs


def _probe(probe, grace, path, kind):
    if not isinstance(probe, dict):
        return []
    errs = _handler(probe, grace, path, False)
    for field in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                  "failureThreshold"):
        errs += v.nonnegative(path + "." + field, v.int_of(probe, field) or 0)
    tgps = v.int_of(probe, "terminationGracePeriodSeconds")
    if tgps is not None and tgps <= 0:
        errs.append(errors.invalid(path + ".terminationGracePeriodSeconds", tgps,
                                   "must be greater than 0"))
    threshold = v.int_of(probe, "successThreshold") or 0
    if kind in ("liveness", "startup") and threshold != 1:
        errs.append(errors.invalid(path + ".successThreshold", threshold, "must be 1"))
    if kind == "readiness" and tgps is not None:
        errs.append(errors.invalid(path + ".terminationGracePeriodSeconds", tgps,
                                   "must not be set for readinessProbes"))
    return errs


def _lifecycle_and_probes(ctr, grace, path):
    errs = []
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                errs += _handler(lifecycle[hook], grace, "%s.lifecycle.%s" % (path, hook), True)
    for kind in ("liveness", "readiness", "startup"):
        errs += _probe(ctr.get(kind + "Probe"), grace, "%s.%sProbe" % (path, kind), kind)
    return errs


def seccomp_profile(profile, path):
    """A seccompProfile (pod or container)."""
    if not isinstance(profile, dict):
        return []
    errs = []
    kind = s_(profile, "type")
    supported = ["Localhost", "RuntimeDefault", "Unconfined"]
    if not kind:
        errs.append(errors.required(path + ".type", "type is required when seccompProfile is set"))
    elif kind not in supported:
        errs.append(errors.not_supported(path + ".type", kind, supported))
    local = profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            errs.append(errors.required(path + ".localhostProfile",
                                        "must be set when seccomp type is Localhost"))
        else:
            errs += volume_rules.local_descending_path(local, path + ".localhostProfile")
    elif local is not None:
        errs.append(errors.invalid(path + ".localhostProfile",
                                   v.GoValue("core.SeccompProfile{Type:%s, LocalhostProfile:%s}"
                                             % (json.dumps(kind), json.dumps(local))),
                                   "can only be set when seccomp type is Localhost"))
    return errs


def apparmor_profile(profile, path):
    """An appArmorProfile (pod or container)."""
    if not isinstance(profile, dict):
        return []
    kind, local = s_(profile, "type"), profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            return [errors.required(path + ".localhostProfile",
                                    "must be set when AppArmor type is Localhost")]
        errs = []
        if local.strip() != local:
            errs.append(errors.invalid(path + ".localhostProfile", local,
                                       "must not be padded with whitespace"))
        elif not local:
            errs.append(errors.required(path + ".localhostProfile",
                                        "must be set when AppArmor type is Localhost"))
        if len(local) > 4095:
            errs.append(v.too_long(path + ".localhostProfile", 4095))
        return errs
    if kind in ("RuntimeDefault", "Unconfined"):
        if local is not None:
            return [errors.invalid(path + ".localhostProfile", local,
                                   "can only be set when AppArmor type is Localhost")]
        return []
    if not kind:
        return [errors.required(path + ".type", "type is required when appArmorProfile is set")]
    return [errors.not_supported(path + ".type", kind, ["Localhost", "RuntimeDefault",
                                                        "Unconfined"])]


def validate_security_context(sc, path, host_users):
    """A container's securityContext."""
    if not isinstance(sc, dict):
        return []
    errs = []
    for field in ("runAsUser", "runAsGroup"):
        if v.int_of(sc, field) is not None:
            errs += v.invalid_each(path + "." + field, sc[field], v.is_valid_id(sc[field]))
    proc = sc.get("procMount")
    if proc is not None:
        if proc not in ("Default", "Unmasked"):
            errs.append(errors.not_supported(path + ".procMount", proc, ["Default", "Unmasked"]))
        if host_users and proc == "Unmasked":
            errs.append(errors.invalid(path + ".procMount", proc,
                                       "`hostUsers` must be false to use `Unmasked`"))
    errs += seccomp_profile(sc.get("seccompProfile"), path + ".seccompProfile")
    if sc.get("allowPrivilegeEscalation") is False:
        shown = v.GoValue("&core.SecurityContext{...}")
        if sc.get("privileged") is True:
            errs.append(errors.invalid(path, shown, "cannot set `allowPrivilegeEscalation` to "
                                       "false and `privileged` to true"))
        for cap in l_(d_(sc, "capabilities"), "add"):
            if cap == "CAP_SYS_ADMIN":
                errs.append(errors.invalid(path, shown, "cannot set `allowPrivilegeEscalation` "
                                           "to false and `capabilities.Add` CAP_SYS_ADMIN"))
    return errs + apparmor_profile(sc.get("appArmorProfile"), path + ".appArmorProfile")


def _container_common(ctr, volumes, claim_names, path, restart_policy, host_users):
    errs = []
    name = s_(ctr, "name")
    if not name:
        errs.append(errors.required(path + ".name"))
    else:
        errs += v.invalid_each(path + ".name", name, v.is_dns1123_label(name))
    if not s_(ctr, "image"):
        errs.append(errors.required(path + ".image"))
    policy = s_(ctr, "terminationMessagePolicy")
    if not policy:
        errs.append(errors.required(path + ".terminationMessagePolicy"))
    elif policy not in ("File", "FallbackToLogsOnError"):
        errs.append(errors.not_supported(path + ".terminationMessagePolicy", policy,
                                         ["File", "FallbackToLogsOnError"]))
    mounts, devices = l_(ctr, "volumeMounts"), l_(ctr, "volumeDevices")
    errs += _ports(l_(ctr, "ports"), path + ".ports")
    errs += _env(l_(ctr, "env"), path + ".env")
    errs += _env_from(l_(ctr, "envFrom"), path + ".envFrom")
    errs += _volume_mounts(mounts, devices, volumes, ctr, path + ".volumeMounts")
    errs += _volume_devices(devices, mounts, volumes, path + ".volumeDevices")
    errs += v.validate_pull_policy(s_(ctr, "imagePullPolicy"), path + ".imagePullPolicy")
    errs += validate_resources(d_(ctr, "resources"), claim_names, path + ".resources")
    errs += _resize_policy(l_(ctr, "resizePolicy"), path + ".resizePolicy", restart_policy)
    return errs + validate_security_context(ctr.get("securityContext"), path + ".securityContext",
                                    host_users)


def _host_port_conflicts(containers, path, seen):
    errs = []
    for i, ctr in enumerate(containers):
        for j, port in enumerate(l_(ctr, "ports")):
            host_port = v.int_of(port, "hostPort") or 0
            if not host_port:
                continue
            key = "%s/%s/%d" % (s_(port, "protocol"), s_(port, "hostIP"), host_port)
            if key in seen:
                errs.append(errors.duplicate("%s[%d].ports[%d].hostPort" % (path, i, j), key))
            seen.add(key)
    return errs


def validate_containers(spec, volumes, claim_names, grace, path, host_users):
    """spec.containers: at least one, names unique, host ports unique."""
    containers = l_(spec, "containers")
    if not containers:
        return [errors.required(path)]
    errs, names = [], set()
    restart_policy = s_(spec, "restartPolicy")
    for i, ctr in enumerate(containers):
        idx = "%s[%d]" % (path, i)
        errs += _container_common(ctr, volumes, claim_names, idx, restart_policy, host_users)
        if s_(ctr, "name") in names:
            errs.append(errors.duplicate(idx + ".name", s_(ctr, "name")))
        names.add(s_(ctr, "name"))
        errs += _lifecycle_and_probes(ctr, grace, idx)
        if ctr.get("restartPolicy") is not None:
            errs.append(errors.forbidden(idx + ".restartPolicy",
                                         "may not be set for non-init containers"))
    return errs + _host_port_conflicts(containers, path, set())


def validate_init_containers(spec, volumes, claim_names, grace, path, host_users):
    """spec.initContainers: names unique with the containers too; probes
    and lifecycle hooks only on restartable (sidecar) ones."""
    errs = []
    names = {s_(c, "name") for c in l_(spec, "containers")}
    restart_policy = s_(spec, "restartPolicy")
    for i, ctr in enumerate(l_(spec, "initContainers")):
        idx = "%s[%d]" % (path, i)
        errs += _container_common(ctr, volumes, claim_names, idx, restart_policy, host_users)
        policy = ctr.get("restartPolicy")
        if policy is not None and policy != "Always":
            errs.append(errors.not_supported(idx + ".restartPolicy", policy, ["Always"]))
        name = s_(ctr, "name")
        if name in names:
            errs.append(errors.duplicate(idx + ".name", name))
        elif name:
            names.add(name)
        # Init containers run one at a time: conflicts are per container.
        errs += _host_port_conflicts([ctr], path, set())
        if policy == "Always":
            errs += _lifecycle_and_probes(ctr, grace, idx)
        else:
            for field in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(field) is not None:
                    errs.append(errors.forbidden(idx + "." + field, "may not be set for init "
                                                 "containers without restartPolicy=Always"))
    return errs
