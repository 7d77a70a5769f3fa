"""CRD validation rules (x-kubernetes-validations) in a small subset of
CEL, checked when a CRD is written (compile) and evaluated on each write
of its custom resources (validate), as apiextensions-apiserver's
pkg/apiserver/schema/cel/validation.go does at v1.31.

The subset, enough for the rules CRDs commonly carry:
  literals      1  -2  1.5  'a'  "a"  true  false  null  [1, 2]
  variables     self, oldSelf (a transition rule: checked on update only,
                where the node has an old value)
  access        self.field  self['field']  self[0]  has(self.field)
  operators     == != < <= > >= && || ! ?: + - * / % in
  functions     size(x) x.size() string(x) int(x) double(x)
                s.startsWith(t) s.endsWith(t) s.contains(t)
A rule outside it (another function or macro, a uint or bytes literal...),
or one that names a field the schema does not declare, makes the CRD's
create or update fail with 422 naming the rule and saying why: it is
never skipped.

A rule that evaluates to false gives the real field error, at the rule's
node (or its fieldPath), with the schema type as the value, as v1.31
prints it (`Invalid value: "integer"`): its message, else its
messageExpression's result, else `failed rule: <rule>`; its reason
(FieldValueInvalid, FieldValueForbidden, FieldValueRequired,
FieldValueDuplicate) sets the error's type. A rule that fails to evaluate
(`no such key: x`) gives `<error> evaluating rule: <rule>`. A rule at the
root of the resource reports the path `<nil>`, as Go prints a nil path.
Rules do not run when the schema already found a type, required, enum,
length or size error (hasBlockingErr); the write then also carries "some
validation rules were not checked because the object was invalid; correct
the existing errors to complete validation".

Standard library only.
"""
import re

from errors import Cause, GoRaw

ROOT = "<nil>"
REASONS = {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired",
           "FieldValueDuplicate"}
NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
               "correct the existing errors to complete validation")
SUBSET = ("literals, self, oldSelf, field access, has(), size(), string(), int(), double(), "
          "startsWith(), endsWith(), contains(), == != < <= > >= && || ! ?: + - * / % in")


class CompileError(Exception):
    """A rule the cluster cannot compile: the text says why."""


class EvalError(Exception):
    """A rule that failed at run time: cel-go's error text."""


# --- lexing ---

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0[xX][0-9a-fA-F]+u?|\d+u?)
  | (?P<string>[rRbB]?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,()\[\]{}])
