// The command lines the extension tells a person to run (issue 40): a `claude --resume …` after a
// rewind, Redo or fork, and `turnback hooks install AGENT` with the server's absolute path, so that it
// runs in any terminal (VS Code's integrated terminal may not have the PATH that found the server).
// Pure functions, no `vscode` import.

/** One word for a POSIX shell: as it is when it is plain, else in single quotes. */
export function shellQuote(word: string): string {
    return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function shellLine(argv: string[]): string {
    return argv.map(shellQuote).join(" ");
}

/** The program and its first arguments that run the turnback command line, from the command that
 *  runs the server: `/abs/turnback serve` → `/abs/turnback`; `/abs/python -m turnback serve` →
 *  `/abs/python -m turnback`. */
export function cliPrefix(server: { command: string; args: string[] }): string[] {
    const m = server.args.indexOf("-m");
    if (m >= 0 && server.args[m + 1] === "turnback") {
        return [server.command, ...server.args.slice(0, m + 2)];
    }
    return [server.command];
}

/** The agents whose hooks `turnback hooks install` writes, as the welcome offers them. */
export const HOOK_AGENTS: { id: string; name: string }[] = [
    { id: "claude-code", name: "Claude Code" },
    { id: "codex", name: "Codex" },
    { id: "gemini", name: "Gemini CLI" },
    { id: "copilot", name: "GitHub Copilot CLI" },
];

/** `turnback hooks install AGENT`, with the server's own program, whole. */
export function hooksInstallLine(server: { command: string; args: string[] }, agent: string): string {
    return shellLine([...cliPrefix(server), "hooks", "install", agent]);
}

/** What a committed rewind, Redo or fork says about the agent's conversation: a command to offer
 *  (with Copy and Run), or a sentence when there is no exact point to resume at. */
export function resumeOffer(resume: { command?: string | null; note?: string } | undefined):
    { command?: string; note?: string } {
    if (!resume) {
        return {};
    }
    if (resume.command) {
        return { command: resume.command };
    }
    return resume.note ? { note: resume.note } : {};
}
