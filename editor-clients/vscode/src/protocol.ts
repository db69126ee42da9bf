// The turnback contract (see PROTOCOL.md / docs/protocol.md): method names, parameter and result
// shapes, and a small typed API over any JSON-RPC connection. No `vscode` import here: this module
// runs in plain Node against the real server in the tests.

import { RequestType } from "vscode-jsonrpc";

// ---------------------------------------------------------------------------------------------
// Shapes

export type Uri = string;

export interface Gap {
    uri: Uri | null;
    turn?: number | null;
    reason: string;
    /** The reason in a person's words, said by the server (issue 44); absent from an older one. */
    words?: string;
    detail?: string;
    path?: string;
}

export type Boundary =
    | { kind: "afterResponse"; turn: number }
    | { kind: "beforePrompt"; turn: number }
    | { kind: "beforeDirectiveAttempt"; directiveId: string; turn: number };

export interface FilePlan {
    uri: Uri;
    path?: string;
    action: "restore" | "delete" | "unchanged" | string;
    from?: string | null;
    to?: string | null;
    externalChange?: boolean;
    /** The change this plan would undo was not made by a discarded turn: the user's own edit. */
    userEdit?: boolean;
    /** Who made it: "editor-save", "disk-change", "capture-request" or "uncaptured". */
    userEditBy?: string;
    /** Permission bits restored with the file. */
    mode?: number | string | null;
    /** What keeping the user's edits does to this file (a rewind's or a fork's user-edited files). */
    merge?: MergeInfo;
    /** The change being undone was committed and pushed there: it has left the machine. */
    pushed?: string;
}

/** `FilePlan.merge`: the three-way merge of the user's edit onto the restored image. */
export interface MergeInfo {
    result: "yours" | "merged" | "conflict" | "binary" | "unmergeable" | string;
    /** The discarded turns that changed the file too. */
    alsoChangedBy: number[];
    conflicts?: number;
    regions?: { line: number; lines: number }[];
    detail?: string;
    image?: string;
}

/** `Candidate.steps`: a discarded step in words, with its bucket. */
export interface StepWords {
    id: string;
    turn: number;
    kind: string;
    scope: string;
    what: string;
    paths: string[];
    bucket: string | null;
}

export type RewindMode = "all" | "files" | "conversation";

export interface TurnRef {
    turn: number;
    prompt: string;
}

export interface Effects {
    restored: string[];
    droppedBeforeCrossing: string[];
    crossedUncompensated: string[];
    crossedCompensated: string[];
    wouldCrossOnRewind: string[];
    unrestored: string[];
    provablyEmpty: string[];
    [bucket: string]: string[];
}

export interface CandidateDirective {
    id: string;
    attemptsDiscarded: number;
    stateAfter: string;
}

export interface WorkflowCleared {
    tasks: number;
    goals: number;
    agents: number;
    handoffs: number;
}

export interface Candidate {
    planHash: string;
    boundary?: Boundary;
    keep: { turnCount: number; last?: TurnRef | null };
    discard: { turnCount: number; first?: TurnRef | null };
    files: FilePlan[];
    gaps: Gap[];
    effects: Effects;
    /** Each bucket's people's name, said by the server (issue 44); absent from an older one. */
    effectWords?: Partial<Record<string, string>>;
    directives: CandidateDirective[];
    workflowCleared?: WorkflowCleared;
    summary: string;
    /** The boundary is the current state: nothing would change. */
    noop?: boolean;
    /** Every discarded step in words (newer servers). */
    steps?: StepWords[];
    /** How the rewind moves files and turns: both, the files only, the conversation only. */
    mode?: RewindMode;
    /** "restore" for `turnback/restore/prepare`. */
    operation?: string;
}

export interface Recovery {
    id: string;
    operation: "rewind" | "redo" | "fork" | string;
    created: number;
    paths: Uri[];
    reason: string;
    backups: { uri: Uri; digest: string }[];
}

export interface SessionInfo {
    sessionId: string;
    storeKind: "heads" | "pid" | string;
    ownership: "owner" | "observer";
    owner: { pid: number | null; host: string | null };
    turnCount: number;
    headSeq: number | null;
    liveGaps: number;
    recovery: number;
    [extra: string]: unknown;
}

