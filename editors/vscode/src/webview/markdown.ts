// Markdown to safe HTML. markdown-it with `html: false` escapes every tag the model
// writes, and its link check refuses javascript:, vbscript:, file: and data: URLs; images
// are off (no remote fetches from the chat). Only links written with their scheme become
// links (`app.py` or `example.com` alone stay text). Code blocks are highlighted; paths
// in the text or in inline code (`src/app.py:12`) are marked as candidates, which the
// chat makes links to the file once the extension says the file exists. The result
// only holds tags markdown-it itself produces, plus what is added here from escaped text.

import MarkdownIt from 'markdown-it';

import { highlight } from './highlight';

type Token = MarkdownIt.Token;

const md = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  typographer: false,
  highlight: (code, language) => highlight(code, language) ?? '',
});
md.disable('image');
// Without a scheme nothing is a link: `README.md` and `main.rs` are file names.
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });

const escape = md.utils.escapeHtml;

const fence = md.renderer.rules.fence!;
/** A file name in a fence's info string: a dot and an extension, no scheme. */
const FENCE_PATH = /^(?![a-z][\w+.-]*:)[\w./\\-]*[\w-]\.[A-Za-z0-9]+$/;
md.renderer.rules.fence = (tokens, index, options, env, self) => {
  const [language = '', ...rest] = tokens[index].info.trim().split(/\s+/);
  const label = escape(language || 'text');
  // A block that names its file (```python src/app.py, or ```src/app.py) applies there.
  const named = [language, ...rest].find((word) => FENCE_PATH.test(word));
  const file = named ? ` data-file="${escape(named)}"` : '';
  const apply = named ? `Apply the code to ${escape(named)} (a diff to approve)` : 'Apply the code to a file (a diff to approve)';
  return (
    `<div class="code-block"${file}><div class="code-head"><span class="code-lang">${label}</span>` +
    '<span class="code-actions" role="toolbar" aria-label="Code actions">' +
    `<button type="button" class="code-copy" title="Copy code">Copy</button>` +
    `<button type="button" class="code-insert" title="Insert the code at the cursor of the last active editor">Insert</button>` +
    `<button type="button" class="code-apply" title="${apply}">Apply</button></span></div>` +
    fence(tokens, index, options, env, self) +
    '</div>'
  );
};

const linkOpen = md.renderer.rules.link_open;
md.renderer.rules.link_open = (tokens, index, options, env, self) => {
  tokens[index].attrSet('rel', 'noreferrer noopener');
  return linkOpen ? linkOpen(tokens, index, options, env, self) : self.renderToken(tokens, index, options);
};

// --- paths -----------------------------------------------------------------------------

const EXTENSIONS =
  'py|pyi|ipynb|rs|ts|tsx|js|jsx|mjs|cjs|json|jsonc|md|mdx|rst|txt|toml|yaml|yml|ini|cfg|conf|lua|vim|go|java|kt|kts|' +
  'c|h|cc|cpp|cxx|hpp|hh|cs|rb|php|swift|m|mm|sh|bash|zsh|fish|ps1|css|scss|sass|less|html|htm|vue|svelte|sql|xml|svg|' +
  'lock|gradle|proto|tf|nix|ex|exs|erl|hs|ml|mli|scala|dart|r|jl|zig|el|clj|csv|tex|env';
/**
 * A path in running text: a known extension, optional directories, an optional `:line`;
 * an `@` in front (a mention) is not part of it.
 */
const TEXT_PATH = new RegExp(
  `(?<![\\w@./\\\\-])@?((?:\\.{1,2}/)?(?:[\\w.-]+/)*[\\w-][\\w.-]*\\.(?:${EXTENSIONS}))(?::(\\d+)(?:[-:]\\d+)?)?(?![\\w/\\\\-]|\\.\\w)`,
  'g',
);

/** A path found in text: where it is, as written, and the file and line it names. */
export interface FoundPath {
  index: number;
  text: string;
  path: string;
  line?: number;
}

/** The paths in plain text (`see src/app.py:12`, `@README.md`). */
export function findPaths(text: string): FoundPath[] {
  return [...text.matchAll(TEXT_PATH)].map((match) => ({
    index: match.index,
    text: match[0],
    path: match[1],
    line: match[2] ? Number(match[2]) : undefined,
  }));
}
/** A path that is all of an inline code span: any extension, or directories, or a known name. */
const CODE_PATH =
  /^((?:\.{1,2}\/|\/)?(?:[\w.@+-]+\/)*(?:[\w.@+-]*[\w-]\.[A-Za-z][\w-]*|Makefile|Dockerfile|Justfile|README|LICENSE)|(?:[\w.@+-]+\/)+[\w.@+-]*\w)(?::(\d+)(?:[-:]\d+)?)?$/;

interface PathMeta {
  path: string;
  line?: number;
}

function pathAttributes(meta: PathMeta): string {
  return `class="path-candidate" data-path="${escape(meta.path)}"${meta.line ? ` data-line="${meta.line}"` : ''}`;
}

md.core.ruler.push('path_candidates', (state) => {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) {
      continue;
    }
    const children: Token[] = [];
    let inLink = 0;
    for (const token of block.children) {
      if (token.type === 'link_open') {
        inLink++;
      } else if (token.type === 'link_close') {
        inLink--;
      }
      if (token.type === 'code_inline' && !inLink) {
        const match = CODE_PATH.exec(token.content.trim());
        if (match) {
          token.meta = { path: match[1], line: match[2] ? Number(match[2]) : undefined } satisfies PathMeta;
        }
      }
      if (token.type !== 'text' || inLink) {
        children.push(token);
        continue;
      }
      let last = 0;
      for (const found of findPaths(token.content)) {
        if (found.index > last) {
          children.push(textToken(state, token.content.slice(last, found.index), token.level));
        }
        const candidate = new state.Token('path_candidate', '', 0);
        candidate.content = found.text;
        candidate.meta = { path: found.path, line: found.line } satisfies PathMeta;
        children.push(candidate);
        last = found.index + found.text.length;
      }
      children.push(last === 0 ? token : textToken(state, token.content.slice(last), token.level));
    }
    block.children = children.filter((token) => token.type !== 'text' || token.content !== '');
  }
});

function textToken(state: MarkdownIt.StateCore, content: string, level: number): Token {
  const token = new state.Token('text', '', 0);
  token.content = content;
  token.level = level;
  return token;
}

md.renderer.rules.path_candidate = (tokens, index) =>
  `<span ${pathAttributes(tokens[index].meta as PathMeta)}>${escape(tokens[index].content)}</span>`;

const codeInline = md.renderer.rules.code_inline!;
md.renderer.rules.code_inline = (tokens, index, options, env, self) => {
  const meta = tokens[index].meta as PathMeta | null;
  if (!meta) {
    return codeInline(tokens, index, options, env, self);
  }
  return `<code ${pathAttributes(meta)}>${escape(tokens[index].content)}</code>`;
};

/** Render model-written markdown as sanitised HTML. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}