""", re.X)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
           "b": "\b", "f": "\f", "v": "\v"}


def _lex(text):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise CompileError("unexpected character %r at %d" % (text[pos], pos + 1))
        pos = m.end()
        kind = m.lastgroup
        if kind != "space":
            out.append((kind, m.group(), m.start()))
    out.append(("end", "", len(text)))
    return out


def _string(tok):
    if tok[0] in "rRbB":
        raise CompileError("%s literals are not in the subset" % (
            "raw string" if tok[0] in "rR" else "bytes"))
    body, out, i = tok[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in ESCAPES:
                raise CompileError("string escape \\%s is not in the subset" % nxt)
            out.append(ESCAPES[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --- parsing into tuples: ("lit", v) ("ident", n) ("select", x, f) ("has", x, f)
# ("index", x, i) ("call", name, target or None, [args]) ("list", [xs])
# ("unary", op, x) ("binary", op, a, b) ("cond", c, a, b) ---

BINARY = [("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"),
          ("*", "/", "%")]
FUNCTIONS = {"size": 1, "string": 1, "int": 1, "double": 1}
METHODS = {"size": 0, "startsWith": 1, "endsWith": 1, "contains": 1}


class _Parser:
    def __init__(self, text):
        self.toks = _lex(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def take(self, value=None):
        tok = self.toks[self.i]
        if value is not None and tok[1] != value:
            raise CompileError("expected %r at %d, found %r" % (value, tok[2] + 1,
                                                                tok[1] or "the end"))
        self.i += 1
        return tok

    def parse(self):
        node = self.conditional()
        if self.peek()[0] != "end":
            raise CompileError("unexpected %r at %d" % (self.peek()[1], self.peek()[2] + 1))
        return node

    def conditional(self):
        cond = self.binary(0)
        if self.peek()[1] == "?":
            self.take("?")
            a = self.conditional()
            self.take(":")
            return ("cond", cond, a, self.conditional())
        return cond

    def binary(self, level):
        if level == len(BINARY):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek()[1] in BINARY[level] and self.peek()[0] in ("op", "ident"):
            op = self.take()[1]
            node = ("binary", op, node, self.binary(level + 1))
        return node

    def unary(self):
        if self.peek()[1] in ("!", "-"):
            op = self.take()[1]
            return ("unary", op, self.unary())
        return self.postfix(self.primary())

    def postfix(self, node):
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                kind, name, at = self.take()
                if kind != "ident":
                    raise CompileError("expected a field name at %d" % (at + 1))
                if self.peek()[1] == "(":
                    node = ("call", name, node, self.args())
                else:
                    node = ("select", node, name)
            else:
                index = self.conditional()
                self.take("]")
                node = ("index", node, index)
        return node

    def args(self):
        self.take("(")
        out = []
        if self.peek()[1] != ")":
            out.append(self.conditional())
            while self.peek()[1] == ",":
                self.take(",")
                out.append(self.conditional())
        self.take(")")
        return out

    def primary(self):
        kind, text, at = self.take()
        if kind == "number":
            if text.endswith("u") or text.lower().startswith("0x"):
                raise CompileError("uint and hexadecimal literals are not in the subset")
            return ("lit", float(text) if any(c in text for c in ".eE") else int(text))
        if kind == "string":
            return ("lit", _string(text))
        if text == "(":
            node = self.conditional()
            self.take(")")
            return node
        if text == "[":
            items = []
            if self.peek()[1] != "]":
                items.append(self.conditional())
                while self.peek()[1] == ",":
                    self.take(",")
                    items.append(self.conditional())
            self.take("]")
            return ("list", items)
        if kind == "ident":
            if text in ("true", "false"):
                return ("lit", text == "true")
            if text == "null":
                return ("lit", None)
            if self.peek()[1] == "(":
                return self.function(text, at)
            return ("ident", text)
        raise CompileError("unexpected %r at %d" % (text or "end of rule", at + 1))

    def function(self, name, at):
        args = self.args()
        if name == "has":
            if len(args) != 1 or args[0][0] != "select":
                raise CompileError("invalid argument to has() macro")
            return ("has", args[0][1], args[0][2])
        if name not in FUNCTIONS:
            raise CompileError("function %s() is not in the subset" % name)
        if len(args) != FUNCTIONS[name]:
            raise CompileError("%s() takes %d argument" % (name, FUNCTIONS[name]))
        return ("call", name, None, args)


# --- types, from the schema: "int" "double" "string" "bool" "list" "map"
# "dyn" (int-or-string, preserve-unknown), with the schema node for maps
# and lists ---

def _type(schema):
    if not isinstance(schema, dict):
        return ("dyn", None)
    if schema.get("x-kubernetes-int-or-string") or \
            schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return ("dyn", schema)
    t = schema.get("type")
    return ({"integer": "int", "number": "double", "string": "string", "boolean": "bool",
             "array": "list", "object": "map"}.get(t, "dyn"), schema)


NUMERIC = ("int", "double")


def _check(node, env):
    """The static type of node under env (variable -> type), or
    CompileError: undeclared fields, functions on the wrong types."""
    op = node[0]
    if op == "lit":
        v = node[1]
        return ({bool: "bool", int: "int", float: "double", str: "string",
                 type(None): "null"}[type(v)], None)
    if op == "ident":
        if node[1] not in env:
            raise CompileError("undeclared reference to '%s'" % node[1])
        return env[node[1]]
    if op in ("select", "has"):
        t, schema = _check(node[1], env)
        if t == "dyn":
            return ("dyn", None)
        if t != "map":
            raise CompileError("type '%s' does not support field selection" % t)
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if node[2] in props:
            sub = _type(props[node[2]])
        elif isinstance(extra, dict):
            sub = _type(extra)
        elif schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
            sub = ("dyn", None)
        else:
            raise CompileError("undefined field '%s'" % node[2])
        return ("bool", None) if op == "has" else sub
    if op == "index":
        t, schema = _check(node[1], env)
        it, _ = _check(node[2], env)
        if t == "list":
            if it not in ("int", "dyn"):
                raise CompileError("found no matching overload for '_[_]' applied to "
                                   "'(list, %s)'" % it)
            return _type((schema or {}).get("items"))
        if t == "map":
            if it not in ("string", "dyn"):
                raise CompileError("found no matching overload for '_[_]' applied to "
                                   "'(map, %s)'" % it)
            props = (schema or {}).get("properties") or {}
            extra = (schema or {}).get("additionalProperties")
            if node[2][0] == "lit" and node[2][1] in props:
                return _type(props[node[2][1]])
            return _type(extra) if isinstance(extra, dict) else ("dyn", None)
        if t == "dyn":
            return ("dyn", None)
        raise CompileError("type '%s' does not support indexing" % t)
    if op == "list":
        for x in node[1]:
            _check(x, env)
        return ("list", None)
    if op == "unary":
        t, _ = _check(node[2], env)
        want = ("bool",) if node[1] == "!" else NUMERIC
        if t not in want + ("dyn",):
            raise CompileError("found no matching overload for '%s_' applied to '(%s)'"
                               % (node[1], t))
        return (t, None)
    if op == "cond":
        c, _ = _check(node[1], env)
        if c not in ("bool", "dyn"):
            raise CompileError("the condition of ?: must be a bool, is %s" % c)
        a, b = _check(node[2], env), _check(node[3], env)
        return a if a[0] == b[0] else ("dyn", None)
    if op == "binary":
        return _check_binary(node, env)
    if op == "call":
        return _check_call(node, env)
    raise CompileError("unsupported expression")


def _check_binary(node, env):
    o, (a, _), (b, _) = node[1], _check(node[2], env), _check(node[3], env)
    dyn = "dyn" in (a, b)
    if o in ("&&", "||"):
        if not dyn and (a, b) != ("bool", "bool"):
            raise CompileError("found no matching overload for '_%s_' applied to '(%s, %s)'"
                               % (o, a, b))
        return ("bool", None)
    if o in ("==", "!="):
        return ("bool", None)
    if o in ("<", "<=", ">", ">="):
        ok = dyn or (a in NUMERIC and b in NUMERIC) or (a == b and a in ("string", "bool"))
        if not ok:
            raise CompileError("found no matching overload for '_%s_' applied to '(%s, %s)'"
                               % (o, a, b))
        return ("bool", None)
    if o == "in":
        if not dyn and b not in ("list", "map"):
            raise CompileError("found no matching overload for '@in' applied to '(%s, %s)'"
                               % (a, b))
        return ("bool", None)
    if o == "+" and (dyn or a == b and a in ("string", "list") + NUMERIC):
        return (a if not dyn else "dyn", None)
    if o in ("-", "*", "/", "%") and (dyn or a == b and a in NUMERIC and
                                      not (o == "%" and a == "double")):
        return (a if not dyn else "dyn", None)
    raise CompileError("found no matching overload for '_%s_' applied to '(%s, %s)'"
                       % (o, a, b))


def _check_call(node, env):
    name, target, args = node[1], node[2], node[3]
    if target is not None:
        if name not in METHODS:
            raise CompileError("function %s() is not in the subset" % name)
        if len(args) != METHODS[name]:
            raise CompileError("%s() takes %d argument" % (name, METHODS[name]))
        t, _ = _check(target, env)
        types = [_check(a, env)[0] for a in args]
        if name == "size":
            if t not in ("string", "list", "map", "dyn"):
                raise CompileError("found no matching overload for 'size' applied to '%s.()'"
                                   % t)
            return ("int", None)
        if t not in ("string", "dyn") or any(x not in ("string", "dyn") for x in types):
            raise CompileError("found no matching overload for '%s' applied to '%s.(%s)'"
                               % (name, t, ", ".join(types)))
        return ("bool", None)
    t, _ = _check(args[0], env)
    if name == "size":
        if t not in ("string", "list", "map", "dyn"):
            raise CompileError("found no matching overload for 'size' applied to '(%s)'" % t)
        return ("int", None)
    return ({"string": "string", "int": "int", "double": "double"}[name], None)


def _uses(node, name):
    if not isinstance(node, tuple):
        return False
    if node[0] == "ident":
        return node[1] == name
    return any(_uses(x, name) for part in node[1:]
               for x in (part if isinstance(part, list) else [part]))


# --- evaluation ---

def _kind(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null_type"
    return "list" if isinstance(v, list) else "map"


def _equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _overload(op, *values):
    return EvalError("no such overload: %s(%s)" % (op, ", ".join(_kind(v) for v in values)))


def _eval(node, env):
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "ident":
        return env[node[1]]
    if op == "list":
        return [_eval(x, env) for x in node[1]]
    if op in ("select", "has"):
        obj = _eval(node[1], env)
        if not isinstance(obj, dict):
            raise EvalError("no such key: %s" % node[2])
        if op == "has":
            return node[2] in obj
        if node[2] not in obj:
            raise EvalError("no such key: %s" % node[2])
        return obj[node[2]]
    if op == "index":
        obj, i = _eval(node[1], env), _eval(node[2], env)
        if isinstance(obj, list) and isinstance(i, int) and not isinstance(i, bool):
            if not 0 <= i < len(obj):
                raise EvalError("index out of bounds: %d" % i)
            return obj[i]
        if isinstance(obj, dict) and isinstance(i, str):
            if i not in obj:
                raise EvalError("no such key: %s" % i)
            return obj[i]
        raise _overload("_[_]", obj, i)
    if op == "unary":
        v = _eval(node[2], env)
        if node[1] == "!":
            if not isinstance(v, bool):
                raise _overload("!_", v)
            return not v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _overload("-_", v)
        return -v
    if op == "cond":
        c = _eval(node[1], env)
        if not isinstance(c, bool):
            raise _overload("_?_:_", c)
        return _eval(node[2] if c else node[3], env)
    if op == "binary":
        return _eval_binary(node, env)
    return _eval_call(node, env)


def _bool(v, o):
    if not isinstance(v, bool):
        raise _overload("_%s_" % o, v)
    return v


def _eval_binary(node, env):
    o = node[1]
    if o in ("&&", "||"):
        # CEL's logical operators absorb an error on one side when the
        # other decides the result.
        try:
            a, a_err = _bool(_eval(node[2], env), o), None
        except EvalError as e:
            a, a_err = None, e
        if a is not None and a == (o == "||"):
            return a
        b = _bool(_eval(node[3], env), o)
        if b == (o == "||"):
            return b
        if a_err is not None:
            raise a_err
        return b
    a, b = _eval(node[2], env), _eval(node[3], env)
    if o == "==":
        return _equal(a, b)
    if o == "!=":
        return not _equal(a, b)
    if o == "in":
        if isinstance(b, list):
            return any(_equal(a, x) for x in b)
        if isinstance(b, dict):
            return a in b
        raise _overload("@in", a, b)
    num = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    same = type(a) is type(b)
    if o in ("<", "<=", ">", ">="):
        if not (num or same and isinstance(a, (str, bool))):
            raise _overload("_%s_" % o, a, b)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[o]
    if o == "+" and same and isinstance(a, (str, list)):
        return a + b
    if not (num and same):
        raise _overload("_%s_" % o, a, b)
    if o in ("/", "%") and b == 0 and isinstance(a, int):
        raise EvalError("division by zero" if o == "/" else "modulus by zero")
    if o == "+":
        r = a + b
    elif o == "-":
        r = a - b
    elif o == "*":
        r = a * b
    elif isinstance(a, float):
        if o == "%":
            raise _overload("_%_", a, b)
        r = a / b
    else:
        # CEL truncates toward zero; Python's // floors.
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
        r = q if o == "/" else a - b * q
    if isinstance(r, int) and not -(1 << 63) <= r < (1 << 63):
        raise EvalError("integer overflow")
    return r


def _eval_call(node, env):
    name, target, args = node[1], node[2], [_eval(a, env) for a in node[3]]
    if target is not None:
        t = _eval(target, env)
        if name == "size":
            args, target = [t], None
        else:
            if not isinstance(t, str) or not isinstance(args[0], str):
                raise _overload(name, t, *args)
            return {"startsWith": t.startswith, "endsWith": t.endswith,
                    "contains": t.__contains__}[name](args[0])
    v = args[0]
    if name == "size":
        if isinstance(v, (str, list, dict)):
            return len(v)
        raise _overload("size", v)
    if name == "string":
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float, str)):
            return v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v)
        raise _overload("string", v)
    if name == "int":
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise _overload("int", v)
        try:
            return int(v)
        except ValueError:
            raise EvalError("cannot convert '%s' to int" % v) from None
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _overload("double", v)
    try:
        return float(v)
    except ValueError:
        raise EvalError("cannot convert '%s' to double" % v) from None


# --- rules on a schema ---

# model.WithTypeAndObjectMeta: what a rule at a resource's root sees of it
# besides its schema.
ROOT_FIELDS = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
               "metadata": {"type": "object", "properties": {
                   "name": {"type": "string"}, "generateName": {"type": "string"}}}}


class Rule:
    """One compiled x-kubernetes-validations entry (root: of the resource's
    root schema)."""

    def __init__(self, spec, schema, root=False):
        if root:
            schema = dict(schema, properties=dict(schema.get("properties") or {},
                                                  **ROOT_FIELDS))
        self.spec = spec
        self.text = (spec.get("rule") or "").strip()
        env = {"self": _type(schema), "oldSelf": _type(schema)}
        self.node = _Parser(spec.get("rule") or "").parse()
        _check(self.node, env)
        self.uses_old = _uses(self.node, "oldSelf")
        self.message_node = None
        if spec.get("messageExpression"):
            self.message_node = _Parser(spec["messageExpression"]).parse()
            t, _ = _check(self.message_node, {"self": _type(schema)})
            if t not in ("string", "dyn"):
                raise CompileError("messageExpression must evaluate to a string")
        self.field_path = (spec.get("fieldPath") or "").lstrip(".")

    def message(self, value):
        """ruleMessageOrDefault, or the messageExpression's result."""
        if self.message_node is not None:
            try:
                text = _eval(self.message_node, {"self": value})
                if isinstance(text, str) and text.strip() and "\n" not in text.strip():
                    return text.strip()
            except EvalError:
                pass
        if self.spec.get("message"):
            return self.spec["message"].strip()
        return "failed rule: %s" % self.text

    def error_string(self):
        """ruleErrorString."""
        return (self.spec.get("message") or "").strip() or self.text


