// What the chat shows: the open session, its messages, the reply streaming in, whether a
// task runs, and the context use. Fed by the server's notifications and results; read by
// the chat view and the status bar. No `vscode` import, so it is testable in plain Node.

import { describe } from '../errors';
import { compactionSummary, inEditorWords, rewindProblems } from '../format';
import {
  ApproveParams,
  ApproveResult,
  CodeMerge,
  CompactedParams,
  ContextBreakdown,
  DeltaParams,
  ForkResult,
  MessageParams,
  PAGE_SIZE,
  PromptContext,
  PromptResult,
  RewindResult,
  ServerCommand,
  Session,
  SessionChangedParams,
  SessionView,
  SlashCommand,
  StatusParams,
  TaskStatus,
  ToolOutputParams,
  TrajectoryRecord,
  TurnEndedParams,
  Usage,
  WireMessage,
} from '../protocol';
import type { Activity, Cancellation, ChatChange, ChatSnapshot, Notice, NoticeExtras, PromptRequest, Question, QueuedPrompt, ServerLink, ServerState } from './chatState';
import { ForkOrigin } from './fork';
import { placeOf } from './messageOrder';
import { reportView } from './reports';

type Listener = (change: ChatChange) => void;

/** How long the usage refresh waits for more stored messages before it asks the server. */
export const USAGE_REFRESH_DELAY_MS = 250;

/** The tail of a running command's output the chat keeps (its result holds the rest). */
export const MAX_TOOL_OUTPUT = 64_000;

export class ChatModel {
  private readonly listeners = new Set<Listener>();
  private server: ServerLink | undefined;
  private serverState: ServerState = 'starting';
  private session: Session | null = null;
  private messages: WireMessage[] = [];
  // What each running `run` call of the open session printed so far (its tail), by call id.
  private toolOutputs = new Map<string, string>();
  private ids = new Set<number>();
  private hasMore = false;
  private streaming = '';
  private promptsInFlight = 0;
  // A delta for the open session means a task runs, also one this window did not start.
  private streamingTask = false;
  // Why tasks of the open session ended (failed, out of turns), until the server's own
  // message saying so arrives: the chat shows it, so that message is not a toast too.
  private readonly endedWith = new Set<string>();
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
  private activity: Activity | null = null;
  private questions: Question[] = [];
  private readonly answers = new Map<number, (answer: ApproveResult | null) => void>();
  private queue: QueuedPrompt[] = [];
  // Ids for notices, questions and queued prompts (the webview acts on them by id).
  private lastId = 0;
  // A compaction asked for by the user: the next page read with its recap shows the recap.
  private revealRecap = false;
  private context: ContextBreakdown | null = null;
  // Bumped by every context read: an answer to an older one is dropped.
  private contextReads = 0;
  private forkOrigin: ForkOrigin | null = null;
  // `/cost` and `/context` sent and not answered: the server also shows their text as a
  // message, which the chat shows already.
  private reportsPending = 0;
  // `/compact` sent from the chat and not answered: why nothing was compacted is said in
  // the chat, so the server's message saying it too is not a toast.
  private compactsPending = 0;
  private slashCommands: SlashCommand[] = [];

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
      toolOutputs: Object.fromEntries(this.toolOutputs),
      running: this.running,
      usage: this.usage,
      notices: [...this.notices],
      activity: this.activity,
      questions: [...this.questions],
      queued: [...this.queue],
      context: this.context,
      forkOrigin: this.forkOrigin,
      slashCommands: [...this.slashCommands],
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

