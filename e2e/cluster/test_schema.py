"""The MultiWorkerJob CRD (crds/) and the examples (examples/) through the
local test cluster's schema handling (schema.py): every example is
admitted with the documented defaults, and wrong manifests are refused with
a message naming the field, as the API server would refuse them.

PyYAML (Debian's python3-yaml) reads the files here only: kubectl sends the
server JSON.
"""
import copy
import glob
import os
import unittest

import yaml

import schema

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CRD_PATH = os.path.join(ROOT, "crds", "training.mwj.io_multiworkerjobs.yaml")


def load_crd():
    with open(CRD_PATH) as f:
        return yaml.safe_load(f)


def job_schema():
    return load_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def examples():
    """Every MultiWorkerJob in examples/, as (file name, object)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc and doc.get("kind") == "MultiWorkerJob":
                    out.append((os.path.basename(path), doc))
    return out


MINIMAL = {
    "apiVersion": "training.mwj.io/v1",
    "kind": "MultiWorkerJob",
    "metadata": {"name": "j"},
    "spec": {"workers": 2,
             "template": {"spec": {"containers": [{"name": "worker", "image": "w"}]}}},
}


class CrdTest(unittest.TestCase):
    def test_the_crd_names_the_resource_as_the_contract_says(self):
        crd = load_crd()
        spec = crd["spec"]
        self.assertEqual(crd["metadata"]["name"], "multiworkerjobs.training.mwj.io")
        self.assertEqual(spec["group"], "training.mwj.io")
        self.assertEqual(spec["scope"], "Namespaced")
        self.assertEqual(spec["names"]["kind"], "MultiWorkerJob")
        self.assertEqual(spec["names"]["plural"], "multiworkerjobs")
        self.assertEqual(spec["names"]["shortNames"], ["mwj"])
        v = spec["versions"][0]
        self.assertEqual((v["name"], v["served"], v["storage"]), ("v1", True, True))
        self.assertEqual(v["subresources"], {"status": {}})
        cols = [c["name"] for c in v["additionalPrinterColumns"]]
        self.assertEqual(cols, ["Workers", "Phase", "Ready", "Restarts", "Progress", "Epoch",
                                "Loss", "ETA", "Samples/s", "Step", "Reported", "Age"])

    def test_the_crd_fits_a_plain_kubectl_apply(self):
        # kubectl apply keeps the whole object in an annotation, which the
        # API server caps at 256 KiB; TFJob's CRD is over twice that.
        self.assertLess(os.path.getsize(CRD_PATH), 64 * 1024)


class ExamplesTest(unittest.TestCase):
    def test_there_are_the_six_examples(self):
        names = [n for n, _ in examples()]
        self.assertEqual(names, ["all-fields.yaml", "demo.yaml", "gpu.yaml", "keras-model.yaml",
                                 "minimal.yaml", "pvc-checkpoint.yaml"])

    def test_every_example_is_admitted(self):
        s = job_schema()
        for name, obj in examples():
            stored, errs = schema.admit(s, obj)
            self.assertEqual(errs, [], name)

    def test_defaults_fill_what_a_minimal_job_leaves_out(self):
        stored, errs = schema.admit(job_schema(), MINIMAL)
        self.assertEqual(errs, [])
        spec = stored["spec"]
        self.assertEqual(spec["port"], 2222)
        self.assertEqual(spec["restartPolicy"], "ExitCode")
        self.assertEqual(spec["restartScope"], "Pod")
        self.assertEqual(spec["backoffLimit"], 6)
        self.assertEqual(spec["cleanPodPolicy"], "Running")
        self.assertIs(spec["suspend"], False)
        self.assertNotIn("checkpoint", spec)
        self.assertNotIn("activeDeadlineSeconds", spec)
        self.assertEqual(stored["metadata"], {"name": "j"})

    def test_a_checkpoint_volume_gets_the_default_mount_path(self):
        pvc = [o for n, o in examples() if n == "pvc-checkpoint.yaml"][0]
        stored, _ = schema.admit(job_schema(), pvc)
        self.assertEqual(stored["spec"]["checkpoint"]["mountPath"], "/mwj/checkpoint")

    def test_set_values_are_not_overwritten_by_defaults(self):
        full = [o for n, o in examples() if n == "all-fields.yaml"][0]
        stored, _ = schema.admit(job_schema(), full)
        self.assertEqual(stored["spec"], full["spec"])


def with_spec(**changes):
    obj = copy.deepcopy(MINIMAL)
    for path, value in changes.items():
        node = obj["spec"]
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value is DELETE:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return obj


DELETE = object()


class RefusalTest(unittest.TestCase):
    CASES = [
        ("no workers", with_spec(workers=DELETE), "spec.workers: Required value"),
        ("zero workers", with_spec(workers=0),
         "spec.workers: Invalid value: 0: spec.workers in body should be greater than or "
         "equal to 1"),
        ("too many workers", with_spec(workers=4097), "less than or equal to 4096"),
        ("workers as text", with_spec(workers="two"),
         'spec.workers: Invalid value: "string": spec.workers in body must be of type integer'),
        ("no template", with_spec(template=DELETE), "spec.template: Required value"),
        ("no containers", with_spec(template={"spec": {"containers": []}}),
         "spec.template.spec.containers: Invalid value: 0"),
        ("container without image",
         with_spec(template={"spec": {"containers": [{"name": "worker"}]}}),
         "spec.template.spec.containers[0].image: Required value"),
        ("port out of range", with_spec(port=70000), "spec.port: Invalid value: 70000"),
        ("unknown restart policy", with_spec(restartPolicy="Sometimes"),
         'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "ExitCode", '
         '"OnFailure", "Never", "Always"'),
        ("unknown restart scope", with_spec(restartScope="Node"),
         'spec.restartScope: Unsupported value: "Node"'),
        ("negative backoff limit", with_spec(backoffLimit=-1), "spec.backoffLimit"),
        ("unknown clean-pod policy", with_spec(cleanPodPolicy="Some"), "spec.cleanPodPolicy"),
        ("suspend as text", with_spec(suspend="yes"), "spec.suspend"),
        ("two volume sources",
         with_spec(checkpoint={"volume": {"emptyDir": {}, "hostPath": {"path": "/x"}}}),
         "spec.checkpoint.volume: Too many: 2"),
        ("no volume source", with_spec(checkpoint={"volume": {}}),
         "spec.checkpoint.volume: Invalid value: 0"),
        ("relative mount path",
         with_spec(checkpoint={"volume": {"emptyDir": {}}, "mountPath": "ckpt"}),
         "spec.checkpoint.mountPath: Invalid value: \"ckpt\""),
        ("zero deadline", with_spec(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds"),
    ]

    def test_wrong_manifests_are_refused_naming_the_field(self):
        s = job_schema()
        for what, obj, says in self.CASES:
            with self.subTest(what):
                _, errs = schema.admit(s, obj)
                self.assertTrue(any(says in e for e in errs), "%s: %s" % (what, errs))

    def test_a_misspelt_field_is_pruned_and_the_real_one_missed(self):
        obj = with_spec(workers=DELETE)
        obj["spec"]["wrokers"] = 2
        stored, errs = schema.admit(job_schema(), obj)
        self.assertNotIn("wrokers", stored["spec"])
        self.assertIn("spec.workers: Required value", errs)

    def test_the_pod_template_keeps_fields_the_schema_does_not_list(self):
        obj = with_spec(template={"spec": {
            "nodeSelector": {"gpu": "a100"},
            "containers": [{"name": "worker", "image": "w", "resources": {"limits": {"cpu": 2}}}]}})
        stored, errs = schema.admit(job_schema(), obj)
        self.assertEqual(errs, [])
        self.assertEqual(stored["spec"]["template"]["spec"]["nodeSelector"], {"gpu": "a100"})
        c = stored["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(c["resources"], {"limits": {"cpu": 2}})


class StatusTest(unittest.TestCase):
    def status_errors(self, status):
        obj = copy.deepcopy(MINIMAL)
        obj["status"] = status
        return schema.admit(job_schema(), obj)[1]

    def test_a_full_status_is_valid(self):
        self.assertEqual(self.status_errors({
            "phase": "Running", "observedGeneration": 3,
            "startTime": "2026-11-22T10:00:00Z",
            "workers": {"active": 2, "ready": 2, "succeeded": 0, "failed": 0},
            "restarts": {"total": 1, "preemptions": 1, "failures": 0},
            "conditions": [{"type": "Running", "status": "True", "reason": "AllWorkersReady",
                            "message": "2 of 2 workers ready",
                            "lastTransitionTime": "2026-11-22T10:00:05Z"}],
            "lastFailure": {"pod": "mnist-worker-1", "exitCode": 137, "reason": "OOMKilled"},
            "workerAttempts": [0, 1],
            "restartingWorkers": [{"index": 1, "cause": "Preemption"}]}), [])

    def test_a_bad_phase_time_or_duplicate_condition_is_refused(self):
        errs = self.status_errors({
            "phase": "Sleeping", "startTime": "yesterday",
            "conditions": [{"type": "Running", "status": "True"},
                           {"type": "Running", "status": "Maybe"}]})
        joined = "\n".join(errs)
        self.assertIn('status.phase: Unsupported value: "Sleeping"', joined)
        self.assertIn('status.startTime: Invalid value: "yesterday"', joined)
        self.assertIn('status.conditions[1].status: Unsupported value: "Maybe"', joined)
        self.assertIn('status.conditions[1]: Duplicate value: "Running"', joined)


if __name__ == "__main__":
    unittest.main()
