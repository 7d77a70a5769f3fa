"""What the real kube-apiserver refuses in a pod's volumes and in the
downward API (k8s.io/kubernetes pkg/apis/core/validation ValidateVolumes and
its helpers, at Kubernetes v1.33; conventions in validation.py).

Each volume must name exactly one source; a volume whose own errors refuse
it is also left out of the set that volumeMounts may name, so a mount of it
reports Not found as well, as in Go. The rules of the cloud and network
volume types (iscsi, rbd, azureDisk, ...) are left out: they count as a
source and nothing more.
"""
import errors
import validation as v

FILE_MODE_ERR = "must be a number between 0 and 0777 (octal), both inclusive"


# Volume sources in the order Go checks them, with the path segment its
# "may not specify more than 1 volume type" error names (two are typos).
VOLUME_SOURCES = [
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"), ("secret", "secret"), ("nfs", "nfs"),
    ("iscsi", "iscsi"), ("glusterfs", "glusterfs"), ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"), ("cinder", "cinder"),
    ("cephfs", "cephFS"), ("quobyte", "quobyte"), ("downwardAPI", "downwarAPI"), ("fc", "fc"),
    ("flexVolume", "flexVolume"), ("configMap", "configMap"), ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"), ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk"),
    ("storageos", "storageos"), ("projected", "projected"), ("scaleIO", "scaleIO"),
    ("csi", "csi"), ("ephemeral", "ephemeral"), ("image", "image"),
]

HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                   "FileOrCreate", "Socket"]

ENV_FIELD_PATHS = ["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                   "spec.serviceAccountName", "status.hostIP", "status.hostIPs",
                   "status.podIP", "status.podIPs"]

VOLUME_FIELD_PATHS = ["metadata.annotations", "metadata.labels", "metadata.name",
                      "metadata.namespace", "metadata.uid"]

DOWNWARD_LABELS = ["metadata.annotations", "metadata.labels", "metadata.name",
                   "metadata.namespace", "metadata.uid", "spec.nodeName",
                   "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
                   "status.phase", "status.hostIP", "status.hostIPs", "status.podIP",
                   "status.podIPs"]

RESOURCE_FIELD_PATHS = ["limits.cpu", "limits.ephemeral-storage", "limits.memory",
                        "requests.cpu", "requests.ephemeral-storage", "requests.memory"]

d_, l_, s_ = v.dict_of, v.list_of, v.str_of


def _no_backsteps(target, path):
    if ".." in target.split("/"):
        return [errors.invalid(path, target, "must not contain '..'")]
    return []


def local_descending_path(target, path):
    """A relative path with no ".." element."""
    errs = []
    if target.startswith("/"):
        errs.append(errors.invalid(path, target, "must be a relative path"))
    return errs + _no_backsteps(target, path)


def local_non_reserved_path(target, path):
    """A local descending path that does not start with ".."."""
    errs = local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(errors.invalid(path, target, "must not start with '..'"))
    return errs


def _file_mode(mode, path):
    if isinstance(mode, int) and not 0 <= mode <= 0o777:
        return [errors.invalid(path, mode, FILE_MODE_ERR)]
    return []


def _key_to_path(item, path):
    errs = []
    if not s_(item, "key"):
        errs.append(errors.required(path + ".key"))
    if not s_(item, "path"):
        errs.append(errors.required(path + ".path"))
    errs += local_non_reserved_path(s_(item, "path"), path + ".path")
    return errs + _file_mode(item.get("mode"), path + ".mode")


def _items(source, path):
    errs = []
    for i, item in enumerate(l_(source, "items")):
        errs += _key_to_path(item, "%s.items[%d]" % (path, i))
    return errs


def _split_subscript(field_path):
    """fieldpath.SplitMaybeSubscriptedPath: ("metadata.labels", "app")."""
    if not field_path.endswith("']"):
        return None
    head, sep, sub = field_path[:-2].partition("['")
    return (head, sub) if sep and head else None


def _convert_downward_label(version, label):
    """podshelper.ConvertDownwardAPIFieldLabel: (internal label, error)."""
    if version != "v1":
        return None, "unsupported pod version: %s" % version
    split = _split_subscript(label)
    if split:
        if split[0] in ("metadata.annotations", "metadata.labels"):
            return label, None
        return None, "field label does not support subscript: %s" % label
    if label in DOWNWARD_LABELS:
        return label, None
    if label == "spec.host":
        return "spec.nodeName", None
    return None, "field label not supported: %s" % label


def object_field_selector(ref, allowed, path):
    """A fieldRef: a downward API field of apiVersion v1 among `allowed`."""
    if not s_(ref, "apiVersion"):
        return [errors.required(path + ".apiVersion")]
    field_path = s_(ref, "fieldPath")
    if not field_path:
        return [errors.required(path + ".fieldPath")]
    internal, problem = _convert_downward_label(s_(ref, "apiVersion"), field_path)
    if problem:
        return [errors.invalid(path + ".fieldPath", field_path,
                               "error converting fieldPath: " + problem)]
    split = _split_subscript(internal)
    if split:
        sub = split[1].lower() if split[0] == "metadata.annotations" else split[1]
        return v.invalid_each(path, sub, v.is_qualified_name(sub))
    if internal not in allowed:
        return [errors.not_supported(path + ".fieldPath", internal, sorted(allowed))]
    return []

