// Markdown to safe HTML. markdown-it with `html: false` escapes every tag the model
// writes, and its link check refuses javascript:, vbscript:, file: and data: URLs; images
// are off (no remote fetches from the chat). The result only holds tags markdown-it
// itself produces, plus the code block header added here from escaped text.

import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
md.disable('image');

const fence = md.renderer.rules.fence!;
md.renderer.rules.fence = (tokens, index, options, env, self) => {
  const language = tokens[index].info.trim().split(/\s+/)[0] ?? '';
  const label = md.utils.escapeHtml(language || 'text');
  return (
    `<div class="code-block"><div class="code-head"><span class="code-lang">${label}</span>` +
    `<button type="button" class="code-copy" title="Copy code">Copy</button></div>` +
    fence(tokens, index, options, env, self) +
    '</div>'
  );
};

const linkOpen = md.renderer.rules.link_open;
md.renderer.rules.link_open = (tokens, index, options, env, self) => {
  tokens[index].attrSet('rel', 'noreferrer noopener');
  return linkOpen ? linkOpen(tokens, index, options, env, self) : self.renderToken(tokens, index, options);
};

/** Render model-written markdown as sanitised HTML. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}
