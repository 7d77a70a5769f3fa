"""decoder.py: request bodies decoded, refused and warned about as the
kube-apiserver does it, message for message. Each test states what the
real server does; the sources are named in decoder.py, gojson.py,
gotime.py and quantity.py. No server is needed.

Run: cd e2e/cluster && python3 -m unittest test_decoder -v
"""
import copy
import json
import unittest

import decoder
import errors
import gojson
import gotime
import schema


def body(obj):
    return json.dumps(obj).encode()


def pod(spec=None, metadata=None):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata or {"name": "p"},
            "spec": spec if spec is not None else {"containers": [{"name": "c", "image": "i"}]}}


def decode(raw, key="v1/Pod", mode="Warn", kind="Pod"):
    """parse_json then decode, as the create handler does."""
    obj, dups = decoder.parse_json(raw, kind)
    return decoder.decode(key, obj, mode, dups)


class DecodeErrorCase(unittest.TestCase):
    def refused(self, raw, key="v1/Pod", mode="Warn", kind="Pod"):
        """The message of the 400 BadRequest the body gets."""
        with self.assertRaises(errors.ApiError) as ctx:
            decode(raw, key, mode, kind)
        self.assertEqual((ctx.exception.code, ctx.exception.reason), (400, "BadRequest"))
        return ctx.exception.message


class WrongTypesTest(DecodeErrorCase):
    def test_a_string_for_an_int64_names_the_struct_the_path_and_the_go_type(self):
        """json: cannot unmarshal ... into Go struct field <struct>.<path>
        of type <type>, wrapped by transformDecodeError."""
        raw = body(pod({"terminationGracePeriodSeconds": "30", "containers": []}))
        self.assertEqual(self.refused(raw),
                         'Pod in version "v1" cannot be handled as a Pod: json: cannot '
                         'unmarshal string into Go struct field PodSpec.spec.'
                         'terminationGracePeriodSeconds of type int64')

    def test_a_string_where_an_object_is_expected_names_the_go_struct_type(self):
        self.assertEqual(self.refused(body(pod("x"))),
                         'Pod in version "v1" cannot be handled as a Pod: json: cannot '
                         'unmarshal string into Go struct field Pod.spec of type v1.PodSpec')

    def test_an_array_where_a_string_is_expected_leaves_list_indices_out_of_the_path(self):
        raw = body(pod({"containers": [{"name": ["c"]}]}))
        self.assertIn("json: cannot unmarshal array into Go struct field "
                      "Container.spec.containers.name of type string", self.refused(raw))

    def test_a_float_where_an_integer_is_expected_quotes_the_number_literal(self):
        for literal in (b"1.5", b"1.0", b"1e3"):
            raw = b'{"kind":"Deployment","apiVersion":"apps/v1","spec":{"replicas":%s}}' % literal
            with self.subTest(literal=literal):
                self.assertEqual(self.refused(raw, "apps/v1/Deployment", kind="Deployment"),
                                 'Deployment in version "v1" cannot be handled as a Deployment:'
                                 ' json: cannot unmarshal number %s into Go struct field '
                                 'DeploymentSpec.spec.replicas of type int32' % literal.decode())

    def test_an_integer_out_of_range_is_a_type_error_too(self):
        raw = body({"spec": {"replicas": 2 ** 31}})
        self.assertIn("cannot unmarshal number 2147483648 into Go struct field "
                      "DeploymentSpec.spec.replicas of type int32",
                      self.refused(raw, "apps/v1/Deployment", kind="Deployment"))

    def test_a_named_go_type_is_printed_with_its_package(self):
        self.assertIn("Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy",
                      self.refused(body(pod({"restartPolicy": 1}))))
        self.assertIn("Go struct field ObjectMeta.metadata.uid of type types.UID",
                      self.refused(body(pod(metadata={"uid": 1}))))

    def test_a_field_of_an_embedded_struct_names_the_embedded_struct_in_the_path(self):
        """Go 1.24 encoding/json (sigs.k8s.io/json 2025-07-30) adds the
        embedded struct's name to the path."""
        raw = body(pod({"containers": [], "volumes": [{"name": "v", "hostPath": "x"}]}))
        self.assertIn("cannot unmarshal string into Go struct field Volume.spec.volumes."
                      "VolumeSource.hostPath of type v1.HostPathVolumeSource", self.refused(raw))

    def test_the_first_type_error_wins_and_strict_errors_are_not_reported_with_it(self):
        raw = body(pod({"foo": 1, "hostname": 1, "subdomain": 2, "containers": []}))
        self.assertTrue(self.refused(raw, mode="Strict").endswith(
            "Go struct field PodSpec.spec.hostname of type string"))

    def test_a_body_that_is_not_json_gets_the_go_scanner_message(self):
        for raw, why in [(b"", "unexpected end of JSON input (<empty>)"),
                         (b'{"kind":"Pod",}', "invalid character '}' looking for beginning of "
                                               'object key string ({"kind":"Pod",})'),
                         (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"
                                        ' ({"a":tru})'),
                         (b"x", "invalid character 'x' looking for beginning of value (78)")]:
            with self.subTest(raw=raw):
                self.assertEqual(self.refused(raw),
                                 "the object provided is unrecognized (must be of type Pod): "
                                 "couldn't get version/kind; json parse error: " + why)

    def test_a_kind_that_is_not_a_string_fails_before_decoding(self):
        """meta.go Interpret reads apiVersion/kind into an anonymous struct."""
        self.assertEqual(self.refused(b'{"kind":5}'),
                         "the object provided is unrecognized (must be of type Pod): couldn't "
                         "get version/kind; json parse error: json: cannot unmarshal number "
                         'into Go struct field .kind of type string ({"kind":5})')
        self.assertIn('cannot unmarshal array into Go value of type struct { APIVersion '
                      'string "json:\\"apiVersion,omitempty\\""; Kind string '
                      '"json:\\"kind,omitempty\\"" } (5b5d)', self.refused(b"[]"))