DIVISORS_CPU = {"1m", "1"}

DIVISORS_BYTES = {"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi",
                  "1Ei"}

BYTES_DIVISOR_LIST = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"


def _divisor(resource, divisor, path):
    if divisor in (None, ""):
        return []
    q = v.parse_quantity(divisor)
    if q.sign() == 0:
        return []
    text, errs = str(q), []
    if resource in ("limits.cpu", "requests.cpu") and text not in DIVISORS_CPU:
        errs.append(errors.invalid(path + ".divisor", resource, "only divisor's values 1m and 1 "
                                   "are supported with the cpu resource"))
    for kind, names in (("memory", ("limits.memory", "requests.memory")),
                        ("local ephemeral storage", ("limits.ephemeral-storage",
                                                     "requests.ephemeral-storage"))):
        if resource in names and text not in DIVISORS_BYTES:
            errs.append(errors.invalid(path + ".divisor", resource, "only divisor's values %s "
                                       "are supported with the %s resource"
                                       % (BYTES_DIVISOR_LIST, kind)))
    if (resource.startswith("requests.hugepages-") or resource.startswith("limits.hugepages-")) \
            and text not in DIVISORS_BYTES:
        errs.append(errors.invalid(path + ".divisor", resource, "only divisor's values %s are "
                                   "supported with the hugepages resource" % BYTES_DIVISOR_LIST))
    return errs


def resource_field_selector(ref, path, volume):
    """A resourceFieldRef (a volume item must name its container)."""
    errs = []
    resource = s_(ref, "resource")
    if volume and not s_(ref, "containerName"):
        errs.append(errors.required(path + ".containerName"))
    elif not resource:
        errs.append(errors.required(path + ".resource"))
    elif resource not in RESOURCE_FIELD_PATHS and not resource.startswith(
            ("requests.hugepages-", "limits.hugepages-")):
        errs.append(errors.not_supported(path + ".resource", resource, RESOURCE_FIELD_PATHS))
    return errs + _divisor(resource, ref.get("divisor"), path)


