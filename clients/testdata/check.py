"""The checks the Python scripts share. Each prints "ok NAME" or "not ok NAME: what
differed"; clients_test.go fails the test on the second, and on a script that does
not print "done" at its end."""
import sys
import traceback

# The fields Redis 7's CLIENT INFO has in every version from 7.0 (7.0.15 is what
# Debian ships and the suite checks them on): clients parse them by name.
CLIENT_INFO_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
                      "multi", "qbuf", "qbuf-free", "argv-mem", "obl", "oll", "omem", "tot-mem", "events",
                      "cmd", "user", "redir", "resp"]


def plain(v):
    """v with bytes decoded and exceptions as {'error': text}, to compare with literals."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return [plain(e) for e in v]
    if isinstance(v, dict):
        return {plain(k): plain(e) for k, e in v.items()}
    if isinstance(v, Exception):
        return {"error": str(v)}
    return v


def report(name, ok, detail):
    if len(detail) > 800:  # one line a check, however long the values
        detail = detail[:800] + "..."
    print(("ok %s" % name) if ok else ("not ok %s: %s" % (name, detail)), flush=True)


def eq(name, fn, want):
    """fn()'s value equals want (after plain)."""
    try:
        got = plain(fn())
    except Exception as e:  # a check's failure, not the script's
        report(name, False, "raised %r, want %r" % (e, want))
        return
    report(name, got == want, "got %r, want %r" % (got, want))


def that(name, fn, pred, what):
    """pred holds for fn()'s value."""
    try:
        got = fn()
    except Exception as e:
        report(name, False, "raised %r, want %s" % (e, what))
        return
    report(name, pred(got), "got %r, want %s" % (plain(got), what))


def raises(name, fn, cls, want):
    """fn() raises cls with the text want."""
    try:
        got = fn()
    except cls as e:
        report(name, str(e) == want, "raised %r, want %r" % (str(e), want))
        return
    except Exception as e:
        report(name, False, "raised %r, want %s(%r)" % (e, cls.__name__, want))
        return
    report(name, False, "answered %r, want %s(%r)" % (plain(got), cls.__name__, want))


def main(fn):
    """Runs fn, then prints "done"; an exception fails the script."""
    try:
        fn()
    except Exception:
        print("not ok script: " + traceback.format_exc().replace("\n", " | "), flush=True)
        sys.exit(1)
    print("done", flush=True)
