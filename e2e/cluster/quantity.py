"""resource.Quantity as the kube-apiserver reads and writes it
(k8s.io/apimachinery/pkg/api/resource/quantity.go): which strings
ParseQuantity accepts, the error it gives for the others, word for word,
and the canonical form the server writes back ("0.5" -> "500m",
"1024Mi" -> "1Gi", "2000" -> "2k"; a spelling that is already canonical
is kept as written: "+1", "01", "1.G").

    quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
    unable to parse quantity's suffix
    unable to parse numeric part of quantity

parse() ports parseQuantityString, the suffix table and the two number
paths of ParseQuantity (an int64 mantissa with a decimal scale when it
fits; else an exact decimal rounded up to nano units, BinarySI capped at
2^63-1); str() ports CanonicalizeBytes. canonical_list() is
SetDefaults_ResourceList: each value rounded up to milli units, then
written canonically.

A JSON value reaches parse() as Quantity.UnmarshalJSON gives it to
ParseQuantity: the text between the quotes, or the number's literal, and
the decoder trims spaces first (from_json()).

Standard library only.
"""
import fractions

FORMAT_WRONG = ("quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
            "E": 18}
_DECIMAL_NAMES = {e: s for s, e in _DECIMAL.items()}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_NAMES = {e: s for s, e in _BINARY.items()}
_INT64_MAX = (1 << 63) - 1


class QuantityError(ValueError):
    """ParseQuantity's error; str() is the server's message."""


