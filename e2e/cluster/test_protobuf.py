"""Protobuf request bodies (protobuf.py): a Secret, a ConfigMap and
DeleteOptions as client-go's gogo-protobuf writes them (every non-pointer
field, zero values included) become the JSON the same object would have
been sent as; a body of a kind not translated is a 415 that names those
that are, and a truncated one a 400, never a crash."""
import base64
import unittest

import protobuf as pb
from errors import ApiError


def unknown(api_version, kind, raw):
    """The envelope: magic, then runtime.Unknown."""
    type_meta = pb.field_bytes(1, api_version) + pb.field_bytes(2, kind)
    return pb.MAGIC + pb.field_bytes(1, type_meta) + pb.field_bytes(2, raw) + \
        pb.field_bytes(3, "") + pb.field_bytes(4, "")


def object_meta(name, namespace="", labels=None):
    """ObjectMeta as gogo writes it: every string, the generation and the
    creation time even when empty."""
    out = pb.field_bytes(1, name) + pb.field_bytes(2, "") + pb.field_bytes(3, namespace) + \
        pb.field_bytes(4, "") + pb.field_bytes(5, "") + pb.field_bytes(6, "") + \
        pb.field_varint(7, 0) + pb.field_bytes(8, b"")
    for k, v in sorted((labels or {}).items()):
        out += pb.field_bytes(11, pb.field_bytes(1, k) + pb.field_bytes(2, v))
    return out


class ProtobufTest(unittest.TestCase):
    def test_a_helm_release_secret_becomes_its_json(self):
        release = b"H4sIAAAAAAAC/\x00\xff"
        secret = pb.field_bytes(1, object_meta("sh.helm.release.v1.demo.v1", "default",
                                               {"owner": "helm", "name": "demo"})) + \
            pb.field_bytes(2, pb.field_bytes(1, "release") + pb.field_bytes(2, release)) + \
            pb.field_bytes(3, "helm.sh/release.v1")
        obj = pb.decode(unknown("v1", "Secret", secret))
        self.assertEqual(obj, {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sh.helm.release.v1.demo.v1", "namespace": "default",
                         "labels": {"name": "demo", "owner": "helm"}},
            "data": {"release": base64.b64encode(release).decode()},
            "type": "helm.sh/release.v1"})

    def test_a_config_map_keeps_empty_values_and_a_set_immutable_false(self):
        cm = pb.field_bytes(1, object_meta("cfg")) + \
            pb.field_bytes(2, pb.field_bytes(1, "empty") + pb.field_bytes(2, "")) + \
            pb.field_varint(4, 0)
        obj = pb.decode(unknown("v1", "ConfigMap", cm))
        self.assertEqual(obj["data"], {"empty": ""})
        self.assertIs(obj["immutable"], False)
        self.assertEqual(obj["metadata"], {"name": "cfg"})

    def test_delete_options_keep_their_pointers_and_owner_references_their_flags(self):
        opts = pb.field_varint(1, 0) + pb.field_bytes(4, "Foreground") + \
            pb.field_bytes(2, pb.field_bytes(1, "u-1"))
        obj = pb.decode(unknown("meta.k8s.io/v1", "DeleteOptions", opts))
        self.assertEqual(obj["gracePeriodSeconds"], 0)
        self.assertEqual(obj["propagationPolicy"], "Foreground")
        self.assertEqual(obj["preconditions"], {"uid": "u-1"})
        # A typed client of any group sends it with its own group version.
        self.assertEqual(pb.decode(unknown("apps/v1", "DeleteOptions", opts))["kind"],
                         "DeleteOptions")
        ref = pb.field_bytes(1, "Deployment") + pb.field_bytes(3, "web") + \
            pb.field_bytes(4, "u-2") + pb.field_bytes(5, "apps/v1") + pb.field_varint(6, 1)
        meta = pb.field_bytes(1, "x") + pb.field_bytes(13, ref) + pb.field_varint(10, 30)
        obj = pb.decode(unknown("v1", "ConfigMap", pb.field_bytes(1, meta)))
        self.assertEqual(obj["metadata"]["ownerReferences"], [
            {"kind": "Deployment", "name": "web", "uid": "u-2", "apiVersion": "apps/v1",
             "controller": True}])
        self.assertEqual(obj["metadata"]["deletionGracePeriodSeconds"], 30)

    def test_a_time_is_written_as_rfc3339(self):
        meta = pb.field_bytes(1, "x") + pb.field_bytes(8, pb.field_varint(1, 1767225600))
        obj = pb.decode(unknown("v1", "Secret", pb.field_bytes(1, meta)))
        self.assertEqual(obj["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z")

    def test_another_kind_is_a_415_and_a_broken_body_a_400(self):
        with self.assertRaises(ApiError) as e:
            pb.decode(unknown("v1", "Pod", b""))
        self.assertEqual(e.exception.code, 415)
        self.assertIn("v1 Secret", e.exception.message)
        good = unknown("v1", "Secret", pb.field_bytes(1, object_meta("s")))
        for broken in (b"{}", good[:-3] + b"\xff", pb.MAGIC + b"\x0a\x80"):
            with self.subTest(body=broken):
                with self.assertRaises(ApiError) as e:
                    pb.decode(broken)
                self.assertEqual(e.exception.code, 400)


if __name__ == "__main__":
    unittest.main()
