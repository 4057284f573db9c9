// The chat input: the text, the attachments shown as chips above it, and the suggestions
// under the caret: slash commands (`/`, those the server advertises), workspace files (`@`, searched by the extension
// as you type) and the editor's selection or file (`#selection`, `#buffer`). Enter sends,
// also while a task runs (the extension queues it); Shift+Enter starts a new line.

import { mentionLabel } from '../chat/promptText';
import type { FromWebview } from '../chat/webviewProtocol';
import type { PromptContext, SlashCommand } from '../protocol';
import { Icons, h, icon } from './dom';
import { slashSuggestions } from './slashCompletion';

/** What the composer keeps across the view being hidden and the window reloading. */
export interface Draft {
  text: string;
  chips: PromptContext[];
}

interface Suggestion {
  key: string;
  label: string;
  description: string;
  accept(): void;
}

const HASH_WORDS = [
  { name: 'selection', description: 'the lines selected in the editor, with their text' },
  { name: 'buffer', description: 'the file in the editor (with its text when unsaved)' },
] as const;

type HashWord = (typeof HASH_WORDS)[number]['name'];

export class Composer {
  readonly element: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly chipRow: HTMLElement;
  private readonly list: HTMLUListElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private chips: PromptContext[] = [];
  private suggestions: Suggestion[] = [];
  private selected = 0;
  private usable = false;
  // The running server's slash commands; none before it runs.
  private slashCommands: readonly SlashCommand[] = [];
  // The `@` search: its number, so that a late answer to an older query is dropped.
  private fileQuery = 0;

  constructor(
    private readonly post: (message: FromWebview) => void,
    private readonly persist: (draft: Draft) => void,
    /** Called after a prompt was sent (the transcript scrolls to it). */
    private readonly sent: () => void,
  ) {
    this.list = h('ul', { class: 'suggestions', id: 'suggestions', role: 'listbox', hidden: true });
    this.chipRow = h('div', { class: 'chips', id: 'attachments', hidden: true });
    // Disabled until the extension says the server runs (the first state it sends).
    this.input = h('textarea', {
      id: 'prompt-input',
      rows: '1',
      disabled: true,
      placeholder: 'Ask seri…',
      'aria-label': 'Message seri',
    });
    this.sendButton = h('button', { class: 'icon-button send', id: 'send-button', type: 'button', title: 'Send (Enter)', 'aria-label': 'Send' }, icon(Icons.send));
    this.stopButton = h('button', { class: 'stop', id: 'stop-button', type: 'button', title: 'Stop the running task', hidden: true }, icon(Icons.stop), 'Stop');
    this.element = h(
      'footer',
      { class: 'composer' },
      this.list,
      h('div', { class: 'input-box' }, this.chipRow, h('div', { class: 'input-row' }, this.input, this.sendButton, this.stopButton)),
      h('div', { class: 'hint', id: 'composer-hint', title: 'Enter sends (queued while a task runs) · Shift+Enter starts a new line' }, '/ commands · @ files · #selection · #buffer'),
    );
    this.input.addEventListener('input', () => this.changed());
    this.input.addEventListener('click', () => this.suggest());
    this.input.addEventListener('keydown', (event) => this.keydown(event));
    this.input.addEventListener('blur', () => setTimeout(() => this.closeSuggestions(), 150));
    this.list.addEventListener('mousedown', (event) => {
      const item = (event.target as HTMLElement).closest<HTMLElement>('.suggestion');
      if (item) {
        event.preventDefault();
        this.suggestions.find((s) => s.key === item.dataset.key)?.accept();
      }
    });
    this.chipRow.addEventListener('click', (event) => {
      const remove = (event.target as HTMLElement).closest<HTMLElement>('.chip-remove');
      if (remove) {
        this.chips.splice(Number(remove.dataset.index), 1);
        this.renderChips();
        this.save();
        this.input.focus();
      }
    });
    this.sendButton.addEventListener('click', () => this.send());
    this.stopButton.addEventListener('click', () => this.post({ type: 'stop' }));
  }

  /** The draft saved before the view was hidden or the window reloaded. */
  restore(draft: Draft | undefined): void {
    this.input.value = draft?.text ?? '';
    this.chips = draft?.chips ?? [];
    this.renderChips();
    this.resize();
  }

  get text(): string {
    return this.input.value;
  }