class UnknownAndDuplicateFieldsTest(DecodeErrorCase):
    RAW = body(pod({"foo": 1, "containers": [{"name": "c", "image": "i", "imagePullSecret": 2}]}))

    def test_strict_refuses_every_unknown_field_with_its_path(self):
        self.assertEqual(self.refused(self.RAW, mode="Strict"),
                         'Pod in version "v1" cannot be handled as a Pod: strict decoding '
                         'error: unknown field "spec.foo", unknown field '
                         '"spec.containers[0].imagePullSecret"')

    def test_warn_stores_the_object_without_them_and_warns_once_per_field(self):
        obj, warnings = decode(self.RAW, mode="Warn")
        self.assertEqual(warnings, ['unknown field "spec.foo"',
                                    'unknown field "spec.containers[0].imagePullSecret"'])
        self.assertEqual(obj["spec"], {"containers": [{"name": "c", "image": "i"}]})

    def test_warn_is_the_default_when_the_parameter_is_absent(self):
        obj, dups = decoder.parse_json(self.RAW, "Pod")
        self.assertEqual(len(decoder.decode("v1/Pod", obj, duplicates=dups)[1]), 2)

    def test_ignore_drops_them_silently(self):
        obj, warnings = decode(self.RAW, mode="Ignore")
        self.assertEqual((obj["spec"], warnings),
                         ({"containers": [{"name": "c", "image": "i"}]}, []))

    def test_field_names_are_case_sensitive(self):
        obj, warnings = decode(b'{"kind":"Pod","apiVersion":"v1","Spec":{}}')
        self.assertEqual((obj, warnings), ({"kind": "Pod", "apiVersion": "v1"},
                                           ['unknown field "Spec"']))

    def test_a_repeated_key_is_a_duplicate_field_with_its_full_path_and_the_last_value_wins(self):
        raw = b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","name":"b"}}'
        self.assertEqual(decoder.parse_json(raw)[1], ["metadata.name"])
        self.assertEqual(self.refused(raw, mode="Strict"),
                         'Pod in version "v1" cannot be handled as a Pod: strict decoding '
                         'error: duplicate field "metadata.name"')
        obj, warnings = decode(raw, mode="Warn")
        self.assertEqual((obj["metadata"], warnings),
                         ({"name": "b"}, ['duplicate field "metadata.name"']))

    def test_a_repeated_unknown_field_is_reported_once_as_unknown(self):
        raw = b'{"kind":"Pod","apiVersion":"v1","bogus":{"a":1,"a":2},"bogus":3}'
        self.assertEqual(decode(raw)[1], ['unknown field "bogus"'])

    def test_metadata_fields_are_checked_like_any_other(self):
        self.assertEqual(decode(body(pod(metadata={"name": "p", "labelz": {}})))[1],
                         ['unknown field "metadata.labelz"'])

    def test_an_empty_go_struct_takes_no_fields(self):
        """CustomResourceSubresources.status is an empty struct."""
        raw = body({"spec": {"versions": [{"name": "v1", "subresources": {"status": {"x": 1}}}]}})
        obj, warnings = decode(raw, "apiextensions.k8s.io/v1/CustomResourceDefinition",
                               kind="CustomResourceDefinition")
        self.assertEqual(warnings, ['unknown field "spec.versions[0].subresources.status.x"'])
        self.assertEqual(obj["spec"]["versions"][0]["subresources"], {"status": {}})


