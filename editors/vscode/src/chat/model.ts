// What the chat shows: the open session, its messages, the reply streaming in, whether a
// task runs, and the context use. Fed by the server's notifications and results; read by
// the chat view and the status bar. No `vscode` import, so it is testable in plain Node.

import {
  CompactedParams,
  DeltaParams,
  MessageParams,
  PAGE_SIZE,
  PromptResult,
  RewindResult,
  ServerCommand,
  Session,
  SessionChangedParams,
  SessionView,
  TurnEndedParams,
  Usage,
  WireMessage,
} from '../protocol';

/** How the model reaches the server: `workspace/executeCommand` with one argument. */
export interface ServerLink {
  execute<T>(command: string, args?: object): Promise<T>;
}

/**
 * `missing`: no server command could be found; `failed`: it did not start or it died;
 * `noFolder`: the window has no folder, so there is no project to hold sessions.
 */
export type ServerState = 'starting' | 'running' | 'stopped' | 'missing' | 'failed' | 'noFolder';

export interface ChatSnapshot {
  serverState: ServerState;
  session: Session | null;
  messages: WireMessage[];
  hasMore: boolean;
  streaming: string;
  running: boolean;
  usage: Usage | null;
  notices: Notice[];
}

/** A line the chat shows without storing it: how a task ended, a refused command. */
export interface Notice {
  level: 'info' | 'warning' | 'error';
  text: string;
  /** The id of the last message when the notice was raised; it is shown after it. */
  afterId: number | null;
}

export type ChatChange =
  | { kind: 'reset' }
  | { kind: 'append'; message: WireMessage }
  | { kind: 'prepend'; messages: WireMessage[]; hasMore: boolean }
  | { kind: 'streaming'; text: string }
  | { kind: 'notice'; notice: Notice }
  | { kind: 'state' }
  | { kind: 'input'; text: string };

type Listener = (change: ChatChange) => void;

/** How long the usage refresh waits for more stored messages before it asks the server. */
export const USAGE_REFRESH_DELAY_MS = 250;

