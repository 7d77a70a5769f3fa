"""metav1.Time and metav1.MicroTime as the kube-apiserver reads and writes
them, for the local test cluster's decoder (decoder.py).

A Time is read with Go's time.Parse(time.RFC3339, s), which accepts any
number of fractional digits (and a comma for the point, and a one-digit
hour), and is written in UTC to the second: "2006-01-02T15:04:05Z". A
MicroTime is read with the layout "2006-01-02T15:04:05.000000Z07:00",
which wants exactly six fractional digits, and is written in UTC with
six. A string that does not parse is refused with Go's *time.ParseError
text, e.g.

    parsing time "2026-01-02T03:04:05.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"
    parsing time "2026-13-01T00:00:00Z": month out of range

parse() below is a port of the generic parse loop of src/time/format.go
for these two layouts only (the RFC 3339 fast path accepts a subset of
what the loop accepts, so the loop alone decides). It works on the UTF-8
bytes, as Go does, so offsets and quoting match for any input.

Standard library only.
"""
RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

# The layouts as Go's nextStdChunk splits them: (literal prefix, element).
_CHUNKS = {
    RFC3339: [("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"),
              (":", "05"), ("", "Z07:00"), ("", None)],
    RFC3339_MICRO: [("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"),
                    (":", "05"), ("", ".000000"), ("", "Z07:00"), ("", None)],
}
_ZERO_INSTANT = -62135596800  # 0001-01-01T00:00:00Z: Go's zero Time


class TimeError(Exception):
    """Go's *time.ParseError; str() is its Error() text."""

    def __init__(self, layout, value, layout_elem, value_elem, message=""):
        if message:
            text = "parsing time " + _quote(value) + message
        else:
            text = "parsing time %s as %s: cannot parse %s as %s" % (
                _quote(value), _quote(layout.encode()), _quote(value_elem),
                _quote(layout_elem.encode()))
        super().__init__(text)


def _quote(b):
    """time's own quote(): bytes >= 0x80 and controls as \\xNN."""
    out = ['"']
    for c in b:
        if c >= 0x80 or c < 0x20:
            out.append("\\x%02x" % c)
        elif c in b'"\\':
            out.append("\\" + chr(c))
        else:
            out.append(chr(c))
    return "".join(out) + '"'


def _digit(b, i):
    return i < len(b) and 0x30 <= b[i] <= 0x39


def _getnum(b, fixed):
    """time.getnum: one or two digits (two when fixed); (n, rest, ok)."""
    if not _digit(b, 0):
        return 0, b, False
    if not _digit(b, 1):
        if fixed:
            return 0, b, False
        return b[0] - 0x30, b[1:], True
    return (b[0] - 0x30) * 10 + b[1] - 0x30, b[2:], True


def _atoi(b):
    """time.atoi: optional sign, then digits only; (n, ok)."""
    neg = b[:1] == b"-"
    if b[:1] in (b"-", b"+"):
        b = b[1:]
    i = 0
    while _digit(b, i):
        i += 1
    if i < len(b) or i > 18:
        return 0, False
    n = int(b[:i] or b"0")
    return (-n if neg else n), True


def _nanos(b, nbytes):
    """time.parseNanoseconds: (nsec, range error, ok)."""
    if b[:1] not in (b".", b","):
        return 0, "", False
    nbytes = min(nbytes, 10)
    ns, ok = _atoi(b[1:nbytes])
    if not ok:
        return 0, "", False
    if ns < 0:
        return 0, "fractional second", True
    return ns * 10 ** (10 - nbytes), "", True


def _zone(b):
    """The Z07:00 element: (offset seconds or None for Z, rest, range
    error, ok)."""
    if b[:1] == b"Z":
        return None, b[1:], "", True
    if len(b) < 6 or b[3] != 0x3A:
        return 0, b, "", False
    sign, hh, mm, rest = b[:1], b[1:3], b[4:6], b[6:]
    hr, _, ok = _getnum(hh, True)
    mn = 0
    if ok:
        mn, _, ok = _getnum(mm, True)
    rng = "time zone offset minute" if mn > 60 else "time zone offset hour" if hr > 24 else ""
    if sign not in (b"+", b"-"):
        ok = False
    off = (hr * 60 + mn) * 60
    return (-off if sign == b"-" else off), rest, rng, ok


