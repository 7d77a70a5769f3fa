"""CRD validation rules (x-kubernetes-validations) as apiextensions-apiserver
v1.31 applies them (pkg/apiserver/schema/cel/validation.go
validateExpressions, fieldErrorForReason, ruleMessageOrDefault;
pkg/registry/customresource/strategy.go hasBlockingErr): transition rules
on update only, the 422 Invalid body with the schema type as the value,
message, reason and fieldPath; and a CRD whose rule the cluster cannot
evaluate is refused, never stored with the rule skipped. No server runs."""
import copy
import unittest

import cel

from registry_fixture import RegistryTest, status

CRDS = "apiextensions.k8s.io/v1"
GROUP = "training.mwj.io"


def crd(spec_schema, root_rules=None):
    root = {"type": "object", "properties": {"spec": spec_schema, "status": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    if root_rules:
        root["x-kubernetes-validations"] = root_rules
    return {"kind": "CustomResourceDefinition",
            "metadata": {"name": "multiworkerjobs." + GROUP},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": "multiworkerjobs", "kind": "MultiWorkerJob"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": root}}]}}


def workers(*rules, **more):
    return {"type": "object", "properties": dict({
        "workers": {"type": "integer", "minimum": 1, "x-kubernetes-validations": list(rules)},
        "name": {"type": "string"},
        "ports": {"type": "array", "items": {"type": "integer"}}}, **more)}


def job(job_name="x", **spec):
    return {"kind": "MultiWorkerJob", "metadata": {"name": job_name}, "spec": spec}


def invalid(name, causes):
    """The 422 of a MultiWorkerJob with these (field, type, message)."""
    errs = ["%s: %s" % (f, m) for f, _, m in causes]
    text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
    return status(422, "Invalid", 'MultiWorkerJob.%s "%s" is invalid: %s' % (GROUP, name, text),
                  {"name": name, "group": GROUP, "kind": "MultiWorkerJob",
                   "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes]})


class RulesTest(RegistryTest):
    def install(self, spec_schema, **k):
        self.created(CRDS, "customresourcedefinitions", None, crd(spec_schema, **k))

    def create_job(self, **spec):
        return self.create("training.mwj.io/v1", "multiworkerjobs", "team", job(**spec))

    def update_job(self, **spec):
        current = self.store.find("training.mwj.io/v1/multiworkerjobs", "team", "x")
        current["spec"].update(spec)
        return self.request("update", "training.mwj.io/v1", "multiworkerjobs", "team", current,
                            name="x")

    def test_an_immutable_field_is_refused_on_update_with_the_rules_message(self):
        self.install(workers({"rule": "self == oldSelf", "message": "spec.workers is immutable"}))
        code, body, _ = self.create_job(workers=2)
        self.assertEqual(code, 201, body)  # a transition rule has nothing to compare on create
        code, body, _ = self.update_job(workers=3)
        self.assertEqual(body, invalid("x", [("spec.workers", "FieldValueInvalid",
                                              'Invalid value: "integer": spec.workers is '
                                              'immutable')]))
        code, body, _ = self.update_job(workers=2, name="renamed")
        self.assertEqual(code, 200, body)

    def test_a_rule_without_a_message_says_which_rule_failed(self):
        self.install(workers({"rule": "self <= 4096"}))
        code, body, _ = self.create_job(workers=5000)
        self.assertEqual(body, invalid("x", [("spec.workers", "FieldValueInvalid",
                                              'Invalid value: "integer": failed rule: '
                                              'self <= 4096')]))

    def test_a_reason_sets_the_error_type_and_a_field_path_its_field(self):
        spec = workers()
        spec["x-kubernetes-validations"] = [
            {"rule": "self.workers == oldSelf.workers", "message": "is immutable",
             "reason": "FieldValueForbidden", "fieldPath": ".workers"},
            {"rule": "!has(self.name) || size(self.name) <= 5", "message": "name too long",
             "fieldPath": ".name"}]
        self.install(spec)
        self.assertEqual(self.create_job(workers=2)[0], 201)
        code, body, _ = self.update_job(workers=4, name="toolong")
        self.assertEqual(body, invalid("x", [
            ("spec.workers", "FieldValueForbidden", "Forbidden: is immutable"),
            ("spec.name", "FieldValueInvalid", 'Invalid value: "object": name too long')]))

    def test_a_rule_that_fails_to_evaluate_names_the_error_and_the_rule(self):
        spec = workers()
        spec["x-kubernetes-validations"] = [{"rule": "self.name.startsWith('mwj')"}]
        self.install(spec)
        code, body, _ = self.create_job(workers=1)
        self.assertEqual(body, invalid("x", [("spec", "FieldValueInvalid",
                                              'Invalid value: "object": no such key: name '
                                              "evaluating rule: self.name.startsWith('mwj')")]))
        self.assertEqual(self.create_job(workers=1, name="mwj-a")[0], 201)

    def test_a_rule_at_the_root_reports_the_nil_path(self):
        self.install(workers(), root_rules=[{"rule": "self.metadata.name.size() <= 3",
                                             "message": "short names only"}])
        code, body, _ = self.create("training.mwj.io/v1", "multiworkerjobs", "team",
                                    job("long", workers=1))
        self.assertEqual(body, invalid("long", [("<nil>", "FieldValueInvalid",
                                                 'Invalid value: "object": short names only')]))

    def test_rules_do_not_run_on_an_object_the_schema_already_refused_by_type(self):
        self.install(workers({"rule": "self <= 4096"}))
        code, body, _ = self.create_job(workers="many")
        self.assertEqual(body, invalid("x", [
            ("spec.workers", "FieldValueTypeInvalid", 'Invalid value: "string": spec.workers in '
             'body must be of type integer: "string"'),
            ("<nil>", "FieldValueInvalid", 'Invalid value: "null": some validation rules were '
             "not checked because the object was invalid; correct the existing errors to "
             "complete validation")]))

    def test_a_status_write_does_not_trip_a_transition_rule_on_the_spec(self):
        self.install(workers({"rule": "self == oldSelf"}))
        self.assertEqual(self.create_job(workers=2)[0], 201)
        current = self.store.find("training.mwj.io/v1/multiworkerjobs", "team", "x")
        current["status"] = {"phase": "Running"}
        code, body, _ = self.request("update", "training.mwj.io/v1", "multiworkerjobs", "team",
                                     current, name="x", sub="status")
        self.assertEqual(code, 200, body)

    def test_list_map_items_are_compared_with_the_old_item_of_the_same_key(self):
        spec = workers()
        spec["properties"]["groups"] = {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["n"],
            "items": {"type": "object", "properties": {"n": {"type": "string"},
                                                        "size": {"type": "integer"}},
                      "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size",
                                                    "message": "cannot shrink"}]}}
        self.install(spec)
        self.assertEqual(self.create_job(workers=1, groups=[{"n": "a", "size": 2},
                                                            {"n": "b", "size": 2}])[0], 201)
        code, body, _ = self.update_job(groups=[{"n": "b", "size": 3}, {"n": "a", "size": 1},
                                                {"n": "c", "size": 0}])
        self.assertEqual(body["details"]["causes"], [
            {"reason": "FieldValueInvalid", "message": 'Invalid value: "object": cannot shrink',
             "field": "spec.groups[1]"}])