class TimesTest(DecodeErrorCase):
    LEASE = "coordination.k8s.io/v1/Lease"

    def lease(self, renew):
        return body({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": "l"}, "spec": {"renewTime": renew}})

    def test_a_micro_time_with_three_digits_is_refused_with_go_s_parse_error(self):
        self.assertEqual(self.refused(self.lease("2026-01-02T03:04:05.123Z"), self.LEASE,
                                      kind="Lease"),
                         'Lease in version "v1" cannot be handled as a Lease: parsing time '
                         '"2026-01-02T03:04:05.123Z" as "2006-01-02T15:04:05.000000Z07:00": '
                         'cannot parse ".123Z" as ".000000"')

    def test_a_micro_time_with_six_digits_and_an_offset_is_stored_in_utc(self):
        obj, _ = decode(self.lease("2026-01-02T03:04:05.123456+01:00"), self.LEASE, kind="Lease")
        self.assertEqual(obj["spec"]["renewTime"], "2026-01-02T02:04:05.123456Z")

    def test_a_time_with_an_offset_and_fraction_is_stored_in_utc_to_the_second(self):
        obj, _ = decode(body(pod(metadata={"creationTimestamp": "2026-01-02T03:04:05.987654321"
                                                                  "-05:30"})))
        self.assertEqual(obj["metadata"]["creationTimestamp"], "2026-01-02T08:34:05Z")

    def test_bad_times_get_go_s_time_parse_messages(self):
        for text, why in [
                ("yesterday", 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": '
                              'cannot parse "yesterday" as "2006"'),
                ("2026-13-01T00:00:00Z", 'parsing time "2026-13-01T00:00:00Z": month out '
                                         'of range'),
                ("2026-02-30T00:00:00Z", 'parsing time "2026-02-30T00:00:00Z": day out of '
                                         'range'),
                ("2026-01-02 03:04:05Z", 'parsing time "2026-01-02 03:04:05Z" as "2006-01-02'
                                         'T15:04:05Z07:00": cannot parse " 03:04:05Z" as "T"'),
                ("2026-01-02T03:04:05Zjunk", 'parsing time "2026-01-02T03:04:05Zjunk": extra '
                                             'text: "junk"')]:
            with self.subTest(text=text):
                raw = body(pod(metadata={"deletionTimestamp": text}))
                self.assertEqual(self.refused(raw),
                                 'Pod in version "v1" cannot be handled as a Pod: ' + why)

    def test_a_time_that_is_not_a_string_fails_in_the_nested_string_decode(self):
        self.assertIn("json: cannot unmarshal number into Go struct field "
                      "ObjectMeta.metadata.creationTimestamp of type string",
                      self.refused(body(pod(metadata={"creationTimestamp": 5}))))

    def test_event_times_are_micro_times(self):
        raw = body({"eventTime": "2026-01-02T03:04:05.000001Z",
                    "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:05Z"}})
        self.assertIn('parsing time "2026-01-02T03:04:05Z" as "2006-01-02T15:04:05.000000Z07:00"'
                      ': cannot parse "Z" as ".000000"',
                      self.refused(raw, "events.k8s.io/v1/Event", kind="Event"))

    def test_go_time_parse_accepts_what_the_generic_parser_accepts(self):
        self.assertEqual(gotime.format_utc(*gotime.parse("2026-01-02T3:04:05,5Z")),
                         "2026-01-02T03:04:05Z")


class ValueTypesTest(DecodeErrorCase):
    def container(self, **fields):
        return body(pod({"containers": [dict({"name": "c", "image": "i"}, **fields)]}))

    def test_a_malformed_quantity_is_refused_with_the_regular_expression(self):
        raw = self.container(resources={"limits": {"cpu": "1 core"}})
        self.assertEqual(self.refused(raw),
                         'Pod in version "v1" cannot be handled as a Pod: quantities must match '
                         "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")

    def test_a_quantity_may_be_a_number_and_is_stored_in_canonical_form(self):
        obj, _ = decode(self.container(resources={"limits": {"cpu": 0.5, "memory": " 1024Mi "}}))
        self.assertEqual(obj["spec"]["containers"][0]["resources"]["limits"],
                         {"cpu": "500m", "memory": "1Gi"})

    def test_int_or_string_takes_an_integer_or_a_string(self):
        obj, _ = decode(self.container(livenessProbe={"httpGet": {"port": 8080}},
                                       readinessProbe={"httpGet": {"port": "http"}}))
        c = obj["spec"]["containers"][0]
        self.assertEqual((c["livenessProbe"]["httpGet"]["port"],
                          c["readinessProbe"]["httpGet"]["port"]), (8080, "http"))

    def test_int_or_string_refuses_anything_else_as_an_int32(self):
        raw = self.container(livenessProbe={"httpGet": {"port": 1.5}})
        self.assertIn("json: cannot unmarshal number 1.5 into Go struct field HTTPGetAction."
                      "spec.containers.livenessProbe.ProbeHandler.httpGet.port of type int32",
                      self.refused(raw))

    def test_invalid_base64_in_a_secret_names_the_byte(self):
        raw = body({"apiVersion": "v1", "kind": "Secret", "data": {"k": "aGVsbG8"}})
        self.assertEqual(self.refused(raw, "v1/Secret", kind="Secret"),
                         'Secret in version "v1" cannot be handled as a Secret: illegal base64 '
                         'data at input byte 4')

    def test_secret_data_is_stored_as_standard_base64(self):
        obj, _ = decode(body({"data": {"k": "aGVs\nbG8="}}), "v1/Secret", kind="Secret")
        self.assertEqual(obj["data"], {"k": "aGVsbG8="})

    def test_raw_json_fields_take_anything(self):
        raw = body({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "type": "object", "default": {"a": [1, "x", None]}, "enum": [1, {"b": 2}]}}}]}})
        obj, w = decode(raw, "apiextensions.k8s.io/v1/CustomResourceDefinition",
                        kind="CustomResourceDefinition")
        props = obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        self.assertEqual((props["default"], props["enum"], w),
                         ({"a": [1, "x", None]}, [1, {"b": 2}], []))

    def test_schemas_under_items_are_decoded_without_strictness(self):
        """JSONSchemaPropsOrArray.UnmarshalJSON calls json.Unmarshal again:
        unknown fields there are dropped without a word."""
        raw = body({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "type": "array", "items": {"type": "string", "typo": 1}}}}]}})
        obj, w = decode(raw, "apiextensions.k8s.io/v1/CustomResourceDefinition", "Strict",
                        "CustomResourceDefinition")
        self.assertEqual((obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["items"], w),
                         ({"type": "string"}, []))

    def test_additional_properties_must_be_a_boolean_or_a_schema(self):
        raw = body({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "additionalProperties": "yes"}}}]}})
        self.assertTrue(self.refused(raw, "apiextensions.k8s.io/v1/CustomResourceDefinition",
                                     kind="CustomResourceDefinition")
                        .endswith(": boolean or JSON schema expected"))