  get currentContext(): ContextBreakdown | null {
    return this.context;
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

  /**
   * Put a prompt back into the chat input (a rewound one, or queued ones after a Stop),
   * with its attachments. An unsent draft is kept, the prompt after it; returns true then.
   */
  returnPrompt(text: string, context: PromptContext[] = []): boolean {
    const draft = this.inputText.trim();
    const keepDraft = draft !== '' && draft !== text.trim();
    this.inputText = keepDraft ? `${this.inputText.trimEnd()}\n\n${text}` : text;
    this.emit({ kind: 'input', text: this.inputText, context: context.length > 0 ? context : undefined });
    return keepDraft;
  }

  /** A prompt came back from a rewind: into the input, saying so when a draft was there. */
  returnRewound(prompt: string): void {
    if (this.returnPrompt(prompt)) {
      this.addNotice('info', 'The rewound prompt is back in the input, after your unsent draft.');
    }
  }

  // --- the server's life ---------------------------------------------------------------

  /** A server is up: load the open session from it (also after a window reload). */
  attach(server: ServerLink): Promise<void> {
    this.generation++;
    this.server = server;
    this.serverState = 'running';
    // The new server's own list comes with setSlashCommands; never an earlier server's.
    this.slashCommands = [];
    this.promptsInFlight = 0;
    this.streamingTask = false;
    this.activity = null;
    this.emit({ kind: 'state' });
    return this.load();
  }

  /** The server went away (or never came): keep the transcript, stop the spinner. */
  detach(state: Exclude<ServerState, 'running'>): void {
    this.generation++;
    this.server = undefined;
    this.serverState = state;
    this.slashCommands = [];
    this.promptsInFlight = 0;
    this.streamingTask = false;
    this.streaming = '';
    this.loading = undefined;
    this.arrivedWhileLoading = [];
    this.olderLoading = undefined;
    this.activity = null;
    this.cancelUsageRefresh();
    // The server that asked is gone: its questions have no one to answer to.
    [...this.answers.values()].forEach((settle) => settle(null));
    this.emit({ kind: 'state' });
    this.emit({ kind: 'streaming', text: '' });
  }

  /** The slash commands the attached server advertises (ignored while none is attached). */
  setSlashCommands(commands: readonly SlashCommand[]): void {
    if (!this.server) {
      return;
    }
    this.slashCommands = [...commands];
    this.emit({ kind: 'state' });
  }

  /** The advertised slash command `name` (without its slash), if the server has it. */
  slashCommand(name: string): SlashCommand | undefined {
    return this.slashCommands.find((command) => command.name === name);
  }

  // --- notifications -------------------------------------------------------------------

  sessionChanged(params: SessionChangedParams): void {
    if (this.session?.id === params.session.id && (params.reason === 'renamed' || params.reason === 'model')) {
      // Only the title or the model changed: the pages read stay, and the reader where they were.
      this.session = params.session;
      this.emit({ kind: 'state' });
      if (params.reason === 'model') {
        void this.refreshUsage(); // the window of the new model
      }
      return;
    }
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
    // While a page is read, every message waits for it, also one of a session the chat
    // does not show yet: the page may open that session (the first read, a switch).
    if (this.loading) {
      this.arrivedWhileLoading.push(params);
      return;
    }
    // Subagents' sessions carry their own ids: only the open session is shown.
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    const message = params.message;
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

  /** `seri/toolOutput`: a running command of the open session printed `text`. */
  toolOutput(params: ToolOutputParams): void {
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    const output = ((this.toolOutputs.get(params.toolCallId) ?? '') + params.text).slice(-MAX_TOOL_OUTPUT);
    this.toolOutputs.set(params.toolCallId, output);
    this.emit({ kind: 'toolOutput', callId: params.toolCallId, text: params.text });
  }

  /** Stop one running command of the open session (`seri.tool.stop`); the task goes on. */
  async stopTool(callId: string): Promise<boolean> {
    if (this.session === null) {
      return false;
    }
    try {
      const result = await this.requireServer().execute<{ stopped?: boolean }>(ServerCommand.toolStop, {
        sessionId: this.session.id,
        toolCallId: callId,
      });
      return result.stopped === true;
    } catch (error) {
      if (this.messages.some((m) => m.role === 'tool' && m.tool_call_id === callId)) {
        return false; // it ended as the Stop was on its way: nothing to say
      }
      throw error;
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

  /**
   * A compaction: a notice says what it did in numbers (with a button that shows the
   * recap), and the history is read again. A compaction the user asked for shows its
   * recap at once; an automatic one leaves the view following the task.
   */
  compacted(params: CompactedParams): void {
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    this.addNotice('info', compactionSummary(params), {
      compaction: { recapId: params.recapId, read: params.read ?? [], modified: params.modified ?? [] },
    });
    this.revealRecap = params.trigger === 'manual';
    void this.load();
  }

  turnEnded(params: TurnEndedParams): void {
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    if (params.error) {
      // The server also shows it (window/showMessage); the chat says it already.
      this.endedWith.add(params.error);
    }
    this.streamingTask = false;
    this.streaming = '';
    this.activity = null;
    this.emit({ kind: 'streaming', text: '' });
    this.emit({ kind: 'state' });
    void this.refreshUsage();
    this.afterTask(params.status);
  }

  /** Whether a message the server shows says what the chat shows already: why the open
   * session's task failed or stopped (each such message is held back once). */
  showsInChat(message: string): boolean {
    if (this.reportsPending > 0 && /^(Spend|Context): /.test(message)) {
      return true; // the report of a `/cost` or `/context` the chat prints
    }
    if (this.compactsPending > 0 && message.startsWith(NOTHING_TO_COMPACT)) {
      return true; // the chat says it when the `/compact` is answered
    }
    return this.endedWith.delete(message);
  }

  /** `seri/status`: what the open session's task waits for now. */
  status(params: StatusParams): void {
    if (this.session === null || params.sessionId !== this.session.id) {
      return;
    }
    const { sessionId: _, ...activity } = params;
    this.activity = activity;
    this.streamingTask = true;
    this.emit({ kind: 'state' });
  }

  // --- questions -----------------------------------------------------------------------

  /**
   * `seri/approve`: show the question until it is answered (resolves with the answer) or
   * withdrawn (`cancel`, the task was cancelled; resolves with null). Questions of a
   * subagent carry its parent's session: they are shown whatever session is open.
   */
  ask(params: ApproveParams, cancel?: Cancellation): Promise<ApproveResult | null> {
    return new Promise((resolve) => {
      const question: Question = { id: ++this.lastId, params };
      let subscription: { dispose(): void } | undefined;
      const settle = (answer: ApproveResult | null): void => {
        subscription?.dispose();
        this.answers.delete(question.id);
        this.questions = this.questions.filter((q) => q.id !== question.id);
        this.emit({ kind: 'questions' });
        resolve(answer);
      };
      if (cancel?.isCancellationRequested) {
        resolve(null);
        return;
      }
      this.answers.set(question.id, settle);
      this.questions.push(question);
      subscription = cancel?.onCancellationRequested(() => settle(null));
      this.emit({ kind: 'questions', asked: question });
    });
  }

  /** The user answered question `id`; false when it is no longer open or `choice` is not offered. */
  answer(id: number, choice: string, note?: string): boolean {
    const settle = this.answers.get(id);
    const question = this.questions.find((q) => q.id === id);
    if (!settle || !question || !question.params.choices.includes(choice)) {
      return false;
    }
    const reason = note?.trim();
    settle(reason ? { choice, note: reason } : { choice });
    this.addNotice('info', answered(question.params, choice, reason));
    return true;
  }

  get openQuestions(): readonly Question[] {
    return this.questions;
  }

  // --- actions -------------------------------------------------------------------------

  /**
   * What the chat input sends: a prompt runs now, or, while a task runs, is queued and
   * sent when it ends. Never throws: a refusal is shown in the chat, with a Retry.
   */
  async submit(request: PromptRequest): Promise<void> {
    if (isReport(request.text)) {
      // It runs no task: answered at once, also while one runs.
      await this.report(request.text.trim());
      return;
    }
    if (this.running || this.queue.length > 0) {
      this.queue.push({ id: ++this.lastId, ...request });
      this.emit({ kind: 'state' });
      return;
    }
    try {
      await this.send(request.text, request.context);
    } catch (error) {
      this.addNotice('error', inEditorWords(describe(error)), { retry: request });
    }
  }

  /**
   * `/cost` or `/context`: the server's report, printed in the transcript as it is
   * (aligned lines); `/context` also refreshes the context bar.
   */
  async report(text: string): Promise<void> {
    this.reportsPending++;
    try {
      const result = await this.requireServer().execute<PromptResult>(ServerCommand.prompt, { text });
      if (typeof result.text === 'string') {
        this.addNotice('info', result.text, { report: reportView(result.command, result, this.session?.project ?? '') ?? true });
      }
      if (result.command === 'context') {
        this.setContext(result);
      }
    } catch (error) {
      this.addNotice('error', inEditorWords(describe(error)));
    } finally {
      this.reportsPending--;
    }
  }

  /**
   * Fork the open session at message `messageId` (default: its last one) and open the
   * fork; the chat shows it once the server says it changed session (reason `forked`).
   */
  /** The record of the turns the open session's recap replaced (its divider's button). */
  async compactedRecord(): Promise<TrajectoryRecord> {
    const args = this.session ? { sessionId: this.session.id, compacted: true } : { compacted: true };
    return this.requireServer().execute<TrajectoryRecord>(ServerCommand.trajectoryGet, args);
  }

  /** `text` (a reply's code block) placed in `file` by the server: the file's new text. */
  async mergeCode(file: string, text: string): Promise<CodeMerge> {
    return this.requireServer().execute<CodeMerge>(ServerCommand.codeMerge, { path: file, text });
  }

  async fork(messageId?: number): Promise<ForkResult> {
    const args = messageId !== undefined ? { messageId } : {};
    return this.requireServer().execute<ForkResult>(ServerCommand.sessionFork, args);
  }

  /**
   * Show message `messageId` of session `sessionId` once that session is the one open
   * (after a resume, when its first page has been read): the chat scrolls to it, reading
   * earlier pages until it is there. False when another session is open by then.
   */
  async reveal(sessionId: string, messageId: number): Promise<boolean> {
    // The resume's seri/sessionChanged started the read of the session's newest page.
    while (this.loading) {
      await this.loading;
    }
    if (this.session?.id !== sessionId) {
      await this.load();
    }
    if (this.session?.id !== sessionId) {
      return false;
    }
    this.emit({ kind: 'reveal', messageId });
    return true;
  }

  /** Take a queued prompt back before it is sent. */
  unqueue(id: number): void {
    this.queue = this.queue.filter((queued) => queued.id !== id);
    this.emit({ kind: 'state' });
  }

  /**
   * The Retry of notice `id`: send its prompt again (once). A failed prompt whose task
   * stored nothing after it is first rewound (conversation only), so it is not there
   * twice; one whose task did some work is sent again after that work, which stays.
   */
  async retry(id: number): Promise<void> {
    const notice = this.notices.find((n) => n.id === id);
    const request = notice?.retry;
    if (!notice || !request) {
      return;
    }
    notice.retry = undefined;
    const last = this.messages[this.messages.length - 1];
    if (this.server && last && isPrompt(last) && last.content.startsWith(request.text.trim())) {
      try {
        await this.server.execute(ServerCommand.rewind, { steps: 1, restore: 'conversation' });
      } catch {
        // Behind a compaction, say: sent again after what is there.
      }
    }
    await this.submit(request);
  }

  /** Send a prompt or a slash command; resolves when the task has ended. */
  async send(text: string, context?: PromptContext[]): Promise<PromptResult> {
    const server = this.requireServer();
    const generation = this.generation;
    const compacting = /^\/compact(\s|$)/i.test(text.trim());
    this.promptsInFlight++;
    this.compactsPending += compacting ? 1 : 0;
    this.emit({ kind: 'state' });
    let status: TaskStatus | undefined;
    try {
      const args = context && context.length > 0 ? { text, context } : { text };
      const result = await server.execute<PromptResult>(ServerCommand.prompt, args);
      status = result.status;
      this.noteOutcome(result, { text, context });
      return result;
    } finally {
      this.compactsPending -= compacting ? 1 : 0;
      // After a restart the count started again from zero.
      if (generation === this.generation) {
        this.promptsInFlight = Math.max(0, this.promptsInFlight - 1);
        if (!this.running) {
          this.streaming = '';
          this.activity = null;
          this.emit({ kind: 'streaming', text: '' });
        }
        this.emit({ kind: 'state' });
        void this.refreshUsage();
        this.afterTask(status);
      }
    }
  }

  /** Cancel the running task; false when nothing was running. */
  async stop(): Promise<boolean> {
    const result = await this.requireServer().execute<{ cancelled?: boolean }>(ServerCommand.cancel, {});
    return result.cancelled !== false;
  }

  /** Show a line in the transcript that is not stored (a refused command, say). */
  addNotice(level: Notice['level'], text: string, extras: NoticeExtras = {}): void {
    const last = this.messages[this.messages.length - 1];
    const notice: Notice = { id: ++this.lastId, level, text, afterId: last ? last.id : null, ...extras };
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
    await this.refreshContext();
  }

  /** Read what fills the open session's context (the header's bar and its breakdown). */
  async refreshContext(): Promise<void> {
    const server = this.server;
    const session = this.session;
    if (!server || !session) {
      return;
    }
    const generation = this.generation;
    const read = ++this.contextReads;
    let context: ContextBreakdown;
    try {
      context = await server.execute<ContextBreakdown>(ServerCommand.sessionContext, { sessionId: session.id });
    } catch {
      return; // an older server, or a busy store: the bar shows the plain use meanwhile
    }
    if (generation === this.generation && read === this.contextReads && this.session?.id === session.id) {
      this.setContext(context);
    }
  }

  // --- internals -------------------------------------------------------------------

  /**
   * A task ended and none runs: send the next queued prompt. After a Stop they go back
   * to the input instead, to be edited or sent again (the user stopped for a reason).
   */
  private afterTask(status: TaskStatus | undefined): void {
    if (this.running || this.queue.length === 0) {
      return;
    }
    if (status === 'cancelled') {
      const queued = this.queue.splice(0);
      this.emit({ kind: 'state' });
      this.returnPrompt(
        queued.map((q) => q.text).join('\n\n'),
        queued.flatMap((q) => q.context ?? []),
      );
      this.addNotice('info', `The queued ${queued.length === 1 ? 'prompt is' : 'prompts are'} back in the input.`);
      return;
    }
    const next = this.queue.shift()!;
    this.emit({ kind: 'state' });
    void this.submit(next);
  }

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

  /** Take a context breakdown the server sent, if it is one (and of the open session). */
  private setContext(context: Partial<ContextBreakdown>): void {
    const fits =
      Array.isArray(context.parts) &&
      typeof context.contextWindow === 'number' &&
      typeof context.estimateTokens === 'number' &&
      (context.sessionId === undefined || context.sessionId === (this.session?.id ?? null));
    if (fits) {
      this.context = context as ContextBreakdown;
      this.emit({ kind: 'state' });
    }
  }

  /** A fork names its parent: read the parent's title for the chat (once per fork). */
  private async lookUpOrigin(): Promise<void> {
    const server = this.server;
    const session = this.session;
    const parent = session?.parentId;
    if (!server || !session || !parent || session.forkedAt === null || session.forkedAt === undefined) {
      this.forkOrigin = null;
      return;
    }
    if (this.forkOrigin?.id === parent) {
      return;
    }
    this.forkOrigin = { id: parent, title: null };
    let title: string | null = null;
    try {
      const view = await server.execute<SessionView>(ServerCommand.sessionGet, { sessionId: parent, limit: 1 });
      title = view.session?.title ?? null;
    } catch {
      // Deleted since, say: the chat names it by id.
    }
    if (this.session?.id === session.id) {
      this.forkOrigin = { id: parent, title };
      this.emit({ kind: 'state' });
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
      this.toolOutputs.clear();
      this.streaming = '';
      this.context = null;
    }
    // Shown once the page read holds the recap (a read already under way may not).
    const reveal = this.revealRecap && this.messages[0]?.kind === 'recap';
    if (reveal) {
      this.revealRecap = false;
    }
    this.emit(reveal ? { kind: 'reset', reveal: 'recap' } : { kind: 'reset' });
    void this.lookUpOrigin();
    void this.refreshContext();
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
    const at = placeOf(this.messages, message.id);
    this.messages.splice(at, 0, message);
    if (message.role === 'tool' && message.tool_call_id) {
      this.toolOutputs.delete(message.tool_call_id); // its result holds the output now
    }
    // One that arrived after a later one is drawn in its place (a call before its result).
    this.emit(at === this.messages.length - 1 ? { kind: 'append', message } : { kind: 'reset' });
  }

  private clearTranscript(): void {
    this.messages = [];
    this.ids = new Set();
    this.hasMore = false;
    this.streaming = '';
    this.notices = [];
    this.toolOutputs.clear();
    // Messages waiting for a read under way stay: those of the session now open follow it.
    this.context = null;
    this.forkOrigin = null;
  }

  private noteOutcome(result: PromptResult, request: PromptRequest): void {
    if (result.command === 'rewind') {
      this.noteRewind(result as PromptResult & Partial<RewindResult>);
      return;
    }
    if (result.command === 'compact' && result.compacted === false && typeof result.message === 'string') {
      this.addNotice('info', result.message);
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
      this.addNotice('error', `The task failed: ${inEditorWords(error)}${hint}`, { retry: request, turnEnd: true });
    } else if (result.status === 'max_turns') {
      this.addNotice('warning', result.error ?? 'The task used its whole turn budget.', { turnEnd: true });
    } else if (result.status === 'cancelled') {
      this.addNotice('info', 'Stopped.', { turnEnd: true });
    }
  }

  /** `/rewind` typed in the chat: the prompt back in the input, what was left alone noted. */
  private noteRewind(result: Partial<RewindResult>): void {
    if (typeof result.prompt === 'string') {
      this.returnRewound(result.prompt);
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

/** The line the chat keeps after a question is answered: “Allow”: edit src/app.py. */
function answered(question: ApproveParams, choice: string, note: string | undefined): string {
  let about: string;
  switch (question.kind) {
    case 'write':
      about = `${question.action} ${question.path}`;
      break;
    case 'memory':
      about = `remember “${question.text}”`;
      break;
    case 'checks':
      about = `run the checks (${question.checks.map((c) => c.name).join(', ')})`;
      break;
    case 'mcp':
      about = `call ${question.tool} of the MCP server ${question.server}`;
      break;
    case 'mcpServers':
      about = `start this workspace’s MCP servers (${question.servers.map((s) => s.name).join(', ')})`;
      break;
    case 'command':
      about = `run \`${question.command}\` in ${question.cwd === '.' ? 'the workspace root' : question.cwd}`;
      break;
    default:
      about = (question as { message: string }).message;
  }
  return `“${choice}”: ${about}${note ? ` (${note})` : ''}.`;
}

/** How the server's reason for not compacting starts (seri_lsp/context/compaction.py). */
const NOTHING_TO_COMPACT = 'Not enough history to compact';

/** `/cost` or `/context`: a slash command that prints a report and runs no task. */
function isReport(text: string): boolean {
  return /^\/(cost|context)$/i.test(text.trim());
}

/** A prompt the user typed (not a recap, a loaded rule or failing checks). */
function isPrompt(message: WireMessage): boolean {
  return message.role === 'user' && message.kind === undefined;
}