class CrdRefusalTest(RegistryTest):
    PATH = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[workers]." \
           "x-kubernetes-validations[0]"

    def refused_crd(self, spec_schema):
        body = self.refused(CRDS, "customresourcedefinitions", None, crd(spec_schema))
        self.assertEqual(body["code"], 422, body)
        self.assertIsNone(self.store.peek(CRDS + "/customresourcedefinitions", None,
                                          "multiworkerjobs." + GROUP))
        return body

    def test_a_rule_outside_the_subset_fails_the_crd_naming_the_rule_and_why(self):
        body = self.refused_crd(workers({"rule": "self.all(x, x > 0)"}))
        cause = body["details"]["causes"][0]
        self.assertEqual(cause["field"], self.PATH + ".rule")
        self.assertTrue(cause["message"].startswith(
            'Invalid value: "self.all(x, x > 0)": compilation failed: function all() is not '
            "in the subset (the local test cluster evaluates this subset of CEL: "), cause)

    def test_a_rule_naming_an_undeclared_field_fails_the_crd(self):
        spec = workers()
        spec["x-kubernetes-validations"] = [{"rule": "self.replicas == 1"}]
        body = self.refused_crd(spec)
        self.assertIn("compilation failed: undefined field 'replicas'", body["message"])

    def test_a_type_mismatch_fails_the_crd(self):
        body = self.refused_crd(workers({"rule": "self < 'two'"}))
        self.assertEqual(body["details"]["causes"][0]["field"], self.PATH + ".rule")
        self.assertIn("compilation failed: found no matching overload for '_<_' applied to "
                      "'(int, string)'", body["message"])

    def test_old_self_under_a_plain_list_cannot_be_correlated(self):
        spec = workers()
        spec["properties"]["ports"]["items"]["x-kubernetes-validations"] = [
            {"rule": "self == oldSelf"}]
        body = self.refused_crd(spec)
        self.assertEqual(body["details"]["causes"], [{
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "self == oldSelf": oldSelf cannot be used on the '
                       "uncorrelatable portion of the schema within spec.versions[0].schema."
                       "openAPIV3Schema.properties[spec].properties[ports]",
            "field": "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[ports]"
                     ".items.x-kubernetes-validations[0].rule"}])

    def test_an_unknown_reason_fails_the_crd(self):
        body = self.refused_crd(workers({"rule": "self > 0", "reason": "FieldValueTooLong"}))
        self.assertEqual(body["details"]["causes"][0]["field"], self.PATH + ".reason")

    def test_the_rules_a_crd_commonly_carries_are_accepted(self):
        spec = workers({"rule": "self == oldSelf", "message": "spec.workers is immutable"},
                       {"rule": "self <= 4096"})
        spec["x-kubernetes-validations"] = [
            {"rule": "!has(self.name) || self.name.startsWith('a') && size(self.name) < 10"},
            {"rule": "has(self.workers) ? self.workers in [1, 2, 4, 8] || self.workers % 16 == 0 "
                     ": true", "messageExpression": "'bad: ' + string(self.workers)"}]
        self.created(CRDS, "customresourcedefinitions", None, crd(copy.deepcopy(spec)))


