// UI scenarios in the real workbench, driven as a person would: the palette, the chat
// view (a webview inside two iframes), the status bar, QuickPicks and input boxes.
// Each scenario opens its own folder (seeded by tests/test_vscode.py) in a new window.

import * as path from 'node:path';

const STATUS_ITEM = '[id="seri.seri-vscode.seri-vscode.context"]';
/** The two lines of the prompt that promptWithTool types (and rewindFromPalette rewinds). */
const TOOLS_PROMPT = ['What does src/app.py do?', 'Be brief.'];

/** The chat view's page: the webview view's outer iframe, then its content frame. */
function chat(page) {
  // A view shown again gets a new iframe; the one on screen is the chat.
  return page
    .locator('iframe.webview[src*="extensionId=seri.seri-vscode"]:visible')
    .contentFrame()
    .locator('#active-frame')
    .contentFrame();
}

async function openWorkbench(browser, server, folder) {
  const page = await browser.newPage();
  await page.goto(`${server.url}/?folder=${encodeURIComponent(folder)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  // The extension's status bar item appears once it is active (its commands are in the
  // palette by then).
  await page.locator(STATUS_ITEM).waitFor({ timeout: 60_000 });
  return page;
}

/** F1, type the command's label, pick it. */
async function runCommand(page, label) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  for (let attempt = 0; attempt < 3 && !(await input.isVisible()); attempt++) {
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => undefined);
    await page.keyboard.press('F1');
    await input.waitFor({ timeout: 5_000 }).catch(() => undefined);
  }
  await input.fill(`>${label}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
}

async function openChat(page) {
  await runCommand(page, 'Seri: Open Chat');
  await chat(page).locator('#prompt-input').waitFor({ timeout: 30_000 });
}

/** The percentage the status bar item shows, once it shows one. */
async function statusPercent(page) {
  const item = page.locator(STATUS_ITEM);
  await item.filter({ hasText: /\d+%/ }).waitFor({ timeout: 30_000 });
  return Number(/(\d+)%/.exec(await item.innerText())[1]);
}

async function waitUntil(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function expect(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

function provider(config) {
  const call = async (method, route, body) => {
    const response = await fetch(`${config.controlUrl}${route}`, {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) {
      throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
    }
    return response.json();
  };
  return {
    script: (...replies) => call('POST', '/script', replies),
    reset: () => call('POST', '/reset', null),
  };
}

// --- scenarios -----------------------------------------------------------------------

async function storedSession({ page, config, shot }) {
  const seeded = config.ui.stored;
  // Clicking the status bar item opens the chat.
  await page.locator(STATUS_ITEM).filter({ hasText: /\d+%/ }).click({ timeout: 30_000 });
  const view = chat(page);
  await view.locator('#prompt-input').waitFor({ timeout: 30_000 });
  await view.locator('#session-title', { hasText: seeded.title }).waitFor({ timeout: 20_000 });
  await view.locator('.row.user', { hasText: seeded.prompt }).waitFor();
  await view.locator('.row.assistant', { hasText: seeded.reply }).waitFor();
  await expectFoldedChecks(view, seeded);
  expect((await statusPercent(page)) >= 1, 'the status bar shows the context use');
  await shot('stored-session');

  // Hidden and shown again: the page is rebuilt from the extension's model.
  await runCommand(page, 'View: Show Explorer');
  await view.locator('#prompt-input').waitFor({ state: 'detached', timeout: 10_000 }).catch(() => undefined);
  await openChat(page);
  await view.locator('.row.assistant', { hasText: seeded.reply }).waitFor({ timeout: 20_000 });

  // A window reload: a new extension host and server, the chat restored from the server.
  await page.reload();
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  await chat(page).locator('.row.assistant', { hasText: seeded.reply }).waitFor({ timeout: 40_000 });
  await chat(page).locator('#session-title', { hasText: seeded.title }).waitFor();
  await expectFoldedChecks(chat(page), seeded);
  await shot('stored-session-after-reload');
}

/** Failing checks show as a folded block headed by their names, not as the user's words. */
async function expectFoldedChecks(view, seeded) {
  const block = view.locator('details.row.check');
  await block.locator('summary', { hasText: seeded.checkHeading }).waitFor({ timeout: 10_000 });
  expect(!(await block.evaluate((details) => details.open)), 'the checks block starts folded');
  expect((await view.locator('.row.user', { hasText: 'The checks failed' }).count()) === 0, 'the checks are not shown as the user’s');
  await block.locator('summary').click();
  await block.locator('pre', { hasText: seeded.checkOutput }).waitFor();
  await block.locator('summary').click();
}

async function longSession({ page, config, shot }) {
  const seeded = config.ui.long;
  await openChat(page);
  const view = chat(page);
  await view.locator('.row.assistant', { hasText: seeded.last }).waitFor({ timeout: 30_000 });
  // The newest page only (200 messages), with the way to earlier ones.
  const rows = view.locator('#transcript .row[data-id]');
  expect((await rows.count()) === seeded.pageSize, `the newest ${seeded.pageSize} messages first, got ${await rows.count()}`);
  expect((await view.locator('.row.user', { hasText: seeded.first }).count()) === 0, 'the first message is not loaded yet');
  await view.locator('#transcript button.older').waitFor({ state: 'visible', timeout: 10_000 });
  await shot('long-session-newest-page');

  // Scrolled to the top, the chat asks for the page before; it is the last one.
  await view.locator('#transcript').evaluate((box) => {
    box.scrollTop = 0;
  });
  await view.locator('.row.user', { hasText: seeded.first }).waitFor({ timeout: 20_000 });
  expect((await rows.count()) === seeded.count, `every message once loaded, got ${await rows.count()}`);
  await view.locator('#transcript button.older').waitFor({ state: 'hidden', timeout: 10_000 });
  const ids = await rows.evaluateAll((found) => found.map((row) => Number(row.dataset.id)));
  expect(ids.every((id, index) => index === 0 || id > ids[index - 1]), 'the messages in order');
  await shot('long-session-all-pages');
}

async function promptWithTool({ page, config, shot }) {
  const answer = [
    'The app **prints** a greeting:',
    '',
    '```python',
    'print("hello")',
    '```',
    '',
    'It has no functions, no imports and no tests yet; adding a `main()` would make it easier to test. '.repeat(3),
    'That is all it does.',
  ].join('\n');
  await provider(config).script(
    { calls: [['call-read', 'read_file', { path: 'src/app.py' }]], usage: 200 },
    { text: answer, chunkSize: 6, chunkDelay: 0.06, usage: 260 },
  );
  await openChat(page);
  const view = chat(page);
  const input = view.locator('#prompt-input');

  // Slash commands are suggested as you type.
  await input.click();
  await input.pressSequentially('/');
  await view.locator('#suggestions .suggestion', { hasText: '/compact' }).waitFor();
  for (const command of ['/clear', '/resume', '/max-turns']) {
    expect(await view.locator('#suggestions .suggestion', { hasText: command }).count(), `${command} is suggested`);
  }
  await input.pressSequentially('cl');
  await waitUntil(async () => (await view.locator('#suggestions .suggestion').count()) === 1, 'only /clear to be left');
  await shot('slash-suggestions');
  await input.press('Escape');
  await input.fill('');

  // Shift+Enter adds a line, Enter sends.
  await input.pressSequentially(TOOLS_PROMPT[0]);
  await input.press('Shift+Enter');
  await input.pressSequentially(TOOLS_PROMPT[1]);
  expect((await input.inputValue()) === TOOLS_PROMPT.join('\n'), 'Shift+Enter added a line');
  await input.press('Enter');

  await view.locator('details.tool[data-tool="read_file"] .tool-target', { hasText: 'src/app.py' }).waitFor({ timeout: 20_000 });
  // The reply streams: the streaming row shows part of it while the task runs.
  const streaming = view.locator('#streaming:not([hidden])');
  await streaming.waitFor({ timeout: 20_000 });
  const partial = await streaming.innerText();
  expect(partial.length > 0 && !partial.includes('That is all it does.'), `part of the reply streamed in (${partial.length} chars)`);
  await view.locator('#stop-button:not([hidden])').waitFor();
  await page.locator(`${STATUS_ITEM} .codicon-loading`).waitFor({ timeout: 5_000 });
  await shot('prompt-streaming');

  const final = view.locator('.row.assistant .markdown', { hasText: 'That is all it does.' });
  await final.waitFor({ timeout: 30_000 });
  await view.locator('#streaming').waitFor({ state: 'hidden' });
  await view.locator('#send-button:not([hidden])').waitFor();
  expect(await final.locator('.code-block .code-lang', { hasText: 'python' }).count(), 'the code block is rendered');
  expect(await view.locator('.row.user .bubble', { hasText: 'Be brief.' }).count(), 'the prompt is shown');

  const row = view.locator('details.tool[data-tool="read_file"]');
  expect((await row.getAttribute('class')).includes('status-ok'), 'the tool row is marked as done');
  const summaryText = (await row.locator('summary').textContent()).trim();
  expect(summaryText === 'read_file src/app.py', `the tool and its target read apart (${summaryText})`);
  await row.locator('summary .tool-name').click();
  await row.locator('.tool-output', { hasText: 'print("hello")' }).waitFor();
  await page.locator(`${STATUS_ITEM} .codicon-loading`).waitFor({ state: 'detached', timeout: 10_000 });
  await shot('prompt-done');
}

/** Continues promptWithTool's window: that prompt is rewound, and comes back to the input. */
async function rewindFromPalette({ page, shot }) {
  const view = chat(page);
  const prompt = TOOLS_PROMPT.join('\n');
  await view.locator('.row.user .bubble', { hasText: TOOLS_PROMPT[1] }).waitFor({ timeout: 10_000 });

  await runCommand(page, 'Seri: Rewind...');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  const checkpoint = rows.filter({ hasText: TOOLS_PROMPT[0] });
  await checkpoint.waitFor({ timeout: 10_000 });
  const shown = await checkpoint.innerText();
  expect(/now|ago/.test(shown), `the checkpoint shows when it was made (${shown})`);
  expect(/no files changed/.test(shown), `the checkpoint shows the files its task changed (${shown})`);
  await shot('rewind-checkpoints');
  await page.keyboard.press('Enter');

  // What to restore: the conversation and files first.
  await rows.filter({ hasText: 'Conversation and files' }).waitFor({ timeout: 10_000 });
  for (const label of ['Conversation only', 'Files only']) {
    expect(await rows.filter({ hasText: label }).count(), `${label} is offered`);
  }
  await shot('rewind-restore');
  await page.keyboard.press('Enter');

  const input = view.locator('#prompt-input');
  await waitUntil(async () => (await input.inputValue()) === prompt, 'the prompt to be back in the chat input');
  await view.locator('#empty', { hasText: 'No messages yet' }).waitFor({ timeout: 20_000 });
  expect((await view.locator('.row.user').count()) === 0, 'the rewound prompt left the transcript');
  await page.locator('.notifications-toasts', { hasText: 'rewound 1 prompt' }).waitFor({ timeout: 10_000 });
  await shot('rewind-done');

  // The chat header's menu offers it too.
  await view.locator('#session-menu-button').click();
  await view.locator('.menu-item', { hasText: 'Rewind…' }).waitFor();
  await view.locator('#session-menu .menu-item').first().press('Escape');
}

async function compactFromPalette({ page, config, shot }) {
  const seeded = config.ui.compact;
  await openChat(page);
  const view = chat(page);
  await view.locator('.row.assistant', { hasText: seeded.reply }).first().waitFor({ timeout: 20_000 });
  const before = await statusPercent(page);
  await shot('compact-before');
  await provider(config).script({ text: seeded.summary });

  await runCommand(page, 'Seri: Compact Context...');
  const box = page.locator('.quick-input-widget .quick-input-box input');
  await page.locator('.quick-input-widget', { hasText: 'Focus words' }).waitFor({ timeout: 10_000 });
  await box.fill(seeded.focus);
  await shot('compact-focus-words');
  await page.keyboard.press('Enter');

  const card = view.locator('section.recap');
  await card.waitFor({ timeout: 30_000 });
  await card.locator('.recap-title', { hasText: 'Conversation compacted' }).waitFor();
  await card.locator('dd', { hasText: seeded.goal }).waitFor();
  await page.locator('.notifications-toasts', { hasText: /compacted \d+ messages into a recap/ }).waitFor({ timeout: 10_000 });
  const after = await waitUntil(async () => {
    const percent = await statusPercent(page);
    return percent < before ? percent : undefined;
  }, `the status bar percentage to drop below ${before}%`);
  await card.scrollIntoViewIfNeeded();
  await shot('compact-after');
  return `context ${before}% -> ${after}%`;
}

async function resumeFromQuickPick({ page, config, shot }) {
  const seeded = config.ui.resume;
  await openChat(page);
  const view = chat(page);
  await view.locator('#session-title', { hasText: seeded.latestTitle }).waitFor({ timeout: 20_000 });

  await runCommand(page, 'Seri: Resume Session...');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.filter({ hasText: seeded.otherTitle }).waitFor({ timeout: 10_000 });
  await rows.filter({ hasText: seeded.latestTitle }).waitFor();
  const other = await rows.filter({ hasText: seeded.otherTitle }).innerText();
  expect(/2 messages/.test(other), `the QuickPick shows the message count (${other})`);
  expect(/ago|now|yesterday/.test(other), `the QuickPick shows a relative date (${other})`);
  await shot('resume-quickpick');
  await page.locator('.quick-input-widget .quick-input-box input').fill(seeded.otherTitle);
  await page.keyboard.press('Enter');

  await view.locator('#session-title', { hasText: seeded.otherTitle }).waitFor({ timeout: 20_000 });
  await view.locator('.row.assistant', { hasText: seeded.otherReply }).waitFor();
  expect((await view.locator('.row.assistant', { hasText: seeded.latestReply }).count()) === 0, 'the other session’s messages are gone');
  await shot('resume-done');

  // The header menu starts a new session.
  await view.locator('#session-menu-button').click();
  await view.locator('.menu-item', { hasText: 'New session' }).click();
  await view.locator('#session-title', { hasText: 'New session' }).waitFor({ timeout: 20_000 });
  await view.locator('#empty', { hasText: 'No messages yet' }).waitFor();
}

async function writePermission({ page, config, shot }) {
  await provider(config).script(
    { calls: [['call-write', 'write_file', { path: 'notes.md', content: '# Notes\n\nWritten by seri.\n' }]] },
    { text: 'I wrote notes.md.' },
  );
  await openChat(page);
  const view = chat(page);
  await view.locator('#prompt-input').fill('Write notes.md');
  await view.locator('#prompt-input').press('Enter');

  // The server asks (window/showMessageRequest): a notification with buttons.
  const toast = page.locator('.notification-toast', { hasText: 'notes.md' });
  await toast.waitFor({ timeout: 20_000 });
  for (const button of ['Allow', 'Allow for this session', 'Deny']) {
    expect(await toast.getByRole('button', { name: button, exact: true }).count(), `the ${button} button`);
  }
  // While it waits, the turn's $/progress shows in the status bar.
  await page.locator('.statusbar-item', { hasText: 'seri: working' }).waitFor({ timeout: 10_000 });
  await shot('write-permission');
  await toast.getByRole('button', { name: 'Allow', exact: true }).click();

  await view.locator('details.tool.status-ok[data-tool="write_file"]').waitFor({ timeout: 20_000 });
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'I wrote notes.md.' }).waitFor({ timeout: 20_000 });
  await shot('write-permission-done');
}

const SCENARIOS = [
  ['a stored session is shown in the chat on open, after hiding and after a reload', 'stored', storedSession],
  ['a long session shows its newest page, and earlier ones when scrolled to the top', 'long', longSession],
  ['a prompt with a tool call streams its reply and shows the tool row', 'tools', promptWithTool],
  ['Rewind... from the palette puts the prompt back in the chat input', 'tools', rewindFromPalette, { continues: true }],
  ['Compact Context... from the palette shows the recap card and lowers the status bar percentage', 'compact', compactFromPalette],
  ['Resume Session... from the QuickPick shows the other session', 'resume', resumeFromQuickPick],
  ['a write permission request is a notification with buttons', 'ask', writePermission],
];

/**
 * Runs each scenario in a window of its own folder, except one marked `continues`: it goes
 * on in the window the scenario before it left (which must have passed), saving a start.
 */
export async function runScenarios({ browser, server, config, screenshots, say, closePage }) {
  const results = [];
  const only = process.env.SERI_TEST_GREP;
  let kept; // the window left open for a scenario that continues it
  for (const [index, [title, workspace, scenario, options]] of SCENARIOS.entries()) {
    const continued = options?.continues === true;
    if (only && !title.includes(only) && !(SCENARIOS[index + 1]?.[0].includes(only) && SCENARIOS[index + 1][3]?.continues)) {
      continue;
    }
    const t0 = Date.now();
    if (continued && !kept) {
      results.push({ title, state: 'failed', durationMs: 0, error: 'the scenario it continues did not pass' });
      say(`ui: failed ${title} (the scenario before it did not pass)`);
      continue;
    }
    const page = continued ? kept : await openWorkbench(browser, server, config.workspaces[workspace]);
    kept = undefined;
    const shot = (name) => page.screenshot({ path: path.join(screenshots, `${name}.png`) });
    let passed = false;
    try {
      const note = await scenario({ page, config, shot });
      results.push({ title, state: 'passed', durationMs: Date.now() - t0, note });
      passed = true;
    } catch (error) {
      await shot(`${workspace}-failure`).catch(() => undefined);
      results.push({ title, state: 'failed', durationMs: Date.now() - t0, error: error?.stack ?? String(error) });
    } finally {
      await provider(config).reset().catch(() => undefined);
      if (passed && SCENARIOS[index + 1]?.[3]?.continues) {
        kept = page;
      } else {
        await closePage(page);
      }
    }
    say(`ui: ${results.at(-1).state} ${title} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return results;
}
