// Fails when the committed src/generated/ is not what scripts/gen-types.mjs makes of the
// schema (agent-proto/schema/*.json, generated from the Rust types): the client's types
// must follow the contract. Generates into a temporary file and compares.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const generatedDir = path.join(root, "src", "generated");
const out = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-client-gen-"));
try {
  const fresh = path.join(out, "schema.ts");
  execFileSync(process.execPath, [path.join(root, "scripts", "gen-types.mjs")], {
    env: { ...process.env, GEN_TYPES_OUT: fresh },
    stdio: ["ignore", "ignore", "inherit"],
  });
  // The generator writes exactly one file: anything else in src/generated/ is stale too.
  const committed = fs.existsSync(generatedDir) ? fs.readdirSync(generatedDir).sort() : [];
  const extra = committed.filter((f) => f !== "schema.ts");
  const same =
    committed.includes("schema.ts") &&
    fs.readFileSync(fresh).equals(fs.readFileSync(path.join(generatedDir, "schema.ts")));
  if (!same || extra.length > 0) {
    const what = !same ? "src/generated/schema.ts differs from" : `src/generated/ has files (${extra.join(", ")}) not made from`;
    console.error(`${what} what the schema gives: run \`npm run gen-types\` in clients/typescript, then \`npm run build\`, and commit both`);
    process.exit(1);
  }
  console.log("src/generated/ matches agent-proto/schema");
} finally {
  fs.rmSync(out, { recursive: true, force: true });
}
