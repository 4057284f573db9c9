import * as assert from 'assert';

import { hunkLines } from '../../chat/hunk';
import { contextReport, costReport, reportView } from '../../chat/reports';
import type { ContextBreakdown, SessionUsage, Spend, WriteQuestion } from '../../protocol';

function spend(extra: Partial<Spend> = {}): Spend {
  return { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, cost: null, calls: 0, ...extra };
}

const usage: SessionUsage = {
  sessionId: 's',
  totals: spend({ inputTokens: 200, cachedInputTokens: 80, cacheWriteTokens: 80, outputTokens: 60, cost: 0.0083, calls: 3 }),
  byKind: {
    turn: spend({ inputTokens: 150, outputTokens: 50, cost: 0.0052, calls: 2 }),
    compaction: spend({ inputTokens: 50, outputTokens: 10, cost: 0.0031, calls: 1 }),
    subagent: spend(),
  },
  calls: 3,
  cacheHitRate: 0.4,
};

const context: ContextBreakdown = {
  sessionId: 's',
  contextWindow: 4000,
  compactAt: 2000,
  keepTokens: 150,
  estimateTokens: 800,
  lastBilledTokens: 800,
  localTokens: 740,
  parts: [
    { kind: 'system', name: '<builtin>/system.md', tokens: 270 },
    { kind: 'agents', name: '/p/AGENTS.md', tokens: 57 },
    { kind: 'toolResult', name: 'read_file', tokens: 413 },
  ],
};

suite('/cost and /context laid out for the chat', () => {
  test('/cost: the spend, the tokens in words, a row per kind of call with "1 call"', () => {
    const view = costReport(usage);
    assert.deepStrictEqual(view.lines, [
      'Spend: $0.0083 over 3 model calls.',
      'Input: 200 tokens, 80 of them read from the prompt cache (40%); 80 written to it.',
      'Output: 60 tokens.',
    ]);
    assert.deepStrictEqual(view.rows, [
      { label: 'Your tasks', value: '2 calls · 150 in · 50 out · $0.0052' },
      { label: 'Compaction', value: '1 call · 50 in · 10 out · $0.0031' },
    ]);
  });

  test('/context: the estimate against the window, then the parts in plain words', () => {
    const view = contextReport(context, '/p');
    assert.deepStrictEqual(view.lines, ['Context: 800 of 4,000 tokens (20%).', 'Compaction starts at 2,000 tokens (50%).']);
    assert.deepStrictEqual(
      view.rows.map((row) => [row.label, row.value]),
      [
        ['System prompt', '270 · 34%'],
        ['AGENTS.md', '57 · 7%'],
        ['read_file results', '413 · 52%'],
        ['More counted by the provider', '60 · 8%'],
      ],
    );
  });

  test('an answer without figures (an older server) has no view: its text is shown', () => {
    assert.strictEqual(reportView('cost', { text: 'Spend: …' }, '/p'), undefined);
    assert.ok(reportView('context', { ...context }, '/p'));
  });
});

suite('the approval card’s hunk', () => {
  const write = (extra: Partial<WriteQuestion>): WriteQuestion => ({
    kind: 'write',
    sessionId: 's',
    message: 'edit',
    choices: ['Allow', 'Deny'],
    tool: 'edit',
    path: 'src/app.py',
    action: 'edit',
    ...extra,
  });

  test('an edit: the text replaced, then its replacement, characters exactly as written', () => {
    const lines = hunkLines(write({ oldText: 're.sub(r"[^a-z0-9]+", "-", s)', newText: 'post["tags"][0]\n*x*' }));
    assert.deepStrictEqual(lines, [
      { sign: '-', text: 're.sub(r"[^a-z0-9]+", "-", s)' },
      { sign: '+', text: 'post["tags"][0]' },
      { sign: '+', text: '*x*' },
    ]);
  });

  test('a new file: its lines; an overwrite: only the lines that differ', () => {
    assert.deepStrictEqual(hunkLines(write({ action: 'create', current: null, proposed: 'a\nb\n' })), [
      { sign: '+', text: 'a' },
      { sign: '+', text: 'b' },
    ]);
    assert.deepStrictEqual(hunkLines(write({ action: 'overwrite', current: 'a\nb\nc\n', proposed: 'a\nB\nc\n' })), [
      { sign: '-', text: 'b' },
      { sign: '+', text: 'B' },
    ]);
    assert.deepStrictEqual(hunkLines(write({ action: 'overwrite', tooLarge: true })), []);
  });
});
