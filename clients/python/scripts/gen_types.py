#!/usr/bin/env python3
"""Writes agentd_client/_types.py, the protocol's shapes as TypedDicts, from the schema:
agent-proto/schema/openrpc.json (the methods' results and the types they use) and
agent-proto/schema/event.schema.json (the `event` payload).

    python3 clients/python/scripts/gen_types.py          # rewrite
    python3 clients/python/scripts/gen_types.py --check  # exit 1 if _types.py is stale
    AGENTD_SCHEMA_DIR=dir ... gen_types.py               # read the schema elsewhere

What it writes: one name per schema definition (an object is a TypedDict, a set of strings
a `Literal`, a union of tagged objects a `Union` of one TypedDict per tag: `TextBlock`,
`TextDeltaEvent`, ...), `Event` (every event: `EventBase`'s seq, agentId and at, plus the
fields of its type), `ErrorKind`, and `RESULT_TYPES`, the name of each method's result
type. Keys the schema does not require are optional (`total=False`); Python 3.9 has no
`NotRequired`, so a TypedDict with both kinds of keys is a class of the optional ones on
a base class of the required ones (`_AgentRequired`). A shape this script cannot name
(an object nested in a field) is an error, not a silent `Any`: name it in the Rust types
or teach this script.
"""

import json
import keyword
import os
import sys
import textwrap
from typing import Any, Dict, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "agentd_client")
TARGET = os.path.join(PACKAGE, "_types.py")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SCHEMA_DIR = os.environ.get("AGENTD_SCHEMA_DIR") or os.path.join(REPO, "agent-proto", "schema")

# Keywords that only annotate a schema (schemars puts a field's doc beside its `$ref`).
ANNOTATIONS = {"description", "default", "title", "examples", "deprecated", "readOnly", "writeOnly",
               "format", "minimum", "maximum"}
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class SchemaError(Exception):
    """The schema has a shape this script does not know how to write."""


def pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


