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
    assert.ok(html.includes('print(&quot;&lt;hi&gt;&quot;)'), html);
  });
});