def _schema_type(schema):
    return (schema or {}).get("type") or ("object" if (schema or {}).get("properties") else "")


def _field_path_ok(path, schema):
    """ValidFieldPath, for dotted paths of declared properties."""
    for part in path.split("."):
        props = (schema or {}).get("properties") or {}
        if not part or part not in props:
            return False
        schema = props[part]
    return True


def check_crd_schema(schema, path):
    """The causes that refuse a CRD version's schema for its rules (path:
    its openAPIV3Schema's field path): rules that do not compile in the
    subset, oldSelf where old values cannot be correlated, bad reasons
    or fieldPaths."""
    causes = []
    _walk_crd(schema, path, False, causes, True)
    return causes


def _walk_crd(schema, path, uncorrelatable, causes, root=False):
    if not isinstance(schema, dict):
        return
    for i, spec in enumerate(schema.get("x-kubernetes-validations") or []):
        p = "%s.x-kubernetes-validations[%d]" % (path, i)
        if not isinstance(spec, dict):
            continue
        try:
            rule = Rule(spec, schema, root)
        except CompileError as e:
            causes.append(Cause("FieldValueInvalid", p + ".rule", "compilation failed: %s "
                                "(the local test cluster evaluates this subset of CEL: %s)"
                                % (e, SUBSET), spec.get("rule", "")))
            continue
        if rule.uses_old and uncorrelatable:
            causes.append(Cause("FieldValueInvalid", p + ".rule", "oldSelf cannot be used on "
                                "the uncorrelatable portion of the schema within %s"
                                % uncorrelatable, spec.get("rule", "")))
        reason = spec.get("reason")
        if reason is not None and reason not in REASONS:
            causes.append(Cause("FieldValueNotSupported", p + ".reason", "supported values: " +
                                ", ".join('"%s"' % r for r in sorted(REASONS)), reason))
        if rule.field_path and not _field_path_ok(rule.field_path, schema):
            causes.append(Cause("FieldValueInvalid", p + ".fieldPath", "fieldPath must be a "
                                "valid path: does not refer to a valid field",
                                spec.get("fieldPath")))
    for name, sub in (schema.get("properties") or {}).items():
        _walk_crd(sub, "%s.properties[%s]" % (path, name), uncorrelatable, causes)
    items = schema.get("items")
    if isinstance(items, dict):
        keep = uncorrelatable
        if not keep and schema.get("x-kubernetes-list-type") != "map":
            keep = path
        _walk_crd(items, path + ".items", keep, causes)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _walk_crd(extra, path + ".additionalProperties", uncorrelatable, causes)


