// The live view of the session kept from server notifications: the latest status, the directives of
// each file, the last epoch. No `vscode` import; the extension listens through `onDidChange`.

import { Notifications } from "./protocol";
import type { Directive, DirectivesParams, EpochParams, NotificationSource, RecoveredParams, Status } from "./protocol";

export type ChangeKind = "status" | "directives" | "epoch" | "recovered";

export interface Change {
    kind: ChangeKind;
    /** For "directives": the file whose directives changed. */
    uri?: string;
}

/** A key that matches the same file whichever side encoded the URI (`%3A` vs `:`, drive case). */
export function uriKey(uri: string): string {
    let u = uri;
    try {
        u = decodeURIComponent(uri);
    } catch {
        // keep as is
    }
    return u.replace(/^file:\/\/\/([A-Za-z]):/, (_m, drive: string) => `file:///${drive.toLowerCase()}:`);
}

export class SessionState {
    status: Status | undefined;
    epoch: EpochParams | undefined;
    /** What the server recovered when it opened the store (an interrupted rewind, Redo or fork). */
    recovered: RecoveredParams | undefined;
    private readonly directives = new Map<string, { uri: string; items: Directive[] }>();
    private readonly listeners = new Set<(change: Change) => void>();

    onDidChange(listener: (change: Change) => void): { dispose(): void } {
        this.listeners.add(listener);
        return { dispose: () => this.listeners.delete(listener) };
    }

    private fire(change: Change): void {
        for (const l of [...this.listeners]) {
            try {
                l(change);
            } catch {
                // a listener's failure is its own
            }
        }
    }

    /** Subscribe to the three server notifications of the contract. */
    attach(source: NotificationSource): void {
        source.onNotification(Notifications.status, (p: Status) => this.setStatus(p));
        source.onNotification(Notifications.directives, (p: DirectivesParams) => this.setDirectives(p.uri, p.directives));
        source.onNotification(Notifications.epoch, (p: EpochParams) => this.setEpoch(p));
        source.onNotification(Notifications.recovered, (p: RecoveredParams) => this.setRecovered(p));
    }

    setRecovered(recovered: RecoveredParams): void {
        this.recovered = recovered;
        this.fire({ kind: "recovered" });
    }

    setStatus(status: Status): void {
        this.status = status;
        this.fire({ kind: "status" });
    }

    setEpoch(epoch: EpochParams): void {
        this.epoch = epoch;
        this.fire({ kind: "epoch" });
    }

    setDirectives(uri: string, items: Directive[]): void {
        const key = uriKey(uri);
        if (items.length) {
            this.directives.set(key, { uri, items });
        } else {
            this.directives.delete(key);
        }
        this.fire({ kind: "directives", uri });
    }

    /** Replace everything with a `turnback/directive/list` answer (at start and after a restart). */
    replaceDirectives(items: Directive[]): void {
        const touched = new Set<string>([...this.directives.values()].map((v) => v.uri));
        this.directives.clear();
        for (const d of items) {
            const key = uriKey(d.uri);
            const entry = this.directives.get(key) ?? { uri: d.uri, items: [] };
            entry.items.push(d);
            this.directives.set(key, entry);
            touched.add(d.uri);
        }
        for (const uri of touched) {
            this.fire({ kind: "directives", uri });
        }
    }

    directivesFor(uri: string): Directive[] {
        return this.directives.get(uriKey(uri))?.items ?? [];
    }

    allDirectives(): Directive[] {
        return [...this.directives.values()].flatMap((v) => v.items);
    }

    findDirective(id: string): Directive | undefined {
        return this.allDirectives().find((d) => d.id === id);
    }

    get gapCount(): number {
        return this.status?.liveGaps ?? 0;
    }
}