export interface TurnFile {
    uri: Uri;
    path?: string;
    checkpoint: string;
    before: string | null;
    after: string | null;
}

export interface LogTurn {
    turn: number;
    kind: "chat" | "directive" | string;
    prompt: string;
    response: string;
    state: string;
    directiveId?: string | null;
    files: TurnFile[];
    steps: number;
    gaps: Gap[];
    stepList?: { id: string; kind: string; scope: string; summary?: string }[];
}

export interface SessionLog {
    turns: LogTurn[];
    sessionId?: string;
    /** Set when the log is of a session other than the live one. */
    frozen?: boolean;
}

/** A committed rewind or redo of a Claude Code session: how to resume the agent there. */
export interface AgentResume {
    agent: string;
    sessionId?: string;
    turn?: number;
    uuid?: string;
    /** `claude --resume SESSION --resume-session-at UUID`, or null when the point is not known. */
    command: string | null;
    note?: string;
}

export interface CommitResult {
    status: "committed" | "stale" | "rolled-back" | "nothing-to-do";
    /** What keeping the user's edits did (file URIs): merged, left as they were, conflicts. */
    merged?: string[];
    kept?: string[];
    conflicts?: string[];
    conflictMarkers?: string[];
    /** A restore's files. */
    restored?: string[];
    agentResume?: AgentResume;
    candidate?: Candidate;
    epoch?: number;
    headSeq?: number | null;
    reason?: string;
    /** What happened, in words (a rolled-back commit says why and what was put back). */
    message?: string;
    recovery?: Recovery[];
}

/** Options of a rewind or redo commit beyond the plan hash. */
export interface CommitOptions {
    /** Keep every file flagged `userEdit`: merged onto the restored file, or left as it is now. */
    keepUserEdits?: boolean;
    /** With keepUserEdits: write a conflicting file with conflict markers. */
    conflictMarkers?: boolean;
    /** A rewind's mode (files only, conversation only). */
    mode?: RewindMode;
    /** The files the editor holds unsaved changes of: the server refuses to write them. */
    dirty?: string[];
    /** A `$/progress` token the client listens on. */
    workDoneToken?: string;
}

export interface RedoGroup {
    headSeq: number;
    turnCount: number;
    forkPoint: string;
    created: number;
    lastPrompt: string;
    /** Turns shared with the current state: Redo brings back sharedTurns+1..turnCount. */
    sharedTurns?: number;
    /** The files bringing it back would change (the first few paths). */
    changes?: { files: number; paths: string[] };
    ancestor?: boolean;
    /** The session the state belongs to (a frozen parent's, when `frozenParent`). */
    sessionId?: string;
    /** A state of the frozen session this one was forked from (Redo brings its content here). */
    frozenParent?: boolean;
    /** What a rewind, Redo or fork overwrote that turnback had not captured (the safety net). */
    keptBefore?: boolean;
}

export interface RedoList {
    available: boolean;
    reason?: string;
    groups: RedoGroup[];
}

export interface RedoPlan {
    planHash: string;
    headSeq?: number;
    turnCount: number;
    files: FilePlan[];
    gaps: Gap[];
    summary?: string;
}

export interface RedoCommitResult {
    status: "committed" | "stale" | "rolled-back" | "nothing-to-do";
    kept?: string[];
    agentResume?: AgentResume;
    message?: string;
    headSeq?: number | null;
    epoch?: number;
    reason?: string;
    plan?: RedoPlan;
    recovery?: Recovery[];
}

// -- fork and lineage (second round)

export interface ForkPrepareResult {
    hash: string;
    turn: number;
    effects: Effects;
    effectWords?: Partial<Record<string, string>>;
    /** Set when this fork cannot be made (a live branch exists, a frozen session, …). */
    refusal?: { code: string; message: string } | null;
    summary: string;
    [extra: string]: unknown;
}

export interface ForkBranch {
    sessionId: string;
    parentId: string;
    worktree?: string | null;
}

export interface ForkConfirmResult {
    status: "forked" | "stale" | "refused" | "rolled-back";
    branch?: ForkBranch;
    /** The fresh prepare result (stale), the refusal, or what the rollback did. */
    report?: (Partial<ForkPrepareResult> & { message?: string; code?: string }) | null;
    message?: string;
    recovery?: Recovery[];
    /** The user's own edits a `keepUserEdits` fork left as they were (file URIs). */
    kept?: string[];
    /** A fork of a Claude Code session: how to resume the agent in the branch. */
    agentResume?: AgentResume;
}

