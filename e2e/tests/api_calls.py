#!/usr/bin/python3
"""The Kubernetes API calls mwj-operator makes, read from its C source.

The chart's RBAC must grant exactly what the operator calls. The list of
those calls is kept by hand in operator/api_calls.txt, and this script
keeps the list honest: it finds every call of the API client in
operator/src (all its rooms) and works out which (API group, resource, verb) it is, so
that a call added or removed in the code without the list fails the test.

How a call is attributed (the client's typed verbs are in kube_api.h):
  kube_get                   get (a named path) or list (a collection)
  kube_create                create
  kube_update                update
  kube_merge_patch, kube_json_patch
                             patch
  kube_delete                delete
  kube_send(api, METHOD,...) GET get, POST create, PUT update (every
                             method literal in the argument counts)
  kube_api_request + informer_path_list    list   (the informers' pager)
  kube_api_watch + informer_path_watch     watch  (the informers' watch)
The resource is the group and plural of the kube_path() calls in the same
function, directly or through a helper of the same file that calls
kube_path (leader.c's lease_path); a "/status" in the function makes a
patch or update one of the status subresource. Where kube_path's group and
plural are the function's own parameters (actions.c's create()), every
call of that function gives them. The informers' resources are the group
and plural of every informer_setup() call.

Anything it cannot attribute (a verb in a function with no resolvable
path, a path helper it does not know) is an error naming file:line: the
check fails loudly rather than passing something it did not understand.

  api_calls.py derive OPERATOR_SRC         print what the code calls
  api_calls.py check OPERATOR_SRC LIST     the code and the list agree
"""
import os
import re
import sys

CLIENT_FILES = ("kube_api.c", "kube_curl.c")  # the client itself, not its users

VERBS = {
    "kube_get": None,  # get or list, by the path
    "kube_create": "create",
    "kube_update": "update",
    "kube_merge_patch": "patch",
    "kube_json_patch": "patch",
    "kube_delete": "delete",
    "kube_send": None,  # by its method argument
    "kube_api_request": None,  # by the informer path it sends
    "kube_api_watch": None,
}
METHODS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
           "DELETE": "delete"}


class Unattributed(Exception):
    pass


def strip_comments(text):
    """text with comments blanked (newlines kept, so lines still count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_args(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren."""
    depth, args, start = 0, [], open_paren + 1
    for i in range(open_paren, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i].strip())
                return args
        elif c == "," and depth == 1:
            args.append(text[start:i].strip())
            start = i + 1
    raise Unattributed("unbalanced call")


class Function:
    def __init__(self, path, name, params, body, line):
        self.file = os.path.basename(path)
        self.name, self.params, self.body, self.line = name, params, body, line

    def calls(self, callee):
        """(line, args) of every call of callee in the body."""
        for m in re.finditer(r"\b%s\s*\(" % re.escape(callee), self.body):
            line = self.line + self.body.count("\n", 0, m.start())
            yield line, split_args(self.body, m.end() - 1)

    def where(self, line):
        return "%s:%d (%s)" % (self.file, line, self.name)


