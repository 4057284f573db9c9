// Paths in the transcript become links to their file once the extension says which
// workspace file they name (`app.py` is `src/app.py`); a name that is no file stays text.

import type { FromWebview } from '../chat/webviewProtocol';
import { h } from './dom';
import { findPaths } from './markdown';

export class PathLinks {
  // Path as written -> the workspace file it names, or null: none.
  private readonly known = new Map<string, string | null>();
  private readonly asked = new Set<string>();

  constructor(
    private readonly root: HTMLElement,
    private readonly post: (message: FromWebview) => void,
  ) {}

  /** Link the candidates known to be files; ask the extension about the others. */
  link(): void {
    const unknown = new Set<string>();
    for (const element of this.root.querySelectorAll<HTMLElement>('.path-candidate:not(.checked)')) {
      const path = element.dataset.path ?? '';
      const file = this.known.get(path);
      if (file === undefined) {
        if (!this.asked.has(path)) {
          unknown.add(path);
        }
        continue;
      }
      element.classList.add('checked');
      if (file !== null) {
        element.classList.add('file-link');
        element.dataset.file = file;
        element.setAttribute('role', 'link');
        element.title = `Open ${file}${element.dataset.line ? ` at line ${element.dataset.line}` : ''}`;
      }
    }
    if (unknown.size > 0) {
      unknown.forEach((path) => this.asked.add(path));
      this.post({ type: 'resolvePaths', paths: [...unknown] });
    }
  }

  /** The extension's answer. */
  resolved(resolved: Record<string, string | null>): void {
    for (const [path, file] of Object.entries(resolved)) {
      this.known.set(path, file);
      this.asked.delete(path);
    }
    this.link();
  }

  /** A tool ran: names that were no file may be files now (in what is drawn from here on). */
  forgetMisses(): void {
    for (const [path, file] of this.known) {
      if (file === null) {
        this.known.delete(path);
      }
    }
  }
}

/** Plain text with the paths in it marked as candidates (a user's prompt). */
export function textWithPaths(text: string): Node[] {
  const nodes: Node[] = [];
  let last = 0;
  for (const found of findPaths(text)) {
    nodes.push(document.createTextNode(text.slice(last, found.index)));
    const span = h('span', { class: 'path-candidate', 'data-path': found.path, 'data-line': found.line?.toString() }, found.text);
    nodes.push(span);
    last = found.index + found.text.length;
  }
  nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}
