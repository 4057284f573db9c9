import * as assert from 'assert';

import { dividerText, recordDocument } from '../../chat/compactedRecord';
import type { Recap } from '../../protocol';

const RECAP: Recap = { goal: 'g', progress: 'p', blockers: '', nextSteps: '', read: ['a.py'], modified: [], evicted: 12 };

suite('compaction divider and record', () => {
  test('the divider tells the messages, tool calls and tokens the recap replaced', () => {
    assert.strictEqual(
      dividerText({ ...RECAP, toolCalls: 5, tokensBefore: 70120, tokensAfter: 18340 }),
      '12 earlier messages compacted · 5 tool calls · 70,120 → 18,340 tokens',
    );
    assert.strictEqual(dividerText({ ...RECAP, evicted: 1, toolCalls: 1, tokensBefore: 9, tokensAfter: 1 }), '1 earlier message compacted · 1 tool call · 9 → 1 token');
    // A recap stored before the numbers were kept.
    assert.strictEqual(dividerText(RECAP), '12 earlier messages compacted');
  });

  test('the record shows prompts, calls with their arguments, results and edits as recorded', () => {
    const doc = recordDocument({
      id: 't1',
      sessionId: 's1',
      events: [
        { seq: 1, kind: 'opened', createdAt: 'x', data: {} },
        { seq: 2, kind: 'task_started', createdAt: '2026-01-01T00:00:00Z', data: { prompt: 'fix ```it```' } },
        { seq: 3, kind: 'tool_call', createdAt: 'x', data: { id: 'c1', name: 'read_file', arguments: { path: 'a.py' } } },
        { seq: 4, kind: 'tool_result', createdAt: 'x', data: { id: 'c1', name: 'read_file', content: 'print(1)', isError: false } },
        { seq: 5, kind: 'edit', createdAt: 'x', data: { tool: 'edit', path: 'a.py', outcome: 'applied' } },
        { seq: 6, kind: 'compaction', createdAt: 'x', data: { trigger: 'manual', evicted: 4 } },
      ],
    });
    assert.ok(doc.includes('## Prompt (2026-01-01T00:00:00Z)'), doc);
    assert.ok(doc.includes('````\nfix ```it```\n````'), doc);
    assert.ok(doc.includes('**→ read_file** `c1`\n\n```\n{"path":"a.py"}\n```'), doc);
    assert.ok(doc.includes('```\nprint(1)\n```'), doc);
    assert.ok(doc.includes('Edit `a.py`: applied'), doc);
    assert.ok(doc.includes('**Compacted here** (manual): 4 messages'), doc);
    assert.ok(!doc.includes('opened'), doc);
    assert.ok(recordDocument({ id: null, sessionId: 's', events: [] }).includes('Nothing was recorded'));
  });
});
