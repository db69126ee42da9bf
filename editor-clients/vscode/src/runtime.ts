// What the extension's wiring modules share: the language client, the API over it, the state kept
// from notifications, and the few VS Code objects every command touches. Set by extension.ts.

import type * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";

import type { TurnbackApi } from "./protocol";
import { SessionState } from "./state";

export interface Views {
    /** Redraw the session view (now, or coalesced soon). */
    refresh(): void;
    refreshSoon(): void;
    /** Redraw the directive panel and the CodeLenses. */
    directivesChanged(): void;
}

export const rt = {
    client: undefined as LanguageClient | undefined,
    api: undefined as TurnbackApi | undefined,
    state: new SessionState(),
    output: undefined as unknown as vscode.OutputChannel,
    statusItem: undefined as unknown as vscode.StatusBarItem,
    views: undefined as unknown as Views,
    /** The program (absolute) and arguments that run the server, once found (setup.ts). */
    server: undefined as { command: string; args: string[] } | undefined,
    /** The session the session view shows, when it is not the live one (read only). */
    viewing: undefined as string | undefined,
};

export function log(line: string): void {
    rt.output?.appendLine(line);
}