export interface SessionSummary {
    sessionId: string;
    parentId: string | null;
    forkTurn: number | null;
    frozen: boolean;
    worktree: string | null;
    turnCount: number;
    current: boolean;
}

export interface Attempt {
    turn: number;
    answer?: string | null;
    feedback?: string | null;
    patch?: string | null;
}

export type DirectiveState = "draft" | "ready" | "running" | "answered" | "applied" | "detached";

export interface Directive {
    id: string;
    uri: Uri;
    anchor: { line: number; character: number; attached: boolean };
    request: string;
    state: DirectiveState | string;
    attempts: Attempt[];
    subdirectives: { id: string; consumed: boolean }[];
    parentId?: string | null;
}

export interface Status {
    liveGaps: number;
    gaps: Gap[];
    ownership: "owner" | "observer";
    collecting: boolean;
    headSeq: number | null;
    recovery: number;
}

/** `turnback/rewound`: after every committed rewind, restore, Redo or fork. */
export interface RewoundParams {
    operation: "rewind" | "restore" | "redo" | "fork" | string;
    mode?: RewindMode | string;
    boundary?: Boundary | null;
    files: Uri[];
    turnCount: number;
    sessionId: string;
    agentResume?: AgentResume;
}

/** One side of a `turnback/diff` change. */
export interface DiffSide {
    label: string;
    image?: string;
    exists?: boolean | null;
    mode?: number;
}

export interface DiffChange {
    source: "turn" | "user";
    path: string;
    uri: Uri;
    status: "created" | "deleted" | "modified" | "mode" | "transient" | "unknown-before" | "gap" | string;
    before: DiffSide;
    after: DiffSide;
    turn?: number;
    prompt?: string;
    checkpoint?: string;
    afterTurn?: number;
    by?: string | null;
    gap?: { reason: string; detail?: string };
    added?: number;
    removed?: number;
    diff?: string;
    binary?: boolean;
    tooLargeToDiff?: boolean;
}

export interface DiffResult {
    sessionId: string;
    changes: DiffChange[];
    range: { turn?: number; since?: number; through?: number };
    path?: string;
}

export interface DiffParams {
    turn?: number;
    since?: number;
    uri?: Uri;
    sessionId?: string;
    text?: boolean;
}

export interface ImageRead {
    image: string;
    exists: boolean | null;
    size: number | null;
    binary: boolean | null;
    text: string | null;
    tooLarge?: boolean;
    unknown?: string;
}

export interface EpochParams {
    source: "rewind" | "redo";
    sessionId: string;
    turnCount: number;
    epoch: number;
}

/** What the server's recovery at open did (`turnback/recovered`): docs/protocol.md. */
export interface RecoveredParams {
    transactions: { id: string; operation: string; action: string; files: number; failed: Uri[]; message: string }[];
    forks: { branchId: string; action: string; message: string }[];
    message: string;
}

export interface DirectivesParams {
    uri: Uri;
    directives: Directive[];
}

export interface InitializationOptions {
    store?: { kind?: "heads" | "pid"; path?: string | null };
    capture?: { maxFileBytes?: number; sweep?: boolean };
    collect?: { graceHeads?: number };
}

export interface TurnBeginParams {
    kind?: "chat" | "directive";
    prompt: string;
    directiveId?: string;
    instructions?: Record<string, string>;
}

export interface CaptureResult {
    captured: { uri: Uri; digest: string | null; checkpoint: string; absent?: boolean }[];
    gaps: Gap[];
}

export interface StepParams {
    turn: number;
    kind: string;
    scope?: string;
    summary?: string;
    uris?: Uri[];
    inverse?: { kind: string; scope: string };
    held?: boolean;
    compensates?: string;
    result?: string;
}

export interface DirectiveUpsertParams {
    id?: string;
    uri: Uri;
    anchor: { line: number; character: number };
    request: string;
    parentId?: string;
}

export interface DirectiveRecordParams {
    directiveId: string;
    turn: number;
    answer?: string;
    feedback?: string;
    patch?: string;
    consumed?: string[];
}