  setState(usable: boolean, running: boolean): void {
    this.usable = usable;
    this.input.disabled = !usable;
    this.stopButton.hidden = !running;
    this.sendButton.title = running ? 'Queue: sent when the running task ends (Enter)' : 'Send (Enter)';
    this.input.placeholder = running ? 'Queue a message…' : 'Ask seri…';
  }

  /** The slash commands the running server advertises (none while it is not running). */
  setSlashCommands(commands: readonly SlashCommand[]): void {
    // Every state message carries the list: only a different one is drawn again.
    if (JSON.stringify(commands) === JSON.stringify(this.slashCommands)) {
      return;
    }
    this.slashCommands = commands;
    if (document.activeElement === this.input && this.tokenAtCaret()?.sigil === '/') {
      this.suggest();
    }
  }

  focus(): void {
    this.input.focus();
  }

  /** The extension puts text into the input (a rewound prompt, to edit and send again). */
  setInput(text: string, context: PromptContext[] = []): void {
    this.input.value = text;
    this.addChips(context);
    this.closeSuggestions();
    this.resize();
    this.save();
    this.input.focus();
    this.input.setSelectionRange(text.length, text.length);
  }

  /** Attach files or lines to the next prompt (shown as chips until it is sent). */
  attach(context: PromptContext[]): void {
    this.addChips(context);
    this.save();
    this.input.focus();
  }

  /** The extension's answer to the `@` search number `seq`. */
  showFiles(seq: number, paths: string[]): void {
    const token = this.tokenAtCaret();
    if (seq !== this.fileQuery || token?.sigil !== '@') {
      return;
    }
    this.show(
      paths.map((path) => ({
        key: `@${path}`,
        label: path,
        description: '',
        accept: () => {
          this.removeToken();
          this.addChips([{ path }]);
          this.save();
        },
      })),
      paths.length === 0 ? `No file matches “${token.word}”` : undefined,
    );
  }

  // --- sending --------------------------------------------------------------------------

  private send(): void {
    const text = this.input.value.trim();
    if (!this.usable || (!text && this.chips.length === 0)) {
      return;
    }
    this.post({ type: 'send', text: text || 'See the attached.', context: this.chips });
    this.input.value = '';
    this.chips = [];
    this.renderChips();
    this.closeSuggestions();
    this.resize();
    this.save();
    this.sent();
  }

