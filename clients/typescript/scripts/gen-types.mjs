// Generates TypeScript types from the protocol's machine-readable schema:
// agent-proto/schema/openrpc.json (methods, params, results, error kinds) and
// agent-proto/schema/event.schema.json (the `event` payload), into src/generated/schema.ts.
//
//   npm run gen-types                      (from clients/typescript)
//   AGENTD_SCHEMA_DIR=dir GEN_TYPES_OUT=file npm run gen-types
//
// What it writes: one type per schema definition (Agent, Message, Block, ...), `Event` (the
// union of every event type), `ErrorKind`, and per method `<Method>Params` /
// `<Method>Result` with a `GeneratedMethods` map (name -> {params, result}), and
// `GENERATED_METHOD_NAMES`, the methods a client calls by name in the table's order. Objects get no
// index signature; the daemon may still add fields (ignore them), as the protocol says.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import { compile } from "json-schema-to-typescript";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const schemaDir = process.env.AGENTD_SCHEMA_DIR ?? path.resolve(root, "..", "..", "agent-proto", "schema");
const outFile = process.env.GEN_TYPES_OUT ?? path.join(root, "src", "generated", "schema.ts");

function read(name) {
  const file = path.join(schemaDir, name);
  if (!fs.existsSync(file)) {
    console.error(`no ${file}: the schema is generated in agent-proto (issue 15 §1); set AGENTD_SCHEMA_DIR to read it elsewhere`);
    process.exit(1);
  }
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

const openrpc = read("openrpc.json");
const eventSchema = read("event.schema.json");

const localRef = (ref) =>
  ref.replace(/^#\/components\/schemas\//, "#/definitions/").replace(/^#\/\$defs\//, "#/definitions/");

/** Keywords that only annotate a schema (schemars puts a field's doc beside its `$ref`). */
const ANNOTATIONS = new Set(["description", "default", "title", "examples", "deprecated", "readOnly", "writeOnly"]);
/** Keywords whose value is a map of name -> schema. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "definitions", "$defs"]);
/** Keywords whose value is data, not a schema. */
const DATA = new Set(["enum", "const", "default", "examples", "required"]);

const onlyAnnotations = (schema) => Object.keys(schema).every((k) => ANNOTATIONS.has(k));

/**
 * Prepares a schema of either document for json-schema-to-typescript:
 * - `$ref`s point to `#/definitions/<Name>`;
 * - a `$ref` with only annotations beside it becomes the bare `$ref` (else the compiler
 *   copies the referenced type under a numbered name, `Message1`, or inlines it);
 * - a schema that allows anything (`true`, `{}`, only a description) is `unknown` (else
 *   the compiler makes it an object, where any JSON value is meant: `importAgent` data,
 *   a tool call's `arguments`).
 */
function rewriteRefs(schema) {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (schema === true) return { tsType: "unknown" };
  if (schema === null || typeof schema !== "object") return schema;
  if (typeof schema.$ref === "string" && Object.keys(schema).every((k) => k === "$ref" || ANNOTATIONS.has(k))) {
    return { $ref: localRef(schema.$ref) };
  }
  if (onlyAnnotations(schema)) {
    return schema.description === undefined
      ? { tsType: "unknown" }
      : { description: schema.description, tsType: "unknown" };
  }
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref" && typeof value === "string") {
      out.$ref = localRef(value);
    } else if (key === "$schema" || key === "$id") {
      continue;
    } else if (DATA.has(key)) {
      out[key] = value;
    } else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === "object") {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, rewriteRefs(s)]));
    } else {
      out[key] = rewriteRefs(value);
    }
  }
  return out;
}

const pascal = (name) => name[0].toUpperCase() + name.slice(1);

const definitions = {};
for (const [name, schema] of Object.entries(openrpc.components?.schemas ?? {})) {
  definitions[name] = rewriteRefs(schema);
}
for (const [name, schema] of Object.entries(eventSchema.$defs ?? {})) {
  definitions[name] ??= rewriteRefs(schema);
}
const { $defs: _defs, ...eventRoot } = eventSchema;
{
  // The common fields (seq, agentId, at) sit beside the `oneOf` of the types; as an
  // intersection they are kept on every member.
  const { oneOf, anyOf, properties, required, description } = rewriteRefs(eventRoot);
  definitions.EventBase = { title: "EventBase", type: "object", properties, required };
  definitions.Event = {
    title: "Event",
    description,
    allOf: [{ $ref: "#/definitions/EventBase" }, { oneOf: oneOf ?? anyOf }],
  };
}
if (openrpc["x-error-kinds"] !== undefined) {
  definitions.ErrorKind = { ...rewriteRefs(openrpc["x-error-kinds"]), title: "ErrorKind" };
}

const methodLines = [];
for (const method of openrpc.methods ?? []) {
  const base = pascal(method.name);
  const properties = {};
  const required = [];
  for (const param of method.params ?? []) {
    properties[param.name] = rewriteRefs({ ...param.schema, ...(param.description ? { description: param.description } : {}) });
    if (param.required) required.push(param.name);
  }
  definitions[`${base}Params`] = {
    title: `${base}Params`,
    type: "object",
    properties,
    required,
    additionalProperties: false,
  };
  // A result that is a named schema is that type; an inline one gets `<Method>Result`.
  const result = rewriteRefs(method.result?.schema ?? {});
  const named = Object.keys(result).length === 1 && typeof result.$ref === "string"
    ? result.$ref.replace(/^#\/definitions\//, "")
    : undefined;
  let resultType = named;
  if (resultType === undefined) {
    resultType = definitions[`${base}Result`] === undefined ? `${base}Result` : `${base}MethodResult`;
    definitions[resultType] = { ...result, title: resultType };
  }
  methodLines.push(`  ${JSON.stringify(method.name)}: { params: ${base}Params; result: ${resultType} };`);
}

const combined = {
  title: "AgentdSchema",
  type: "object",
  additionalProperties: false,
  properties: {},
  definitions,
};

let ts = await compile(combined, "AgentdSchema", {
  additionalProperties: false,
  unreachableDefinitions: true,
  strictIndexSignatures: true,
  bannerComment: `// GENERATED by scripts/gen-types.mjs from agent-proto/schema (${openrpc.info?.title ?? "agentd"} ${openrpc.info?.version ?? ""}). Do not edit: run \`npm run gen-types\`.`,
  style: { singleQuote: false },
});
// The root the compiler needs is no type of the protocol.
ts = ts.replace(/^export interface AgentdSchema \{\}\n/m, "");
ts += `\n/** Every method of the schema with its params and result. */\nexport interface GeneratedMethods {\n${methodLines.join("\n")}\n}\n`;
// The methods a client calls by name, in the table's order: all but the subscription's pair
// (a method with `x-subscription` and the one it names to end it), which `Client.events` wraps.
const subscriptionMethods = new Set();
for (const method of openrpc.methods ?? []) {
  if (method["x-subscription"] !== undefined) {
    subscriptionMethods.add(method.name);
    subscriptionMethods.add(method["x-subscription"].unsubscribe);
  }
}
const callable = (openrpc.methods ?? []).map((m) => m.name).filter((name) => !subscriptionMethods.has(name));
ts += `\n/** Every method of the schema a client calls by name (all but the subscription's). */\nexport const GENERATED_METHOD_NAMES = [\n${callable.map((n) => `  ${JSON.stringify(n)},`).join("\n")}\n] as const;\n`;
fs.mkdirSync(path.dirname(outFile), { recursive: true });
fs.writeFileSync(outFile, ts);
console.log(`wrote ${outFile}: ${Object.keys(definitions).length} types, ${methodLines.length} methods`);
