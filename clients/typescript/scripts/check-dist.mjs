// Fails when the committed dist/ is not what src/ compiles to (dist/ is committed so that
// `npm install ./clients/typescript` works without a build step).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-client-dist-"));
try {
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.json"), "--outDir", out], {
    stdio: "inherit",
  });
  const list = (dir) =>
    fs.existsSync(dir)
      ? fs.readdirSync(dir, { recursive: true }).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort()
      : [];
  const fresh = list(out);
  const committed = list(path.join(root, "dist"));
  const stale = [
    ...fresh.filter((f) => !committed.includes(f) || !fs.readFileSync(path.join(out, f)).equals(fs.readFileSync(path.join(root, "dist", f)))),
    ...committed.filter((f) => !fresh.includes(f)),
  ];
  if (stale.length > 0) {
    console.error(`dist/ is not what src/ compiles to (${stale.join(", ")}): run \`npm run build\` in clients/typescript and commit dist/`);
    process.exit(1);
  }
  console.log(`dist/ matches src/ (${fresh.length} files)`);
} finally {
  fs.rmSync(out, { recursive: true, force: true });
}
