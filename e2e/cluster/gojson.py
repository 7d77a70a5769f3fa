"""What Go's encoding/json says about bytes it is given, for the local test
cluster's decoder (decoder.py): the text of the first syntax error in a
body, the way strconv.Quote writes a string into an error, and how a JSON
string becomes a []byte (standard base64, padding required, CR and LF
skipped, "illegal base64 data at input byte N" on failure).

The kube-apiserver runs checkValid (Go's scanner) over a request body
before decoding it, so a body that is not JSON is refused with the
scanner's message, e.g. `invalid character 'x' looking for beginning of
value` or `unexpected end of JSON input`. The scanner below is a port of
src/encoding/json/scanner.go: the same states, the same messages, the
same trick of feeding a space at end of input (so "tru" ends with
`invalid character ' ' in literal true (expecting 'e')`).

Standard library only.
"""
import unicodedata

_CONTINUE, _END, _ERROR, _OTHER = 0, 1, 2, 3
_MAX_DEPTH = 10000  # encoding/json maxNestingDepth
_KEY, _VALUE, _ARRAY = 0, 1, 2  # parse states on the stack
_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t", "\v": "\\v"}
_HEX = b"0123456789abcdefABCDEF"
_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_INDEX = {c: i for i, c in enumerate(_B64)}


def _printable(ch):
    """Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols
    and the ASCII space (so U+00A0 is not printable)."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def go_quote(s):
    """strconv.Quote(s): the quoted form Go errors use for field paths and
    versions (`"spec.foo"`)."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif _printable(ch):
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif c < 0x20 or c == 0x7F:
            out.append("\\x%02x" % c)
        elif c < 0x10000:
            out.append("\\u%04x" % (0xFFFD if 0xD800 <= c < 0xE000 else c))
        else:
            out.append("\\U%08x" % c)
    out.append('"')
    return "".join(out)


