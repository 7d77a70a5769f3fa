"""The API server's errors, as the real kube-apiserver shapes them: a
`Status` object with code, reason, message and details (name, group, kind,
causes), and the field errors of validation (k8s.io/apimachinery's
pkg/util/validation/field) that a 422 Invalid carries.

A field error reads `<field>: <Type>: <detail>`, e.g.
`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain
must consist of ...`; the Status of a 422 joins them as
`Pod "x" is invalid: <error>` (one) or `Pod "x" is invalid: [<e1>, <e2>]`
(several), and lists each as a cause {reason, message, field}.

Standard library only.
"""
import json


class ApiError(Exception):
    """An error the API returns as a Status object."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            st["details"] = self.details
        return st


class GoRaw(str):
    """A bad value Go prints with %#v as it is, e.g. 0x0 for a uint64 zero
    (a resourceVersion missing on an update)."""


def _value(v):
    """A value as field errors print it: strings quoted, others as Go's %v
    of a JSON value would show them."""
    if isinstance(v, GoRaw):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


class Cause:
    """One field error: its type (the reason a Status cause carries), the
    field path, the bad value where the type shows one, and the detail.

    The types and how each prints (field.ErrorType.String()):
      FieldValueRequired     "Required value"
      FieldValueNotFound     "Not found"
      FieldValueDuplicate    "Duplicate value"
      FieldValueInvalid      "Invalid value"
      FieldValueNotSupported "Unsupported value"
      FieldValueForbidden    "Forbidden"
      FieldValueTooLong      "Too long"
      FieldValueTooMany      "Too many"
      FieldValueTypeInvalid  "Invalid value" (wrong type)
    """

    TITLES = {
        "FieldValueRequired": "Required value",
        "FieldValueNotFound": "Not found",
        "FieldValueDuplicate": "Duplicate value",
        "FieldValueInvalid": "Invalid value",
        "FieldValueNotSupported": "Unsupported value",
        "FieldValueForbidden": "Forbidden",
        "FieldValueTooLong": "Too long",
        "FieldValueTooMany": "Too many",
        "FieldValueTypeInvalid": "Invalid value",
    }
    # The types whose message shows the bad value (field.Error.ErrorBody).
    SHOWS_VALUE = {"FieldValueNotFound", "FieldValueDuplicate", "FieldValueInvalid",
                   "FieldValueNotSupported", "FieldValueTypeInvalid", "FieldValueTooMany"}
    _OMIT = object()

    def __init__(self, reason, field, detail="", value=_OMIT):
        if reason not in self.TITLES:
            raise ValueError("unknown field error type %r" % reason)
        self.reason = reason
        self.field = field
        self.detail = detail
        self.value = value

    @property
    def message(self):
        """What follows "<field>: " in the error, and a cause's message."""
        body = self.TITLES[self.reason]
        if self.reason in self.SHOWS_VALUE and self.value is not Cause._OMIT:
            body += ": " + _value(self.value)
        if self.detail:
            body += ": " + self.detail
        return body

    def __str__(self):
        return "%s: %s" % (self.field, self.message) if self.field else self.message

    def __repr__(self):
        return "Cause(%r)" % str(self)

    def as_dict(self):
        return {"reason": self.reason, "message": self.message, "field": self.field}


# Constructors named for field.Required, field.Invalid, ...
def required(field, detail=""):
    return Cause("FieldValueRequired", field, detail)


def invalid(field, value, detail):
    return Cause("FieldValueInvalid", field, detail, value)


def duplicate(field, value):
    return Cause("FieldValueDuplicate", field, "", value)


def not_supported(field, value, supported):
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) \
        if supported else ""
    return Cause("FieldValueNotSupported", field, detail, value)


def forbidden(field, detail):
    return Cause("FieldValueForbidden", field, detail)


def too_long(field, limit):
    return Cause("FieldValueTooLong", field, "may not be longer than %d" % limit)


def too_many(field, actual, limit):
    return Cause("FieldValueTooMany", field, "must have at most %d items" % limit, actual)


def not_found(field, value):
    return Cause("FieldValueNotFound", field, "", value)


def invalid_error(kind, group, name, causes):
    """The 422 Invalid a create or update with field errors gets."""
    what = "%s.%s" % (kind, group) if group else kind
    errs = [str(c) for c in causes]
    text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
    details = {"name": name or "", "kind": kind, "causes": [c.as_dict() for c in causes]}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (what, name or "", text),
                    details)


def not_found_error(resource, group, name):
    """404 for a named object: `pods "x" not found`,
    `multiworkerjobs.training.mwj.io "x" not found`."""
    what = "%s.%s" % (resource, group) if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(404, "NotFound", '%s "%s" not found' % (what, name), details)


def already_exists_error(resource, group, name):
    what = "%s.%s" % (resource, group) if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (what, name), details)


def conflict_error(resource, group, name, why):
    """409 Conflict: `Operation cannot be fulfilled on pods "x": <why>`."""
    what = "%s.%s" % (resource, group) if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (what, name, why), details)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def forbidden_error(message, resource="", group="", name=""):
    details = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    return ApiError(403, "Forbidden", message, details or None)
