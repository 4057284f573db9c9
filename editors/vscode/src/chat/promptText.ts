// A stored prompt read back into what the user wrote and what they attached. The server
// writes attachments into the prompt (docs/protocol.md, `seri.prompt`'s `context`):
//
//     Explain this
//
//     Attached: @README.md, @src/util.py (lines 7)
//
//     <context path="src/app.py" lines="2-3">
//     b = 2
//     </context>
//
// The transcript shows the mentions as chips and the blocks folded, not as raw tags.

/** A file (or lines of it) the prompt names. */
export interface Mention {
  path: string;
  startLine?: number;
  endLine?: number;
}

/** Attached text: a selection, or a buffer with unsaved changes. */
export interface ContextBlock extends Mention {
  text: string;
}

export interface PromptParts {
  text: string;
  mentions: Mention[];
  blocks: ContextBlock[];
}

const CLOSE = '\n</context>';
const OPEN = /(?:^|\n\n)<context (?:path|uri)="([^"]*)"(?: lines="(\d+)(?:-(\d+))?")?>\n/g;
const ATTACHED = /(?:^|\n\n)Attached: (@[^\n]+)$/;
const MENTION = /^@(.+?)(?: \(lines (\d+)(?:-(\d+))?\))?$/;

/** Split a stored prompt into the user's text, the `Attached:` mentions and the `<context>` blocks. */
export function splitPrompt(content: string): PromptParts {
  let rest = content;
  const blocks: ContextBlock[] = [];
  while (rest.endsWith(CLOSE)) {
    let last: RegExpExecArray | undefined;
    OPEN.lastIndex = 0;
    for (let match = OPEN.exec(rest); match; match = OPEN.exec(rest)) {
      last = match;
    }
    if (!last) {
      break;
    }
    const body = rest.slice(last.index + last[0].length, rest.length - CLOSE.length);
    blocks.unshift({ ...lines(unquote(last[1]), last[2], last[3]), text: body });
    rest = rest.slice(0, last.index);
  }
  const mentions: Mention[] = [];
  const attached = ATTACHED.exec(rest);
  if (attached) {
    const items = attached[1].split(/, (?=@)/).map((item) => MENTION.exec(item));
    if (items.every((item) => item !== null)) {
      mentions.push(...items.map((item) => lines(item![1], item![2], item![3])));
      rest = rest.slice(0, attached.index);
    }
  }
  return { text: rest, mentions, blocks };
}

function lines(path: string, start: string | undefined, end: string | undefined): Mention {
  if (start === undefined) {
    return { path };
  }
  return { path, startLine: Number(start), endLine: Number(end ?? start) };
}

function unquote(value: string): string {
  return value.replace(/&quot;/g, '"').replace(/&amp;/g, '&');
}

/** `src/app.py:2-3`, `src/app.py:7`, `src/app.py`: how a chip names what is attached. */
export function mentionLabel(mention: Mention): string {
  if (mention.startLine === undefined) {
    return mention.path;
  }
  const end = mention.endLine ?? mention.startLine;
  return `${mention.path}:${end === mention.startLine ? mention.startLine : `${mention.startLine}-${end}`}`;
}

/**
 * A session's title as the user wrote it: the server takes the title from the first
 * stored prompt, so one sent with attachments would show their `Attached:` line or a
 * `<context>` tag. 'New session' until there is a title.
 */
export function sessionTitle(title: string): string {
  return title.replace(/\s+(?:Attached: @|<context (?:path|uri)=").*$/s, '').trim() || 'New session';
}