export interface CollectResult {
    headsRetired: number;
    objectsDeleted: number;
    bytesFreed: number;
    bytesKept: number;
    slices: number;
    maxSliceMs: number;
}

// ---------------------------------------------------------------------------------------------
// Names

export const Requests = {
    sessionInfo: "turnback/session/info",
    /** Not in the contract's table, but served: the current `turnback/status` payload on demand. */
    sessionStatus: "turnback/session/status",
    turnBegin: "turnback/turn/begin",
    turnCapture: "turnback/turn/capture",
    turnStep: "turnback/turn/step",
    agentTranscript: "turnback/agent/transcript",
    workflowSet: "turnback/workflow/set",
    workflowGet: "turnback/workflow/get",
    turnRespond: "turnback/turn/respond",
    turnSettle: "turnback/turn/settle",
    sessionLog: "turnback/session/log",
    rewindPrepare: "turnback/rewind/prepare",
    rewindCommit: "turnback/rewind/commit",
    redoList: "turnback/redo/list",
    redoPrepare: "turnback/redo/prepare",
    redoCommit: "turnback/redo/commit",
    directiveUpsert: "turnback/directive/upsert",
    directiveRecord: "turnback/directive/record",
    directiveList: "turnback/directive/list",
    collectRun: "turnback/collect/run",
    recoveryList: "turnback/recovery/list",
    recoveryResolve: "turnback/recovery/resolve",
    forkPrepare: "turnback/fork/prepare",
    forkConfirm: "turnback/fork/confirm",
    sessionList: "turnback/session/list",
    diff: "turnback/diff",
    imageRead: "turnback/image/read",
    restorePrepare: "turnback/restore/prepare",
    restoreCommit: "turnback/restore/commit",
} as const;

export const Notifications = {
    status: "turnback/status",
    epoch: "turnback/epoch",
    directives: "turnback/directives",
    recovered: "turnback/recovered",
    rewound: "turnback/rewound",
} as const;

// ---------------------------------------------------------------------------------------------
// Connection

/** What both a vscode-jsonrpc MessageConnection and a vscode-languageclient LanguageClient offer. */
export interface RpcConnection {
    sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P): Promise<R>;
}

export interface NotificationSource {
    onNotification(method: string, handler: (params: any) => void): unknown;
}

/** The `data.code` of a turnback error, when the error carries one. */
export function errorCode(err: unknown): string | undefined {
    const data = (err as { data?: { code?: unknown } } | undefined)?.data;
    return typeof data?.code === "string" ? data.code : undefined;
}

export function errorMessage(err: unknown): string {
    if (err instanceof Error) {
        return err.message;
    }
    if (typeof err === "object" && err !== null && typeof (err as { message?: unknown }).message === "string") {
        return (err as { message: string }).message;
    }
    return String(err);
}

/** Every contract request as a typed constant (vscode-jsonrpc's `RequestType`): its method, its
 *  params' and its result's types, so `sendRequest` is typed end to end, with no cast. */
