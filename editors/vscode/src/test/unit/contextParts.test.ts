// The words and figures of forks, spend and the context breakdown.

import * as assert from 'assert';

import { partLabel, segments } from '../../chat/contextParts';
import { lastCopied } from '../../chat/fork';
import { cacheSentence, cacheWords, compactionSummary, money, shortTokens, spendSentence, spendWords } from '../../format';
import type { ContextBreakdown, Session, Spend, WireMessage } from '../../protocol';

function spend(extra: Partial<Spend> = {}): Spend {
  return { inputTokens: 48210, cachedInputTokens: 40960, outputTokens: 1830, reasoningTokens: 512, cost: 0.0213, calls: 9, ...extra };
}

suite('spend, context and forks', () => {
  test('a cost reads as the server’s /cost writes it', () => {
    assert.strictEqual(money(0.0213), '$0.0213');
    assert.strictEqual(money(0), '$0.0000');
    assert.strictEqual(money(1.5), '$1.50');
    assert.strictEqual(money(1234.567), '$1,234.57');
  });

  test('the spend is its cost, else its tokens, and nothing before any call', () => {
    assert.strictEqual(spendWords(spend()), '$0.0213');
    assert.strictEqual(spendWords(spend({ cost: null })), '50,040 tokens');
    assert.strictEqual(spendWords(spend({ calls: 0, cost: null, inputTokens: 0, outputTokens: 0 })), '');
    assert.strictEqual(spendWords(undefined), '');
    assert.strictEqual(spendWords(spend({ cost: null, inputTokens: 0, outputTokens: 0 })), '', 'a provider that reports nothing');
    assert.strictEqual(
      spendSentence(spend()),
      'Spend: $0.0213 over 9 model calls (48,210 input tokens, 40,960 of them cached; 1,830 output).',
    );
    assert.strictEqual(
      spendSentence(spend({ cost: null, cachedInputTokens: 0, calls: 1 })),
      'Spend: 50,040 tokens over 1 model call (48,210 input tokens; 1,830 output). The provider reported no cost.',
    );
  });

  test('beside the spend, the share of the input read from the prompt cache; nothing when the provider reported none', () => {
    assert.strictEqual(cacheWords(spend()), 'cache 85%');
    assert.strictEqual(cacheWords(spend({ cacheWriteTokens: 6144 })), 'cache 85%');
    assert.strictEqual(cacheWords(spend({ cachedInputTokens: 0 })), '', 'no cache read or write reported');
    assert.strictEqual(cacheWords(spend({ cachedInputTokens: 0, cacheWriteTokens: 0 })), '');
    assert.strictEqual(cacheWords(spend({ cachedInputTokens: 0, cacheWriteTokens: 900 })), 'cache 0%', 'written, not yet read');
    assert.strictEqual(cacheWords(spend({ inputTokens: 0, cachedInputTokens: 0, calls: 0 })), '');
    assert.strictEqual(cacheWords(undefined), '');
    assert.strictEqual(
      cacheSentence(spend({ cacheWriteTokens: 6144 })),
      'Prompt cache: 85% of the input read from it (40,960 of 48,210 tokens); 6,144 tokens written to it.',
    );
    assert.strictEqual(cacheSentence(spend()), 'Prompt cache: 85% of the input read from it (40,960 of 48,210 tokens).');
    assert.strictEqual(cacheSentence(spend({ cachedInputTokens: 0 })), '');
  });

  test('token counts in a few characters, for the header', () => {
    assert.deepStrictEqual([740, 9120, 10000, 128000, 1_048_576].map(shortTokens), ['740', '9.1k', '10k', '128k', '1M']);
  });

  test('a compaction is said in numbers, or by what was summarised when the server sends none', () => {
    const figures = { messagesBefore: 48, messagesAfter: 7, tokensBefore: 70120, tokensAfter: 18340, read: [], modified: [], recapId: 9 };
    assert.strictEqual(
      compactionSummary({ sessionId: 's', trigger: 'manual', evicted: 41, ...figures }),
      'Context compacted: 48 → 7 messages, 70,120 → 18,340 tokens.',
    );
    assert.match(compactionSummary({ sessionId: 's', trigger: 'overflow', evicted: 41, ...figures }), /^Context compacted \(the request was too long/);
    assert.strictEqual(
      compactionSummary({ sessionId: 's', trigger: 'auto', evicted: 41 }),
      'Context compacted automatically: 41 messages summarised into a recap.',
    );
  });

  test('parts are named for people: files short, tools by name', () => {
    const project = '/home/me/app';
    assert.strictEqual(partLabel({ kind: 'system', name: '<builtin>/system.md', tokens: 1 }, project), 'System prompt');
    assert.strictEqual(partLabel({ kind: 'agents', name: '/home/me/app/AGENTS.md', tokens: 1 }, project), 'AGENTS.md');
    assert.strictEqual(partLabel({ kind: 'rule', name: '/home/me/app/.seri/rules/style.md', tokens: 1 }, project), 'Rule: .seri/rules/style.md');
    assert.strictEqual(partLabel({ kind: 'memory', name: '/home/me/.config/seri/memory.md', tokens: 1 }, project), 'Memory: /home/me/.config/seri/memory.md');
    assert.strictEqual(partLabel({ kind: 'toolResult', name: 'read_file', tokens: 1 }, project), 'read_file results');
    assert.strictEqual(partLabel({ kind: 'mcpTools', name: 'git', tokens: 1 }, project), 'MCP tools of git');
    assert.strictEqual(partLabel({ kind: 'user', name: 'user text', tokens: 1 }, project), 'Your prompts');
    assert.strictEqual(partLabel({ kind: 'someday', name: 'a new kind', tokens: 1 }, project), 'a new kind');
  });

  test('the bar’s segments are the parts, then what was billed beyond them', () => {
    const context: ContextBreakdown = {
      sessionId: 's',
      contextWindow: 128000,
      compactAt: 64000,
      keepTokens: 20000,
      estimateTokens: 9000,
      lastBilledTokens: 9000,
      localTokens: 6000,
      parts: [
        { kind: 'system', name: '<builtin>/system.md', tokens: 1000 },
        { kind: 'checks', name: 'check results', tokens: 0 },
        { kind: 'toolResult', name: 'grep', tokens: 5000 },
      ],
    };
    const shown = segments(context, '/p');
    assert.deepStrictEqual(shown.map((s) => [s.kind, s.tokens]), [
      ['system', 1000],
      ['toolResult', 5000],
      ['billed', 3000],
    ]);
    assert.deepStrictEqual(segments({ ...context, estimateTokens: 6000 }, '/p').map((s) => s.kind), ['system', 'toolResult']);
  });

  test('a fork’s copied messages end at the last one not newer than the fork', () => {
    const at = (id: number, time: string): WireMessage => ({ id, createdAt: time, role: 'user', content: '' });
    const fork: Session = {
      id: 'f',
      project: '/p',
      title: 'x (fork)',
      createdAt: '2025-01-02T00:00:00.000000Z',
      updatedAt: '2025-01-02T00:00:00.000000Z',
      maxTurns: 500,
      messageCount: 4,
      parentId: 'p',
      forkedAt: 12,
    };
    const messages = [
      at(30, '2025-01-02T00:05:00.000000Z'), // a recap of the fork's own: first, newer
      at(21, '2025-01-01T10:00:00.000000Z'),
      at(22, '2025-01-01T10:00:01.000000Z'),
      at(31, '2025-01-02T00:00:00.500000Z'),
    ];
    assert.strictEqual(lastCopied(fork, messages), 22);
    assert.strictEqual(lastCopied(fork, messages.slice(3)), null, 'the copies not shown');
    assert.strictEqual(lastCopied({ ...fork, forkedAt: null }, messages), null, 'no fork');
  });
});
