"""The request semantics of every resource, as the real API server's
generic registry (k8s.io/apiserver pkg/registry/generic/registry/store.go)
and its REST handlers give them: create, get, list, update, patch, delete
and delete collection, with dryRun, field validation, preconditions,
finalizers and propagation policies, over the store (store.py), for any
kind of the table in kinds.py. Admission (admission.py) runs in between.

What differs between kinds is never decided here by a kind's name: the
Kind object says it.

Standard library only.
"""
import json
import random
import threading
import uuid

import decoder
import kinds
import patch
from admission import Admission, Context
from errors import (ApiError, Cause, GoRaw, bad_request, conflict_error, invalid_error,
                    not_found_error, not_supported)
from store import clone, now

OPTIMISTIC_LOCK = ("the object has been modified; please apply your changes to the latest "
                   "version and try again")
# The alphabet of generated name suffixes (k8s.io/apiserver names.SimpleNameGenerator).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# A list or watch of a version newer than the store's waits this long for
# it, then answers 504, as the watch cache does.
FRESH_WAIT_SECONDS = 3
PATCH_TYPES = {patch.JSON_PATCH, patch.MERGE, patch.STRATEGIC, patch.APPLY}


class Request:
    """A request's options: the query parameters the verbs share, checked."""

    def __init__(self, query, user="system:admin"):
        self.query = query
        self.user = user
        dry = query.get("dryRun", [])
        for d in dry:
            if d != "All":
                raise invalid_error("CreateOptions", "meta.k8s.io", "",
                                    [not_supported("dryRun", d, ["All"])])
        self.dry_run = bool(dry)
        mode = query.get("fieldValidation", [""])[0] or "Warn"
        if mode not in ("Ignore", "Warn", "Strict"):
            raise bad_request('fieldValidation must be one of "Ignore", "Warn", or "Strict", '
                              'got "%s"' % mode)
        self.field_validation = mode
        # Warnings of admission (PodSecurity), for the response's headers.
        self.warnings = []

    def arg(self, name, default=None):
        return self.query.get(name, [default])[0]


class Result:
    """A verb's answer: the HTTP status, the body and any warnings."""

    def __init__(self, code, body, warnings=()):
        self.code, self.body, self.warnings = code, body, list(warnings)


def _missing_kind(raw, kind):
    """The decoder's error for a body without a kind, as transformDecodeError
    words it."""
    text = raw.decode("utf-8", "replace")
    summary = text if len(raw) <= 30 else raw[:30].decode("utf-8", "replace") + " ..."
    return bad_request("the object provided is unrecognized (must be of type %s): Object "
                       "'Kind' is missing in '%s' (%s)" % (kind.kind, text, summary))


