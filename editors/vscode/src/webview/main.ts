// The chat view's page: header (title, the session's spend, the context bar with what
// fills the context and where compaction starts, session menu), transcript (following
// new output), the questions the task waits on, the queue, and the input. It holds no
// state the extension does not also hold, except the unsent draft and its attachments,
// and the notes typed into Deny fields (kept with setState, so they survive the view
// being hidden and the window being reloaded).

import './style.css';

import { lastCopied } from '../chat/fork';
import type { FromWebview, HeaderState, ToWebview } from '../chat/webviewProtocol';
import { describeActivity } from '../format';
import { Composer, Draft } from './composer';
import { Icons, h, icon } from './dom';
import { Follower } from './follow';
import { Header, originName } from './header';
import { PathLinks } from './paths';
import { markdownBody } from './replyBody';
import { Transcript } from './transcript';
import { rovingActions } from './roving';
import { handleTranscriptClicks } from './transcriptActions';
import { ANSWERED, type NoteDrafts, renderQuestions, renderQueue } from './waiting';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): PersistedState | undefined;
  setState(state: PersistedState): void;
}

interface PersistedState {
  draft: string;
  chips?: Draft['chips'];
  /** The notes typed into the open questions' Deny fields, by question id. */
  notes?: Record<string, string>;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (message: FromWebview): void => vscode.postMessage(message);
let persisted: PersistedState = vscode.getState() ?? { draft: '' };
function persist(change: Partial<PersistedState>): void {
  persisted = { ...persisted, ...change };
  vscode.setState(persisted);
}
const notes: NoteDrafts = {
  get: (id) => persisted.notes?.[String(id)] ?? '',
  set: (id, text) => persist({ notes: { ...persisted.notes, [String(id)]: text } }),
};

// --- layout -------------------------------------------------------------------------

const header = new Header(post);

const older = h('button', { class: 'older', type: 'button', hidden: true }, 'Load earlier messages');
const rows = h('div', { class: 'rows', id: 'messages' });
const streamingRow = h('div', { class: 'row assistant streaming', id: 'streaming', hidden: true });
const questions = h('div', { class: 'questions', id: 'questions', hidden: true });
const workingText = h('span', { class: 'working-text' }, 'Working…');
const working = h('div', { class: 'row working', id: 'working', hidden: true, role: 'status' }, h('span', { class: 'spinner' }), workingText);
const queue = h('div', { class: 'queue', id: 'queue', hidden: true });
const empty = h('div', { class: 'empty', id: 'empty', hidden: true });
const content = h('div', { class: 'transcript-content' }, older, empty, rows, streamingRow, questions, working, queue);
const transcriptBox = h('main', { class: 'transcript', id: 'transcript', role: 'log', 'aria-live': 'polite' }, content);
const newMessages = h(
  'button',
  { class: 'new-messages', id: 'new-messages', type: 'button', hidden: true, title: 'Scroll to the newest messages' },
  icon(Icons.down),
  'New messages',
);

const follower = new Follower(transcriptBox, content, newMessages);
const paths = new PathLinks(transcriptBox, post);
const composer = new Composer(
  post,
  (draft) => persist({ draft: draft.text, chips: draft.chips }),
  () => follower.toBottom(),
);

document.getElementById('app')!.append(header.element, h('div', { class: 'transcript-frame' }, transcriptBox, newMessages), composer.element);
const transcript = new Transcript(rows);

// --- state --------------------------------------------------------------------------

let state: HeaderState | undefined;
let messageCount = 0;
let olderRequested = false;
let streamingText = '';
let streamingFrame = 0;
// A retry's delay: once it is over, its call is in flight.
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let retrySent = false;

function applyHeader(next: HeaderState): void {
  const before = state;
  // The Stop of a task that ends is hidden: the focus it held goes to the input.
  const stopFocused = document.activeElement?.id === 'stop-button';
  state = next;
  const session = next.session;
  header.update(next);
  const usable = next.serverState === 'running';
  composer.setState(usable, next.running);
  composer.setSlashCommands(next.slashCommands);
  // No forking while a task runs (the server refuses it).
  document.body.classList.toggle('task-running', next.running);
  // A command waiting for its approval has not started: nothing to stop yet.
  document.body.classList.toggle('asking-command', next.questions.some((question) => question.params.kind === 'command'));
  const origin = (header?: HeaderState): string => JSON.stringify([header?.forkOrigin, header?.session?.createdAt]);
  if (origin(next) !== origin(before)) {
    placeForkMark();
  }
  older.hidden = !next.hasMore;
  renderQuestions(questions, next.questions, session?.project ?? '', post, notes);
  // The notes of questions no longer asked go.
  const open = new Set(next.questions.map((question) => String(question.id)));
  if (Object.keys(persisted.notes ?? {}).some((id) => !open.has(id))) {
    persist({ notes: Object.fromEntries(Object.entries(persisted.notes ?? {}).filter(([id]) => open.has(id))) });
  }
  renderQueue(queue, next.queued, post);
  if (next.activity !== before?.activity) {
    clearTimeout(retryTimer);
    retrySent = false;
    if (next.activity?.state === 'retrying' && next.activity.delay !== undefined) {
      retryTimer = setTimeout(() => {
        retrySent = true;
        updateWorking();
      }, next.activity.delay * 1000);
    }
  }
  updateWorking();
  updateEmpty();
  if (next.questions.length > (before?.questions.length ?? 0) || next.queued.length > (before?.queued.length ?? 0)) {
    follower.arrived();
  }
  if (stopFocused && !next.running) {
    composer.focus();
  }
}

// An answered question's card stays, disabled, until the extension takes it away: the
// focus its buttons held goes on to the next question's first choice, else to the input.
questions.addEventListener(ANSWERED, () => {
  const choice = questions.querySelector<HTMLElement>('.question:not(.answered) .question-choices button');
  if (choice) {
    choice.focus();
  } else {
    composer.focus();
  }
});

/** After a fork's copied messages: a line saying where they come from. */
function placeForkMark(): void {
  const next = state;
  const after = next?.forkOrigin ? lastCopied(next.session, transcript.shown) : null;
  transcript.markFork(after, after !== null && next ? originName(next) : '', next?.forkOrigin?.id ?? '');
}

function updateWorking(): void {
  const running = state?.running ?? false;
  const asking = (state?.questions.length ?? 0) > 0;
  // While the reply streams, the reply itself shows that work goes on.
  working.hidden = !running || (streamingText !== '' && !asking);
  workingText.textContent = describeActivity(state?.activity ?? null, asking, retrySent);
  workingText.title = workingText.textContent;
  working.classList.toggle('asking', asking);
}

function updateEmpty(): void {
  const serverState = state?.serverState ?? 'starting';
  const messages: Record<string, string> = {
    starting: 'Starting seri-lsp…',
    missing:
      'The seri-lsp server was not found. Install it from a seri-lsp checkout (pipx install .) so that seri-lsp is on PATH, or set seri.server.command; then run “Seri: Restart Server”.',
    failed: 'The seri server did not start. “Seri: Show Server Log” says why; “Seri: Restart Server” tries again.',
    stopped: 'The seri server is stopped. Run “Seri: Restart Server” to start it.',
    noFolder: 'Open a folder to chat with seri about it: sessions belong to a project.',
  };
  let text = messages[serverState];
  if (serverState === 'running') {
    text = messageCount === 0 && !state?.running ? 'No messages yet. Ask seri to do something in this workspace.' : '';
  }
  empty.textContent = text ?? '';
  empty.hidden = !text;
}

function setStreaming(text: string): void {
  const grew = text !== '' && text !== streamingText;
  streamingText = text;
  if (grew) {
    follower.arrived();
  }
  if (streamingFrame) {
    return;
  }
  // Render at most once a frame: deltas arrive faster than markdown needs redrawing.
  streamingFrame = requestAnimationFrame(() => {
    streamingFrame = 0;
    streamingRow.hidden = streamingText === '';
    // Drawn as the stored reply will be: no reflow when the stream ends.
    streamingRow.replaceChildren(...(streamingText ? [markdownBody(streamingText)] : []));
    updateWorking();
    paths.link();
  });
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'reset': {
      const { messages, notices, streaming, toolOutputs, ...header } = message.snapshot;
      // The same session drawn again keeps the user where they read (the recap, say).
      const keep = state !== undefined && state.session?.id === header.session?.id && !follower.isFollowing;
      const top = transcriptBox.scrollTop;
      messageCount = messages.length;
      olderRequested = false;
      transcript.reset(messages, notices, toolOutputs);
      applyHeader(header);
      placeForkMark();
      setStreaming(streaming);
      paths.link();
      const recap = message.reveal === 'recap' ? rows.querySelector<HTMLElement>('.recap') : null;
      if (recap) {
        follower.reveal(recap);
      } else if (keep) {
        follower.restore(top);
      } else {
        follower.toBottom();
      }
      // A message asked for before this session's page was drawn again.
      revealWanted();
      break;
    }
    case 'append':
      messageCount++;
      if (transcript.append(message.message)) {
        placeForkMark(); // drawn again: the fork's line too
      }
      if (message.message.role === 'tool') {
        paths.forgetMisses();
      }
      paths.link();
      updateEmpty();
      follower.arrived();
      break;
    case 'prepend': {
      const before = transcriptBox.scrollHeight;
      messageCount += message.messages.length;
      transcript.prepend(message.messages);
      placeForkMark();
      transcriptBox.scrollTop += transcriptBox.scrollHeight - before;
      revealWanted();
      paths.link();
      olderRequested = false;
      older.hidden = !message.hasMore;
      if (state) {
        state = { ...state, hasMore: message.hasMore };
      }
      break;
    }
    case 'streaming':
      setStreaming(message.text);
      break;
    case 'toolOutput':
      transcript.toolOutput(message.callId, message.text);
      follower.arrived();
      break;
    case 'notice':
      transcript.addNotice(message.notice);
      follower.arrived();
      break;
    case 'state':
      applyHeader(message.snapshot);
      break;
    case 'focusInput':
      composer.focus();
      break;
    case 'reveal':
      wanted = { id: message.messageId, recap: false };
      revealWanted();
      break;
    case 'setInput':
      composer.setInput(message.text, message.context);
      break;
    case 'attach':
      composer.attach(message.context);
      break;
    case 'files':
      composer.showFiles(message.seq, message.paths);
      break;
    case 'resolvedPaths':
      paths.resolved(message.resolved);
      break;
  }
});