def _downward_api_file(item, path):
    """Go passes the volume's path here, not the item's: so do we."""
    errs = []
    if not s_(item, "path"):
        errs.append(errors.required(path + ".path"))
    errs += local_non_reserved_path(s_(item, "path"), path + ".path")
    if isinstance(item.get("fieldRef"), dict):
        errs += object_field_selector(item["fieldRef"], VOLUME_FIELD_PATHS, path + ".fieldRef")
        if isinstance(item.get("resourceFieldRef"), dict):
            errs.append(errors.invalid(path, "resource", "fieldRef and resourceFieldRef can not "
                                       "be specified simultaneously"))
    elif isinstance(item.get("resourceFieldRef"), dict):
        errs += resource_field_selector(item["resourceFieldRef"], path + ".resourceFieldRef",
                                         True)
    else:
        errs.append(errors.required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + _file_mode(item.get("mode"), path + ".mode")


def _projection_sources(projected, path, seen_paths):
    errs = []
    for i, source in enumerate(l_(projected, "sources")):
        src_path = "%s.sources[%d]" % (path, i)
        count = 0
        for kind, name_key in (("secret", "name"), ("configMap", "name")):
            if not isinstance(source.get(kind), dict):
                continue
            count += 1
            proj = source[kind]
            if not s_(proj, name_key):
                errs.append(errors.required("%s.%s.name" % (src_path, kind)))
            for j, item in enumerate(l_(proj, "items")):
                errs += _key_to_path(item, "%s.%s.items[%d]" % (src_path, kind, j))
                if s_(item, "path"):
                    if item["path"] in seen_paths:
                        errs.append(errors.invalid(path, s_(proj, "name"),
                                                   "conflicting duplicate paths"))
                    seen_paths.add(item["path"])
        if isinstance(source.get("downwardAPI"), dict):
            count += 1
            for item in l_(source["downwardAPI"], "items"):
                errs += _downward_api_file(item, src_path + ".downwardAPI")
                if s_(item, "path"):
                    if item["path"] in seen_paths:
                        errs.append(errors.invalid(path, item["path"],
                                                   "conflicting duplicate paths"))
                    seen_paths.add(item["path"])
        if isinstance(source.get("serviceAccountToken"), dict):
            count += 1
            token = source["serviceAccountToken"]
            seconds = v.int_of(token, "expirationSeconds") or 0
            tok_path = src_path + ".serviceAccountToken.expirationSeconds"
            if seconds < 600:
                errs.append(errors.invalid(tok_path, seconds,
                                           "may not specify a duration less than 10 minutes"))
            if seconds > 1 << 32:
                errs.append(errors.invalid(tok_path, seconds,
                                           "may not specify a duration larger than 2^32 seconds"))
            if not s_(token, "path"):
                errs.append(errors.required(path + ".path"))
            else:
                errs += local_non_reserved_path(token["path"], path + ".path")
        if isinstance(source.get("clusterTrustBundle"), dict):
            count += 1  # its own rules are left out
        if count > 1:
            errs.append(errors.forbidden(src_path, "may not specify more than 1 volume type per "
                                         "source"))
    return errs


def _csi_driver_name(driver, path):
    errs = []
    if not driver:
        errs.append(errors.required(path))
    if len(driver) > 63:
        errs.append(v.too_long(path, 63))
    return errs + v.invalid_each(path, driver, v.is_dns1123_subdomain(driver.lower()))


def _source_rules(key, src, path):
    """The rules of one volume source's own fields."""
    errs = []
    if key == "emptyDir":
        limit = src.get("sizeLimit")
        if limit is not None and v.parse_quantity(limit).sign() < 0:
            errs.append(errors.forbidden(path + ".sizeLimit",
                                         "SizeLimit field must be a valid resource quantity"))
    elif key == "hostPath":
        if not s_(src, "path"):
            return [errors.required(path + ".path")]
        errs += _no_backsteps(src["path"], path + ".path")
        if src.get("type") is not None and src["type"] not in HOST_PATH_TYPES:
            errs.append(errors.not_supported(path + ".type", src["type"], HOST_PATH_TYPES))
    elif key == "gitRepo":
        if not s_(src, "repository"):
            errs.append(errors.required(path + ".repository"))
        errs += local_descending_path(s_(src, "directory"), path + ".directory")
    elif key in ("secret", "configMap"):
        name_key = "secretName" if key == "secret" else "name"
        if not s_(src, name_key):
            errs.append(errors.required(path + "." + name_key))
        errs += _file_mode(src.get("defaultMode"), path + ".defaultMode") + _items(src, path)
    elif key == "persistentVolumeClaim":
        if not s_(src, "claimName"):
            errs.append(errors.required(path + ".claimName"))
    elif key == "nfs":
        for field in ("server", "path"):
            if not s_(src, field):
                errs.append(errors.required(path + "." + field))
        if not s_(src, "path").startswith("/"):
            errs.append(errors.invalid(path + ".path", s_(src, "path"),
                                       "must be an absolute path"))
    elif key == "downwardAPI":
        errs += _file_mode(src.get("defaultMode"), path + ".defaultMode")
        for item in l_(src, "items"):
            errs += _downward_api_file(item, path)
    elif key == "projected":
        errs += _file_mode(src.get("defaultMode"), path + ".defaultMode")
        errs += _projection_sources(src, path, set())
    elif key == "csi":
        errs += _csi_driver_name(s_(src, "driver"), path + ".driver")
        ref = src.get("nodePublishSecretRef")
        if isinstance(ref, dict):
            if not s_(ref, "name"):
                errs.append(errors.required(path + ".nodePublishSecretRef.name"))
            else:
                errs += v.invalid_each(path + ".name", ref["name"],
                                       v.name_dns1123_subdomain(ref["name"]))
    elif key == "ephemeral":
        if not isinstance(src.get("volumeClaimTemplate"), dict):
            errs.append(errors.required(path + ".volumeClaimTemplate"))
    elif key == "image":
        if not s_(src, "reference"):
            errs.append(errors.required(path + ".reference"))
        errs += v.validate_pull_policy(s_(src, "pullPolicy"), path + ".pullPolicy")
    return errs


def _volume_source(vol, path):
    errs, count = [], 0
    for key, forbidden_as in VOLUME_SOURCES:
        src = vol.get(key)
        if not isinstance(src, dict):
            continue
        if count:
            errs.append(errors.forbidden("%s.%s" % (path, forbidden_as),
                                         "may not specify more than 1 volume type"))
            continue
        count += 1
        # Go validates gcePersistentDisk under "persistentDisk" and cephfs
        # under "cephfs".
        child = "persistentDisk" if key == "gcePersistentDisk" else key
        errs += _source_rules(key, src, "%s.%s" % (path, child))
    if count == 0:
        errs.append(errors.required(path, "must specify a volume type"))
    return errs


def validate_volumes(volumes, pod_name, path):
    """(the volumes that validated, by name; errors)."""
    errs, good = [], {}
    created_pvcs = {"%s-%s" % (pod_name, s_(vol, "name")) for vol in volumes
                    if pod_name and isinstance(vol.get("ephemeral"), dict)}
    for i, vol in enumerate(volumes):
        idx = "%s[%d]" % (path, i)
        name = s_(vol, "name")
        el = _volume_source(vol, idx)
        if not name:
            el.append(errors.required(idx + ".name"))
        else:
            el += v.invalid_each(idx + ".name", name, v.is_dns1123_label(name))
        if name in good:
            el.append(errors.duplicate(idx + ".name", name))
        if el:
            errs += el
        else:
            good[name] = vol
        claim = s_(d_(vol, "persistentVolumeClaim"), "claimName")
        if claim and claim in created_pvcs:
            errs.append(errors.invalid(idx + ".persistentVolumeClaim.claimName", claim,
                                       "must not reference a PVC that gets created for an "
                                       "ephemeral volume"))
    return good, errs
