// Full VS Code integration run (optional). Needs a VS Code build: set VSCODE_EXECUTABLE to its
// executable. Without one this prints why and exits 0, so CI machines without VS Code skip cleanly.
// Nothing is downloaded.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

async function main(): Promise<number> {
    const exe = process.env.VSCODE_EXECUTABLE;
    if (!exe || !fs.existsSync(exe)) {
        console.log("integration tests skipped: no VS Code build (set VSCODE_EXECUTABLE to a VS Code executable to run them)");
        return 0;
    }
    let runTests: (opts: object) => Promise<number>;
    try {
        // eslint-disable-next-line @typescript-eslint/no-var-requires
        runTests = require("@vscode/test-electron").runTests;
    } catch {
        console.log("integration tests skipped: @vscode/test-electron is not installed (npm install)");
        return 0;
    }
    const root = path.resolve(__dirname, "..", "..", "..");
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-vscode-it-"));
    fs.writeFileSync(path.join(workspace, "a.txt"), "one\n");
    return runTests({
        vscodeExecutablePath: exe,
        extensionDevelopmentPath: root,
        extensionTestsPath: path.join(__dirname, "suite.js"),
        launchArgs: [workspace, "--disable-extensions", "--skip-welcome", "--skip-release-notes"],
    });
}

main().then((code) => process.exit(code), (err) => {
    console.error(err);
    process.exit(1);
});