def _join(path, key):
    return key if path == ROOT else "%s.%s" % (path, key)


def _blocking(causes):
    """hasBlockingErr: schema errors that keep the rules from running."""
    return any(c.reason in ("FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
                            "FieldValueTooMany", "FieldValueTypeInvalid") for c in causes)


def compile_rules(schema):
    """Every rule of a schema, compiled once: id(schema node) -> [Rule, or
    the CompileError of a rule that does not compile]. The schema must
    outlive the result (ids)."""
    out = {}
    _compile(schema, out, True)
    return out


def _compile(schema, out, root=False):
    if not isinstance(schema, dict):
        return
    rules = []
    for spec in schema.get("x-kubernetes-validations") or []:
        if isinstance(spec, dict):
            try:
                rules.append(Rule(spec, schema, root))
            except CompileError as e:
                rules.append(e)
    if rules:
        out[id(schema)] = rules
    for sub in (schema.get("properties") or {}).values():
        _compile(sub, out)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _compile(schema[key], out)


def validate(schema, compiled, obj, old, schema_causes):
    """The rule errors (Causes) of obj against schema's rules (compiled:
    compile_rules(schema)), old the stored object of an update (None on
    create), schema_causes the schema's own errors of obj."""
    if not compiled:
        return []
    if _blocking(schema_causes):
        return [Cause("FieldValueInvalid", ROOT, NOT_CHECKED, "null")]
    out = []
    _validate(schema, compiled, obj, old, ROOT, out)
    return out