export const Rpc = {
    sessionInfo: new RequestType<NoParams, SessionInfo, void>(Requests.sessionInfo),
    sessionStatus: new RequestType<NoParams, Status, void>(Requests.sessionStatus),
    turnBegin: new RequestType<TurnBeginParams, { turn: number }, void>(Requests.turnBegin),
    turnCapture: new RequestType<{ uris: Uri[]; phase?: "before" | "after" }, CaptureResult, void>(Requests.turnCapture),
    turnStep: new RequestType<StepParams, { stepId: string }, void>(Requests.turnStep),
    agentTranscript: new RequestType<{ agentId: string; turn: number; text: string; final?: boolean }, object, void>(Requests.agentTranscript),
    workflowSet: new RequestType<{ tasks?: unknown[]; goals?: unknown[]; agents?: unknown[]; handoffs?: unknown[] }, object, void>(Requests.workflowSet),
    workflowGet: new RequestType<NoParams, { tasks: unknown[]; goals: unknown[]; agents: unknown[]; handoffs: unknown[] }, void>(Requests.workflowGet),
    turnRespond: new RequestType<{ turn: number; text: string; final?: boolean }, object, void>(Requests.turnRespond),
    turnSettle: new RequestType<{ turn: number; status?: "settled" | "cancelled" }, { headSeq: number | null }, void>(Requests.turnSettle),
    sessionLog: new RequestType<{ sessionId?: string }, SessionLog, void>(Requests.sessionLog),
    rewindPrepare: new RequestType<{ boundary: Boundary } & Record<string, unknown>, Candidate, void>(Requests.rewindPrepare),
    diff: new RequestType<DiffParams, DiffResult, void>(Requests.diff),
    imageRead: new RequestType<{ image: string; sessionId?: string }, ImageRead, void>(Requests.imageRead),
    restorePrepare: new RequestType<{ paths: Uri[]; boundary: Boundary } & Record<string, unknown>, Candidate, void>(Requests.restorePrepare),
    restoreCommit: new RequestType<{ paths: Uri[]; boundary: Boundary; planHash: string } & Record<string, unknown>, CommitResult, void>(Requests.restoreCommit),
    rewindCommit: new RequestType<{ boundary: Boundary; planHash: string } & Record<string, unknown>, CommitResult, void>(Requests.rewindCommit),
    redoList: new RequestType<NoParams, RedoList, void>(Requests.redoList),
    redoPrepare: new RequestType<{ headSeq: number }, RedoPlan, void>(Requests.redoPrepare),
    redoCommit: new RequestType<{ headSeq: number; planHash: string } & Record<string, unknown>, RedoCommitResult, void>(Requests.redoCommit),
    directiveUpsert: new RequestType<DirectiveUpsertParams, Directive, void>(Requests.directiveUpsert),
    directiveRecord: new RequestType<DirectiveRecordParams, Directive, void>(Requests.directiveRecord),
    directiveList: new RequestType<{ uri?: Uri }, { directives: Directive[] }, void>(Requests.directiveList),
    collectRun: new RequestType<NoParams, CollectResult, void>(Requests.collectRun),
    recoveryList: new RequestType<NoParams, { recovery: Recovery[] }, void>(Requests.recoveryList),
    recoveryResolve: new RequestType<{ id: string; action: "retry" | "dismiss" }, RecoveryResolveResult, void>(Requests.recoveryResolve),
    forkPrepare: new RequestType<{ turn: number }, ForkPrepareResult, void>(Requests.forkPrepare),
    // `planHash`: the plan hash's one name on the wire; `hash` too, for a server before it (docs/protocol.md)
    forkConfirm: new RequestType<{ turn: number; planHash: string; hash: string; worktree?: string; keepUserEdits?: boolean }, ForkConfirmResult, void>(Requests.forkConfirm),
    sessionList: new RequestType<NoParams, { sessions: SessionSummary[] }, void>(Requests.sessionList),
};

type NoParams = Record<string, never>;

/** Every contract request as a typed method. */
export class TurnbackApi {
    constructor(private readonly conn: RpcConnection) {}

    private call<P, R>(type: RequestType<P, R, void>, params: P): Promise<R> {
        return this.conn.sendRequest(type, params);
    }