// --- history paging -----------------------------------------------------------------

/**
 * What to bring into view once it is loaded: a recap ("Show recap"; id 0: any recap) or
 * a message (a search hit). Earlier pages are read until it is there.
 */
let wanted: { id: number; recap: boolean } | undefined;

/** Scroll to what is wanted and highlight it briefly, or read the page before first. */
function revealWanted(): void {
  if (wanted === undefined) {
    return;
  }
  const target = wanted.recap
    ? (rows.querySelector<HTMLElement>(`.recap[data-id="${wanted.id}"]`) ?? rows.querySelector<HTMLElement>('.recap'))
    : transcript.rowFor(wanted.id);
  if (target) {
    const block = wanted.recap ? 'start' : 'center';
    wanted = undefined;
    follower.reveal(target, block);
    target.classList.remove('flash');
    void target.offsetWidth; // restart the animation
    target.classList.add('flash');
  } else if (state?.hasMore) {
    requestOlder();
  } else {
    wanted = undefined;
  }
}

function requestOlder(): void {
  if (state?.hasMore && !olderRequested) {
    olderRequested = true;
    post({ type: 'loadOlder' });
  }
}

transcriptBox.addEventListener('scroll', () => {
  if (transcriptBox.scrollTop < 64) {
    requestOlder();
  }
});
older.addEventListener('click', requestOlder);

// --- links, files, code copy, retry ---------------------------------------------------

handleTranscriptClicks(transcriptBox, {
  post,
  showRecap: (recapId) => {
    wanted = { id: recapId, recap: true };
    revealWanted();
  },
  toBottom: () => follower.toBottom(),
});
rovingActions(transcriptBox);

const saved = vscode.getState();
composer.restore(saved ? { text: saved.draft, chips: saved.chips ?? [] } : undefined);
updateEmpty();
post({ type: 'ready', draft: composer.text });