class Registry:
    """The verbs, for every kind the cluster serves."""

    def __init__(self, store, admission_plugins=()):
        self.store = store
        self.admission = Admission(self, admission_plugins)
        self._kinds_cache = (None, None)
        self._ip_lock = threading.Lock()
        self._next_ip = 10

    # --- what is served ---

    def kinds(self):
        """group/version -> plural -> Kind: the built-in table and every
        version of every CRD that is served."""
        return self._kinds()[0]

    def _kinds(self):
        """(kinds(), resource key -> Kind), made again only when a CRD
        has changed: every request asks, and CRDs are large."""
        stamp = self.store.version_of(kinds.CRD_KEY)
        cached_stamp, cached = self._kinds_cache
        if cached_stamp == stamp:
            return cached
        out = {}
        for k in kinds.BUILTIN:
            out.setdefault(k.group_version, {})[k.plural] = k
        for crd in self.store.list(kinds.CRD_KEY)[0]:
            if crd["metadata"].get("deletionTimestamp"):
                continue
            for v in crd["spec"].get("versions", []):
                if v.get("served", True):
                    k = kinds.Custom(crd, v)
                    out.setdefault(k.group_version, {})[k.plural] = k
        by_key = {}
        for rs in out.values():
            for k in rs.values():
                by_key.setdefault(k.key, k)
        self._kinds_cache = (stamp, (out, by_key))
        return out, by_key

    def kind(self, group_version, plural):
        return self.kinds().get(group_version, {}).get(plural)

    def kind_of_key(self, key):
        return self._kinds()[1].get(key)

    def allocate_ip(self):
        """The next cluster IP of 10.96.0.0/12, for a Service."""
        with self._ip_lock:
            n = self._next_ip
            self._next_ip += 1
        return "10.96.%d.%d" % (n // 254, n % 254 + 1)

    # --- reading a body ---

    def _body(self, kind, raw, req, create):
        """The request body as an object of kind, decoded as the real
        server decodes it, and the warnings of Warn."""
        obj, duplicates = decoder.parse_json(raw)
        if not isinstance(obj, dict):
            raise bad_request("the object provided is unrecognized (must be of type %s): "
                              "couldn't get version/kind; json parse error" % kind.kind)
        if not obj.get("kind"):
            raise _missing_kind(raw, kind)
        if obj.get("kind") != kind.kind or obj.get("apiVersion", kind.group_version) != \
                kind.group_version:
            raise bad_request("%s in version %s cannot be handled as a %s: no kind \"%s\" is "
                              "registered for version \"%s\" in scheme"
                              % (obj.get("kind"), json.dumps(obj.get("apiVersion", "")),
                                 kind.kind, obj.get("kind"), obj.get("apiVersion", "")))
        obj.setdefault("apiVersion", kind.group_version)
        obj, warnings = kind.decode(obj, req.field_validation, duplicates)
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        return obj, warnings

    @staticmethod
    def _namespace(kind, obj, ns):
        """Makes the body's namespace the request's, or 400 when they
        differ (rest.EnsureObjectNamespaceMatchesRequestNamespace)."""
        md = obj["metadata"]
        have = md.get("namespace") or ""
        if not kind.namespaced:
            md.pop("namespace", None)
        elif have and have != ns:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        else:
            md["namespace"] = ns

    # --- create ---

    def create(self, kind, ns, raw, req):
        obj, warnings = self._body(kind, raw, req, True)
        if obj["metadata"].get("resourceVersion"):
            # What etcd3's store.Create answers, through as a plain error.
            raise ApiError(500, "Unknown", "resourceVersion should not be set on objects to "
                           "be created")
        obj = self._create(kind, ns, obj, req)
        return Result(201, obj, warnings + req.warnings)

    def _generated_name(self, prefix):
        return prefix[:58] + "".join(random.choice(NAME_ALPHABET) for _ in range(5))

    def _create(self, kind, ns, obj, req):
        """Admission, the strategy, validation and the write of a new
        object, whose body is decoded already."""
        obj.setdefault("metadata", {})
        self._namespace(kind, obj, ns)
        md = obj["metadata"]
        ctx = Context(self, kind, ns, req)
        with self.store.lock:
            self.admission.create(kind, obj, ctx)
            if not md.get("name") and md.get("generateName"):
                md["name"] = self._generated_name(md["generateName"])
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion",
                      "selfLink"):
                md.pop(k, None)
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now()
            if kind.generation:
                md["generation"] = 1
            else:
                md.pop("generation", None)
            kind.prepare_create(obj)
            causes = kind.validate(obj, ctx)
            if causes:
                raise invalid_error(kind.kind, kind.group, md.get("name"), causes)
            self.admission.validate_create(kind, obj, ctx)
            if req.dry_run:
                return obj
            return self.store.create(kind.key, ns if kind.namespaced else None, obj)

    # --- read ---

    def get(self, kind, ns, name):
        return self.store.get(kind.key, ns if kind.namespaced else None, name)

    def list(self, kind, ns, req, matcher):
        """(items, the store's resourceVersion) for a list request:
        resourceVersion rules and selectors (matcher). The items are the
        stored objects, not copies (a list of hundreds of pods is written
        out often): they must not be changed."""
        rv = req.arg("resourceVersion", "")
        if rv not in ("", "0"):
            self.wait_fresh(rv)
        with self.store.lock:
            items = self.store.items(kind.key, ns if kind.namespaced else None)
            return [o for o in items if matcher(o)], str(self.store.rv)

    def wait_fresh(self, rv_text):
        """Waits until the store has reached resourceVersion rv_text, or
        answers as the watch cache does when it does not come."""
        try:
            rv = int(rv_text)
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid resource version: strconv.ParseUint: "
                           'parsing "%s": invalid syntax' % rv_text) from None
        if not self.store.wait_for(rv, FRESH_WAIT_SECONDS):
            raise ApiError(504, "Timeout", "Timeout: Too large resource version: %d, current: %d"
                           % (rv, self.store.rv),
                           {"causes": [{"reason": "ResourceVersionTooLarge",
                                        "message": "Too large resource version"}],
                            "retryAfterSeconds": 1})

    # --- update and patch ---

    def update(self, kind, ns, name, raw, req, sub=None):
        obj, warnings = self._body(kind, raw, req, False)
        return self._update(kind, ns, name, obj, req, sub, warnings)

    def _check_name(self, kind, obj, ns, name):
        md = obj["metadata"]
        if md.get("name", name) != name:
            raise bad_request("the name of the object (%s) does not match the name on the URL "
                              "(%s)" % (md["name"], name))
        md["name"] = name
        self._namespace(kind, obj, ns)

    def _update(self, kind, ns, name, obj, req, sub, warnings, patched=False):
        self._check_name(kind, obj, ns, name)
        sns = ns if kind.namespaced else None
        with self.store.lock:
            old = self.store.find(kind.key, sns, name)
            if old is None:
                if kind.create_on_update and sub is None and not patched:
                    obj["metadata"].pop("resourceVersion", None)
                    obj = self._create(kind, ns, obj, req)
                    return Result(201, obj, warnings + req.warnings)
                raise not_found_error(kind.plural, kind.group, name)
            self._check_version(kind, obj, old, name)
            new = self._merge_with_old(kind, obj, old, sub)
            ctx = Context(self, kind, ns, req, sub)
            self.admission.update(kind, new, old, ctx)
            if kind.generation and _spec_view(new) != _spec_view(old):
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            causes = kind.validate_update(new, old, ctx)
            if causes:
                raise invalid_error(kind.kind, kind.group, name, causes)
            self.admission.validate_update(kind, new, old, ctx)
            warnings = list(warnings) + req.warnings
            if req.dry_run:
                return Result(200, new, warnings)
            md = new["metadata"]
            if md.get("deletionTimestamp") and not md.get("finalizers") and \
                    not _waits_for_node(kind, new):
                # The last finalizer is gone: the deletion completes.
                self.store.replace(kind.key, sns, name, new)
                gone = self.store.remove(kind.key, sns, name)
                return Result(200, gone, warnings)
            return Result(200, self.store.replace(kind.key, sns, name, new), warnings)

    def _check_version(self, kind, obj, old, name):
        want = obj["metadata"].get("resourceVersion")
        if not want:
            if not kind.unconditional_update:
                raise invalid_error(kind.plural, kind.group, name, [Cause(
                    "FieldValueInvalid", "metadata.resourceVersion",
                    "must be specified for an update", GoRaw("0x0"))])
            return
        if want != old["metadata"]["resourceVersion"]:
            raise conflict_error(kind.plural, kind.group, name, OPTIMISTIC_LOCK)

    @staticmethod
    def _merge_with_old(kind, obj, old, sub):
        """The object to store: what the status subresource and the
        server-owned metadata leave of the request."""
        if sub == "status":
            new = clone(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            return new
        new = clone(obj)
        if kind.status:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        md, omd = new["metadata"], old["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "generation"):
            if k in omd:
                md[k] = omd[k]
            else:
                md.pop(k, None)
        md["resourceVersion"] = omd["resourceVersion"]
        return new

    def patch(self, kind, ns, name, raw, ctype, req, sub=None):
        """PATCH in one of the patch types the kind accepts."""
        accepted = [patch.JSON_PATCH, patch.MERGE, patch.APPLY]
        if isinstance(kind, kinds.Builtin):
            accepted.insert(2, patch.STRATEGIC)
        if ctype not in accepted:
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                           "unknown format - accepted media types include: " +
                           ", ".join(accepted))
        if ctype == patch.APPLY:
            raise ApiError(415, "UnsupportedMediaType", "the local test cluster does not "
                           "implement server-side apply (application/apply-patch+yaml); use "
                           "one of: " + ", ".join(a for a in accepted if a != patch.APPLY))
        try:
            body = json.loads(raw or b"null")
        except ValueError as e:
            raise bad_request("error decoding patch: %s" % e) from None
        sns = ns if kind.namespaced else None
        with self.store.lock:
            current = self.store.get(kind.key, sns, name)
            if ctype == patch.JSON_PATCH:
                patched = patch.json_patch(current, body)
            elif not isinstance(body, dict):
                raise bad_request("json: cannot unmarshal %s into Go value of type "
                                  "map[string]interface {}" % type(body).__name__)
            elif ctype == patch.MERGE:
                patched = patch.merge_patch(current, body)
            else:
                patched = patch.strategic_merge_patch(current, body)
            raw_patched = json.dumps(patched).encode()
            obj, warnings = self._body(kind, raw_patched, req, False)
            return self._update(kind, ns, name, obj, req, sub, warnings, patched=True)

    # --- delete ---

    def delete(self, kind, ns, name, raw, req):
        opts = DeleteOptions(raw, req)
        sns = ns if kind.namespaced else None
        with self.store.lock:
            obj = self.store.get(kind.key, sns, name)
            opts.check_preconditions(kind, obj)
            ctx = Context(self, kind, ns, req)
            self.admission.delete(kind, obj, ctx)
            return self._delete(kind, sns, obj, opts)

    def _delete(self, kind, sns, obj, opts):
        """Marks obj for deletion or removes it, as BeforeDelete and the
        finalizers decide. Holds the store's lock."""
        md = obj["metadata"]
        name = md["name"]
        grace = self._grace(kind, obj, opts)
        finalizers = list(md.get("finalizers") or [])
        for f in opts.finalizers_to_add(finalizers):
            finalizers.append(f)
        held = kind.hold_deletion(obj)
        deleting = bool(md.get("deletionTimestamp"))
        if deleting:
            # Already marked: a shorter grace period may bring the end
            # closer (the node's grace-0 delete), nothing else changes.
            current = md.get("deletionGracePeriodSeconds")
            if grace is not None and current is not None and grace < current:
                md["deletionGracePeriodSeconds"] = grace
                md["deletionTimestamp"] = now(grace)
        elif grace or finalizers or held:
            md["deletionTimestamp"] = now(grace or 0)
            md["deletionGracePeriodSeconds"] = grace or 0
        if finalizers:
            md["finalizers"] = finalizers
        stays = bool(finalizers or held or (grace and _waits_for_node(kind, obj)))
        if opts.dry_run:
            return Result(200, obj if stays or deleting else self._deleted_body(kind, obj))
        if stays:
            return Result(200, self.store.replace(kind.key, sns, name, obj))
        gone = self.store.remove(kind.key, sns, name)
        return Result(200, self._deleted_body(kind, gone))

    @staticmethod
    def _grace(kind, obj, opts):
        """The grace period of a delete: only kinds deleted gracefully have
        one, and a pod not bound to a node, or finished, goes at once
        (the pod strategy's CheckGracefulDelete)."""
        if not kind.graceful:
            return None
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if opts.grace is not None:
            grace = opts.grace
        else:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            grace = 0
        return max(int(grace), 0)

    @staticmethod
    def _deleted_body(kind, gone):
        if kind.return_deleted:
            return gone
        details = {"name": gone["metadata"]["name"], "kind": kind.plural,
                   "uid": gone["metadata"].get("uid")}
        if kind.group:
            details["group"] = kind.group
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details}

    def delete_collection(self, kind, ns, raw, req, matcher):
        """Deletes every object of kind in ns that matcher selects, each as
        a DELETE would; answers the list of what was deleted or marked."""
        opts = DeleteOptions(raw, req)
        sns = ns if kind.namespaced else None
        out = []
        with self.store.lock:
            items, rv = self.store.list(kind.key, sns)
            for obj in items:
                if not matcher(obj):
                    continue
                ctx = Context(self, kind, ns, req)
                self.admission.delete(kind, obj, ctx)
                res = self._delete(kind, sns, obj, opts)
                out.append(res.body if res.body.get("kind") != "Status" else obj)
        return Result(200, {"kind": kind.kind + "List", "apiVersion": kind.group_version,
                            "metadata": {"resourceVersion": rv}, "items": out})

    # --- for the controllers and the node ---

    def remove_finalizer(self, kind, ns, name, finalizer):
        """Takes a finalizer off an object (the controllers' write), which
        completes its deletion when it was the last."""
        sns = ns if kind.namespaced else None
        with self.store.lock:
            obj = self.store.find(kind.key, sns, name)
            if obj is None or finalizer not in (obj["metadata"].get("finalizers") or []):
                return
            obj["metadata"]["finalizers"].remove(finalizer)
            if not obj["metadata"]["finalizers"]:
                del obj["metadata"]["finalizers"]
            if obj["metadata"].get("deletionTimestamp") and \
                    not obj["metadata"].get("finalizers") and not _waits_for_node(kind, obj):
                self.store.replace(kind.key, sns, name, obj)
                self.store.remove(kind.key, sns, name)
            else:
                self.store.replace(kind.key, sns, name, obj)

    def system_delete(self, kind, ns, name, policy="Background", grace=None):
        """A delete by the cluster's own controllers (garbage collection,
        namespace cleanup), with the same semantics as a user's."""
        req = Request({})
        opts = DeleteOptions(b"", req)
        opts.policy = policy
        opts.grace = grace
        sns = ns if kind.namespaced else None
        with self.store.lock:
            obj = self.store.find(kind.key, sns, name)
            if obj is None:
                return None
            return self._delete(kind, sns, obj, opts)


