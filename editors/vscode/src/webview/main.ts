// The chat view's page: header (title, context use, session menu), transcript, and the
// input with slash-command suggestions and a Stop button. It holds no state the
// extension does not also hold, except the unsent draft (kept with setState, so it
// survives the view being hidden and the window being reloaded).

import './style.css';

import type { ChatSnapshot } from '../chat/model';
import type { FromWebview, MenuAction, ToWebview } from '../chat/webviewProtocol';
import { contextPercent, formatTokens } from '../format';
import { SLASH_COMMANDS } from '../protocol';
import { Icons, h, icon } from './dom';
import { renderMarkdown } from './markdown';
import { Transcript } from './transcript';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): PersistedState | undefined;
  setState(state: PersistedState): void;
}

interface PersistedState {
  draft: string;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (message: FromWebview): void => vscode.postMessage(message);

type HeaderState = Omit<ChatSnapshot, 'messages' | 'notices' | 'streaming'>;

const MENU: { action: MenuAction; label: string }[] = [
  { action: 'new', label: 'New session' },
  { action: 'resume', label: 'Resume session…' },
  { action: 'continue', label: 'Continue last session' },
  { action: 'compact', label: 'Compact context…' },
  { action: 'clear', label: 'Clear conversation' },
  { action: 'maxTurns', label: 'Set max turns…' },
  { action: 'rewind', label: 'Rewind…' },
];

// --- layout -------------------------------------------------------------------------

const title = h('div', { class: 'title', id: 'session-title' }, 'Seri');
const subtitle = h('div', { class: 'subtitle', id: 'context-use' });
const menuButton = h(
  'button',
  { class: 'icon-button', id: 'session-menu-button', type: 'button', title: 'Session menu', 'aria-label': 'Session menu', 'aria-haspopup': 'menu', 'aria-expanded': 'false' },
  icon(Icons.menu),
);
const menu = h(
  'div',
  { class: 'menu', id: 'session-menu', role: 'menu', hidden: true },
  ...MENU.map((item) => h('button', { class: 'menu-item', type: 'button', role: 'menuitem', 'data-action': item.action }, item.label)),
);
const header = h('header', { class: 'header' }, h('div', { class: 'title-block' }, title, subtitle), menuButton, menu);

const older = h('button', { class: 'older', type: 'button', hidden: true }, 'Load earlier messages');
const rows = h('div', { class: 'rows', id: 'messages' });
const streamingRow = h('div', { class: 'row assistant streaming', id: 'streaming', hidden: true });
const working = h('div', { class: 'row working', id: 'working', hidden: true }, h('span', { class: 'spinner' }), 'Working…');
const empty = h('div', { class: 'empty', id: 'empty', hidden: true });
const transcriptBox = h('main', { class: 'transcript', id: 'transcript', role: 'log', 'aria-live': 'polite' }, older, empty, rows, streamingRow, working);

const suggestions = h('ul', { class: 'suggestions', id: 'suggestions', role: 'listbox', hidden: true });
const input = h('textarea', {
  id: 'prompt-input',
  rows: '1',
  placeholder: 'Ask seri… (/ for commands)',
  'aria-label': 'Message seri',
});
const sendButton = h('button', { class: 'icon-button send', id: 'send-button', type: 'button', title: 'Send (Enter)', 'aria-label': 'Send' }, icon(Icons.send));
const stopButton = h('button', { class: 'stop', id: 'stop-button', type: 'button', title: 'Stop the running task', hidden: true }, icon(Icons.stop), 'Stop');
const composer = h(
  'footer',
  { class: 'composer' },
  suggestions,
  h('div', { class: 'input-row' }, input, sendButton, stopButton),
  h('div', { class: 'hint' }, 'Enter to send · Shift+Enter for a new line · / for commands'),
);

document.getElementById('app')!.append(header, transcriptBox, composer);
const transcript = new Transcript(rows);

// --- state --------------------------------------------------------------------------

let state: HeaderState | undefined;
let messageCount = 0;
let olderRequested = false;
let streamingText = '';
let streamingFrame = 0;

function applyHeader(next: HeaderState): void {
  state = next;
  const session = next.session;
  title.textContent = session ? session.title || 'New session' : 'Seri';
  title.title = session ? `${session.title || 'New session'} (${session.id})` : '';
  if (next.usage && session) {
    const { estimateTokens, contextWindow } = next.usage;
    const percent = contextPercent(estimateTokens, contextWindow);
    subtitle.textContent = `${percent}% of context · ${formatTokens(estimateTokens)} / ${formatTokens(contextWindow)} tokens`;
  } else {
    subtitle.textContent = '';
  }
  const running = next.running;
  stopButton.hidden = !running;
  sendButton.hidden = running;
  working.hidden = !running || streamingText !== '';
  const usable = next.serverState === 'running';
  input.disabled = !usable;
  menuButton.disabled = !usable;
  older.hidden = !next.hasMore;
  updateEmpty();
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

function atBottom(): boolean {
  return transcriptBox.scrollHeight - transcriptBox.scrollTop - transcriptBox.clientHeight < 48;
}

function keepBottom(update: () => void): void {
  const stick = atBottom();
  update();
  if (stick) {
    transcriptBox.scrollTop = transcriptBox.scrollHeight;
  }
}

function setStreaming(text: string): void {
  streamingText = text;
  if (streamingFrame) {
    return;
  }
  // Render at most once a frame: deltas arrive faster than markdown needs redrawing.
  streamingFrame = requestAnimationFrame(() => {
    streamingFrame = 0;
    keepBottom(() => {
      streamingRow.hidden = streamingText === '';
      streamingRow.innerHTML = streamingText ? renderMarkdown(streamingText) : '';
      working.hidden = !(state?.running ?? false) || streamingText !== '';
    });
  });
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'reset': {
      const { messages, notices, streaming, ...header } = message.snapshot;
      messageCount = messages.length;
      olderRequested = false;
      transcript.reset(messages, notices);
      applyHeader(header);
      setStreaming(streaming);
      transcriptBox.scrollTop = transcriptBox.scrollHeight;
      break;
    }
    case 'append':
      messageCount++;
      keepBottom(() => transcript.append(message.message));
      updateEmpty();
      break;
    case 'prepend': {
      const before = transcriptBox.scrollHeight;
      messageCount += message.messages.length;
      transcript.prepend(message.messages);
      transcriptBox.scrollTop += transcriptBox.scrollHeight - before;
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
    case 'notice':
      keepBottom(() => transcript.addNotice(message.notice));
      break;
    case 'state':
      keepBottom(() => applyHeader(message.snapshot));
      break;
    case 'focusInput':
      input.focus();
      break;
    case 'setInput':
      setInput(message.text);
      break;
  }
});

// --- history paging -----------------------------------------------------------------

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

// --- links, files, code copy --------------------------------------------------------

transcriptBox.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  const copy = target.closest('.code-copy');
  if (copy) {
    const code = copy.closest('.code-block')?.querySelector('code');
    post({ type: 'copy', text: code?.textContent ?? '' });
    copy.textContent = 'Copied';
    setTimeout(() => (copy.textContent = 'Copy'), 1200);
    return;
  }
  const file = target.closest<HTMLElement>('.file-link');
  if (file?.dataset.path) {
    event.preventDefault();
    post({ type: 'openFile', path: file.dataset.path });
    return;
  }
  const link = target.closest('a');
  if (link) {
    event.preventDefault();
    const href = link.getAttribute('href');
    if (href) {
      post({ type: 'openLink', href });
    }
  }
});

