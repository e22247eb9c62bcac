"""Checks a JSON value against a type of agentd_client._types, all the way down: every key
a TypedDict requires is there, no key it does not know is (the daemon of this tree must
send exactly its schema), and every value has its field's type."""

import sys
from typing import Any, List, Literal, Union, get_args, get_origin, get_type_hints

if sys.version_info >= (3, 10):
    from typing import is_typeddict
else:

    def is_typeddict(tp: Any) -> bool:
        return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")

SCALARS = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", type(None): "null"}


def mismatches(value: Any, tp: Any, path: str = "$") -> List[str]:
    """What differs between `value` and `tp`, one line per difference (none: it conforms)."""
    if tp is Any:
        return []
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return ["%s: %r is not an object (%s)" % (path, value, tp.__name__)]
        hints = get_type_hints(tp)
        out = ["%s: %s lacks %r" % (path, tp.__name__, k) for k in sorted(tp.__required_keys__ - value.keys())]
        out += ["%s: %s has no key %r" % (path, tp.__name__, k) for k in sorted(value.keys() - hints.keys())]
        for key in sorted(value.keys() & hints.keys()):
            out += mismatches(value[key], hints[key], "%s.%s" % (path, key))
        return out
    origin = get_origin(tp)
    if origin is Literal:
        return [] if value in get_args(tp) else ["%s: %r is not one of %s" % (path, value, get_args(tp))]
    if origin is Union:
        members = get_args(tp)
        # A tagged union: the member of the value's `type`, for a message that says why.
        if isinstance(value, dict) and "type" in value:
            for member in members:
                if is_typeddict(member) and get_type_hints(member).get("type") == Literal[value["type"]]:
                    return mismatches(value, member, path)
        if any(not mismatches(value, m, path) for m in members):
            return []
        return ["%s: %r matches none of %s" % (path, value, tp)]
    if origin is list:
        if not isinstance(value, list):
            return ["%s: %r is not an array" % (path, value)]
        (item,) = get_args(tp)
        return [m for i, v in enumerate(value) for m in mismatches(v, item, "%s[%d]" % (path, i))]
    if origin is dict:
        if not isinstance(value, dict):
            return ["%s: %r is not an object" % (path, value)]
        _, item = get_args(tp)
        return [m for k, v in value.items() for m in mismatches(v, item, "%s[%r]" % (path, k))]
    if tp in SCALARS:
        if tp is float:
            good = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif tp is int:
            good = isinstance(value, int) and not isinstance(value, bool)
        else:
            good = isinstance(value, tp)
        return [] if good else ["%s: %r is not %s" % (path, value, SCALARS[tp])]
    raise TypeError("%s: no check for the type %r" % (path, tp))