class Quantity:
    """A parsed quantity: unscaled * 10**exp, its format, and the text to
    write back when the server keeps the spelling it was given."""

    def __init__(self, unscaled, exp, fmt, text=None):
        self.unscaled, self.exp, self.format, self.text = unscaled, exp, fmt, text

    @property
    def value(self):
        return fractions.Fraction(self.unscaled) * fractions.Fraction(10) ** self.exp

    def __eq__(self, other):
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def cmp(self, other):
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def sign(self):
        return (self.value > 0) - (self.value < 0)

    def scaled_value(self, exp):
        """ceil(q / 10**exp), away from zero, as Go's ScaledValue."""
        v = self.value / fractions.Fraction(10) ** exp
        n = -(-abs(v.numerator) // v.denominator)
        return n if v >= 0 else -n

    def milli_value(self):
        return self.scaled_value(-3)

    def value_int(self):
        return self.scaled_value(0)

    def round_up(self, exp):
        """Quantity.RoundUp: rounds away from zero to 10**exp units; a
        kept spelling survives only when no rounding was needed."""
        if self.text is not None and self.exp >= exp:
            return
        self.text = None
        if self.exp < exp:
            div = 10 ** (exp - self.exp)
            n = -(-abs(self.unscaled) // div)
            self.unscaled, self.exp = (n if self.unscaled >= 0 else -n), exp

    def __str__(self):
        if self.text:
            return self.text
        if self.unscaled == 0:
            return "0"
        fmt, v = self.format, self.value
        if fmt == BINARY_SI and (-1024 < v < 1024 or v.denominator != 1):
            fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            n, times = _remove_factors(int(v), 1024)
            return str(n) + _BINARY_NAMES.get(times * 10, "")
        n, e = _remove_factors(self.unscaled, 10)
        e += self.exp
        while e % 3:
            n, e = n * 10, e - 1
        if fmt == DECIMAL_EXPONENT:
            return str(n) + ("e%d" % e if e else "")
        return str(n) + _DECIMAL_NAMES.get(e, "")

    def __repr__(self):
        return "Quantity(%r)" % str(self)


def _remove_factors(n, base):
    """removeInt64Factors: (n without trailing factors of base, count)."""
    sign, n, times = (-1 if n < 0 else 1), abs(n), 0
    while n >= base and n % base == 0:
        n, times = n // base, times + 1
    return sign * n, times


def _digits(s, i):
    while i < len(s) and "0" <= s[i] <= "9":
        i += 1
    return i


def _split(s):
    """parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = s[:1] != "-"
    pos = 1 if s[:1] in ("+", "-") else 0
    while pos < len(s) and s[pos] == "0":
        pos += 1
    if pos >= len(s):
        return positive, "0", "0", "", ""
    end = _digits(s, pos)
    num, denom = s[pos:end] or "0", ""
    if end < len(s) and s[end] == ".":
        dend = _digits(s, end + 1)
        denom, end = s[end + 1:dend], dend
    value, start = s[:end], end
    while end < len(s) and s[end] in "eEinumkKMGTP":
        end += 1
    if end < len(s) and s[end] in "+-":
        end += 1
    if _digits(s, end) < len(s):
        raise QuantityError(FORMAT_WRONG)
    return positive, value, num, denom, s[start:]


def _suffix(suf):
    """quantitySuffixer.interpret: (base, exponent, format)."""
    if suf in _DECIMAL:
        return 10, _DECIMAL[suf], DECIMAL_SI
    if suf in _BINARY:
        return 2, _BINARY[suf], BINARY_SI
    if len(suf) > 1 and suf[0] in "eE":
        rest = suf[1:]
        body = rest[1:] if rest[:1] in ("+", "-") else rest
        if body.isascii() and body.isdigit() and abs(int(rest)) <= _INT64_MAX:
            return 10, (int(rest) + (1 << 31)) % (1 << 32) - (1 << 31), DECIMAL_EXPONENT
    raise QuantityError(SUFFIX)


def _int64_path(s, positive, num, denom, base, exponent, fmt):
    """ParseQuantity's fast path: a Quantity, or None when it does not
    apply (too many digits, too small a scale, an int64 overflow)."""
    mantissa, scale = 1, 0
    if base == 10:
        scale, precision = exponent, 18 - (len(num) + len(denom))
    elif denom:
        return None
    else:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    scale -= len(denom)
    if precision < 0 or scale < -9:
        return None
    shifted = num + denom
    value = int(shifted)
    if value > _INT64_MAX:
        raise QuantityError(NUMERIC)
    if value * mantissa > _INT64_MAX:
        return None
    result = value * mantissa if positive else -value * mantissa
    if fmt == BINARY_SI:
        keep = exponent % 10 == 0 and value & 7 != 0
    else:
        keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return Quantity(result, scale, fmt, s if keep else None)


def _decimal_path(value, base, exponent, fmt):
    """ParseQuantity's inf.Dec path: exact, rounded up to nano units."""
    if not any("0" <= c <= "9" for c in value):
        raise QuantityError(NUMERIC)
    negative = value[:1] == "-"
    digits = value.lstrip("+-")
    whole, _, frac = digits.partition(".")
    unscaled, exp = int((whole + frac) or "0"), -len(frac)
    if base == 10:
        exp += exponent
    else:
        unscaled <<= exponent
    if unscaled and exp < -9:
        div = 10 ** (-9 - exp)
        unscaled, exp = -(-unscaled // div), -9
    amount = fractions.Fraction(unscaled) * fractions.Fraction(10) ** exp
    if fmt == BINARY_SI and amount > _INT64_MAX:
        unscaled, exp = _INT64_MAX, 0
    if fmt == BINARY_SI and 0 < amount < 1:
        fmt = DECIMAL_SI
    return Quantity(-unscaled if negative else unscaled, exp, fmt)


def _text(x):
    """The text ParseQuantity sees for a JSON value."""
    if isinstance(x, bool) or x is None:
        return "true" if x is True else "false" if x is False else "null"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return getattr(x, "text", None) or repr(x)
    if isinstance(x, str):
        return x
    return "{"  # an object or array: never a quantity


def parse(x):
    """ParseQuantity: a Quantity, or raises QuantityError with the
    server's message. x is a string or a JSON number; it is not trimmed."""
    if isinstance(x, Quantity):
        return x
    s = _text(x)
    if s == "":
        raise QuantityError(FORMAT_WRONG)
    if s == "0":
        return Quantity(0, 0, DECIMAL_SI, "0")
    positive, value, num, denom, suf = _split(s)
    base, exponent, fmt = _suffix(suf)
    q = _int64_path(s, positive, num, denom, base, exponent, fmt)
    return q if q is not None else _decimal_path(value, base, exponent, fmt)


def from_json(x):
    """Quantity.UnmarshalJSON: spaces around a string are trimmed."""
    return parse(x.strip(" \t\n\r\v\f") if isinstance(x, str) else x)


def value(x):
    """The exact value of a quantity (a Fraction), or None if x is not one."""
    try:
        return from_json(x).value
    except QuantityError:
        return None


def canonical(x):
    """x as the server writes it back; x itself when it is not a quantity."""
    try:
        return str(from_json(x))
    except QuantityError:
        return x


def canonical_list(resources):
    """SetDefaults_ResourceList, in place: every quantity rounded up to
    milli units, then written canonically. None is left alone."""
    for name, v in list((resources or {}).items()):
        try:
            q = from_json(v)
        except QuantityError:
            continue
        q.round_up(-3)
        resources[name] = str(q)
    return resources


def of(amount, fmt=DECIMAL_SI):
    """A Quantity of an exact amount (a Fraction or an int) in format fmt,
    as resource.NewQuantity / Quantity.Add leave it: written canonically.
    An amount finer than nano units is rounded up to them, as an
    inf.Dec-backed Quantity would be."""
    amount = fractions.Fraction(amount)
    exp = 0
    while amount.denominator != 1 and exp > -9:
        amount *= 10
        exp -= 1
    n = amount.numerator // amount.denominator
    if n * amount.denominator != amount.numerator:
        n += 1
    return Quantity(n, exp, fmt)


def add(a, b):
    """Quantity.Add: the sum, in a's format (b's when a is zero, as Go's
    zero Quantity takes the other's format)."""
    fmt = a.format if a.unscaled else b.format
    return of(a.value + b.value, fmt)


def sub(a, b):
    """Quantity.Sub: the difference, in a's format."""
    fmt = a.format if a.unscaled else b.format
    return of(a.value - b.value, fmt)