def _spec_view(obj):
    """What a generation counts: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _waits_for_node(kind, obj):
    """A graceful kind bound to a node stays until the node confirms (a
    grace-0 delete)."""
    md = obj["metadata"]
    return kind.graceful and bool((obj.get("spec") or {}).get("nodeName")) and \
        md.get("deletionGracePeriodSeconds", 0) > 0


class DeleteOptions:
    """A DELETE's options, from its body (a DeleteOptions object) and its
    query, checked as ValidateDeleteOptions does."""

    def __init__(self, raw, req):
        body = {}
        if raw and raw.strip():
            parsed, dups = decoder.parse_json(raw)
            if isinstance(parsed, dict):
                body, _ = decoder.decode("meta.k8s.io/v1/DeleteOptions", parsed,
                                         req.field_validation, dups)
        self.dry_run = req.dry_run or "All" in (body.get("dryRun") or [])
        grace = req.arg("gracePeriodSeconds")
        if grace is None:
            grace = body.get("gracePeriodSeconds")
        try:
            self.grace = None if grace is None else int(grace)
        except ValueError:
            raise bad_request("invalid gracePeriodSeconds: %s" % grace) from None
        policy = req.arg("propagationPolicy") or body.get("propagationPolicy")
        orphan = req.arg("orphanDependents")
        if orphan is None:
            orphan = body.get("orphanDependents")
        elif isinstance(orphan, str):
            orphan = orphan == "true"
        causes = []
        if policy is not None and orphan is not None:
            causes.append(Cause("FieldValueInvalid", "propagationPolicy",
                                "orphanDependents and deletionPropagation cannot be both set",
                                policy))
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            causes.append(not_supported("propagationPolicy", policy,
                                        ["Foreground", "Background", "Orphan", "nil"]))
        if causes:
            raise invalid_error("DeleteOptions", "meta.k8s.io", "", causes)
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan else "Background"
        self.policy = policy or "Background"
        self.preconditions = body.get("preconditions") or {}

    def check_preconditions(self, kind, obj):
        md = obj["metadata"]
        uid, rv = self.preconditions.get("uid"), self.preconditions.get("resourceVersion")
        if uid and uid != md.get("uid"):
            raise conflict_error(kind.plural, kind.group, md["name"],
                                 "Precondition failed: UID in precondition: %s, UID in object "
                                 "meta: %s" % (uid, md.get("uid")))
        if rv and rv != md.get("resourceVersion"):
            raise conflict_error(kind.plural, kind.group, md["name"],
                                 "Precondition failed: ResourceVersion in precondition: %s, "
                                 "ResourceVersion in object meta: %s"
                                 % (rv, md.get("resourceVersion")))

    def finalizers_to_add(self, have):
        """The garbage collector's finalizer for the propagation policy."""
        want = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(self.policy)
        return [want] if want and want not in have else []