// --- session menu -------------------------------------------------------------------

function closeMenu(): void {
  menu.hidden = true;
  menuButton.setAttribute('aria-expanded', 'false');
}

menuButton.addEventListener('click', (event) => {
  event.stopPropagation();
  menu.hidden = !menu.hidden;
  menuButton.setAttribute('aria-expanded', String(!menu.hidden));
  if (!menu.hidden) {
    menu.querySelector<HTMLButtonElement>('.menu-item')?.focus();
  }
});
menu.addEventListener('click', (event) => {
  const item = (event.target as HTMLElement).closest<HTMLElement>('.menu-item');
  if (item?.dataset.action) {
    closeMenu();
    post({ type: 'menu', action: item.dataset.action as MenuAction });
  }
});
menu.addEventListener('keydown', (event) => {
  const items = [...menu.querySelectorAll<HTMLButtonElement>('.menu-item')];
  const index = items.indexOf(document.activeElement as HTMLButtonElement);
  if (event.key === 'Escape') {
    closeMenu();
    menuButton.focus();
  } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
    event.preventDefault();
    const step = event.key === 'ArrowDown' ? 1 : -1;
    items[(index + step + items.length) % items.length]?.focus();
  }
});
document.addEventListener('click', (event) => {
  if (!menu.hidden && !menu.contains(event.target as Node)) {
    closeMenu();
  }
});