    sessionInfo(): Promise<SessionInfo> {
        return this.call(Rpc.sessionInfo, {});
    }
    sessionStatus(): Promise<Status> {
        return this.call(Rpc.sessionStatus, {});
    }
    turnBegin(params: TurnBeginParams): Promise<{ turn: number }> {
        return this.call(Rpc.turnBegin, params);
    }
    turnCapture(params: { uris: Uri[]; phase?: "before" | "after" }): Promise<CaptureResult> {
        return this.call(Rpc.turnCapture, params);
    }
    turnStep(params: StepParams): Promise<{ stepId: string }> {
        return this.call(Rpc.turnStep, params);
    }
    agentTranscript(params: { agentId: string; turn: number; text: string; final?: boolean }): Promise<object> {
        return this.call(Rpc.agentTranscript, params);
    }
    workflowSet(params: { tasks?: unknown[]; goals?: unknown[]; agents?: unknown[]; handoffs?: unknown[] }): Promise<object> {
        return this.call(Rpc.workflowSet, params);
    }
    workflowGet(): Promise<{ tasks: unknown[]; goals: unknown[]; agents: unknown[]; handoffs: unknown[] }> {
        return this.call(Rpc.workflowGet, {});
    }
    turnRespond(params: { turn: number; text: string; final?: boolean }): Promise<object> {
        return this.call(Rpc.turnRespond, params);
    }
    turnSettle(params: { turn: number; status?: "settled" | "cancelled" }): Promise<{ headSeq: number | null }> {
        return this.call(Rpc.turnSettle, params);
    }
    sessionLog(sessionId?: string): Promise<SessionLog> {
        return this.call(Rpc.sessionLog, sessionId ? { sessionId } : {});
    }
    rewindPrepare(boundary: Boundary, opts: { mode?: RewindMode; dirty?: string[] } = {}): Promise<Candidate> {
        return this.call(Rpc.rewindPrepare, { boundary, ...commitExtras(opts) });
    }
    diff(params: DiffParams): Promise<DiffResult> {
        return this.call(Rpc.diff, params);
    }
    imageRead(params: { image: string; sessionId?: string }): Promise<ImageRead> {
        return this.call(Rpc.imageRead, params);
    }
    restorePrepare(paths: Uri[], boundary: Boundary, opts: { dirty?: string[] } = {}): Promise<Candidate> {
        return this.call(Rpc.restorePrepare, { paths, boundary, ...commitExtras(opts) });
    }
    restoreCommit(paths: Uri[], boundary: Boundary, planHash: string, opts: CommitOptions = {}): Promise<CommitResult> {
        return this.call(Rpc.restoreCommit, { paths, boundary, planHash, ...commitExtras(opts) });
    }
    rewindCommit(boundary: Boundary, planHash: string, opts: CommitOptions = {}): Promise<CommitResult> {
        return this.call(Rpc.rewindCommit, { boundary, planHash, ...commitExtras(opts) });
    }
    redoList(): Promise<RedoList> {
        return this.call(Rpc.redoList, {});
    }
    redoPrepare(headSeq: number): Promise<RedoPlan> {
        return this.call(Rpc.redoPrepare, { headSeq });
    }
    redoCommit(headSeq: number, planHash: string, opts: CommitOptions = {}): Promise<RedoCommitResult> {
        return this.call(Rpc.redoCommit, { headSeq, planHash, ...commitExtras(opts) });
    }
    directiveUpsert(params: DirectiveUpsertParams): Promise<Directive> {
        return this.call(Rpc.directiveUpsert, params);
    }
    directiveRecord(params: DirectiveRecordParams): Promise<Directive> {
        return this.call(Rpc.directiveRecord, params);
    }
    directiveList(uri?: Uri): Promise<{ directives: Directive[] }> {
        return this.call(Rpc.directiveList, uri ? { uri } : {});
    }
    collectRun(): Promise<CollectResult> {
        return this.call(Rpc.collectRun, {});
    }
    recoveryList(): Promise<{ recovery: Recovery[] }> {
        return this.call(Rpc.recoveryList, {});
    }
    recoveryResolve(id: string, action: "retry" | "dismiss"): Promise<RecoveryResolveResult> {
        return this.call(Rpc.recoveryResolve, { id, action });
    }
    forkPrepare(turn: number): Promise<ForkPrepareResult> {
        return this.call(Rpc.forkPrepare, { turn });
    }
    forkConfirm(turn: number, hash: string, worktree?: string, keepUserEdits = false): Promise<ForkConfirmResult> {
        return this.call(Rpc.forkConfirm, { turn, planHash: hash, hash, ...(worktree ? { worktree } : {}), ...(keepUserEdits ? { keepUserEdits } : {}) });
    }
    sessionList(): Promise<{ sessions: SessionSummary[] }> {
        return this.call(Rpc.sessionList, {});
    }
}

export interface RecoveryResolveResult {
    status: string;
    recovery: Recovery[];
    message?: string;
}

/** Only the options that are set travel (an older server sees the request it knows). */
function commitExtras(opts: CommitOptions & { mode?: RewindMode; dirty?: string[] }): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (opts.keepUserEdits) {
        out.keepUserEdits = true;
        if (opts.conflictMarkers) {
            out.conflictMarkers = true;
        }
    }
    if (opts.mode && opts.mode !== "all") {
        out.mode = opts.mode;
    }
    if (opts.dirty?.length) {
        out.dirty = opts.dirty;
    }
    if (opts.workDoneToken) {
        out.workDoneToken = opts.workDoneToken;
    }
    return out;
}