class ExpressionsTest(unittest.TestCase):
    """The subset's semantics, as CEL defines them."""

    def run_rule(self, text, value, old=None):
        return cel._eval(cel._Parser(text).parse(), {"self": value, "oldSelf": old})

    def test_expressions_evaluate_as_cel_does(self):
        obj = {"workers": 4, "name": "mwj-a", "tags": ["x", "y"], "m": {"k": 1}}
        cases = [
            ("self.workers / 3 == 1 && -7 / 2 == -3 && -7 % 2 == -1", True),
            ("self.workers <= 4096 && self.workers >= 1", True),
            ("has(self.name) && !has(self.gone)", True),
            ("self.name.startsWith('mwj') && self.name.endsWith('-a') && "
             "self.name.contains('j-')", True),
            ("size(self.tags) == 2 && self.tags.size() == 2 && self.name.size() == 5", True),
            ("'y' in self.tags && 'k' in self.m && !('z' in self.tags)", True),
            ("self.workers > 2 ? 'big' : 'small'", "big"),
            ("'w=' + string(self.workers) + ' ' + string(true)", "w=4 true"),
            ("self.tags + ['z'] == ['x', 'y', 'z']", True),
            ("self.m['k'] == 1 && self['workers'] == 4 && self.tags[1] == 'y'", True),
            ("double(self.workers) / 8.0 == 0.5 && int('12') == 12", True),
            # An error on one side of || or && is absorbed when the other decides.
            ("self.gone == 1 || true", True),
            ("false && self.gone == 1", False),
        ]
        for text, want in cases:
            with self.subTest(rule=text):
                self.assertEqual(self.run_rule(text, obj), want)

    def test_errors_read_as_cel_go_words_them(self):
        cases = [("self.gone == 1", "no such key: gone"),
                 ("self.tags[5] == 'x'", "index out of bounds: 5"),
                 ("self.workers / 0 == 1", "division by zero"),
                 ("self.workers % 0 == 1", "modulus by zero"),
                 ("self.gone == 1 && true", "no such key: gone")]
        for text, want in cases:
            with self.subTest(rule=text):
                with self.assertRaises(cel.EvalError) as e:
                    self.run_rule(text, {"workers": 4, "tags": ["x"]})
                self.assertEqual(str(e.exception), want)

    def test_what_is_outside_the_subset_says_so_at_compile_time(self):
        cases = [("self.all(x, x > 0)", "function all() is not in the subset"),
                 ("self.matches('^a')", "function matches() is not in the subset"),
                 ("1u == self", "uint and hexadecimal literals are not in the subset"),
                 ("b'x' == self", "bytes literals are not in the subset"),
                 ("self == ", "unexpected 'end of rule' at 9"),
                 ("self = 1", "unexpected character '=' at 6")]
        for text, want in cases:
            with self.subTest(rule=text):
                with self.assertRaises(cel.CompileError) as e:
                    cel.Rule({"rule": text}, {"type": "integer"})
                self.assertEqual(str(e.exception), want)
