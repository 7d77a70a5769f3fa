"""/openapi/v2 (openapi_v2.py): every built-in kind and every served CRD
version is a definition with its x-kubernetes-group-version-kind, every
$ref points at a definition, fields have the JSON types of the Go structs,
and the protobuf form holds the same definitions, so that client-go's
discovery (which asks for protobuf only) can parse it."""
import json
import unittest

import openapi_v2
import protobuf as pb
from registry import Registry, Request
from store import Store


def refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):  # not the JSONSchemaProps field "$ref"
            yield node["$ref"]
        for v in node.values():
            yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


class OpenApiV2Test(unittest.TestCase):
    def setUp(self):
        self.registry = Registry(Store())
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "widgets", "kind": "Widget"},
                        "versions": [{"name": "v1", "served": True, "storage": True,
                                      "schema": {"openAPIV3Schema": {
                                          "type": "object", "properties": {"spec": {
                                              "type": "object", "required": ["size"],
                                              "properties": {"size": {
                                                  "type": "integer", "minimum": 1}}}}}}}]}}
        self.registry.create(self.registry.kind("apiextensions.k8s.io/v1",
                                                "customresourcedefinitions"), None,
                             json.dumps(crd).encode(), Request({}))
        self.doc = openapi_v2.document(self.registry)
        self.defs = self.doc["definitions"]

    def gvk(self, name):
        return self.defs[name]["x-kubernetes-group-version-kind"]

    def test_kinds_and_crds_are_definitions_with_their_group_version_kind(self):
        self.assertEqual(self.gvk("io.k8s.api.apps.v1.Deployment"),
                         [{"group": "apps", "kind": "Deployment", "version": "v1"}])
        self.assertEqual(self.gvk("io.k8s.api.core.v1.Secret"),
                         [{"group": "", "kind": "Secret", "version": "v1"}])
        self.assertEqual(self.gvk("com.example.v1.Widget"),
                         [{"group": "example.com", "kind": "Widget", "version": "v1"}])
        widget = self.defs["com.example.v1.Widget"]
        self.assertEqual(widget["properties"]["spec"]["required"], ["size"])
        self.assertEqual(widget["properties"]["metadata"]["$ref"],
                         "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")

    def test_fields_have_their_json_types_and_every_ref_resolves(self):
        spec = self.defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
        self.assertEqual(spec["replicas"], {"type": "integer", "format": "int32"})
        self.assertEqual(spec["template"]["$ref"],
                         "#/definitions/io.k8s.api.core.v1.PodTemplateSpec")
        data = self.defs["io.k8s.api.core.v1.Secret"]["properties"]["data"]
        self.assertEqual(data, {"type": "object", "additionalProperties": {
            "type": "string", "format": "byte"}})
        for ref in set(refs(self.doc)):
            self.assertIn(ref[len("#/definitions/"):], self.defs)

    def test_the_protobuf_form_holds_every_definition(self):
        raw = openapi_v2.encode(self.doc)
        top = {num: v for num, _, v in pb.fields(raw)}
        self.assertEqual(top[1], b"2.0")
        names = []
        for num, _, named in pb.fields(top[9]):
            name = dict((n, v) for n, _, v in pb.fields(named))[1].decode()
            names.append(name)
        self.assertEqual(sorted(names), sorted(self.defs))


if __name__ == "__main__":
    unittest.main()
