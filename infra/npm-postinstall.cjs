// Runs after `npm ci` at the repository root (package.json "postinstall"). The aws-cdk
// CLI ships `cdk init` templates with .go files that are not valid Go (%name%
// placeholders); the repository's Go tooling (go build ./..., gofmt -l .) would trip on
// them. Strata never runs `cdk init`, so they are removed, and node_modules is marked as
// a module of its own, which `./...` patterns of the repository module never enter.
const fs = require("fs");
const path = require("path");

const templates = path.join("node_modules", "aws-cdk", "lib", "init-templates");
if (fs.existsSync(templates)) {
  for (const t of fs.readdirSync(templates, { withFileTypes: true })) {
    if (t.isDirectory()) {
      fs.rmSync(path.join(templates, t.name, "go"), { recursive: true, force: true });
    }
  }
}
fs.writeFileSync(path.join("node_modules", "go.mod"), "module ignored/node_modules\n");