def _validate(schema, compiled, value, old, path, out):
    if not isinstance(schema, dict) or value is None:
        return
    shown = GoRaw('"%s"' % (_schema_type(schema) or "object"))
    for rule in compiled.get(id(schema)) or []:
        if isinstance(rule, CompileError):
            # A rule the CRD was stored with before it could be checked.
            out.append(Cause("FieldValueInvalid", path, "rule compile error: %s" % rule, shown))
            continue
        spec = rule.spec
        if rule.uses_old and old is None:
            continue
        try:
            ok = _eval(rule.node, {"self": value, "oldSelf": old})
        except EvalError as e:
            out.append(Cause("FieldValueInvalid", path, "%s evaluating rule: %s"
                             % (e, rule.error_string()), shown))
            continue
        if ok is True:
            continue
        where = _join(path, rule.field_path) if rule.field_path else path
        detail = rule.message(value)
        reason = spec.get("reason") or "FieldValueInvalid"
        if reason in ("FieldValueForbidden", "FieldValueRequired"):
            out.append(Cause(reason, where, detail))
        elif reason == "FieldValueDuplicate":
            out.append(Cause(reason, where, "", shown))
        else:
            out.append(Cause("FieldValueInvalid", where, detail, shown))
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        olds = old if isinstance(old, dict) else {}
        for k in value:
            if k in props:
                _validate(props[k], compiled, value[k], olds.get(k), _join(path, k), out)
            elif isinstance(extra, dict):
                _validate(extra, compiled, value[k], olds.get(k), "%s[%s]" % (path, k), out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        olds = _correlate(schema, value, old)
        for i, v in enumerate(value):
            _validate(items, compiled, v, olds[i], "%s[%d]" % (path, i), out)


def _correlate(schema, value, old):
    """Each item's old value: by the map keys of a list-type map, none
    otherwise (validateArray)."""
    out = [None] * len(value)
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return out
    keys = schema.get("x-kubernetes-list-map-keys") or []
    index = {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, dict)}
    for i, v in enumerate(value):
        if isinstance(v, dict):
            out[i] = index.get(tuple(v.get(k) for k in keys))
    return out