class NullsTest(unittest.TestCase):
    def test_null_for_a_struct_a_string_or_a_map_field_is_as_if_absent(self):
        obj, w = decode(body({"apiVersion": "v1", "kind": "Pod", "metadata": None,
                              "spec": {"hostname": None, "nodeSelector": None,
                                       "containers": [{"name": "c", "image": None}]}}))
        self.assertEqual((obj, w), ({"apiVersion": "v1", "kind": "Pod",
                                     "spec": {"containers": [{"name": "c"}]}}, []))

    def test_null_in_a_map_or_list_is_the_zero_value_of_the_element(self):
        obj, _ = decode(body(pod({"nodeSelector": {"a": None}, "containers": [None]})))
        self.assertEqual(obj["spec"], {"nodeSelector": {"a": ""}, "containers": [{}]})

    def test_a_null_body_decodes_to_an_empty_object(self):
        self.assertEqual(decode(b"null"), ({}, []))


class DeleteOptionsTest(DecodeErrorCase):
    def test_a_delete_body_with_propagation_policy_and_preconditions_is_decoded(self):
        raw = body({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
                    "preconditions": {"uid": "u-1", "resourceVersion": "7"},
                    "gracePeriodSeconds": 0})
        obj, warnings = decode(raw, decoder.DELETE_OPTIONS, kind="")
        self.assertEqual(obj, json.loads(raw))
        self.assertEqual(warnings, [])

    def test_delete_options_are_decoded_without_strictness_and_errors_are_bare(self):
        """The DELETE handler uses the non-strict serializer and, since
        Kubernetes 1.35 (PR 133358), answers 400 with the decode error."""
        obj, w = decode(body({"bogus": 1}), decoder.DELETE_OPTIONS, "Strict", "")
        self.assertEqual((obj, w), ({}, []))
        self.assertEqual(self.refused(body({"gracePeriodSeconds": "5"}), decoder.DELETE_OPTIONS,
                                      kind=""),
                         "json: cannot unmarshal string into Go struct field "
                         "DeleteOptions.gracePeriodSeconds of type int64")