// --- input ----------------------------------------------------------------------------

let suggestionIndex = 0;
let matches: typeof SLASH_COMMANDS = [];

function updateSuggestions(): void {
  const value = input.value;
  const word = /^\/([\w-]*)$/.exec(value);
  matches = word ? SLASH_COMMANDS.filter((command) => command.name.startsWith(word[1].toLowerCase())) : [];
  suggestionIndex = Math.min(suggestionIndex, Math.max(0, matches.length - 1));
  suggestions.replaceChildren(
    ...matches.map((command, index) =>
      h(
        'li',
        { role: 'option', class: 'suggestion', 'data-name': command.name, 'aria-selected': String(index === suggestionIndex) },
        h('span', { class: 'suggestion-usage' }, command.usage),
        h('span', { class: 'suggestion-description' }, command.description),
      ),
    ),
  );
  suggestions.hidden = matches.length === 0;
}

function acceptSuggestion(index: number): void {
  const command = matches[index];
  if (!command) {
    return;
  }
  const takesArgument = command.usage.includes(' ');
  input.value = `/${command.name}${takesArgument ? ' ' : ''}`;
  suggestionIndex = 0;
  updateSuggestions();
  resize();
  saveDraft();
  input.focus();
}

function resize(): void {
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
}

function saveDraft(): void {
  vscode.setState({ draft: input.value });
  post({ type: 'draft', text: input.value });
}

/** The extension puts text into the input (a rewound prompt, to edit and send again). */
function setInput(text: string): void {
  input.value = text;
  suggestionIndex = 0;
  updateSuggestions();
  resize();
  saveDraft();
  input.focus();
  input.setSelectionRange(text.length, text.length);
}

function send(): void {
  const text = input.value.trim();
  if (!text || state?.running || state?.serverState !== 'running') {
    return;
  }
  post({ type: 'send', text });
  input.value = '';
  updateSuggestions();
  resize();
  saveDraft();
}

input.addEventListener('input', () => {
  suggestionIndex = 0;
  updateSuggestions();
  resize();
  saveDraft();
});

input.addEventListener('keydown', (event) => {
  if (!suggestions.hidden) {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      suggestionIndex = (suggestionIndex + step + matches.length) % matches.length;
      updateSuggestions();
      return;
    }
    if (event.key === 'Tab' || (event.key === 'Enter' && !event.shiftKey)) {
      const exact = matches.length === 1 && input.value === `/${matches[0].name}`;
      if (!exact || event.key === 'Tab') {
        event.preventDefault();
        acceptSuggestion(suggestionIndex);
        return;
      }
    }
    if (event.key === 'Escape') {
      event.preventDefault();
      matches = [];
      suggestions.hidden = true;
      return;
    }
  }
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});

suggestions.addEventListener('mousedown', (event) => {
  const item = (event.target as HTMLElement).closest<HTMLElement>('.suggestion');
  if (item) {
    event.preventDefault();
    acceptSuggestion(matches.findIndex((command) => command.name === item.dataset.name));
  }
});

sendButton.addEventListener('click', send);
stopButton.addEventListener('click', () => post({ type: 'stop' }));

input.value = vscode.getState()?.draft ?? '';
resize();
updateEmpty();
post({ type: 'ready', draft: input.value });