def _element(std, b, fields, next_std):
    """One layout element; stores into fields, returns (rest, range
    error, ok)."""
    if std == "2006":
        if len(b) < 4 or not _digit(b, 0):
            return b, "", False
        fields["year"], ok = _atoi(b[:4])
        return b[4:], "", ok
    if std in ("01", "02", "04"):
        n, rest, ok = _getnum(b, True)
        name = {"01": "month", "02": "day", "04": "minute"}[std]
        fields[name] = n
        bad = ok and (not 1 <= n <= 12 if std == "01" else n >= 60 if std == "04" else False)
        return rest, (name if bad else ""), ok
    if std == "15":
        fields["hour"], rest, ok = _getnum(b, False)
        return rest, ("hour" if fields["hour"] >= 24 else ""), ok
    if std == "05":
        return _seconds(b, fields, next_std)
    if std == ".000000":
        if len(b) < 7:
            return b, "", False
        fields["nsec"], rng, ok = _nanos(b, 7)
        return b[7:], rng, ok
    fields["offset"], rest, rng, ok = _zone(b)
    return rest, rng, ok


def _seconds(b, fields, next_std):
    """The 05 element, and a fraction the layout does not ask for."""
    fields["sec"], rest, ok = _getnum(b, True)
    if not ok:
        return rest, "", False
    if fields["sec"] >= 60:
        return rest, "second", True
    if len(rest) >= 2 and rest[:1] in (b".", b",") and _digit(rest, 1) \
            and next_std != ".000000":
        n = 2
        while _digit(rest, n):
            n += 1
        fields["nsec"], rng, ok = _nanos(rest, n)
        return rest[n:], rng, ok
    return rest, "", True


def _days_in(month, year):
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _civil_from_days(z):
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


def parse(value, micro=False):
    """Parses value (str) as Go's time.Parse does with the RFC 3339 layout
    (micro: the MicroTime layout). Returns (seconds since the epoch in
    UTC, nanoseconds); raises TimeError with Go's message."""
    layout = RFC3339_MICRO if micro else RFC3339
    chunks, b = _CHUNKS[layout], value.encode("utf-8")
    raw = b
    f = {"year": 0, "month": 1, "day": 1, "hour": 0, "minute": 0, "sec": 0, "nsec": 0,
         "offset": None}
    for i, (prefix, std) in enumerate(chunks):
        if not b.startswith(prefix.encode()):
            raise TimeError(layout, raw, prefix, b)
        b = b[len(prefix):]
        if std is None:
            if b:
                raise TimeError(layout, raw, "", b, ": extra text: " + _quote(b))
            break
        hold = b
        b, rng, ok = _element(std, b, f, chunks[i + 1][1])
        if rng:
            raise TimeError(layout, raw, std, b, ": %s out of range" % rng)
        if not ok:
            raise TimeError(layout, raw, std, hold)
    if not 1 <= f["day"] <= _days_in(f["month"], f["year"]):
        raise TimeError(layout, raw, "", b, ": day out of range")
    secs = (_days_from_civil(f["year"], f["month"], f["day"]) * 86400 + f["hour"] * 3600
            + f["minute"] * 60 + f["sec"] - (f["offset"] or 0))
    return secs, f["nsec"]


def is_zero(secs, nsec):
    """Go's Time.IsZero: such a time is written as null."""
    return secs == _ZERO_INSTANT and nsec == 0


def format_utc(secs, nsec, micro=False):
    """The stored form: Time.MarshalJSON (RFC 3339, seconds) or
    MicroTime.MarshalJSON (six digits, truncated), both in UTC."""
    days, rem = divmod(secs, 86400)
    y, m, d = _civil_from_days(days)
    year = ("-%04d" % -y) if y < 0 else "%04d" % y
    text = "%s-%02d-%02dT%02d:%02d:%02d" % (year, m, d, rem // 3600, rem // 60 % 60, rem % 60)
    if micro:
        text += ".%06d" % (nsec // 1000)
    return text + "Z"
