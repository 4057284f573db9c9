// What fills the context, in the chat's words: each part of `seri.session.context` named
// for the breakdown, and the bar's segments. No DOM and no `vscode` import: unit-tested.

import { formatTokens } from '../format';
import type { ContextBreakdown, ContextPart } from '../protocol';

/** What the breakdown calls each kind of part. */
const KIND_LABELS: Record<string, string> = {
  system: 'System prompt',
  agents: 'AGENTS.md',
  rule: 'Rule',
  memory: 'Memory',
  recap: 'Recap',
  globRules: 'Rules for matching files',
  checks: 'Results of the checks',
  user: 'Your prompts',
  assistant: 'Replies and thinking',
  toolCalls: 'Tool calls',
  toolResult: 'Tool results',
};

/** Kinds with a colour of their own (style.css `--part-<kind>`); others are drawn grey. */
export const COLOURED_KINDS: ReadonlySet<string> = new Set(Object.keys(KIND_LABELS));

/** The estimate beyond what the parts count: billed by the provider, not itemised here. */
export const BILLED_KIND = 'billed';

export interface Segment {
  kind: string;
  label: string;
  /** The full name (a path) for a tooltip. */
  title: string;
  tokens: number;
}

/** A path inside the project as relative to it, others as they are. */
function shortPath(file: string, project: string): string {
  const root = project.replace(/[\\/]+$/, '');
  return root && (file.startsWith(`${root}/`) || file.startsWith(`${root}\\`)) ? file.slice(root.length + 1) : file;
}

/** How the breakdown names a part: "Rule: .seri/rules/style.md", "read_file results". */
export function partLabel(part: ContextPart, project: string): string {
  switch (part.kind) {
    case 'agents':
      return shortPath(part.name, project);
    case 'rule':
    case 'memory':
      return `${KIND_LABELS[part.kind]}: ${shortPath(part.name, project)}`;
    case 'toolResult':
      return `${part.name} results`;
    case 'mcpTools':
      return `MCP tools of ${part.name}`;
    default:
      return KIND_LABELS[part.kind] ?? part.name;
  }
}

/**
 * The bar's segments: the parts (with tokens), then what the estimate holds beyond them
 * (the last call's billed input, when it is more than the parts count).
 */
export function segments(context: ContextBreakdown, project: string): Segment[] {
  const shown: Segment[] = context.parts
    .filter((part) => part.tokens > 0)
    .map((part) => {
      const label = partLabel(part, project);
      return { kind: part.kind, label, title: label === part.name ? label : `${label} (${part.name})`, tokens: part.tokens };
    });
  const beyond = context.estimateTokens - context.localTokens;
  if (beyond > 0) {
    shown.push({
      kind: BILLED_KIND,
      label: 'More counted by the provider',
      title: `The last call was billed ${formatTokens(context.lastBilledTokens ?? context.estimateTokens)} input tokens; the parts count ${formatTokens(context.localTokens)}.`,
      tokens: beyond,
    });
  }
  return shown;
}