def _quote_char(c):
    """encoding/json's quoteChar: a byte as the scanner names it."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    return "'" + go_quote(chr(c))[1:-1] + "'"


class _Scanner:
    """src/encoding/json/scanner.go, one byte at a time."""

    def __init__(self):
        self.step = self._begin_value
        self.stack = []
        self.err = None
        self.end_top = False

    def error(self, c, context):
        self.step = lambda c: _ERROR
        self.err = "invalid character %s %s" % (_quote_char(c), context)
        return _ERROR

    def eof(self):
        if self.err is not None:
            return _ERROR
        if self.end_top:
            return _END
        self.step(0x20)
        if self.end_top:
            return _END
        if self.err is None:
            self.err = "unexpected end of JSON input"
        return _ERROR

    def _push(self, c, state):
        self.stack.append(state)
        if len(self.stack) <= _MAX_DEPTH:
            return _OTHER
        return self.error(c, "exceeded max depth")

    def _pop(self):
        self.stack.pop()
        if not self.stack:
            self.step, self.end_top = self._end_top, True
        else:
            self.step = self._end_value

    def _begin_value_or_empty(self, c):
        if c in b" \t\r\n":
            return _OTHER
        if c == 0x5D:  # ]
            return self._end_value(c)
        return self._begin_value(c)

    def _begin_value(self, c):
        if c in b" \t\r\n":
            return _OTHER
        if c == 0x7B:  # {
            self.step = self._begin_string_or_empty
            return self._push(c, _KEY)
        if c == 0x5B:  # [
            self.step = self._begin_value_or_empty
            return self._push(c, _ARRAY)
        starts = {0x22: self._in_string, 0x2D: self._neg, 0x30: self._zero,
                  0x74: self._literal(b"rue", "true"), 0x66: self._literal(b"alse", "false"),
                  0x6E: self._literal(b"ull", "null")}
        if c in starts:
            self.step = starts[c]
            return _OTHER
        if 0x31 <= c <= 0x39:
            self.step = self._digits
            return _OTHER
        return self.error(c, "looking for beginning of value")

    def _begin_string_or_empty(self, c):
        if c in b" \t\r\n":
            return _OTHER
        if c == 0x7D:  # }
            self.stack[-1] = _VALUE
            return self._end_value(c)
        return self._begin_string(c)

    def _begin_string(self, c):
        if c in b" \t\r\n":
            return _OTHER
        if c == 0x22:
            self.step = self._in_string
            return _OTHER
        return self.error(c, "looking for beginning of object key string")

    def _end_value(self, c):
        if not self.stack:
            self.step, self.end_top = self._end_top, True
            return self._end_top(c)
        if c in b" \t\r\n":
            self.step = self._end_value
            return _OTHER
        top = self.stack[-1]
        if top == _KEY:
            if c == 0x3A:  # :
                self.stack[-1] = _VALUE
                self.step = self._begin_value
                return _OTHER
            return self.error(c, "after object key")
        if top == _VALUE:
            if c == 0x2C:  # ,
                self.stack[-1] = _KEY
                self.step = self._begin_string
                return _OTHER
            if c == 0x7D:
                self._pop()
                return _OTHER
            return self.error(c, "after object key:value pair")
        if c == 0x2C:
            self.step = self._begin_value
            return _OTHER
        if c == 0x5D:
            self._pop()
            return _OTHER
        return self.error(c, "after array element")

    def _end_top(self, c):
        if c not in b" \t\r\n":
            self.error(c, "after top-level value")  # complained about on the next byte
        return _END

    def _in_string(self, c):
        if c == 0x22:
            self.step = self._end_value
        elif c == 0x5C:  # backslash
            self.step = self._in_string_esc
        elif c < 0x20:
            return self.error(c, "in string literal")
        return _CONTINUE

    def _in_string_esc(self, c):
        if c in b'bfnrt\\/"':
            self.step = self._in_string
            return _CONTINUE
        if c == 0x75:  # u
            self.step = self._hex(4)
            return _CONTINUE
        return self.error(c, "in string escape code")

    def _hex(self, left):
        def step(c):
            if c in _HEX:
                self.step = self._hex(left - 1) if left > 1 else self._in_string
                return _CONTINUE
            return self.error(c, "in \\u hexadecimal character escape")
        return step

    def _neg(self, c):
        if c == 0x30:
            self.step = self._zero
            return _CONTINUE
        if 0x31 <= c <= 0x39:
            self.step = self._digits
            return _CONTINUE
        return self.error(c, "in numeric literal")

    def _digits(self, c):
        if 0x30 <= c <= 0x39:
            return _CONTINUE
        return self._zero(c)

    def _zero(self, c):
        if c == 0x2E:  # .
            self.step = self._dot
            return _CONTINUE
        if c in b"eE":
            self.step = self._exp
            return _CONTINUE
        return self._end_value(c)

    def _dot(self, c):
        if 0x30 <= c <= 0x39:
            self.step = self._dot_digits
            return _CONTINUE
        return self.error(c, "after decimal point in numeric literal")

    def _dot_digits(self, c):
        if 0x30 <= c <= 0x39:
            return _CONTINUE
        if c in b"eE":
            self.step = self._exp
            return _CONTINUE
        return self._end_value(c)

    def _exp(self, c):
        if c in b"+-":
            self.step = self._exp_sign
            return _CONTINUE
        return self._exp_sign(c)

    def _exp_sign(self, c):
        if 0x30 <= c <= 0x39:
            self.step = self._exp_digits
            return _CONTINUE
        return self.error(c, "in exponent of numeric literal")

    def _exp_digits(self, c):
        if 0x30 <= c <= 0x39:
            return _CONTINUE
        return self._end_value(c)

    def _literal(self, rest, word):
        """The states after the first letter of true, false or null."""
        def state(i):
            def step(c):
                if c == rest[i]:
                    self.step = state(i + 1) if i + 1 < len(rest) else self._end_value
                    return _CONTINUE
                return self.error(c, "in literal %s (expecting %s)" % (word, _quote_char(rest[i])))
            return step
        return state(0)


def syntax_error(data):
    """The message Go's checkValid gives for data (bytes), or None when
    data holds exactly one JSON value."""
    s = _Scanner()
    for c in data:
        if s.step(c) == _ERROR:
            return s.err
    if s.eof() == _ERROR:
        return s.err
    return None


def _quantum(src, si):
    """encoding/base64 decodeQuantum (StdEncoding): returns (next index,
    the 6-bit values read, error offset or None)."""
    vals = []
    while len(vals) < 4:
        if si == len(src):
            if not vals:
                return si, vals, None
            return si, vals, si - len(vals)  # padding required
        c = src[si]
        si += 1
        if c in _B64_INDEX:
            vals.append(_B64_INDEX[c])
            continue
        if c in b"\r\n":
            continue
        if c != 0x3D or len(vals) < 2:  # not '=', or '=' too early
            return si, vals, si - 1
        if len(vals) == 2:  # "==" expected, the first '=' consumed
            while si < len(src) and src[si] in b"\r\n":
                si += 1
            if si == len(src):
                return si, vals, len(src)
            if src[si] != 0x3D:
                return si, vals, si - 1
            si += 1
        while si < len(src) and src[si] in b"\r\n":
            si += 1
        return si, vals, (si if si < len(src) else None)  # trailing garbage
    return si, vals, None


def decode_base64(text):
    """A JSON string into []byte as Go's decoder does it: returns (bytes,
    None), or (None, "illegal base64 data at input byte N")."""
    src, si, out = text.encode("utf-8"), 0, bytearray()
    while si < len(src):
        si, vals, bad = _quantum(src, si)
        if bad is not None:
            return None, "illegal base64 data at input byte %d" % bad
        acc = 0
        for v in vals + [0] * (4 - len(vals)):
            acc = acc << 6 | v
        out += acc.to_bytes(3, "big")[:max(len(vals) - 1, 0)]
    return bytes(out), None