  private keydown(event: KeyboardEvent): void {
    if (!this.list.hidden && this.suggestions.length > 0) {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        const step = event.key === 'ArrowDown' ? 1 : -1;
        this.selected = (this.selected + step + this.suggestions.length) % this.suggestions.length;
        this.renderSuggestions();
        return;
      }
      if (event.key === 'Tab' || (event.key === 'Enter' && !event.shiftKey)) {
        // A command typed out in full is sent by Enter, not completed again.
        const exact = this.suggestions.length === 1 && this.input.value === this.suggestions[0].key;
        if (!exact || event.key === 'Tab') {
          event.preventDefault();
          this.suggestions[this.selected]?.accept();
          return;
        }
      }
    }
    if (event.key === 'Escape' && !this.list.hidden) {
      event.preventDefault();
      this.closeSuggestions();
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
    }
  }

  // --- suggestions ----------------------------------------------------------------------

  private changed(): void {
    // `#selection ` typed out becomes its chip.
    const typed = /(?:^|\s)#(selection|buffer)\s$/.exec(this.input.value.slice(0, this.input.selectionStart));
    if (typed) {
      this.useHashWord(typed[1] as HashWord, typed[0].trimStart().length);
    }
    this.selected = 0;
    this.suggest();
    this.resize();
    this.save();
  }

  /** The `/`, `@` or `#` word the caret is in, if any. */
  private tokenAtCaret(): { sigil: '/' | '@' | '#'; word: string; start: number } | undefined {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const slash = /^\/([\w-]*)$/.exec(this.input.value);
    if (slash && this.input.selectionStart === this.input.value.length) {
      return { sigil: '/', word: slash[1], start: 0 };
    }
    const match = /(^|\s)([@#])([^\s@#]*)$/.exec(before);
    if (!match) {
      return undefined;
    }
    return { sigil: match[2] as '@' | '#', word: match[3], start: match.index + match[1].length };
  }

  private suggest(): void {
    const token = this.tokenAtCaret();
    if (!token) {
      this.closeSuggestions();
    } else if (token.sigil === '/') {
      this.show(
        slashSuggestions(this.slashCommands, token.word).map((suggestion) => ({
          ...suggestion,
          accept: () => {
            this.input.value = suggestion.insert;
            this.closeSuggestions();
            this.resize();
            this.save();
          },
        })),
      );
    } else if (token.sigil === '#') {
      const words = HASH_WORDS.filter((word) => word.name.startsWith(token.word.toLowerCase()));
      this.show(
        words.map((word) => ({
          key: `#${word.name}`,
          label: `#${word.name}`,
          description: word.description,
          accept: () => this.useHashWord(word.name, this.input.selectionStart - token.start),
        })),
      );
    } else {
      this.fileQuery++;
      this.post({ type: 'findFiles', seq: this.fileQuery, query: token.word });
    }
  }

  /** Replace `#word` (the `length` characters before the caret) by its chip, from the extension. */
  private useHashWord(word: HashWord, length: number): void {
    const caret = this.input.selectionStart;
    this.input.value = this.input.value.slice(0, caret - length) + this.input.value.slice(caret);
    this.input.setSelectionRange(caret - length, caret - length);
    this.post({ type: 'attach', what: word });
    this.closeSuggestions();
    this.save();
  }

  /** Drop the `@word` the caret is in (its file became a chip). */
  private removeToken(): void {
    const token = this.tokenAtCaret();
    if (!token) {
      return;
    }
    const caret = this.input.selectionStart;
    this.input.value = this.input.value.slice(0, token.start) + this.input.value.slice(caret);
    this.input.setSelectionRange(token.start, token.start);
    this.closeSuggestions();
    this.input.focus();
  }

  private show(suggestions: Suggestion[], empty?: string): void {
    this.suggestions = suggestions;
    this.selected = Math.min(this.selected, Math.max(0, suggestions.length - 1));
    this.renderSuggestions(empty);
  }

  private renderSuggestions(empty?: string): void {
    const items = this.suggestions.map((suggestion, index) =>
      h(
        'li',
        {
          role: 'option',
          class: 'suggestion',
          'data-key': suggestion.key,
          'aria-selected': String(index === this.selected),
          // A narrow view cuts the summary short: the whole of it on hover.
          title: suggestion.description ? `${suggestion.label}: ${suggestion.description}` : undefined,
        },
        h('span', { class: 'suggestion-usage' }, suggestion.label),
        suggestion.description ? h('span', { class: 'suggestion-description' }, suggestion.description) : null,
      ),
    );
    if (items.length === 0 && empty) {
      items.push(h('li', { class: 'suggestion-empty' }, empty));
    }
    this.list.replaceChildren(...items);
    this.list.hidden = items.length === 0;
    this.list.querySelector('[aria-selected="true"]')?.scrollIntoView({ block: 'nearest' });
  }

  private closeSuggestions(): void {
    this.suggestions = [];
    this.list.hidden = true;
  }

  // --- chips ------------------------------------------------------------------------------

  private addChips(context: PromptContext[]): void {
    for (const entry of context) {
      const same = this.chips.some(
        (chip) => chip.path === entry.path && chip.startLine === entry.startLine && chip.endLine === entry.endLine && chip.text === entry.text,
      );
      if (!same) {
        this.chips.push(entry);
      }
    }
    this.renderChips();
  }

  private renderChips(): void {
    this.chipRow.replaceChildren(
      ...this.chips.map((chip, index) =>
        h(
          'span',
          { class: 'chip attachment', title: chipTitle(chip) },
          chip.text !== undefined ? icon(Icons.snippet) : icon(Icons.file),
          h('span', { class: 'chip-label' }, mentionLabel(chip)),
          h('button', { class: 'chip-remove', type: 'button', title: 'Remove', 'aria-label': `Remove ${mentionLabel(chip)}`, 'data-index': String(index) }, '×'),
        ),
      ),
    );
    this.chipRow.hidden = this.chips.length === 0;
  }

  private resize(): void {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 200)}px`;
  }

  private save(): void {
    this.persist({ text: this.input.value, chips: this.chips });
    this.post({ type: 'draft', text: this.input.value });
  }
}

function chipTitle(chip: PromptContext): string {
  if (chip.text === undefined) {
    return `${mentionLabel(chip)} (seri reads it when it needs to)`;
  }
  const lines = chip.text.split('\n').length;
  return `${mentionLabel(chip)}: ${lines} line${lines === 1 ? '' : 's'} of text, sent with the prompt`;
}
