// Workspace paths for the chat: the files the `@` picker offers for what was typed, and
// the file a name in a reply stands for (`app.py` for `src/app.py`). Paths are
// workspace-relative with `/`; no `vscode` import, so this is testable in plain Node.

/** The files whose path matches `query`, best first, at most `limit`. */
export function rankFiles(paths: readonly string[], query: string, limit = 50, preferred: ReadonlySet<string> = new Set()): string[] {
  const wanted = query.trim().toLowerCase().replace(/\\/g, '/');
  const scored: { path: string; score: number }[] = [];
  for (const path of paths) {
    const score = matchScore(path.toLowerCase(), wanted);
    if (score !== undefined) {
      // Files open in the editor come first among equals.
      scored.push({ path, score: score - (preferred.has(path) ? 0.5 : 0) });
    }
  }
  scored.sort((a, b) => a.score - b.score || depth(a.path) - depth(b.path) || a.path.length - b.path.length || a.path.localeCompare(b.path));
  return scored.slice(0, limit).map((entry) => entry.path);
}

/** Lower is better; undefined: no match. */
function matchScore(path: string, query: string): number | undefined {
  if (query === '') {
    return 0;
  }
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name.startsWith(query)) {
    return 1;
  }
  if (name.includes(query)) {
    return 2;
  }
  if (path.startsWith(query)) {
    return 3;
  }
  if (path.includes(query)) {
    return 4;
  }
  return isSubsequence(query, path) ? 5 : undefined;
}

function isSubsequence(query: string, text: string): boolean {
  let at = 0;
  for (const char of query) {
    at = text.indexOf(char, at);
    if (at < 0) {
      return false;
    }
    at++;
  }
  return true;
}

function depth(path: string): number {
  return path.split('/').length;
}

/**
 * The workspace file a path in a reply names: itself when it is one (`./` and the
 * project folder in front are dropped), else the file it ends (`app.py` is
 * `src/app.py`), the shortest when several do. Undefined when none does.
 */
export function resolvePath(paths: readonly string[], candidate: string, projectFolder = ''): string | undefined {
  let wanted = candidate.trim().replace(/\\/g, '/');
  const root = projectFolder.replace(/\\/g, '/').replace(/\/+$/, '');
  if (root && wanted.startsWith(`${root}/`)) {
    wanted = wanted.slice(root.length + 1);
  }
  wanted = wanted.replace(/^(\.\/)+/, '');
  if (wanted === '' || wanted.startsWith('/') || wanted.split('/').includes('..')) {
    return undefined;
  }
  let best: string | undefined;
  for (const path of paths) {
    if (path === wanted) {
      return path;
    }
    if (path.endsWith(`/${wanted}`) && (best === undefined || path.length < best.length)) {
      best = path;
    }
  }
  return best;
}
