import * as assert from 'assert';

import { renderMarkdown } from '../../webview/markdown';

suite('markdown', () => {
  test('HTML the model writes is shown as text, never injected', () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror=alert(1)> **bold**');
    assert.ok(!html.includes('<script'), html);
    assert.ok(!html.includes('<img'), html);
    assert.ok(html.includes('&lt;script&gt;'), html);
    assert.ok(html.includes('<strong>bold</strong>'), html);
  });

  test('only safe links become links', () => {
    const html = renderMarkdown('[x](javascript:alert(1)) [y](https://example.com) ![i](https://example.com/p.png)');
    assert.ok(!/href="javascript/i.test(html), html);
    assert.ok(html.includes('href="https://example.com"'), html);
    assert.ok(!html.includes('<img'), 'images are not loaded');
  });

  test('code blocks get a header with their language and a copy button', () => {
    const html = renderMarkdown('```python\nprint("<hi>")\n```');
    assert.ok(html.includes('class="code-lang">python<'), html);
    assert.ok(html.includes('code-copy'), html);
    assert.ok(html.includes('&quot;&lt;hi&gt;&quot;') && !html.includes('<hi>'), html);
  });

  test('code blocks offer Insert and Apply, and a block that names its file applies there', () => {
    const named = renderMarkdown('```python src/app.py\nx = 1\n```');
    assert.ok(named.includes('<div class="code-block" data-file="src/app.py">'), named);
    assert.ok(named.includes('class="code-insert"') && named.includes('class="code-apply"'), named);
    assert.ok(named.includes('role="toolbar"'), named);
    for (const info of ['python', 'text', '', 'https://x.io/a.py']) {
      const html = renderMarkdown('```' + info + '\nx = 1\n```');
      assert.ok(!html.includes('data-file'), html);
      assert.ok(html.includes('class="code-apply" title="Apply the code to a file'), html);
    }
  });

  test('file names and bare domains are no web links; only links with a scheme are', () => {
    const html = renderMarkdown('See app.py, main.rs, README.md and example.com, or https://example.com/a.py.');
    assert.ok(!html.includes('http://'), html);
    assert.strictEqual((html.match(/<a /g) ?? []).length, 1, html);
    assert.ok(html.includes('href="https://example.com/a.py"'), html);
  });

  test('paths in text and in inline code are candidates for links to their file, with their line', () => {
    const html = renderMarkdown('Open src/app.py:12, `app.py`, `lib/x.ts:3:4`, @README.md; not `foo()` or e.g. this.');
    assert.ok(html.includes('<span class="path-candidate" data-path="src/app.py" data-line="12">src/app.py:12</span>'), html);
    assert.ok(html.includes('<code class="path-candidate" data-path="app.py">app.py</code>'), html);
    assert.ok(html.includes('<code class="path-candidate" data-path="lib/x.ts" data-line="3">lib/x.ts:3:4</code>'), html);
    assert.ok(html.includes('<span class="path-candidate" data-path="README.md">@README.md</span>'), html);
    assert.ok(html.includes('<code>foo()</code>'), html);
    assert.ok(!html.includes('data-path="e.g"'), html);
  });

  test('a path inside a link is left to the link', () => {
    const html = renderMarkdown('[the app](https://example.com/src/app.py)');
    assert.ok(!html.includes('path-candidate'), html);
  });

  test('code blocks of a known language are highlighted, others escaped as they are', () => {
    const python = renderMarkdown('```python\ndef f():\n    return "<x>"  # done\n```');
    assert.ok(python.includes('<span class="hljs-keyword">def</span>'), python);
    assert.ok(python.includes('<span class="hljs-string">&quot;&lt;x&gt;&quot;</span>'), python);
    assert.ok(python.includes('<span class="hljs-comment"># done</span>'), python);
    const unknown = renderMarkdown('```klingon\nqapla <b>\n```');
    assert.ok(unknown.includes('qapla &lt;b&gt;') && !unknown.includes('hljs'), unknown);
  });
});