class CustomResourceTest(unittest.TestCase):
    SCHEMA = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "workers": {"type": "integer"},
            "replicas": {"type": "array", "items": {"type": "object",
                                                    "properties": {"name": {"type": "string"}}}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "env": {"type": "object", "additionalProperties": {"type": "string"}}}}}}
    OBJ = {"apiVersion": "training.mwj.io/v1", "kind": "MultiWorkerJob",
           "metadata": {"name": "j"},
           "spec": {"workers": 2, "foo": 1, "replicas": [{"name": "a", "bar": 2}],
                    "extra": {"anything": 1}, "env": {"A": "b"}}, "status2": {}}

    def test_unknown_fields_lists_what_pruning_drops_sorted_with_indices(self):
        self.assertEqual(schema.unknown_fields(self.SCHEMA, self.OBJ),
                         ["spec.foo", "spec.replicas[0].bar", "status2"])

    def test_unknown_fields_agrees_with_prune(self):
        self.assertEqual(schema.prune(self.SCHEMA, copy.deepcopy(self.OBJ))["spec"],
                         {"workers": 2, "replicas": [{"name": "a"}], "extra": {"anything": 1},
                          "env": {"A": "b"}})

    def test_a_custom_resource_in_strict_mode_is_refused_with_the_pruned_fields(self):
        with self.assertRaises(errors.ApiError) as ctx:
            decoder.decode_custom("MultiWorkerJob", "v1", self.SCHEMA, self.OBJ, "Strict")
        self.assertEqual(ctx.exception.message,
                         'MultiWorkerJob in version "v1" cannot be handled as a MultiWorkerJob: '
                         'strict decoding error: unknown field "spec.foo", unknown field '
                         '"spec.replicas[0].bar", unknown field "status2"')

    def test_duplicates_then_metadata_then_pruned_fields_in_warn_mode(self):
        obj = dict(self.OBJ, metadata={"name": "j", "zz": 1, "annotation": {}})
        _, warnings = decoder.decode_custom("MultiWorkerJob", "v1", self.SCHEMA, obj, "Warn",
                                            ["spec.workers"])
        self.assertEqual(warnings, ['duplicate field "spec.workers"',
                                    'unknown field "metadata.annotation"',
                                    'unknown field "metadata.zz"', 'unknown field "spec.foo"',
                                    'unknown field "spec.replicas[0].bar"',
                                    'unknown field "status2"'])

    def test_ignore_reports_nothing(self):
        self.assertEqual(decoder.decode_custom("MultiWorkerJob", "v1", self.SCHEMA, self.OBJ,
                                               "Ignore")[1], [])


class GoTextTest(unittest.TestCase):
    def test_strconv_quote_escapes_like_go(self):
        self.assertEqual(gojson.go_quote('a"b\\c\n\x01\u00a0é'), '"a\\"b\\\\c\\n\\x01\\u00a0é"')

    def test_base64_offsets_match_go(self):
        for text, want in [("YQ==", None), ("YQ=", 3), ("Y===", 1), ("YQ==x", 4),
                           ("!!!!", 0), ("YWJj\r\nZGVm", None)]:
            with self.subTest(text=text):
                data, err = gojson.decode_base64(text)
                self.assertEqual(err, None if want is None else
                                 "illegal base64 data at input byte %d" % want)


if __name__ == "__main__":
    unittest.main()
