import * as assert from 'assert';

import { mentionLabel, sessionTitle, splitPrompt } from '../../chat/promptText';

suite('stored prompts', () => {
  test('mentions and attached text are read back from what the server stored', () => {
    const stored =
      'Explain this\n\n' +
      'Attached: @README.md, @src/util.py (lines 7)\n\n' +
      '<context path="src/app.py" lines="2-3">\nb = 2\nc = 3\n</context>\n\n' +
      '<context path="a &quot;q&quot;.txt">\noutside\n</context>';
    assert.deepStrictEqual(splitPrompt(stored), {
      text: 'Explain this',
      mentions: [{ path: 'README.md' }, { path: 'src/util.py', startLine: 7, endLine: 7 }],
      blocks: [
        { path: 'src/app.py', startLine: 2, endLine: 3, text: 'b = 2\nc = 3' },
        { path: 'a "q".txt', text: 'outside' },
      ],
    });
  });

  test('a prompt without attachments is all text', () => {
    const text = 'Is <context> a tag?\nAttached: nothing';
    assert.deepStrictEqual(splitPrompt(text), { text, mentions: [], blocks: [] });
  });

  test('a chip names the file and its lines', () => {
    assert.strictEqual(mentionLabel({ path: 'a.py' }), 'a.py');
    assert.strictEqual(mentionLabel({ path: 'a.py', startLine: 7, endLine: 7 }), 'a.py:7');
    assert.strictEqual(mentionLabel({ path: 'a.py', startLine: 2, endLine: 9 }), 'a.py:2-9');
  });

  test('a session titled from a prompt with attachments is titled by the words alone', () => {
    assert.strictEqual(sessionTitle('Explain these Attached: @docs/guide.md, @src/app.py <context path="src/a…'), 'Explain these');
    assert.strictEqual(sessionTitle('Explain this <context path="src/app.py" lines="1"> print("hi")'), 'Explain this');
    assert.strictEqual(sessionTitle('Fix the parser'), 'Fix the parser');
    assert.strictEqual(sessionTitle(''), 'New session');
  });
});