def signature(head):
    """(name, parameter names) of a function definition's head, or None
    for anything else (a struct, an initializer)."""
    head = head.rstrip()
    if not head.endswith(")") or "=" in head:
        return None
    depth = 0
    for k in range(len(head) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(head[k], 0)
        if depth == 0:
            break
    m = re.search(r"(\w+)\s*$", head[:k])
    if not m:
        return None
    params = []
    for p in split_args(head, k):
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", p)  # a function pointer
        ids = re.findall(r"\w+", p)
        params.append(fp.group(1) if fp else ids[-1] if ids else "")
    return m.group(1), params


def functions(path):
    """Every function defined in a C file: a top-level { } whose head
    (the text since the previous top-level ; or }) has a parameter list
    and no '=' (which would make it an initializer)."""
    text = strip_comments(open(path).read())
    depth, head_start = 0, 0
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            if depth == 0:
                body_start = i
                head = text[head_start:i]
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                sig = signature(head)
                if sig:
                    line = 1 + text.count("\n", 0, body_start)
                    yield Function(path, sig[0], sig[1], text[body_start:i + 1], line)
                head_start = i + 1
        elif c == ";" and depth == 0:
            head_start = i + 1
        elif c == "\n" and depth == 0 and text.startswith("#", i + 1):
            # A preprocessor line is no part of the next function's head.
            end = text.find("\n", i + 1)
            head_start = len(text) if end < 0 else end
            i = head_start
            continue
        i += 1


def sources(src, exts):
    """(file name, path) of every file under src, its rooms included,
    whose name ends in one of exts, in a fixed order."""
    found = []
    for d, _, names in os.walk(src):
        found += [(f, os.path.join(d, f)) for f in names if f.endswith(exts)]
    return sorted(found)


def macros(src):
    """#define NAME "literal" in every file of src."""
    out = {}
    for _, path in sources(src, (".c", ".h")):
        for m in re.finditer(r'^#define\s+(\w+)\s+"([^"]*)"\s*$', open(path).read(), re.M):
            out[m.group(1)] = m.group(2)
    return out


def literal(arg, defs, where):
    """The string an argument stands for: a literal or a #define of one."""
    m = re.fullmatch(r'"([^"]*)"', arg)
    if m:
        return m.group(1)
    if arg in defs:
        return defs[arg]
    raise Unattributed("%s: '%s' is no string literal nor a #define of one" % (where, arg))


def derive(src):
    """The set of (group, resource, verb) the code calls."""
    defs = macros(src)
    funcs = []
    for _, path in sources(src, (".c",)):
        funcs += list(functions(path))
    by_name = {}
    for fn in funcs:
        by_name.setdefault(fn.name, []).append(fn)

    def call_sites(callee):
        for fn in funcs:
            for line, args in fn.calls(callee):
                yield fn, line, args

    def param_positions(fn, group_arg, plural_arg, where):
        try:
            return fn.params.index(group_arg), fn.params.index(plural_arg)
        except ValueError:
            raise Unattributed("%s: kube_path's group and plural ('%s', '%s') are neither "
                               "literals nor parameters" % (where, group_arg, plural_arg))

    def resources(fn):
        """(group, plural, named) of the paths fn builds; named: whether
        the path names one object (kube_path's name is not NULL)."""
        out = set()
        for line, args in fn.calls("kube_path"):
            where = fn.where(line)
            named = args[5] != "NULL"
            if args[1] in fn.params or args[4] in fn.params:
                gi, pi = param_positions(fn, args[1], args[4], where)
                for caller, cline, cargs in call_sites(fn.name):
                    cw = caller.where(cline)
                    out.add((literal(cargs[gi], defs, cw), literal(cargs[pi], defs, cw), named))
            else:
                out.add((literal(args[1], defs, where), literal(args[4], defs, where), named))
        # Helpers of the same file that build the path (leader.c's lease_path).
        for helper in by_name:
            for h in by_name[helper]:
                if h is fn or h.file != fn.file or not list(h.calls("kube_path")):
                    continue
                for line, args in fn.calls(helper):
                    for g, p, named in resources(h):
                        # A helper told "collection" by a non-zero argument
                        # builds both; the verbs say which they use.
                        out.add((g, p, None))
        return out

    def informer_resources():
        setup = by_name.get("informer_setup")
        if not setup:
            raise Unattributed("informer_setup() not found: the informers' resources are unknown")
        gi, pi = setup[0].params.index("group"), setup[0].params.index("plural")
        out = set()
        for caller, line, args in call_sites("informer_setup"):
            w = caller.where(line)
            out.add((literal(args[gi], defs, w), literal(args[pi], defs, w)))
        return out

    # The client itself builds no resource path of its own: every path
    # comes from its callers, through kube_path.
    for fn in funcs:
        if fn.file in CLIENT_FILES and fn.name != "kube_path" and (
                list(fn.calls("kube_path")) or re.search(r'"/apis?/', fn.body)):
            raise Unattributed("%s: the client builds a resource path itself" %
                               fn.where(fn.line))

    # Every call of the client must lie in a function found above: one in
    # something this reader does not take for a function would be missed.
    verb_re = re.compile(r"\b(%s)\s*\(" % "|".join(VERBS))
    for f, path in sources(src, (".c",)):
        if f not in CLIENT_FILES:
            text = strip_comments(open(path).read())
            seen = sum(len(verb_re.findall(fn.body)) for fn in funcs if fn.file == f)
            if len(verb_re.findall(text)) != seen:
                raise Unattributed("%s: a call of the client outside any function this "
                                   "check reads" % f)

    triples = set()
    for fn in funcs:
        if fn.file in CLIENT_FILES:
            continue
        for verb_fn, fixed in VERBS.items():
            for line, args in fn.calls(verb_fn):
                where = fn.where(line)
                if verb_fn in ("kube_api_request", "kube_api_watch"):
                    want = "informer_path_list" if verb_fn == "kube_api_request" else \
                        "informer_path_watch"
                    if not list(fn.calls(want)):
                        raise Unattributed("%s: %s of a path not from %s" % (where, verb_fn, want))
                    for g, p in informer_resources():
                        triples.add((g, p, "list" if want.endswith("list") else "watch"))
                    continue
                res = resources(fn)
                if not res:
                    raise Unattributed("%s: %s of a path the check cannot resolve" %
                                       (where, verb_fn))
                if fixed:
                    verbs = {fixed}
                elif verb_fn == "kube_send":
                    verbs = {METHODS[m] for m in re.findall(r'"([A-Z]+)"', args[1])}
                    if not verbs:
                        raise Unattributed("%s: kube_send's method is no literal" % where)
                else:  # kube_get
                    verbs = {"get" if named is not False else "list" for _, _, named in res}
                sub = '"/status"' in fn.body
                for g, p, _ in res:
                    for v in verbs:
                        r = p + "/status" if sub and v in ("patch", "update") else p
                        triples.add((g, r, v))
    return triples


SCOPES = ("watched", "lease", "cluster", "admission")


def read_list(path):
    """operator/api_calls.txt: 'group resource verb scope ...' per line,
    group "core" for the core API; # starts a comment. The scope says
    which role of the chart grants the call (the list's header)."""
    out = {}
    for n, raw in enumerate(open(path), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) < 4 or line[3] not in SCOPES:
            sys.exit("%s:%d: want 'group resource verb %s'" % (path, n, "|".join(SCOPES)))
        group = "" if line[0] == "core" else line[0]
        out[(group, line[1], line[2])] = line[3]
    return out


def show(t):
    return "%s %s %s" % (t[0] or "core", t[1], t[2])


def main(argv):
    if len(argv) == 3 and argv[1] == "derive":
        for t in sorted(derive(argv[2])):
            print(show(t))
        return 0
    if len(argv) == 4 and argv[1] == "check":
        try:
            code = derive(argv[2])
        except Unattributed as e:
            print("cannot attribute an API call: %s" % e)
            return 1
        listed = {t for t, scope in read_list(argv[3]).items() if scope != "admission"}
        for t in sorted(code - listed):
            print("the operator calls %s, missing from %s" % (show(t), argv[3]))
        for t in sorted(listed - code):
            print("%s lists %s, which the operator never calls" % (argv[3], show(t)))
        if code == listed:
            print("%d calls, as listed" % len(code))
        return 0 if code == listed else 1
    print(__doc__.split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