def ref_name(ref: str) -> str:
    for prefix in ("#/components/schemas/", "#/$defs/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    raise SchemaError("a $ref outside the schema's definitions: %s" % ref)


def only_annotations(schema: Any) -> bool:
    return schema is True or (isinstance(schema, dict) and all(k in ANNOTATIONS for k in schema))


def literals(schema: Dict[str, Any]) -> Optional[List[Any]]:
    """The values of a schema that is a fixed set of strings (`enum`, `const`, or a `oneOf`
    of those), else None."""
    if "const" in schema:
        return [schema["const"]]
    if "enum" in schema:
        return list(schema["enum"])
    members = schema.get("oneOf") or schema.get("anyOf")
    if members and not any("properties" in m for m in members):
        out: List[Any] = []
        for m in members:
            values = literals(m)
            if values is None:
                return None
            out += values
        return out
    return None


def literal(values: List[Any]) -> str:
    return "Literal[%s]" % ", ".join(json.dumps(v) for v in values)


class Generator:
    def __init__(self, openrpc: Dict[str, Any], events: Dict[str, Any]) -> None:
        self.openrpc = openrpc
        self.definitions: Dict[str, Any] = dict(openrpc.get("components", {}).get("schemas", {}))
        for name, schema in events.get("$defs", {}).items():
            self.definitions.setdefault(name, schema)
        # The event document's root is the `Event` of the methods' document, described
        # for its readers: take it (with its description) as the one `Event`.
        root = {k: v for k, v in events.items() if k not in ("$defs", "$schema", "$id", "title")}
        self.definitions["Event"] = root
        if "x-error-kinds" in openrpc:
            self.definitions["ErrorKind"] = openrpc["x-error-kinds"]
        self.results: Dict[str, str] = {}
        for method in openrpc.get("methods", []):
            result = (method.get("result") or {}).get("schema", {})
            if isinstance(result, dict) and set(result) - ANNOTATIONS == {"$ref"}:
                self.results[method["name"]] = ref_name(result["$ref"])
            else:
                name = pascal(method["name"]) + "Result"
                if name in self.definitions:
                    raise SchemaError("%s: the inline result's name %s is taken" % (method["name"], name))
                self.definitions[name] = result
                self.results[method["name"]] = name
        # name -> (the names it needs defined first, its source)
        self.decls: Dict[str, Tuple[Set[str], str]] = {}
        self.order: List[str] = []

    # Type expressions -------------------------------------------------------------------

    def expr(self, schema: Any, deps: Set[str], where: str) -> str:
        """The annotation of a field (or an alias) of this schema; names it refers to go
        into `deps`."""
        if only_annotations(schema) or schema == {}:
            return "Any"
        if "$ref" in schema:
            if set(schema) - ANNOTATIONS != {"$ref"}:
                raise SchemaError("%s: a $ref with constraints beside it" % where)
            name = ref_name(schema["$ref"])
            if name not in self.definitions:
                raise SchemaError("%s: $ref to an unknown %s" % (where, name))
            deps.add(name)
            return name
        values = literals(schema)
        if values is not None:
            return literal(values)
        members = schema.get("oneOf") or schema.get("anyOf")
        if members is not None:
            if any("properties" in m for m in members):
                raise SchemaError("%s: a union of objects inside a field: make it a definition" % where)
            return self.union([self.expr(m, deps, where) for m in members])
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.union([self.expr(dict(schema, type=k), deps, where) for k in kind])
        if kind in SCALARS:
            return SCALARS[kind]
        if kind == "array":
            return "List[%s]" % self.expr(schema.get("items", True), deps, where + "[]")
        if kind == "object" or kind is None:
            if schema.get("properties"):
                raise SchemaError("%s: an object nested in a field: make it a definition" % where)
            extra = schema.get("additionalProperties", True)
            return "Dict[str, %s]" % ("Any" if extra in (True, False) else self.expr(extra, deps, where + "{}"))
        raise SchemaError("%s: unknown type %r" % (where, kind))

    @staticmethod
    def union(exprs: List[str]) -> str:
        unique: List[str] = []
        for e in exprs:
            if e not in unique:
                unique.append(e)
        if "Any" in unique:
            return "Any"
        rest = [e for e in unique if e != "None"]
        inner = rest[0] if len(rest) == 1 else "Union[%s]" % ", ".join(rest)
        return "Optional[%s]" % inner if "None" in unique else inner

    # Declarations -----------------------------------------------------------------------

    def declare(self, name: str, deps: Set[str], source: str) -> None:
        if name in self.decls:
            raise SchemaError("two types named %s" % name)
        if not name.isidentifier() or keyword.iskeyword(name):
            raise SchemaError("%r is not a Python name" % name)
        self.decls[name] = (deps, source)

    def typed_dict(self, name: str, schema: Dict[str, Any], base: Optional[str] = None,
                   inherited: Tuple[str, ...] = (), tag_first: bool = False) -> None:
        """A TypedDict of an object schema (on `base`, whose keys are `inherited`); a tagged
        union's member lists its `type` first."""
        properties: Dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        deps: Set[str] = {base} if base else set()
        fields: Dict[bool, List[str]] = {True: [], False: []}
        keys = list(properties)
        if tag_first:
            keys.sort(key=lambda k: k != "type")
        for key in keys:
            prop = properties[key]
            if not key.isidentifier() or keyword.iskeyword(key):
                raise SchemaError("%s.%s is not a Python name: write it with TypedDict's call form" % (name, key))
            if key in inherited:
                continue
            annotation = self.expr(prop, deps, "%s.%s" % (name, key))
            description = prop.get("description") if isinstance(prop, dict) else None
            fields[key in required].append(comment(description, "    ") + "    %s: %s" % (key, annotation))
        parent = base or "TypedDict"
        doc = docstring(schema.get("description"))
        if fields[True] and fields[False]:
            first = "_%sRequired" % name
            self.declare(first, set(deps), class_source(first, parent, None, fields[True]))
            self.declare(name, {first}, class_source(name, first + ", total=False", doc, fields[False]))
        elif fields[False]:
            self.declare(name, deps, class_source(name, parent + ", total=False", doc, fields[False]))
        else:
            self.declare(name, deps, class_source(name, parent, doc, fields[True]))

    def alias(self, name: str, schema: Any, value: str, deps: Set[str]) -> None:
        lines = []
        if isinstance(schema, dict):
            lines.append(comment(schema.get("description"), ""))
            for member in schema.get("oneOf") or schema.get("anyOf") or []:
                if isinstance(member, dict) and "const" in member and member.get("description"):
                    lines.append(comment("%s: %s" % (json.dumps(member["const"]), member["description"]), "", "  "))
        self.declare(name, deps, "%s%s = %s\n" % ("".join(lines), name, wrap(value, len(name) + 3)))

    def tagged_union(self, name: str, schema: Dict[str, Any]) -> None:
        """A `oneOf` of objects told apart by their `type` const: one TypedDict per member,
        named after its tag, and `name` their Union. Properties beside the `oneOf` (the
        event's seq, agentId, at) are `<name>Base`, every member's base class."""
        base = None
        inherited: Tuple[str, ...] = ()
        if schema.get("properties"):
            base = name + "Base"
            common = {"description": "The fields every %s has." % name, "properties": schema["properties"],
                      "required": schema.get("required", [])}
            self.typed_dict(base, common)
            inherited = tuple(schema["properties"])
        members = []
        for member in schema["oneOf"]:
            tag = member.get("properties", {}).get("type", {}).get("const")
            if not isinstance(tag, str):
                raise SchemaError("%s: a member without a `type` const" % name)
            member_name = pascal(tag) + name
            self.typed_dict(member_name, member, base, inherited, tag_first=True)
            members.append(member_name)
        self.alias(name, {"description": schema.get("description")}, "Union[%s]" % ", ".join(members), set(members))

    def definition(self, name: str, schema: Any) -> None:
        where = name
        if isinstance(schema, dict) and "oneOf" in schema and any("properties" in m for m in schema["oneOf"]):
            self.tagged_union(name, schema)
        elif isinstance(schema, dict) and literals(schema) is None and (
                "properties" in schema or (schema.get("type") == "object" and "additionalProperties" not in schema)):
            self.typed_dict(name, schema)
        else:
            deps: Set[str] = set()
            self.alias(name, schema, self.expr(schema, deps, where), deps)

    def emit(self, name: str, visiting: List[str]) -> None:
        """Puts `name` after the names it needs (a type used before its definition would
        fail at import)."""
        if name in self.order:
            return
        if name in visiting:
            raise SchemaError("types that contain each other: %s" % " -> ".join(visiting + [name]))
        deps, _ = self.decls[name]
        for dep in sorted(deps):
            self.emit(dep, visiting + [name])
        self.order.append(name)

    def generate(self) -> str:
        for name, schema in self.definitions.items():
            self.definition(name, schema)
        for name in self.decls:
            self.emit(name, [])
        public = sorted(n for n in self.decls if not n.startswith("_"))
        info = self.openrpc.get("info", {})
        out = [HEADER % (info.get("title", "agentd"), info.get("version", ""))]
        out += ["\n\n" + self.decls[name][1] for name in self.order]
        out.append("\n\n# The type of each method's result, by method name.\n")
        out.append("RESULT_TYPES: Dict[str, str] = {\n")
        out += ['    "%s": "%s",\n' % (m, t) for m, t in self.results.items()]
        out.append("}\n")
        out.append("\n__all__ = [\n")
        out += ['    "%s",\n' % n for n in public + ["RESULT_TYPES"]]
        out.append("]\n")
        return "".join(out)


HEADER = '''"""The protocol's shapes as TypedDicts: what the methods return and what events carry.
GENERATED by scripts/gen_types.py from agent-proto/schema (%s %s): do not edit by hand.

At run time these are plain dicts (a TypedDict only informs type checkers), and the
daemon may add keys in a later version: ignore the ones you do not know.
`RESULT_TYPES` names the type of each method's result."""

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union
'''


def comment(text: Optional[str], indent: str, hang: str = "", width: int = 100) -> str:
    """`text` as `#` lines (its own line breaks kept, long lines wrapped); lines after the
    first indented by `hang`."""
    if not text:
        return ""
    out = []
    for i, line in enumerate(text.strip().split("\n")):
        prefix = "%s# %s" % (indent, hang if i > 0 else "")
        pieces = textwrap.wrap(line, width - len(prefix), break_long_words=False, break_on_hyphens=False)
        for j, piece in enumerate(pieces or [""]):
            out.append(((prefix if j == 0 else "%s# %s" % (indent, hang)) + piece).rstrip())
    return "\n".join(out) + "\n"


def docstring(text: Optional[str]) -> Optional[str]:
    if not text:
        return None
    body = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    body = "\n".join(("    " + line).rstrip() for line in body.split("\n")).lstrip()
    if "\n" in body:
        return '    """%s\n    """' % body
    return '    """%s"""' % body


def class_source(name: str, bases: str, doc: Optional[str], fields: List[str]) -> str:
    parts = [doc] if doc else []
    if fields:
        parts.append("\n".join(fields))
    elif not parts:
        parts.append("    pass")
    return "class %s(%s):\n%s\n" % (name, bases, "\n\n".join(parts))


def wrap(value: str, column: int, width: int = 100) -> str:
    """`Union[a, b, ...]` or `Literal[...]`, one member a line when it is too long for one."""
    if column + len(value) <= width or not value.endswith("]"):
        return value
    head, _, inner = value.partition("[")
    members = inner[:-1].split(", ")
    return "%s[\n%s\n]" % (head, "\n".join("    %s," % m for m in members))


def read(name: str) -> Dict[str, Any]:
    path = os.path.join(SCHEMA_DIR, name)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        print("no %s: the schema is generated in agent-proto; set AGENTD_SCHEMA_DIR to read it elsewhere" % path,
              file=sys.stderr)
        raise SystemExit(1)


def generate() -> str:
    return Generator(read("openrpc.json"), read("event.schema.json")).generate()


def main() -> int:
    try:
        text = generate()
    except SchemaError as e:
        print("gen_types.py: %s" % e, file=sys.stderr)
        return 1
    if "--check" in sys.argv[1:]:
        try:
            with open(TARGET, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if not same:
            print("%s differs from what the schema gives: run %s" % (TARGET, os.path.relpath(__file__)),
                  file=sys.stderr)
            return 1
        return 0
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
