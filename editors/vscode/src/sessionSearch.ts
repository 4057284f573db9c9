// "Seri: Search Sessions...": a QuickPick that asks `seri.session.search` as the user
// types (debounced; an answer to an older query is dropped), one item per hit: the
// session's title, the matching snippet, when and where. A button searches every project.

import * as path from 'path';
import * as vscode from 'vscode';

import type { ServerLink } from './chat/chatState';
import { sessionTitle } from './chat/promptText';
import { describe } from './errors';
import { inEditorWords, relativeTime } from './format';
import { SearchHit, SearchResult, ServerCommand } from './protocol';

/** How long typing must pause before the server is asked. */
export const SEARCH_DELAY_MS = 200;
/** Hits asked for per query: the best ones; more words narrow them. */
const SEARCH_LIMIT = 50;

export interface HitPickItem extends vscode.QuickPickItem {
  hit?: SearchHit;
}

const ROLES: Record<string, string> = { user: 'you', assistant: 'seri', tool: 'tool result' };

/** What the hit's message is, in a word: you, seri, tool result, recap, checks. */
function what(hit: SearchHit): string {
  if (hit.kind === 'recap') {
    return 'recap';
  }
  if (hit.kind === 'check') {
    return 'checks';
  }
  return ROLES[hit.role] ?? hit.role;
}

/**
 * The item for a hit: the title, then who wrote the message, when, and (when it is not
 * this project's) the project's folder; the snippet below with its «marks» as the server
 * wrote them (a QuickPick item cannot highlight ranges of its detail).
 */
export function hitItem(hit: SearchHit, thisProject: (projectPath: string) => boolean): HitPickItem {
  const where = thisProject(hit.projectPath) ? [] : [`$(folder) ${path.basename(hit.projectPath)} (another project)`];
  return {
    label: sessionTitle(hit.title),
    description: [what(hit), relativeTime(hit.createdAt), ...where].join(' · '),
    detail: hit.snippet,
    // The server chose and ordered them: the QuickPick's own filter must not hide any.
    alwaysShow: true,
    hit,
  };
}

/** A line that is not a hit (nothing found, an error); picking it does nothing. */
function note(label: string): HitPickItem {
  return { label, alwaysShow: true };
}

export class SessionSearch {
  constructor(
    private readonly server: ServerLink,
    private readonly thisProject: (projectPath: string) => boolean,
  ) {}

  /**
   * Show the QuickPick (with `query` typed already) until the user picks a hit (resolves
   * with it) or closes it (undefined).
   */
  pick(query = '', allProjects = false): Promise<SearchHit | undefined> {
    const quickPick = vscode.window.createQuickPick<HitPickItem>();
    quickPick.title = 'Seri: Search Sessions';
    quickPick.matchOnDescription = false;
    quickPick.matchOnDetail = false;
    let everywhere = allProjects;
    let asked = 0; // the number of the latest query sent: older answers are dropped
    let timer: ReturnType<typeof setTimeout> | undefined;

    const describeScope = (): void => {
      quickPick.placeholder = everywhere
        ? 'Search what the sessions of every project hold: words, "a phrase", a path'
        : 'Search what this project’s sessions hold: words, "a phrase", a path';
      quickPick.buttons = [
        {
          iconPath: new vscode.ThemeIcon(everywhere ? 'root-folder' : 'globe'),
          tooltip: everywhere ? 'Search this project only' : 'Search all projects',
        },
      ];
    };

    const search = async (text: string): Promise<void> => {
      const number = ++asked;
      if (!text.trim()) {
        quickPick.busy = false;
        quickPick.items = [];
        return;
      }
      quickPick.busy = true;
      let items: HitPickItem[];
      try {
        const result = await this.server.execute<SearchResult>(ServerCommand.sessionSearch, {
          query: text,
          allProjects: everywhere,
          limit: SEARCH_LIMIT,
        });
        items = result.hits.map((hit) => hitItem(hit, this.thisProject));
        if (items.length === 0) {
          items = [note(everywhere ? 'No message of any project matches.' : 'No message of this project matches.')];
        } else if (result.hasMore) {
          items.push(note(`$(info) The ${items.length} best matches; more words narrow them.`));
        }
      } catch (error) {
        items = [note(`$(error) ${inEditorWords(describe(error))}`)];
      }
      if (number === asked) {
        quickPick.items = items;
        quickPick.busy = false;
      }
    };

    const searchSoon = (): void => {
      clearTimeout(timer);
      // Typing on makes the shown hits stale: say it is busy until the new ones arrive.
      quickPick.busy = quickPick.value.trim() !== '';
      timer = setTimeout(() => void search(quickPick.value), SEARCH_DELAY_MS);
    };

    describeScope();
    return new Promise((resolve) => {
      let picked: SearchHit | undefined;
      quickPick.onDidChangeValue(searchSoon);
      quickPick.onDidTriggerButton(() => {
        everywhere = !everywhere;
        describeScope();
        clearTimeout(timer);
        void search(quickPick.value);
      });
      quickPick.onDidAccept(() => {
        const hit = quickPick.selectedItems[0]?.hit;
        if (hit) {
          picked = hit;
          quickPick.hide();
        }
      });
      quickPick.onDidHide(() => {
        clearTimeout(timer);
        asked++;
        quickPick.dispose();
        resolve(picked);
      });
      quickPick.value = query;
      quickPick.show();
      if (query.trim()) {
        void search(query);
      }
    });
  }
}