export class ChatModel {
  private readonly listeners = new Set<Listener>();
  private server: ServerLink | undefined;
  private serverState: ServerState = 'starting';
  private session: Session | null = null;
  private messages: WireMessage[] = [];
  private ids = new Set<number>();
  private hasMore = false;
  private streaming = '';
  private promptsInFlight = 0;
  // A delta for the open session means a task runs, also one this window did not start.
  private streamingTask = false;
  private usage: Usage | null = null;
  private notices: Notice[] = [];
  // What the chat input holds: typed in the webview, or put there by the extension.
  private inputText = '';
  private loading: Promise<void> | undefined;
  private reloadRequested = false;
  private arrivedWhileLoading: MessageParams[] = [];
  private olderLoading: Promise<void> | undefined;
  // Bumped on every attach/detach: results from an earlier server are dropped.
  private generation = 0;
  private usageTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly usageRefreshDelayMs = USAGE_REFRESH_DELAY_MS) {}

  /** Subscribe to changes; returns the unsubscribe function. */
  onDidChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  snapshot(): ChatSnapshot {
    return {
      serverState: this.serverState,
      session: this.session,
      messages: [...this.messages],
      hasMore: this.hasMore,
      streaming: this.streaming,
      running: this.running,
      usage: this.usage,
      notices: [...this.notices],
    };
  }

  get running(): boolean {
    return this.promptsInFlight > 0 || this.streamingTask;
  }

  get currentSession(): Session | null {
    return this.session;
  }

  get currentUsage(): Usage | null {
    return this.usage;
  }

  get state(): ServerState {
    return this.serverState;
  }

  /** The chat input's text (the unsent draft). */
  get input(): string {
    return this.inputText;
  }

  /** The webview says what its input holds now (as the user types). */
  noteDraft(text: string): void {
    this.inputText = text;
  }

  /** Put `text` into the chat input, replacing the draft (a rewound prompt comes back). */
  setInput(text: string): void {
    this.inputText = text;
    this.emit({ kind: 'input', text });
  }

  // --- the server's life ---------------------------------------------------------------

  /** A server is up: load the open session from it (also after a window reload). */
  attach(server: ServerLink): Promise<void> {
    this.generation++;
    this.server = server;
    this.serverState = 'running';
    this.promptsInFlight = 0;
    this.streamingTask = false;
    this.emit({ kind: 'state' });
    return this.load();
  }

  /** The server went away (or never came): keep the transcript, stop the spinner. */
  detach(state: Exclude<ServerState, 'running'>): void {
    this.generation++;
    this.server = undefined;
    this.serverState = state;
    this.promptsInFlight = 0;
    this.streamingTask = false;
    this.streaming = '';
    this.loading = undefined;
    this.olderLoading = undefined;
    this.cancelUsageRefresh();
    this.emit({ kind: 'state' });
    this.emit({ kind: 'streaming', text: '' });
  }

  // --- notifications -------------------------------------------------------------------

  sessionChanged(params: SessionChangedParams): void {
    if (this.session?.id !== params.session.id) {
      this.session = params.session;
      this.clearTranscript();
      this.emit({ kind: 'reset' });
    } else {
      this.session = params.session;
      this.emit({ kind: 'state' });
    }
    void this.load();
  }

  message(params: MessageParams): void {
    // Subagents' sessions carry their own ids: only the open session is shown.
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    const message = params.message;
    if (this.loading) {
      this.arrivedWhileLoading.push(params);
      return;
    }
    if (message.kind === 'recap') {
      // A compaction replaced the start of the history: read it again.
      void this.load();
      return;
    }
    // Every model call stores a reply: the context use and the title change per turn. A
    // new session's first prompt is where the server takes its title from.
    const refresh = message.role === 'assistant' || (isPrompt(message) && !this.messages.some(isPrompt));
    if (message.role === 'assistant' && this.streaming !== '') {
      // The stored reply replaces its streamed copy, in the view too.
      this.streaming = '';
      this.emit({ kind: 'streaming', text: '' });
    }
    this.add(message);
    if (refresh) {
      this.scheduleUsageRefresh();
    }
  }

  delta(params: DeltaParams): void {
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    const wasRunning = this.running;
    this.streamingTask = true;
    this.streaming = params.reset ? params.text : this.streaming + params.text;
    this.emit({ kind: 'streaming', text: this.streaming });
    if (!wasRunning) {
      this.emit({ kind: 'state' });
    }
  }

  compacted(params: CompactedParams): void {
    if (this.session !== null && params.sessionId === this.session.id) {
      void this.load();
    }
  }

  turnEnded(params: TurnEndedParams): void {
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    this.streamingTask = false;
    this.streaming = '';
    this.emit({ kind: 'streaming', text: '' });
    this.emit({ kind: 'state' });
    void this.refreshUsage();
  }

  // --- actions -------------------------------------------------------------------------

  /** Send a prompt or a slash command; resolves when the task has ended. */
  async send(text: string): Promise<PromptResult> {
    const server = this.requireServer();
    const generation = this.generation;
    this.promptsInFlight++;
    this.emit({ kind: 'state' });
    try {
      const result = await server.execute<PromptResult>(ServerCommand.prompt, { text });
      this.noteOutcome(result);
      return result;
    } finally {
      // After a restart the count started again from zero.
      if (generation === this.generation) {
        this.promptsInFlight = Math.max(0, this.promptsInFlight - 1);
        if (!this.running) {
          this.streaming = '';
          this.emit({ kind: 'streaming', text: '' });
        }
        this.emit({ kind: 'state' });
        void this.refreshUsage();
      }
    }
  }

  /** Cancel the running task; false when nothing was running. */
  async stop(): Promise<boolean> {
    const result = await this.requireServer().execute<{ cancelled?: boolean }>(ServerCommand.cancel, {});
    return result.cancelled !== false;
  }

  /** Show a line in the transcript that is not stored (a refused command, say). */
  addNotice(level: Notice['level'], text: string): void {
    const last = this.messages[this.messages.length - 1];
    const notice = { level, text, afterId: last ? last.id : null };
    this.notices.push(notice);
    this.emit({ kind: 'notice', notice });
  }

  /** Read the open session's newest page again (coalesces concurrent calls). */
  load(): Promise<void> {
    if (this.loading) {
      this.reloadRequested = true;
      return this.loading;
    }
    const server = this.server;
    if (!server) {
      return Promise.resolve();
    }
    const generation = this.generation;
    const run = async (): Promise<void> => {
      do {
        this.reloadRequested = false;
        let view: SessionView;
        try {
          view = await server.execute<SessionView>(ServerCommand.sessionGet, { limit: PAGE_SIZE });
        } catch (error) {
          if (generation === this.generation) {
            this.addNotice('error', `Could not read the session: ${describe(error)}`);
          }
          return;
        }
        if (generation !== this.generation) {
          return;
        }
        this.apply(view);
      } while (this.reloadRequested && generation === this.generation);
    };
    const loading = run().finally(() => {
      if (this.loading === loading) {
        this.loading = undefined;
        this.flushArrived();
      }
    });
    this.loading = loading;
    return loading;
  }

  /** Fetch the page before the oldest message shown, when the server says there is one. */
  loadOlder(): Promise<void> {
    if (!this.hasMore || this.olderLoading || !this.server || !this.session || this.messages.length === 0) {
      return this.olderLoading ?? Promise.resolve();
    }
    const server = this.server;
    const generation = this.generation;
    const sessionId = this.session.id;
    const before = this.messages[0].id;
    const older = (async () => {
      let view: SessionView;
      try {
        view = await server.execute<SessionView>(ServerCommand.sessionGet, { sessionId, limit: PAGE_SIZE, before });
      } catch (error) {
        this.addNotice('error', `Could not read earlier messages: ${describe(error)}`);
        return;
      }
      if (generation !== this.generation || this.session?.id !== sessionId) {
        return;
      }
      // Not "id < before": a recap comes first although it was stored (numbered) after
      // the messages it kept. A server that ignores `before` sends only known ids.
      const fresh = view.messages.filter((message) => !this.ids.has(message.id));
      fresh.forEach((message) => this.ids.add(message.id));
      this.messages = [...fresh, ...this.messages];
      this.hasMore = view.hasMore === true && fresh.length > 0;
      this.emit({ kind: 'prepend', messages: fresh, hasMore: this.hasMore });
    })().finally(() => {
      this.olderLoading = undefined;
    });
    this.olderLoading = older;
    return older;
  }

  /** Refresh the context use and the session's title and counts. */
  async refreshUsage(): Promise<void> {
    this.cancelUsageRefresh(); // this one answers for a refresh still pending
    const server = this.server;
    const session = this.session;
    if (!server || !session) {
      return;
    }
    const generation = this.generation;
    let view: SessionView;
    try {
      view = await server.execute<SessionView>(ServerCommand.sessionGet, {
        sessionId: session.id,
        limit: 1,
      });
    } catch {
      return; // the next turn or load tries again; the chat keeps the last known use
    }
    if (generation !== this.generation || this.session?.id !== session.id) {
      return;
    }
    this.usage = view.usage;
    if (view.session) {
      this.session = view.session;
    }
    this.emit({ kind: 'state' });
  }

  // --- internals -------------------------------------------------------------------

  /** Refresh the usage once stored messages stop arriving for a moment (debounced). */
  private scheduleUsageRefresh(): void {
    this.cancelUsageRefresh();
    this.usageTimer = setTimeout(() => {
      this.usageTimer = undefined;
      void this.refreshUsage();
    }, this.usageRefreshDelayMs);
  }

  private cancelUsageRefresh(): void {
    if (this.usageTimer !== undefined) {
      clearTimeout(this.usageTimer);
      this.usageTimer = undefined;
    }
  }

  private apply(view: SessionView): void {
    const switched = view.session?.id !== this.session?.id;
    this.session = view.session;
    this.messages = [];
    this.ids = new Set();
    for (const message of view.messages) {
      if (!this.ids.has(message.id)) {
        this.ids.add(message.id);
        this.messages.push(message);
      }
    }
    this.hasMore = view.hasMore === true;
    this.usage = view.usage;
    if (switched) {
      this.notices = [];
      this.streaming = '';
    }
    this.emit({ kind: 'reset' });
  }

  private flushArrived(): void {
    const arrived = this.arrivedWhileLoading;
    this.arrivedWhileLoading = [];
    for (const params of arrived) {
      if (!this.ids.has(params.message.id)) {
        this.message(params);
      }
    }
  }

  private add(message: WireMessage): void {
    if (this.ids.has(message.id)) {
      const index = this.messages.findIndex((m) => m.id === message.id);
      this.messages[index] = message;
      this.emit({ kind: 'reset' });
      return;
    }
    this.ids.add(message.id);
    this.messages.push(message);
    this.emit({ kind: 'append', message });
  }

  private clearTranscript(): void {
    this.messages = [];
    this.ids = new Set();
    this.hasMore = false;
    this.streaming = '';
    this.notices = [];
    this.arrivedWhileLoading = [];
  }

  private noteOutcome(result: PromptResult): void {
    if (result.command === 'rewind') {
      this.noteRewind(result as PromptResult & Partial<RewindResult>);
      return;
    }
    // `/trajectory` and the other commands: the server says what it did (showMessage).
    if (result.command !== undefined) {
      return;
    }
    if (result.status === 'failed') {
      const error = result.error ?? 'no reason given';
      // A provider that refuses the key says 401; point at where the key is set.
      const hint = /\b401\b|unauthori[sz]ed|api key/i.test(error) ? ' Set the key with “Seri: Set API Key”.' : '';
      this.addNotice('error', `The task failed: ${error}${hint}`);
    } else if (result.status === 'max_turns') {
      this.addNotice('warning', result.error ?? 'The task used its whole turn budget.');
    } else if (result.status === 'cancelled') {
      this.addNotice('info', 'Stopped.');
    }
  }

  /** `/rewind` typed in the chat: the prompt back in the input, what was left alone noted. */
  private noteRewind(result: Partial<RewindResult>): void {
    if (typeof result.prompt === 'string') {
      this.setInput(result.prompt);
    }
    const problems = rewindProblems(result);
    if (problems) {
      this.addNotice('warning', problems);
    }
  }

  private requireServer(): ServerLink {
    if (!this.server) {
      throw new Error('The seri server is not running.');
    }
    return this.server;
  }

  private emit(change: ChatChange): void {
    for (const listener of this.listeners) {
      listener(change);
    }
  }
}

/** The files a rewind left alone or could not restore, in one sentence each; '' if none. */
export function rewindProblems(result: Partial<RewindResult>): string {
  const parts: string[] = [];
  if (result.conflicts && result.conflicts.length > 0) {
    parts.push(`Left alone, changed since seri wrote them: ${result.conflicts.join(', ')}.`);
  }
  for (const failure of result.failed ?? []) {
    parts.push(`Could not restore ${failure.path}: ${failure.reason}.`);
  }
  return parts.join(' ');
}

/** A prompt the user typed (not a recap, a loaded rule or failing checks). */
function isPrompt(message: WireMessage): boolean {
  return message.role === 'user' && message.kind === undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
