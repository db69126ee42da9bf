// Pending recovery records (issue 11): what a rewind, redo or fork could not put back, the images that
// would put it back, and the person's Retry / Dismiss. No `vscode` import.

import type { Recovery, RecoveryResolveResult, TurnbackApi } from "./protocol";
import { displayPath, formatTime, plural } from "./render";
import type { Confirmation } from "./render";

export interface RecoveryPick {
    label: string;
    description?: string;
    detail?: string;
    id: string;
}

export const RETRY = "Retry";
export const DISMISS = "Dismiss";

function paths(r: Recovery, root?: string): string[] {
    return (r.paths ?? []).map((uri) => displayPath({ uri }, root));
}

export function recoveryPicks(records: Recovery[], root?: string): RecoveryPick[] {
    return records.map((r) => {
        const p = paths(r, root);
        return {
            label: `$(alert) ${r.operation}: ${p.length ? p.slice(0, 3).join(", ") + (p.length > 3 ? `, +${p.length - 3}` : "") : "(no path)"}`,
            description: [formatTime(r.created), plural(r.backups?.length ?? 0, "backup")].filter(Boolean).join(" · "),
            detail: r.reason,
            id: r.id,
        };
    });
}

/** One record → the modal: why, what is not back, which image would put each path back. */
export function renderRecovery(r: Recovery, root?: string): Confirmation {
    const when = formatTime(r.created);
    const title = `A ${r.operation}${when ? ` on ${when}` : ""} could not put everything back.`;
    const lines = [`Why: ${r.reason}`, "", `Not put back (${(r.paths ?? []).length}):`, ...paths(r, root).map((p) => `  ${p}`)];
    lines.push("");
    if (r.backups?.length) {
        lines.push("The images that would put them back:");
        for (const b of r.backups) {
            lines.push(`  ${displayPath({ uri: b.uri }, root)} ← image ${b.digest.slice(0, 12)}`);
        }
    } else {
        lines.push("No backup image is kept for these paths.");
    }
    lines.push("", `${RETRY} writes those images again. ${DISMISS} records that you took care of it yourself; ` +
        "the files stay as they are now.", `Record ${r.id}.`);
    return { title, detail: lines.join("\n"), action: RETRY, alternative: DISMISS };
}

/** The resolve answer in words. */
export function resolveMessage(action: "retry" | "dismiss", r: Recovery, result: RecoveryResolveResult, root?: string): string {
    const what = paths(r, root).join(", ") || "the record";
    const left = result.recovery?.length ?? 0;
    const tail = left ? ` ${plural(left, "recovery record")} still waiting.` : "";
    const said = result.message ? ` ${result.message}` : "";
    switch (result.status) {
        case "resolved":
            return `Put back: ${what}, as the backup images had ${(r.paths ?? []).length === 1 ? "it" : "them"}.${said}${tail}`;
        case "dismissed":
            return `Dismissed: turnback no longer offers to put back ${what}; the files are as you left them.${said}${tail}`;
        case "failed":
            return `The retry could not put back ${what}; the record stays.${said}${tail}`;
        default:
            return `Recovery ${action}: ${result.status}.${said}${tail}`;
    }
}

export interface RecoveryUi {
    pick(items: RecoveryPick[]): Promise<RecoveryPick | undefined>;
    /** RETRY, DISMISS, or anything else to leave the record as it is. */
    confirm(c: Confirmation): Promise<boolean | string | undefined>;
}

export interface RecoveryOutcome {
    status: "none" | "cancelled" | "resolved" | "dismissed" | "failed" | string;
    message: string;
    record?: Recovery;
    result?: RecoveryResolveResult;
}

export async function recoveryFlow(api: TurnbackApi, ui: RecoveryUi, opts: { root?: string } = {}): Promise<RecoveryOutcome> {
    const { recovery } = await api.recoveryList();
    if (!recovery.length) {
        return { status: "none", message: "No recovery record: every rewind and redo finished or rolled back cleanly." };
    }
    const items = recoveryPicks(recovery, opts.root);
    const picked = items.length === 1 ? items[0] : await ui.pick(items);
    const record = picked && recovery.find((r) => r.id === picked.id);
    if (!record) {
        return { status: "cancelled", message: "Recovery: nothing chosen." };
    }
    const answer = await ui.confirm(renderRecovery(record, opts.root));
    const action = answer === true || answer === RETRY ? "retry" : answer === DISMISS ? "dismiss" : undefined;
    if (!action) {
        return { status: "cancelled", message: "Recovery: the record stays as it is.", record };
    }
    const result = await api.recoveryResolve(record.id, action);
    return { status: result.status, message: resolveMessage(action, record, result, opts.root), record, result };
}
