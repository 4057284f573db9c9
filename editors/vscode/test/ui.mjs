// UI scenarios in the real workbench, driven as a person would: the palette, the chat
// view (a webview inside two iframes), the status bar, QuickPicks and input boxes.
// Each scenario opens its own folder (seeded by tests/test_vscode.py) in a new window.

import { readFileSync } from 'node:fs';
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

/**
 * Click an item of a workbench context menu. VS Code arms a menu's items 100 ms after it
 * draws them (so the mouse-up of the right click that opened it chooses nothing), and a
 * quick test's click can come before that: click until the menu closes.
 */
async function chooseMenuItem(item) {
  await waitUntil(async () => {
    await item.click({ timeout: 2_000 }).catch(() => undefined);
    return item
      .waitFor({ state: 'hidden', timeout: 1_000 })
      .then(() => true)
      .catch(() => false);
  }, 'the menu item to be chosen');
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

  // Slash commands are suggested as you type: the server's list, with usage and summary.
  await input.click();
  await input.pressSequentially('/');
  await view.locator('#suggestions .suggestion', { hasText: '/compact' }).waitFor();
  for (const command of ['/clear', '/resume', '/max-turns', '/rename']) {
    expect(await view.locator('#suggestions .suggestion', { hasText: command }).count(), `${command} is suggested`);
  }
  const compactSummary = await view.locator('#suggestions .suggestion[data-key="/compact"] .suggestion-description').innerText();
  expect(compactSummary.trim().length > 0, 'the suggestion shows the command’s summary');
  await shot('slash-suggestions-all');
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
  // The meter marks where compaction starts: half the window (4,000 tokens here).
  const mark = view.locator('#compact-mark');
  await mark.waitFor({ timeout: 10_000 });
  const left = await mark.evaluate((element) => element.style.left);
  expect(left === '50%', `the compaction mark at half the meter (${left})`);
  const meterLabel = await view.locator('#context-meter').getAttribute('aria-label');
  expect(meterLabel.includes('Compaction starts at 2,000 tokens (50%)'), `the meter says where compaction starts (${meterLabel})`);
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
  const after = await waitUntil(async () => {
    const percent = await statusPercent(page);
    return percent < before ? percent : undefined;
  }, `the status bar percentage to drop below ${before}%`);
  // The recap is in view, not left above the kept messages.
  await waitUntil(() => inView(view, card.locator('.recap-title')), 'the recap to be in view');
  await shot('compact-after');

  // The notice says what happened in numbers, with a way back to the recap.
  const notice = view.locator('.notice-compaction');
  await notice.waitFor({ timeout: 10_000 });
  const said = await notice.locator('.notice-text').innerText();
  expect(/^Context compacted: \d+ → \d+ messages, [\d,]+ → [\d,]+ tokens\.$/.test(said), `the notice's figures (${said})`);
  await view.locator('#transcript').evaluate((box) => box.scrollTo(0, box.scrollHeight));
  await waitUntil(async () => !(await inView(view, card.locator('.recap-title'))), 'the recap to be scrolled away');
  await shot('compact-notice');
  // Said once, in the chat: no toast besides.
  expect((await page.locator('.notifications-toasts', { hasText: /compact/i }).count()) === 0, 'no toast repeats the compaction notice');
  await notice.getByRole('button', { name: 'Show recap' }).click();
  await waitUntil(() => inView(view, card.locator('.recap-title')), 'Show recap to bring the recap into view');

  // Above the recap, what it replaced; its button opens the record of those turns.
  const divider = card.locator('.compaction-divider');
  const told = await divider.locator('.compaction-divider-text').innerText();
  expect(/^\d+ earlier messages compacted(?: · \d+ tool calls?)? · [\d,]+ → [\d,]+ tokens$/.test(told), `the divider's figures (${told})`);
  await shot('compact-divider');
  await divider.getByRole('button', { name: 'Show what happened' }).click();
  const record = page.locator('.editor-instance .view-lines', { hasText: 'Before the compaction' });
  await record.waitFor({ timeout: 15_000 });
  await page.locator('.editor-instance .view-lines', { hasText: 'Compacted here' }).waitFor({ timeout: 5_000 });
  await shot('compact-record');
  return `context ${before}% -> ${after}%`;
}

async function resumeFromQuickPick({ page, config, shot }) {
  const seeded = config.ui.resume;
  await openChat(page);
  const view = chat(page);
  await view.locator('#session-title', { hasText: seeded.latestTitle }).waitFor({ timeout: 20_000 });
  const openId = await waitUntil(() => openSessionId(view), 'the open session’s id');

  await runCommand(page, 'Seri: Resume Session...');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.filter({ hasText: seeded.otherTitle }).waitFor({ timeout: 10_000 });
  await rows.filter({ hasText: seeded.latestTitle }).waitFor();
  const other = await rows.filter({ hasText: seeded.otherTitle }).innerText();
  expect(/2 messages/.test(other), `the QuickPick shows the message count (${other})`);
  expect(/ago|now|yesterday/.test(other), `the QuickPick shows a relative date (${other})`);
  const latest = await rows.filter({ hasText: seeded.latestTitle }).innerText();
  expect(latest.includes('Open now') && !latest.includes(openId), `titles, ages and spend, not raw ids (${latest})`);
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

/** Pick a colour theme (Ctrl+K Ctrl+T); `kind` is the workbench's class for it. */
async function pickTheme(page, theme, kind) {
  await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } });
  await page.keyboard.press('Control+K');
  await page.keyboard.press('Control+T');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill(theme);
  await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: theme }).waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.locator(`.monaco-workbench.${kind}`).waitFor({ timeout: 10_000 });
}

/** Quick Open (Ctrl+P) a file of the workspace: it opens with the focus in its editor. */
async function openFile(page, name) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => undefined);
  await page.keyboard.press('Control+P');
  await input.waitFor({ timeout: 5_000 });
  await input.fill(name);
  // A row shows the file's name, then its folder.
  await page.locator('.quick-input-list .monaco-list-row', { hasText: path.basename(name) }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.locator('.tab.active', { hasText: path.basename(name) }).waitFor({ timeout: 10_000 });
}

/** Whether the keyboard focus is in a text editor of the workbench (not in the chat). */
function focusInEditor(page) {
  return page.evaluate(() => Boolean(document.activeElement?.closest('.monaco-editor')));
}

/** Whether `locator` is inside the transcript's visible part. */
async function inView(view, locator) {
  const box = await view.locator('#transcript').boundingBox();
  const item = await locator.boundingBox();
  return Boolean(box && item && item.y < box.y + box.height && item.y + item.height > box.y);
}

async function atBottom(view) {
  return view.locator('#transcript').evaluate((box) => box.scrollHeight - box.scrollTop - box.clientHeight < 40);
}

async function sendPrompt(view, text) {
  const input = view.locator('#prompt-input');
  await input.fill(text);
  await input.press('Enter');
}

const GREET_EDIT = { path: 'src/app.py', old_text: 'print("hello")', new_text: 'print("hello, world")' };

async function writeApproval({ page, config, shot }) {
  await provider(config).script(
    // The model takes a while: the user goes back to an editor meanwhile.
    { calls: [['call-edit', 'edit', GREET_EDIT]], delay: 6 },
    { text: 'I changed src/app.py to greet the world.' },
  );
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Greet the world');
  // (the task is under way; on a loaded machine its line may have moved past "Waiting
  // for the model" already)
  await view.locator('#working').waitFor({ timeout: 20_000 });
  await runCommand(page, 'View: Show Explorer');
  await openFile(page, 'README.md');

  // The question is a card in the chat, which shows itself without taking the focus.
  const card = chat(page).locator('.question', { hasText: 'seri wants to edit src/app.py' });
  await card.waitFor({ timeout: 20_000 });
  const shownAt = Date.now();
  expect(await focusInEditor(page), 'the focus stayed in the editor when the chat showed the question');
  for (const button of ['Allow', 'Allow for this session', 'Deny', 'Review changes']) {
    expect(await card.getByRole('button', { name: button, exact: true }).count(), `the ${button} button`);
  }
  await card.locator('.question-detail', { hasText: '−1 +1' }).waitFor();
  // The hunk itself, exactly as written: the line replaced and its replacement.
  await card.locator('.hunk .hunk-old', { hasText: GREET_EDIT.old_text }).waitFor();
  await card.locator('.hunk .hunk-new', { hasText: GREET_EDIT.new_text }).waitFor();
  const hunkText = await card.locator('.hunk').innerText();
  expect(hunkText.includes(`-${GREET_EDIT.old_text}`) && hunkText.includes(`+${GREET_EDIT.new_text}`), `the hunk as diff lines (${hunkText})`);
  await chat(page).locator('#working', { hasText: 'Waiting for your approval' }).waitFor({ timeout: 10_000 });
  await page.locator(STATUS_ITEM, { hasText: 'approve?' }).waitFor({ timeout: 10_000 });
  expect((await page.locator('.notification-toast', { hasText: 'src/app.py' }).count()) === 0, 'no toast asks besides');
  await shot('approval-card');

  // It stays: a toast would have hidden itself by now (25 s since the card showed; the
  // checks above count towards them rather than adding to the scenario's time).
  await page.waitForTimeout(Math.max(0, shownAt + 25_000 - Date.now()));
  expect(await card.isVisible(), 'the card is still there 25 s after it showed');

  // Review: VS Code's diff editor, the file on the left, the proposal on the right.
  await card.getByRole('button', { name: 'Review changes', exact: true }).click();
  const diff = page.locator('.monaco-diff-editor');
  await diff.waitFor({ timeout: 15_000 });
  await page.locator('.tab.active', { hasText: "seri's proposal" }).waitFor({ timeout: 10_000 });
  await diff.locator('.editor.modified .view-lines', { hasText: 'print("hello, world")' }).waitFor({ timeout: 10_000 });
  await diff.locator('.editor.original .view-lines', { hasText: 'print("hello")' }).waitFor();
  await page.locator('.editor-actions [aria-label="Allow This Change"]').waitFor();
  await shot('approval-diff');

  await chat(page).locator('.question').getByRole('button', { name: 'Allow', exact: true }).click();
  await chat(page).locator('.question').waitFor({ state: 'detached', timeout: 10_000 });
  await page.locator('.tab', { hasText: "seri's proposal" }).waitFor({ state: 'detached', timeout: 10_000 });
  await chat(page).locator('.notice', { hasText: '“Allow”: edit src/app.py' }).waitFor();
  await chat(page).locator('details.tool.status-ok[data-tool="edit"]').waitFor({ timeout: 20_000 });
  await chat(page).locator('.row.assistant:not(.streaming)', { hasText: 'to greet the world' }).waitFor({ timeout: 20_000 });
  await shot('approval-done');
}

async function denyWithNote({ page, config, shot }) {
  await provider(config).script({ calls: [['call-deny', 'edit', GREET_EDIT]] }, { text: 'Understood, I left it alone.' });
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Greet the world loudly');
  const card = view.locator('.question', { hasText: 'seri wants to edit src/app.py' });
  await card.waitFor({ timeout: 20_000 });
  // Enter in the note denies, with the note for the model. What is typed stays typed: a
  // redraw of the cards as it was typed once took the focus, and the text, away.
  const typed = card.locator('.question-note');
  await typed.fill('keep the greeting as it is');
  expect((await typed.inputValue()) === 'keep the greeting as it is', 'the note is in the card as typed');
  await shot('deny-note');
  // The view hidden and shown again is drawn anew: the note typed is still there.
  await runCommand(page, 'View: Show Explorer');
  await openChat(page);
  const shown = chat(page).locator('.question', { hasText: 'seri wants to edit src/app.py' }).locator('.question-note');
  await waitUntil(async () => (await shown.inputValue()) === 'keep the greeting as it is', 'the note kept when the view is shown again');
  await shown.press('Enter');
  await card.waitFor({ state: 'detached', timeout: 10_000 });
  // The focus was in the card that went away: it goes to the chat input, not to the page.
  await waitUntil(() => view.locator('#prompt-input').evaluate((input) => document.activeElement === input), 'the focus in the chat input after the answer');
  await view.locator('.notice', { hasText: '“Deny”: edit src/app.py (keep the greeting as it is)' }).waitFor();
  // A refusal is the user's choice: a neutral "denied" row, not a red "failed" one.
  const refused = view.locator('details.tool.status-denied[data-tool="edit"]');
  await refused.waitFor({ timeout: 20_000 });
  await refused.locator('summary .tool-denied', { hasText: 'denied' }).waitFor();
  expect((await refused.locator('.tool-failed').count()) === 0, 'the denied write is not said to have failed');
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'I left it alone' }).waitFor({ timeout: 20_000 });
  await shot('deny-done');
}

/** Continues denyWithNote's window: a question whose task is stopped goes away. */
async function questionWithdrawn({ page, config, shot }) {
  const notes = ['# Notes', ...Array.from({ length: 11 }, (_, i) => `- note ${i + 1}`)].join('\n') + '\n';
  await provider(config).script({ calls: [['call-stop', 'write_file', { path: 'notes.md', content: notes }]] });
  const view = chat(page);
  await sendPrompt(view, 'Write some notes');
  const card = view.locator('.question', { hasText: 'seri wants to create notes.md' });
  await card.waitFor({ timeout: 20_000 });
  await card.locator('.question-detail', { hasText: 'new file, 12 lines' }).waitFor();
  // Its first lines, the rest behind a fold.
  await card.locator('.hunk .hunk-new', { hasText: '# Notes' }).waitFor();
  expect((await card.locator('.hunk:not(.hunk-rest) .hunk-line').count()) === 8, 'the first 8 lines shown');
  const more = card.locator('.hunk-more summary', { hasText: 'Show 4 more lines' });
  await more.click();
  await card.locator('.hunk-rest .hunk-new', { hasText: 'note 11' }).waitFor();
  await shot('question-hunk-expanded');
  await view.locator('#stop-button').click();
  await card.waitFor({ state: 'detached', timeout: 10_000 });
  await view.locator('.notice', { hasText: 'Stopped.' }).waitFor({ timeout: 10_000 });
  // The Stop hides once the task ended: the focus goes to the chat input.
  await waitUntil(() => view.locator('#prompt-input').evaluate((input) => document.activeElement === input), 'the focus in the chat input after the Stop');
  await page.locator(STATUS_ITEM, { hasText: 'approve?' }).waitFor({ state: 'detached', timeout: 10_000 });
  // The call the Stop cut short is the user's choice too: "stopped", not a red "failed".
  const cut = view.locator('details.tool[data-call-id="call-stop"]');
  await cut.locator('summary .tool-denied', { hasText: 'stopped' }).waitFor({ timeout: 10_000 });
  expect((await cut.locator('.tool-failed').count()) === 0, 'a call cut by the Stop is not said to have failed');
  await shot('question-withdrawn');
}

async function workingLine({ page, config, shot }) {
  await provider(config).script(
    { error: 503, body: { error: { message: 'The model is overloaded' } }, headers: { 'Retry-After': '4' } },
    { calls: [['call-read', 'read_file', { path: 'src/app.py' }]], delay: 3 },
    { text: 'It prints a greeting.' },
  );
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'What does the app print?');
  const line = view.locator('#working');
  // The retry's count, delay and reason; then its call, in flight. (The first answer
  // comes after the server's start-up, seconds on a loaded machine: 30 s.)
  await line.filter({ hasText: /Retry 1\/\d+ in \d+ s: .*overloaded/ }).waitFor({ timeout: 30_000 });
  await shot('working-retrying');
  await line.filter({ hasText: /Waiting for the model \(retry 1\/\d+\)/ }).waitFor({ timeout: 15_000 });
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'It prints a greeting.' }).waitFor({ timeout: 20_000 });
  await line.waitFor({ state: 'hidden', timeout: 10_000 });
}

async function attachContext({ page, config, shot }) {
  await provider(config).script({ text: 'The selected line prints a greeting; the guide explains it.' });
  await openFile(page, 'src/app.py');
  // The first line selected, then Alt+K (Seri: Send Selection to Chat).
  await page.locator('.monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.press('Shift+End');
  await page.keyboard.press('Alt+K');
  const view = chat(page);
  const chips = view.locator('#attachments');
  await chips.locator('.chip', { hasText: 'src/app.py:1' }).waitFor({ timeout: 20_000 });
  await view.locator('#prompt-input').waitFor();

  // @ opens the workspace files, searched as you type.
  const input = view.locator('#prompt-input');
  await input.click();
  await input.pressSequentially('Explain these @gui');
  await view.locator('#suggestions .suggestion', { hasText: 'docs/guide.md' }).waitFor({ timeout: 10_000 });
  await shot('attach-file-picker');
  await input.press('Enter');
  await chips.locator('.chip', { hasText: 'docs/guide.md' }).waitFor();
  // #buffer: the file in the editor (saved: its path only).
  await input.pressSequentially('#buf');
  await view.locator('#suggestions .suggestion', { hasText: '#buffer' }).waitFor();
  await input.press('Enter');
  await chips.locator('.chip', { hasText: /^src\/app\.py×?$/ }).waitFor({ timeout: 10_000 });
  expect((await input.inputValue()).trim() === 'Explain these', `the picked words left the text (${await input.inputValue()})`);
  await shot('attach-chips');
  await input.press('Enter');

  const prompt = view.locator('.row.user').last();
  await prompt.locator('.prompt-text', { hasText: 'Explain these' }).waitFor({ timeout: 20_000 });
  for (const label of ['src/app.py:1', 'docs/guide.md', 'src/app.py']) {
    expect(await prompt.locator('.chip', { hasText: label }).count(), `the ${label} chip in the transcript`);
  }
  const shown = await prompt.innerText();
  expect(!shown.includes('<context') && !shown.includes('Attached:'), `no raw attachment text in the transcript (${shown})`);
  await prompt.locator('.context-block summary').click();
  await prompt.locator('.context-text', { hasText: 'print("hello")' }).waitFor();
  await view.locator('#attachments').waitFor({ state: 'hidden' });
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'the guide explains it' }).waitFor({ timeout: 20_000 });
  await shot('attach-sent');
}

const LINKS_REPLY = [
  'The entry point is `app.py` (see src/app.py:1). There is no main.rs or README.md here,',
  'and example.com is only written as a name.',
  '',
  '```python',
  'def main():',
  '    print("hello")  # greet',
  '```',
].join('\n');

async function linksAndCode({ page, config, shot }) {
  await provider(config).script({ text: LINKS_REPLY });
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Where does it start?');
  const reply = view.locator('.row.assistant:not(.streaming)', { hasText: 'The entry point is' });
  await reply.waitFor({ timeout: 20_000 });
  // Only links written with a scheme are web links; file names are files.
  const hrefs = await reply.locator('a[href]').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
  expect(hrefs.length === 0, `no web links in the reply (${hrefs.join(', ')})`);
  const link = reply.locator('code.file-link', { hasText: 'app.py' });
  await link.waitFor({ timeout: 10_000 });
  expect(await reply.locator('.file-link', { hasText: 'src/app.py:1' }).count(), 'the path with a line is a link');
  for (const name of ['main.rs', 'README.md', 'example.com']) {
    expect((await reply.locator('.file-link', { hasText: name }).count()) === 0, `${name} (no such file) is no link`);
  }
  // The python block is highlighted in the theme's colours.
  const keyword = reply.locator('.code-block .hljs-keyword', { hasText: 'def' });
  await keyword.waitFor();
  const colours = await reply.locator('.code-block').evaluate((block) => {
    const colour = (selector) => getComputedStyle(block.querySelector(selector)).color;
    return { keyword: colour('.hljs-keyword'), string: colour('.hljs-string'), comment: colour('.hljs-comment'), plain: colour('pre code') };
  });
  expect(new Set(Object.values(colours)).size === 4, `keywords, strings, comments and plain code differ in colour (${JSON.stringify(colours)})`);
  // Seen in the light, dark and high contrast themes (picked with Ctrl+K Ctrl+T), then
  // back to the light one the other scenarios see.
  for (const [theme, name, kind] of [
    ['Light Modern', 'light', 'vs'],
    ['Dark Modern', 'dark', 'vs-dark'],
    ['Dark High Contrast', 'high-contrast', 'hc-black'],
    ['Light Modern', '', 'vs'],
  ]) {
    await pickTheme(page, theme, kind);
    if (name) {
      await page.waitForTimeout(500);
      await shot(`links-${name}`);
    }
  }

  await link.click();
  await page.locator('.tab.active', { hasText: 'app.py' }).waitFor({ timeout: 10_000 });
  await page.locator('.monaco-editor .view-lines', { hasText: 'print("hello")' }).first().waitFor();
}

const STYLED_REPLY = [
  '## The plan',
  '',
  'Call `main()` from the entry point, then:',
  '',
  '| Step | File |',
  '| --- | --- |',
  '| parse | `src/app.py` |',
  '',
  'The rest of the answer streams in slowly. '.repeat(12),
  'End of the styled answer.',
].join('\n');

/** What decides how the heading, the table and the code span of a reply look and sit. */
function replyStyles(body) {
  return body.evaluate((element) => {
    const measure = (selector) => {
      const found = element.querySelector(selector);
      if (!found) {
        return null;
      }
      const style = getComputedStyle(found);
      const box = found.getBoundingClientRect();
      const props = ['fontSize', 'fontWeight', 'fontFamily', 'lineHeight', 'marginTop', 'marginBottom', 'paddingTop', 'paddingLeft', 'borderTopWidth'];
      return { ...Object.fromEntries(props.map((p) => [p, style[p]])), height: box.height, left: Math.round(box.left) };
    };
    return { heading: measure('h2'), paragraph: measure('p'), code: measure('p code'), table: measure('table'), cell: measure('td') };
  });
}

/** Continues linksAndCode's window: a reply is drawn the same while it streams and after. */
async function streamingLooksFinal({ page, config, shot }) {
  await provider(config).script({ text: STYLED_REPLY, chunkSize: 12, chunkDelay: 0.15 });
  await runCommand(page, 'Seri: Open Chat');
  const view = chat(page);
  await sendPrompt(view, 'Plan the entry point');
  const streaming = view.locator('#streaming:not([hidden])');
  // Measured once the table is complete and followed by text (the block being written
  // last carries the streaming caret).
  await streaming.locator('table td', { hasText: 'src/app.py' }).waitFor({ timeout: 30_000 });
  await streaming.locator('p', { hasText: 'The rest of the answer' }).waitFor({ timeout: 30_000 });
  const during = await replyStyles(streaming);
  expect(!(await streaming.innerText()).includes('End of the styled answer.'), 'measured while the reply still streams');
  await shot('streaming-styled');
  const final = view.locator('.row.assistant:not(.streaming)', { hasText: 'End of the styled answer.' });
  await final.waitFor({ timeout: 40_000 });
  await view.locator('#streaming').waitFor({ state: 'hidden' });
  const after = await replyStyles(final);
  await shot('streaming-styled-done');
  for (const part of Object.keys(after)) {
    expect(after[part] !== null && during[part] !== null, `the ${part} is drawn in both (${JSON.stringify({ during: during[part], after: after[part] })})`);
    expect(JSON.stringify(during[part]) === JSON.stringify(after[part]), `the ${part} looks the same while streaming and after: ${JSON.stringify(during[part])} vs ${JSON.stringify(after[part])}`);
  }
}

async function followTranscript({ page, config, shot }) {
  const seeded = config.ui.follow;
  // Long and slow enough (about 15 s) to be scrolled away from while it streams.
  const reply = 'Here is the long answer. '.repeat(120) + 'The end of the answer.';
  await provider(config).script({ text: reply, chunkSize: 20, chunkDelay: 0.1 });
  await openChat(page);
  const view = chat(page);
  await view.locator('.row.assistant', { hasText: seeded.last }).waitFor({ timeout: 30_000 });
  const box = view.locator('#transcript');
  await box.evaluate((element) => element.scrollTo(0, 0));
  await waitUntil(async () => !(await atBottom(view)), 'the transcript to be scrolled up');

  // Sending scrolls to the bottom, and the reply streams in view.
  await sendPrompt(view, 'Tell me everything');
  const prompt = view.locator('.row.user', { hasText: 'Tell me everything' });
  await prompt.waitFor({ timeout: 10_000 });
  await view.locator('#streaming:not([hidden])').waitFor({ timeout: 20_000 });
  await waitUntil(() => inView(view, view.locator('#streaming')), 'the streaming reply to be in view');
  // Scrolled up while it streams, the chat stays put and says there is more below.
  await box.evaluate((element) => element.scrollTo(0, 0));
  await view.locator('#new-messages:not([hidden])').waitFor({ timeout: 10_000 });
  await shot('follow-new-messages');
  await view.locator('#new-messages').click();
  await waitUntil(() => atBottom(view), 'the button to scroll to the bottom');
  const done = view.locator('.row.assistant:not(.streaming)', { hasText: 'The end of the answer.' });
  await done.waitFor({ timeout: 40_000 });
  await waitUntil(() => atBottom(view), 'the finished reply to be followed to its end');
  await shot('follow-done');
}

async function queueWhileBusy({ page, config, shot }) {
  await provider(config).script(
    { text: 'First answer, slowly. '.repeat(20), chunkSize: 10, chunkDelay: 0.08 },
    { text: 'Second answer.' },
  );
  const view = chat(page);
  await sendPrompt(view, 'First question');
  await view.locator('#stop-button:not([hidden])').waitFor({ timeout: 10_000 });
  // Enter while the task runs queues; a queued prompt can be taken back.
  await sendPrompt(view, 'Second question');
  await sendPrompt(view, 'Never mind this one');
  const queued = view.locator('.queued');
  await queued.filter({ hasText: 'Second question' }).waitFor({ timeout: 5_000 });
  await queued.filter({ hasText: 'Never mind this one' }).waitFor();
  await shot('queue');
  await queued.filter({ hasText: 'Never mind this one' }).getByRole('button', { name: 'Remove from the queue' }).click();
  await queued.filter({ hasText: 'Never mind this one' }).waitFor({ state: 'detached' });
  expect(await queued.filter({ hasText: 'Second question' }).isVisible(), 'the other prompt is still queued');

  await view.locator('.row.user', { hasText: 'Second question' }).waitFor({ timeout: 30_000 });
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'Second answer.' }).waitFor({ timeout: 20_000 });
  expect((await queued.count()) === 0, 'nothing is left queued');
  expect((await view.locator('.row.user', { hasText: 'Never mind this one' }).count()) === 0, 'the removed prompt was not sent');
  expect(await inView(view, view.locator('.row.assistant', { hasText: 'Second answer.' })), 'the answer is in view');
}

async function failedTask({ page, config, shot }) {
  await provider(config).script({ error: 400, body: { error: { message: 'The prompt is too long for this model' } } });
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Summarise everything');
  const card = view.locator('.notice-error', { hasText: 'The prompt is too long for this model' });
  await card.waitFor({ timeout: 20_000 });
  await view.locator('#working').waitFor({ state: 'hidden' });
  await shot('failed-task');
  await provider(config).script({ text: 'Here is the summary.' });
  await card.getByRole('button', { name: 'Retry' }).click();
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'Here is the summary.' }).waitFor({ timeout: 20_000 });
  // Its task stored nothing after the prompt: the failed try was rewound, not repeated.
  await waitUntil(
    async () => (await view.locator('.row.user', { hasText: 'Summarise everything' }).count()) === 1,
    'the prompt to be in the transcript once',
  );
}

/** A chat opened on a session whose turns ended short says how each ended, under it. */
async function turnEndings({ page, config, shot }) {
  const seeded = config.ui.endings;
  await openChat(page);
  const view = chat(page);
  const failed = view.locator('.turn-end-failed', { hasText: seeded.failedError });
  const cancelled = view.locator('.turn-end-cancelled', { hasText: 'Stopped.' });
  const cut = view.locator('.turn-end-interrupted', { hasText: 'The reply was cut off' });
  await cut.waitFor({ timeout: 30_000 });
  // Each under its own turn, in order: the rows of the transcript, as the user reads them.
  const texts = await view.locator('#messages > .row').allInnerTexts();
  const at = (text) => texts.findIndex((row) => row.includes(text));
  const order = [seeded.failedPrompt, seeded.failedError, seeded.cancelledPrompt, seeded.cancelledReply, 'Stopped.', seeded.cutPrompt, seeded.cutReply, 'The reply was cut off'];
  for (let i = 1; i < order.length; i++) {
    expect(at(order[i - 1]) >= 0 && at(order[i]) > at(order[i - 1]), `"${order[i]}" comes after "${order[i - 1]}" (${JSON.stringify(texts)})`);
  }
  expect((await failed.count()) === 1 && (await cancelled.count()) === 1, 'one row for each ending');
  await shot('turn-endings');

  // A task that fails now says so once (the live notice, with its Retry), and after a
  // window reload the stored end of that turn says it instead.
  await provider(config).script({ error: 400, body: { error: { message: 'fourth is refused' } } });
  await sendPrompt(view, 'fourth: fails live');
  await view.locator('.notice-error', { hasText: 'fourth is refused' }).waitFor({ timeout: 20_000 });
  expect((await view.locator('.notice-error', { hasText: 'fourth is refused' }).count()) === 1, 'the live failure is said once');
  await page.reload();
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  const reloaded = chat(page);
  await reloaded.locator('.turn-end-failed', { hasText: 'fourth is refused' }).waitFor({ timeout: 40_000 });
  expect((await reloaded.locator('.notice-error', { hasText: 'fourth is refused' }).count()) === 1, 'the stored failure is said once');
  await shot('turn-endings-after-reload');
}

/** Our key bindings, and that VS Code binds none of these keys to anything else. */
async function keyBindings({ page, shot }) {
  await openFile(page, 'src/app.py');
  await page.keyboard.press('Control+Alt+K');
  const input = chat(page).locator('#prompt-input');
  await input.waitFor({ timeout: 20_000 });
  await waitUntil(() => input.evaluate((element) => document.hasFocus() && document.activeElement === element), 'Ctrl+Alt+K to put the cursor in the chat input');

  await runCommand(page, 'Preferences: Open Default Keyboard Shortcuts (JSON)');
  await page.locator('.tab.active', { hasText: 'Default Keybindings' }).waitFor({ timeout: 10_000 });
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(page.url()).origin });
  await page.locator('.monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Control+C');
  const defaults = await waitUntil(async () => {
    const text = await page.evaluate(() => navigator.clipboard.readText());
    return text.includes('"key"') ? text : undefined;
  }, 'the default key bindings to be copied');
  const bound = new Map();
  for (const match of defaults.matchAll(/"key":\s*"([^"]+)",\s*"command":\s*"([^"]+)"/g)) {
    bound.set(match[1], [...(bound.get(match[1]) ?? []), match[2]]);
  }
  const ours = { 'ctrl+alt+k': 'seri-vscode.openChat', 'ctrl+shift+alt+k': 'seri-vscode.newSession', 'ctrl+shift+alt+backspace': 'seri-vscode.stop' };
  for (const [key, command] of Object.entries(ours)) {
    const others = (bound.get(key) ?? []).filter((c) => c !== command);
    expect(others.length === 0, `${key} is also bound to ${others.join(', ')}`);
    expect((bound.get(key) ?? []).includes(command), `${key} runs ${command}`);
  }
  await shot('keybindings');
}

const RICH_REPLY = [
  '## What the project does',
  '',
  'The app in `src/app.py` prints a greeting. Its entry point is app.py:1, and there is',
  'no `main()` yet. See https://docs.python.org/3/library/__main__.html for the idiom.',
  '',
  '| file | role |',
  '| --- | --- |',
  '| `src/app.py` | the greeting |',
  '| `README.md` | docs |',
  '',
  '1. Add a `main()` function.',
  '2. Call it under `if __name__ == "__main__":`.',
  '',
  '```python',
  'import sys',
  '',
  'def main(argv: list[str] | None = None) -> int:',
  '    """Print the greeting."""',
  '    print("hello", file=sys.stdout)  # the greeting',
  '    return 0',
  '',
  'if __name__ == "__main__":',
  '    raise SystemExit(main())',
  '```',
  '',
  'Run it with:',
  '',
  '```bash',
  'python -m src.app --verbose && echo "ok: $?"',
  '```',
  '',
  '```json',
  '{"name": "app", "version": 1, "tags": ["demo", true, null]}',
  '```',
  '',
  '```diff',
  '-print("hello")',
  '+def main():',
  '+    print("hello")',
  '```',
].join('\n');

/** A session as a user has it for a while: a rich reply, then a task that asks three times. */
async function longTask({ page, config, shot }) {
  const p = provider(config);
  await p.script(
    { calls: [['t1', 'read_file', { path: 'src/app.py' }], ['t2', 'list_dir', { path: '.' }]], text: 'Let me look around first.' },
    { text: RICH_REPLY, chunkSize: 30, chunkDelay: 0.02, thinking: 'The user wants an overview. I read the app.' },
  );
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Explain the project and say how to add a main function');
  const reply = view.locator('.row.assistant:not(.streaming)', { hasText: 'Run it with' });
  await reply.waitFor({ timeout: 30_000 });
  for (const language of ['python', 'bash', 'json', 'diff']) {
    expect(await reply.locator(`.code-block code.language-${language} [class^="hljs-"]`).count(), `the ${language} block is highlighted`);
  }
  expect(await reply.locator('table td code.file-link', { hasText: 'README.md' }).count(), 'a file named in a table is a link');
  await shot('long-task-1-reply');
  await view.locator('#transcript').evaluate((b) => b.scrollTo(0, 0));
  await shot('long-task-1-reply-top');
  await p.script(
    { calls: [['t3', 'edit', { path: 'src/app.py', old_text: 'print("hello")', new_text: 'def main():\n    print("hello")\n\n\nif __name__ == "__main__":\n    main()' }]], text: 'I will edit the app.' },
    { calls: [['t4', 'write_file', { path: 'tests/test_app.py', content: 'from src.app import main\n\n\ndef test_main():\n    main()\n' }]] },
    { calls: [['t5', 'remember', { text: 'Tests run with pytest -q' }]] },
    { text: 'Done: `src/app.py` has a `main()` and tests/test_app.py tests it.' },
  );
  await sendPrompt(view, 'Do it, with a test');
  const card = view.locator('.question', { hasText: 'src/app.py' });
  await card.waitFor({ timeout: 20_000 });
  await card.locator('.hunk .hunk-new', { hasText: 'def main():' }).waitFor();
  await shot('long-task-2-edit-card');
  await card.getByRole('button', { name: 'Review changes' }).click();
  await page.locator('.monaco-diff-editor').waitFor({ timeout: 15_000 });
  await page.waitForTimeout(800);
  await shot('long-task-2-diff');
  // Allowed from the diff's title bar; the diff closes.
  await page.locator('.editor-actions [aria-label="Allow This Change"]').click();
  await page.locator('.tab', { hasText: "seri's proposal" }).waitFor({ state: 'detached', timeout: 10_000 });
  const create = view.locator('.question', { hasText: 'tests/test_app.py' });
  await create.waitFor({ timeout: 20_000 });
  await shot('long-task-3-create-card');
  await create.getByRole('button', { name: 'Allow for this session' }).click();
  const memory = view.locator('.question-memory');
  await memory.waitFor({ timeout: 20_000 });
  await memory.locator('.question-detail', { hasText: 'in .seri/memory.md' }).waitFor();
  await shot('long-task-4-memory-card');
  await memory.getByRole('button', { name: 'Remember', exact: true }).click();
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'tests it' }).waitFor({ timeout: 20_000 });
  expect((await view.locator('.question').count()) === 0, 'no question left');
  await shot('long-task-5-done');
  // The same transcript in a dark theme, then back to the light one.
  await pickTheme(page, 'Dark Modern', 'vs-dark');
  await page.waitForTimeout(500);
  await shot('long-task-dark');
  await pickTheme(page, 'Light Modern', 'vs');
}

/**
 * The window of a folder that sets no server command: the extension installs the server
 * it carries (this code-server's PATH has no seri-lsp, and its Python has no seri_lsp),
 * then the chat works end to end.
 */
async function bundledServer({ page, config, shot }) {
  await provider(config).script(
    { calls: [['call-read', 'read_file', { path: 'src/app.py' }]], usage: 300 },
    { text: 'It prints a greeting, from the server the extension carries.', usage: 320 },
  );
  const view = chat(page);
  await runCommand(page, 'Seri: Open Chat');
  // The first start installs the server (a private environment, the carried wheels);
  // the chat invites a prompt once it runs.
  await view.locator('#prompt-input').waitFor({ timeout: 30_000 });
  await view.getByText('No messages yet.').waitFor({ timeout: 180_000 });
  await sendPrompt(view, 'What does src/app.py do?');
  await view.locator('.row.user', { hasText: 'What does src/app.py do?' }).waitFor({ timeout: 20_000 });
  await view.locator('details.tool[data-tool="read_file"] .tool-target', { hasText: 'src/app.py' }).waitFor({ timeout: 30_000 });
  await view.locator('.row.assistant', { hasText: 'from the server the extension carries' }).waitFor({ timeout: 30_000 });
  expect((await statusPercent(page)) >= 1, 'the status bar shows the context use');
  await shot('bundled-server');
  await lateCallBeforeResult(page, view);
  await reusedCallId(config, view, shot);
}

/**
 * Some providers number their tool calls per reply ("call_0" in every turn): a later call
 * with an earlier call's id gets its own row and result, and the earlier row keeps its own.
 */
async function reusedCallId(config, view, shot) {
  await provider(config).script(
    { calls: [['call-read', 'read_file', { path: 'src/missing.py' }]], usage: 340 },
    { text: 'There is no src/missing.py.', usage: 360 },
  );
  await sendPrompt(view, 'And src/missing.py?');
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'There is no src/missing.py.' }).waitFor({ timeout: 30_000 });
  const rows = view.locator('details.tool[data-tool="read_file"][data-call-id="call-read"]');
  const shown = await rows.evaluateAll((found) =>
    found.map((row) => [row.querySelector('.tool-target')?.textContent ?? '', row.className.includes('status-ok') ? 'ok' : 'not ok', row.textContent.includes('print') ? 'app' : 'other']),
  );
  expect(
    JSON.stringify(shown) === JSON.stringify([['src/app.py', 'ok', 'app'], ['src/missing.py', 'not ok', 'other']]),
    `each call with its own target and result (${JSON.stringify(shown)})`,
  );
  await shot('bundled-reused-call-id');
}

/**
 * Under load this scenario once showed "tool result {}": a result drawn without its call.
 * The chat page is sent a tool result before the message with its call, as a late read
 * once delivered them: the result is drawn inside its call's row, never on its own.
 */
async function lateCallBeforeResult(page, view) {
  const last = Math.max(...(await view.locator('#messages [data-id]').evaluateAll((rows) => rows.map((row) => Number(row.dataset.id)))));
  const at = new Date().toISOString();
  const call = { id: 'call-late', name: 'read_file', arguments: JSON.stringify({ path: 'src/late.py' }) };
  await view.locator('body').evaluate(
    (_body, messages) => messages.forEach((message) => window.dispatchEvent(new MessageEvent('message', { data: { type: 'append', message } }))),
    [
      { id: last + 2, createdAt: at, role: 'tool', content: 'late = True', tool_call_id: call.id },
      { id: last + 1, createdAt: at, role: 'assistant', content: 'Reading the late file.', tool_calls: [call] },
    ],
  );
  const row = view.locator('details.tool[data-call-id="call-late"]');
  await row.locator('.tool-target', { hasText: 'src/late.py' }).waitFor({ timeout: 5_000 });
  expect((await row.getAttribute('class')).includes('status-ok'), 'the call shows its result (not still running)');
  expect((await view.locator('details.tool[data-tool="tool result"]').count()) === 0, 'no result drawn without its call');
  const order = await view.locator('#messages > .row').evaluateAll((rows) => rows.map((r) => r.dataset.id ?? ''));
  expect(order.indexOf(String(last + 1)) === order.length - 1, `the late call's reply comes last (${order.slice(-3)})`);
  // Shown again, the page is drawn from the extension's model, without these two.
  await runCommand(page, 'View: Show Explorer');
  await openChat(page);
  await view.locator('details.tool[data-call-id="call-late"]').waitFor({ state: 'detached', timeout: 20_000 });
}

/** The id of the open session, from the title's tooltip ("Title (id)"). */
async function openSessionId(view) {
  const tooltip = (await view.locator('#session-title').getAttribute('title')) ?? '';
  return /\(([0-9a-f-]{8,})\)/.exec(tooltip)?.[1];
}

async function forkFromMessage({ page, config, shot }) {
  const seeded = config.ui.fork;
  await openChat(page);
  const view = chat(page);
  const firstReply = view.locator('.row.assistant', { hasText: seeded.firstReply });
  await firstReply.waitFor({ timeout: 20_000 });
  await view.locator('.row.assistant', { hasText: seeded.secondReply }).waitFor();
  const original = await waitUntil(() => openSessionId(view), 'the open session’s id');

  // Fork from Here: a button on the reply, shown on hover.
  const button = firstReply.locator('.fork-here');
  expect((await button.evaluate((b) => getComputedStyle(b.parentElement).opacity)) === '0', 'the fork button hides until hovered');
  await firstReply.hover();
  await waitUntil(async () => (await button.evaluate((b) => getComputedStyle(b.parentElement).opacity)) === '1', 'the fork button on hover');
  await shot('fork-hover');
  await button.click();
  await waitUntil(async () => {
    const id = await openSessionId(view);
    return id && id !== original;
  }, 'the fork to open');
  await view.locator('#session-title', { hasText: `${seeded.title} (fork)` }).waitFor({ timeout: 20_000 });
  await view.locator('.row.assistant', { hasText: seeded.secondReply }).waitFor({ state: 'detached', timeout: 20_000 });
  await firstReply.waitFor();
  // Where the copy ends, and where it comes from.
  const mark = view.locator('#fork-mark');
  await mark.filter({ hasText: `Forked from “${seeded.title}”` }).waitFor({ timeout: 10_000 });
  const below = await mark.evaluate((element) => element.previousElementSibling?.textContent ?? '');
  expect(below.includes(seeded.firstReply), `the mark follows the message forked at (${below})`);
  await waitUntil(async () => (await view.locator('#prompt-input').evaluate((input) => document.activeElement === input)), 'the cursor in the input');
  await shot('fork-done');

  // The next prompt goes to the fork, after the copy (the provider sees only that part).
  await provider(config).script({ text: seeded.forkReply });
  await sendPrompt(view, seeded.forkPrompt);
  await view.locator('.row.assistant:not(.streaming)', { hasText: seeded.forkReply }).waitFor({ timeout: 20_000 });
  const order = await view.locator('#messages > .row').evaluateAll((found) => found.map((row) => (row.id === 'fork-mark' ? 'mark' : row.dataset.role)));
  expect(JSON.stringify(order) === JSON.stringify(['user', 'assistant', 'mark', 'user', 'assistant']), `the rows around the mark (${order})`);
  await shot('fork-continued');
  const fork = await openSessionId(view);
  // The reply is drawn before its task ends (the turn is still saved, checked, titled), and
  // a fork is refused while a task runs: a user forks once the Stop button has gone.
  await view.locator('body.task-running').waitFor({ state: 'detached', timeout: 20_000 });

  // The view's context menu offers it too: at the first prompt.
  await view.locator('.row.user', { hasText: seeded.first }).locator('.bubble').click({ button: 'right' });
  const item = page.locator('.context-view .action-label', { hasText: 'Fork from Here' });
  await item.waitFor({ timeout: 10_000 });
  await shot('fork-context-menu');
  await chooseMenuItem(item);
  await waitUntil(async () => {
    const id = await openSessionId(view);
    return id && id !== fork;
  }, 'the fork of the fork to open');
  await view.locator('[data-role="assistant"]').first().waitFor({ state: 'detached', timeout: 20_000 });
  expect((await view.locator('.row.user').count()) === 1, 'only the first prompt was copied');
  await mark.filter({ hasText: `Forked from “${seeded.title} (fork)”` }).waitFor({ timeout: 10_000 });

  // Seri: Fork Session: at the last message.
  const third = await openSessionId(view);
  await runCommand(page, 'Seri: Fork Session');
  await waitUntil(async () => {
    const id = await openSessionId(view);
    return id && id !== third;
  }, 'the palette’s fork to open');
  await view.locator('.row.user', { hasText: seeded.first }).waitFor({ timeout: 20_000 });

  // "Open the original" goes back to the session forked from.
  await mark.getByRole('button', { name: 'Open the original' }).click();
  await waitUntil(async () => (await openSessionId(view)) === third, 'the original to open');
}

/** The header's bar: its segments against the breakdown's parts. */
async function segmentsAgainstParts(view) {
  return view.locator('#context-details').evaluate((details) => {
    const summary = details.querySelector('#context-summary').textContent;
    const window = Number(/of ([\d,]+) tokens/.exec(summary)[1].replace(/,/g, ''));
    const parts = [...details.querySelectorAll('tr.part')].map((row) => ({
      kind: row.dataset.kind,
      name: row.querySelector('.part-name').textContent,
      tokens: Number(row.querySelector('.part-tokens').textContent.replace(/,/g, '')),
    }));
    const segments = [...document.querySelectorAll('#context-segments .segment')].map((segment) => ({
      kind: segment.dataset.kind,
      width: parseFloat(segment.style.width),
      colour: getComputedStyle(segment).backgroundColor,
    }));
    return { window, parts, segments };
  });
}

async function contextBar({ page, config, shot }) {
  await provider(config).script(
    { calls: [['ctx-read', 'read_file', { path: 'docs/notes.md' }]], usage: 100, cost: 0.0031, cached: 0, cacheWrite: 80 },
    { text: 'The notes describe how the parser recovers from errors.', usage: 100, cost: 0.0052, cached: 80 },
  );
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Summarise docs/notes.md');
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'The notes describe how' }).waitFor({ timeout: 20_000 });
  const meter = view.locator('#context-meter');
  await view.locator('#context-segments .segment[data-kind="toolResult"]').waitFor({ timeout: 20_000 });
  // The spend, in the header.
  await view.locator('#session-spend', { hasText: '$0.0083' }).waitFor({ timeout: 10_000 });
  // Beside it, the share of the input read from the prompt cache; the sentence on hover.
  const cache = view.locator('#session-cache', { hasText: 'cache 40%' });
  await cache.waitFor({ timeout: 10_000 });
  const cacheTitle = await cache.getAttribute('title');
  expect(cacheTitle === 'Prompt cache: 40% of the input read from it (80 of 200 tokens); 80 tokens written to it.', `the cache's title (${cacheTitle})`);

  // Hovering the bar shows the breakdown: each part, its tokens, where compaction starts.
  const details = view.locator('#context-details');
  await meter.hover();
  await details.waitFor({ state: 'visible', timeout: 5_000 });
  await details.locator('#context-summary', { hasText: 'Compaction starts at 2,000 tokens (50%)' }).waitFor();
  const found = await segmentsAgainstParts(view);
  const names = found.parts.map((part) => part.name);
  for (const name of ['System prompt', 'AGENTS.md', 'Your prompts', 'Replies and thinking', 'Tool calls', 'read_file results']) {
    expect(names.includes(name), `the ${name} part (${names.join(', ')})`);
  }
  // One segment per part, as wide as its share of the window, in its kind's colour.
  expect(found.segments.length === found.parts.length, `a segment per part (${found.segments.length} for ${found.parts.length})`);
  found.parts.forEach((part, index) => {
    const segment = found.segments[index];
    const expected = (part.tokens * 100) / found.window;
    expect(segment.kind === part.kind && Math.abs(segment.width - expected) < 0.01, `${part.name}: ${segment.width}% for ${part.tokens} of ${found.window}`);
  });
  const colours = new Map(found.segments.map((segment) => [segment.kind, segment.colour]));
  expect(new Set(colours.values()).size === colours.size, `a colour per kind (${JSON.stringify([...colours])})`);
  const mark = await view.locator('#compact-mark').evaluate((element) => element.style.left);
  expect(mark === '50%', `the compaction mark at half the bar (${mark})`);
  await shot('context-breakdown');
  // It closes when the pointer leaves (to the transcript's foot, below the breakdown); a
  // click keeps it open until Escape.
  const away = async () => {
    const box = await view.locator('#transcript').boundingBox();
    await view.locator('#transcript').hover({ position: { x: 20, y: box.height - 20 } });
  };
  await away();
  await details.waitFor({ state: 'hidden', timeout: 5_000 });
  await meter.click();
  await details.waitFor({ state: 'visible' });
  await away();
  await page.waitForTimeout(600);
  expect(await details.isVisible(), 'a clicked breakdown stays open');
  await page.keyboard.press('Escape');
  await details.waitFor({ state: 'hidden', timeout: 5_000 });

  // /cost and /context print their reports in the chat, laid out to fit it, no toast.
  await sendPrompt(view, '/cost');
  const cost = view.locator('.report-card', { hasText: 'Spend: $0.0083 over 2 model calls.' });
  await cost.waitFor({ timeout: 10_000 });
  await cost.locator('.report-row', { hasText: 'Your tasks' }).filter({ hasText: '2 calls' }).waitFor();
  await sendPrompt(view, '/context');
  const report = view.locator('.report-card', { hasText: 'Context:' });
  await report.waitFor({ timeout: 10_000 });
  for (const name of ['System prompt', 'AGENTS.md', 'read_file results']) {
    await report.locator('.report-row .report-name', { hasText: name }).waitFor();
  }
  expect(await report.locator('.report-row .share-fill').count(), 'the report’s bars');
  // Nothing wider than the default sidebar, and no label cut short.
  const overflow = await view.locator('#transcript').evaluate((box) => {
    const wide = (element) => element.scrollWidth > element.clientWidth + 1;
    return {
      transcript: wide(box),
      cards: [...box.querySelectorAll('.report-card')].filter(wide).length,
      names: [...document.querySelectorAll('.report-name, .report-value, .part-name, #context-use, #session-spend, #session-cache')].filter(wide).map((e) => e.textContent),
    };
  });
  expect(!overflow.transcript && overflow.cards === 0 && overflow.names.length === 0, `the reports fit the sidebar (${JSON.stringify(overflow)})`);
  await page.waitForTimeout(500);
  expect((await page.locator('.notifications-toasts', { hasText: /Spend:|Context:/ }).count()) === 0, 'no toast besides');
  await shot('context-reports');

  // The status bar item's tooltip says the spend too.
  await page.locator(STATUS_ITEM).hover();
  await page.locator('.monaco-hover, .workbench-hover', { hasText: 'Spend: $0.0083 over 2 model calls' }).first().waitFor({ timeout: 10_000 });
  await shot('context-status-tooltip');

  // In the dark theme.
  await pickTheme(page, 'Dark Modern', 'vs-dark');
  await meter.click();
  await details.waitFor({ state: 'visible' });
  await page.waitForTimeout(300);
  await shot('context-breakdown-dark');
  await page.keyboard.press('Escape');
  await pickTheme(page, 'Light Modern', 'vs');
}

/** The QuickPick's rows. */
function pickRows(page) {
  return page.locator('.quick-input-list .monaco-list-row');
}

async function searchSessions({ page, config, shot }) {
  const seeded = config.ui.search;
  await openChat(page);
  const view = chat(page);
  await view.locator('#session-title', { hasText: seeded.latestTitle }).waitFor({ timeout: 20_000 });

  // Searched as it is typed: the last word is a prefix.
  await runCommand(page, 'Seri: Search Sessions...');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await page.locator('.quick-input-widget', { hasText: 'Search Sessions' }).waitFor({ timeout: 10_000 });
  await input.pressSequentially(seeded.query, { delay: 40 });
  // The rows follow the typing: wait for the answer to the whole query (both words marked).
  const answer = pickRows(page).filter({ hasText: 'decoded in src/lexer.py' }).filter({ hasText: '«escapes»' });
  await answer.waitFor({ timeout: 20_000 });
  await pickRows(page).filter({ hasText: 'Where does the tokenizer handle' }).waitFor();
  const shown = await answer.innerText();
  expect(shown.includes(seeded.title), `the hit names its session (${shown})`);
  expect(shown.includes('«zeppelin»') && shown.includes('«escapes»'), `the snippet marks the words found (${shown})`);
  expect(/seri · (now|\d+ \w+ ago|yesterday)/.test(shown), `the hit says who wrote it and when (${shown})`);
  expect((await pickRows(page).count()) === 2, `one row per message that matches (${await pickRows(page).count()})`);
  await shot('search-as-you-type');

  // The button searches every project: another project's session, said to be so.
  const everywhere = page.locator('.quick-input-widget .quick-input-titlebar .action-label[aria-label="Search all projects"]');
  await everywhere.click();
  await input.fill(seeded.otherProjectQuery);
  const other = pickRows(page).filter({ hasText: '(another project)' });
  await other.first().waitFor({ timeout: 20_000 });
  expect((await other.first().innerText()).includes('stored'), 'the other project is named by its folder');
  await shot('search-all-projects');
  await page.locator('.quick-input-widget .quick-input-titlebar .action-label[aria-label="Search this project only"]').click();
  await pickRows(page).filter({ hasText: 'No message of this project matches.' }).waitFor({ timeout: 20_000 });

  // Picking a hit of the first page (the chat shows the newest 200 of 250 messages).
  await input.fill(seeded.query);
  await answer.waitFor({ timeout: 20_000 });
  await answer.click();
  await view.locator('#session-title', { hasText: seeded.title }).waitFor({ timeout: 20_000 });
  const row = view.locator('.row.assistant', { hasText: seeded.answer });
  await row.waitFor({ timeout: 20_000 });
  await waitUntil(() => inView(view, row), 'the hit’s message to be in view');
  expect(await row.evaluate((element) => element.classList.contains('flash')), 'the message is highlighted');
  expect((await view.locator('.row.user', { hasText: 'Message 001 of the tokenizer session' }).count()) === 1, 'the earlier page was read');
  await shot('search-hit-in-chat');

  // The same in the dark theme.
  await pickTheme(page, 'Dark Modern', 'vs-dark');
  await runCommand(page, 'Seri: Search Sessions...');
  await input.pressSequentially(seeded.query, { delay: 40 });
  await answer.waitFor({ timeout: 20_000 });
  await shot('search-as-you-type-dark');
  await page.keyboard.press('Escape');
  await pickTheme(page, 'Light Modern', 'vs');
}

async function mcpServers({ page, config, shot }) {
  // The workspace's own settings (.vscode/settings.json, which come with a cloned
  // project) configure `probe` (our test MCP server) and `broken` (a command that does
  // not exist): they wait for the user's consent, asked as a card in the chat naming
  // each with its command line. Allowed, they start in the background, so the pick is
  // opened again until neither is starting.
  // (Until the language server runs, the command says it does not.)
  await openChat(page);
  const card = chat(page).locator('.question', { hasText: 'MCP servers configured in this workspace' });
  await card.waitFor({ timeout: 30_000 });
  const asked = await card.innerText();
  expect(asked.includes('probe') && asked.includes('seri_test_server.py') && asked.includes('/nonexistent/seri-mcp-server'), `the card names each server and its command (${asked})`);
  for (const button of ['Allow', 'Not now', 'Never for this project']) {
    expect((await card.getByRole('button', { name: button, exact: true }).count()) === 1, `the ${button} button`);
  }
  await shot('mcp-consent-card');
  await card.getByRole('button', { name: 'Allow', exact: true }).click();
  await card.waitFor({ state: 'detached', timeout: 10_000 });
  const rows = pickRows(page);
  const probe = rows.filter({ hasText: 'probe' });
  const broken = rows.filter({ hasText: 'broken' });
  await waitUntil(async () => {
    await runCommand(page, 'Seri: MCP Servers');
    const shown = await probe.waitFor({ timeout: 3_000 }).then(
      () => true,
      () => false,
    );
    if (shown && (await rows.filter({ hasText: 'starting' }).count()) === 0) {
      return true;
    }
    await page.keyboard.press('Escape');
    return false;
  }, 'both MCP servers to be started or failed', 60_000);
  const probeText = await probe.innerText();
  expect(/ready · workspace .* · stdio · 7 tools/.test(probeText), `probe's row (${probeText})`);
  const brokenText = await broken.innerText();
  expect(/failed · workspace .* · stdio · 0 tools/.test(brokenText), `broken's row (${brokenText})`);
  expect(brokenText.includes('seri-mcp-server'), `broken's row says why (${brokenText})`);
  await shot('mcp-servers');
  await probe.click();
  const restart = rows.filter({ hasText: 'Restart' });
  await restart.waitFor({ timeout: 10_000 });
  await shot('mcp-server-restart');
  await restart.click();
  await page.locator('.notifications-toasts', { hasText: 'MCP server probe is starting again' }).waitFor({ timeout: 20_000 });
  await shot('mcp-server-restarted');

  // A call to one of its tools is asked about (permissions.mcp: ask) with the tool, its
  // server and its arguments exactly as they would be sent.
  const view = chat(page);
  const text = 'say [^a-z]+ and post["tags"][0]';
  await provider(config).script({ calls: [['call-mcp', 'mcp__probe__echo', { text, count: 2 }]] }, { text: 'It said it twice.' });
  await sendPrompt(view, 'Use the probe to echo something');
  const call = view.locator('.question-mcp');
  await call.waitFor({ timeout: 30_000 });
  const title = await call.locator('.question-title').innerText();
  expect(/seri wants to call echo of the MCP server probe/.test(title), `the call card's title (${title})`);
  const args = JSON.parse(await call.locator('.question-arguments').innerText());
  expect(args.text === text && args.count === 2, `the arguments exactly (${JSON.stringify(args)})`);
  await shot('mcp-call-card');
  await call.getByRole('button', { name: 'Allow', exact: true }).click();
  await view.locator('.row.assistant', { hasText: 'It said it twice.' }).waitFor({ timeout: 30_000 });
}

async function selectModel({ page, shot }) {
  const view = chat(page);
  const model = view.locator('#session-model');
  await model.filter({ hasText: 'test/model' }).waitFor({ timeout: 20_000 });
  await view.locator('#context-use', { hasText: '/ 128k tokens' }).waitFor({ timeout: 20_000 });
  await shot('model-header');
  // The model in the header opens the picker: the provider's models with their windows.
  await model.click();
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.filter({ hasText: 'other/model' }).waitFor({ timeout: 20_000 });
  const current = await rows.filter({ hasText: 'test/model' }).innerText();
  expect(/128k context/.test(current) && /in use/.test(current), `the model in use, with its window (${current})`);
  expect(/4\.1k context/.test(await rows.filter({ hasText: 'other/model' }).innerText()), 'the other model’s window');
  await shot('model-quickpick');
  await page.locator('.quick-input-widget .quick-input-box input').fill('other/model');
  await page.keyboard.press('Enter');
  await model.filter({ hasText: 'other/model' }).waitFor({ timeout: 20_000 });
  // The window is read again for the new model.
  await view.locator('#context-use', { hasText: '/ 4.1k tokens' }).waitFor({ timeout: 20_000 });
  await shot('model-done');
  // `/model` typed in the chat opens the same picker (not a toast listing the models).
  await sendPrompt(view, '/model');
  await rows.filter({ hasText: 'test/model' }).waitFor({ timeout: 20_000 });
  expect(/in use/.test(await rows.filter({ hasText: 'other/model' }).innerText()), 'the picker marks the model in use');
  await shot('model-slash-picker');
  await page.keyboard.press('Escape');
  await view.locator('#session-model').filter({ hasText: 'other/model' }).waitFor();
}

async function renameSession({ page, config, shot }) {
  const seeded = config.ui.search;
  const view = chat(page);
  await view.locator('#session-title', { hasText: seeded.title }).waitFor({ timeout: 10_000 });
  await runCommand(page, 'Seri: Rename Session...');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await page.locator('.quick-input-widget', { hasText: 'Rename Session' }).waitFor({ timeout: 10_000 });
  await waitUntil(async () => (await input.inputValue()) === seeded.title, 'the current title in the box');
  // A blank title is refused before it is sent.
  await input.fill('   ');
  await page.locator('.quick-input-message', { hasText: 'at least one character' }).waitFor({ timeout: 10_000 });
  await shot('rename-refused');
  await input.fill(seeded.renamed);
  await shot('rename-box');
  await page.keyboard.press('Enter');
  await view.locator('#session-title', { hasText: seeded.renamed }).waitFor({ timeout: 20_000 });
  // Only the title changed: the earlier page read for the search hit is still there.
  await page.waitForTimeout(500);
  expect((await view.locator('.row.user', { hasText: 'Message 001 of the tokenizer session' }).count()) === 1, 'the earlier page is kept');
  await shot('rename-done');
}

/** The workbench's modal dialog (a `showWarningMessage` with `modal: true`). */
function modalDialog(page) {
  return page.locator('.monaco-dialog-box');
}

async function deleteSessions({ page, config, shot }) {
  const seeded = config.ui.delete;
  await openChat(page);
  const view = chat(page);
  await view.locator('#session-title', { hasText: seeded.latestTitle }).waitFor({ timeout: 20_000 });

  // The resume picker's delete button on the other session asks first, then it is gone.
  await runCommand(page, 'Seri: Resume Session...');
  const other = pickRows(page).filter({ hasText: seeded.otherTitle });
  await other.waitFor({ timeout: 10_000 });
  await other.hover();
  await other.locator('.codicon-trash').click();
  const dialog = modalDialog(page);
  await dialog.waitFor({ timeout: 10_000 });
  const question = await dialog.innerText();
  expect(question.includes(`Delete the session “${seeded.otherTitle}”?`), `the dialog names the session (${question})`);
  expect(question.includes('2 messages') && !question.includes('A new session opens'), `the dialog says what goes (${question})`);
  await shot('delete-confirm');
  await dialog.locator('.monaco-button', { hasText: 'Delete' }).click();
  await other.waitFor({ state: 'detached', timeout: 20_000 });
  await pickRows(page).filter({ hasText: seeded.latestTitle }).waitFor();
  expect((await pickRows(page).count()) === 1, 'the picker lists the sessions left');
  await shot('delete-picker-after');
  await page.keyboard.press('Escape');
  await view.locator('#session-title', { hasText: seeded.latestTitle }).waitFor();

  // Seri: Delete Session... on the open session: after the question, a new session.
  await runCommand(page, 'Seri: Delete Session...');
  await page.locator('.quick-input-widget', { hasText: 'Delete Session' }).waitFor({ timeout: 10_000 });
  await pickRows(page).filter({ hasText: seeded.latestTitle }).click();
  await dialog.waitFor({ timeout: 10_000 });
  const open = await dialog.innerText();
  expect(open.includes('A new session opens in its place.'), `the dialog says a new session opens (${open})`);
  await shot('delete-open-confirm');
  await dialog.locator('.monaco-button', { hasText: 'Delete' }).click();
  await view.locator('#session-title', { hasText: 'New session' }).waitFor({ timeout: 20_000 });
  await view.locator('#empty', { hasText: 'No messages yet' }).waitFor();
  await page.locator('.notification-toast', { hasText: `deleted the session “${seeded.latestTitle}”` }).waitFor({ timeout: 10_000 });
  await shot('delete-open-done');
}

/** Type a path into the workbench's own file dialog (a quick input here) and accept it. */
async function fileDialog(page, file) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  // The dialog fills in its folder (and, to save, a name) once it has read the folder: a
  // path typed before that is replaced.
  await pickRows(page).filter({ hasText: '..' }).first().waitFor({ timeout: 10_000 });
  await waitUntil(async () => {
    if ((await input.inputValue()) !== file) {
      await input.fill(file);
      await page.waitForTimeout(300);
      return false;
    }
    return true;
  }, `the file dialog to hold ${file}`);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
}

async function exportThenImport({ page, config, shot }) {
  const seeded = config.ui.search;
  const view = chat(page);
  await view.locator('#session-title', { hasText: seeded.renamed }).waitFor({ timeout: 10_000 });
  const exported = await openSessionId(view);
  const bundle = path.join(config.workspaces.search, seeded.bundle);

  await runCommand(page, 'Seri: Export Session...');
  await page.locator('.quick-input-widget', { hasText: 'Export Session' }).waitFor({ timeout: 10_000 });
  // It starts in the project's folder, with a name from the title (not in / or the extension's folder).
  const box = page.locator('.quick-input-widget .quick-input-box input');
  await waitUntil(async () => (await box.inputValue()).startsWith(`${config.workspaces.search}/`), 'the dialog to start in the project folder', 10_000).catch(async () => {
    throw new Error(`the export dialog starts at ${await box.inputValue()}`);
  });
  await shot('export-dialog');
  await fileDialog(page, bundle);
  const saved = page.locator('.notifications-toasts', { hasText: `to ${seeded.bundle} as a bundle` });
  await saved.waitFor({ timeout: 20_000 });
  expect((await saved.innerText()).includes('1 secret was replaced by [redacted]'), `the toast counts the key (${await saved.innerText()})`);
  await shot('export-done');

  await runCommand(page, 'Seri: Import Session...');
  await page.locator('.quick-input-widget', { hasText: 'Import Session' }).waitFor({ timeout: 10_000 });
  await fileDialog(page, bundle);
  await page.locator('.notifications-toasts', { hasText: `as a new session of this project (${seeded.count} messages)` }).waitFor({ timeout: 20_000 });
  await waitUntil(async () => {
    const id = await openSessionId(view);
    return id && id !== exported;
  }, 'the imported session to open');
  await view.locator('#session-title', { hasText: seeded.renamed }).waitFor({ timeout: 20_000 });
  await view.locator('.row.assistant', { hasText: `Message ${seeded.count} of the tokenizer session` }).waitFor({ timeout: 20_000 });
  await shot('import-done');

  // A file that is no bundle is refused, saying what is wrong.
  await runCommand(page, 'Seri: Import Session...');
  await fileDialog(page, path.join(config.workspaces.search, 'notes', 'other.json'));
  await page.locator('.notifications-toasts', { hasText: 'Seri: This is not a seri session bundle' }).waitFor({ timeout: 20_000 });
  await shot('import-refused');
}

/**
 * The actions on a message: a code block's Insert (into the editor used last) and Apply
 * (a diff, then Apply writes the file the block names; a block that shows one function
 * replaces only that function), one tab stop per message with the
 * arrow keys inside it, and Rewind to here on a prompt (a confirmation, then the prompt
 * is back in the input).
 */
async function messageActions({ page, config, shot }) {
  const words = 'Write a greeting helper';
  await provider(config).script({
    text: [
      'Three blocks:',
      '',
      '```python src/greet.py',
      'def greet():',
      '    return "hi"',
      '',
      '',
      'def farewell():',
      '    return "bye"',
      '```',
      '',
      '```python',
      '# inserted by seri',
      '```',
      '',
      'And the fixed greeting:',
      '',
      '```python src/greet.py',
      'def greet(name):',
      '    return f"hi {name}"',
      '```',
    ].join('\n'),
  });
  await openFile(page, 'src/app.py');
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, words);
  const reply = view.locator('.row.assistant:not(.streaming)', { hasText: 'Three blocks' });
  await reply.waitFor({ timeout: 20_000 });
  const prompt = view.locator('.row.user', { hasText: words });

  // One tab stop per message: the prompt's Rewind and Fork, the reply's Fork and the
  // code blocks' Copy, Insert, Apply; the arrow keys move inside.
  const rewind = prompt.locator('.rewind-here');
  const fork = prompt.locator('.fork-here');
  await waitUntil(async () => (await rewind.getAttribute('tabindex')) === '0', 'the prompt’s first action to be its tab stop');
  expect((await fork.getAttribute('tabindex')) === '-1', 'Fork is reached with the arrow keys, not Tab');
  expect((await reply.locator('button[tabindex="0"]').count()) === 1, 'the reply’s ten buttons are one tab stop');
  expect((await reply.locator('button').count()) === 10, 'Fork, and Copy, Insert, Apply on each block');
  await rewind.focus();
  await page.keyboard.press('ArrowRight');
  expect(await fork.evaluate((b) => b === document.activeElement), 'ArrowRight moved to Fork');
  await page.keyboard.press('Tab');
  expect(await reply.locator('button').first().evaluate((b) => b === document.activeElement), 'Tab left the prompt for the reply');
  await page.keyboard.press('End');
  expect(await reply.locator('.code-apply').last().evaluate((b) => b === document.activeElement), 'End went to the last button');
  await shot('message-actions-keyboard');

  // Insert at Cursor: into src/app.py, the editor used last.
  await reply.locator('.code-block').nth(1).locator('.code-insert').click();
  await page.locator('.monaco-editor .view-line', { hasText: '# inserted by seri' }).first().waitFor({ timeout: 10_000 });
  await shot('code-insert');

  // Apply: the block names src/greet.py; a diff first, then Apply writes it.
  await reply.locator('.code-block').first().locator('.code-apply').click();
  await page.locator('.tab', { hasText: 'code block from the chat' }).waitFor({ timeout: 10_000 });
  const ask = page.locator('.notifications-toasts', { hasText: 'create src/greet.py with the code block' });
  await ask.waitFor({ timeout: 10_000 });
  await shot('code-apply-diff');
  await ask.getByRole('button', { name: 'Apply' }).click();
  const greet = path.join(config.workspaces.tools, 'src', 'greet.py');
  await waitUntil(() => {
    try {
      return readFileSync(greet, 'utf8') === 'def greet():\n    return "hi"\n\n\ndef farewell():\n    return "bye"\n';
    } catch {
      return false;
    }
  }, 'src/greet.py to be written');
  await page.locator('.tab', { hasText: 'code block from the chat' }).waitFor({ state: 'detached', timeout: 10_000 });

  // Apply a block that shows one function: that function is replaced, the rest stays.
  await reply.locator('.code-block').nth(2).locator('.code-apply').click();
  await page.locator('.tab', { hasText: 'code block from the chat' }).waitFor({ timeout: 10_000 });
  const fragment = page.locator('.notifications-toasts', { hasText: 'apply the code block to src/greet.py (lines 1-2)' });
  await fragment.waitFor({ timeout: 10_000 });
  await page.locator('.monaco-diff-editor .view-line', { hasText: 'def farewell' }).first().waitFor({ timeout: 10_000 });
  await shot('code-apply-fragment-diff');
  await fragment.getByRole('button', { name: 'Apply' }).click();
  await waitUntil(
    () => readFileSync(greet, 'utf8') === 'def greet(name):\n    return f"hi {name}"\n\n\ndef farewell():\n    return "bye"\n',
    'the fragment to replace greet and keep farewell',
  );
  await page.locator('.tab', { hasText: 'code block from the chat' }).waitFor({ state: 'detached', timeout: 10_000 });

  // Rewind to here: asked first, then the prompt leaves the chat and is back in the input.
  await prompt.hover();
  await rewind.click();
  const dialog = modalDialog(page);
  await dialog.filter({ hasText: 'Rewind to before this prompt?' }).waitFor({ timeout: 10_000 });
  await shot('rewind-here-confirm');
  await dialog.getByRole('button', { name: 'Rewind', exact: true }).click();
  const input = view.locator('#prompt-input');
  await waitUntil(async () => (await input.inputValue()) === words, 'the prompt to be back in the chat input');
  await waitUntil(async () => (await view.locator('.row.user').count()) === 0, 'the prompt to leave the transcript');
  await shot('rewind-here-done');
}

const SLOW_LINES = 'for i in 1 2 3 4 5; do echo line$i; sleep 0.4; done';
const LONG_SLEEP = 'echo begun; sleep 60; echo never';

async function runCommandLive({ page, config, shot }) {
  await provider(config).script(
    { calls: [['call-lines', 'run', { command: SLOW_LINES }]] },
    { calls: [['call-sleep', 'run', { command: LONG_SLEEP }]] },
    { text: 'Both commands ran; the second one was stopped.' },
  );
  await openChat(page);
  const view = chat(page);
  await sendPrompt(view, 'Run the slow script, then the long one');

  // The approval card: the command line exactly as it runs, and its folder, in monospace.
  const card = view.locator('.question.question-command').first();
  await card.waitFor({ timeout: 20_000 });
  await card.locator('.question-title', { hasText: 'seri wants to run a command' }).waitFor();
  const shown = await card.locator('pre.question-line').textContent();
  expect(shown === SLOW_LINES, `the command exactly as written (${shown})`);
  const font = await card.locator('pre.question-line').evaluate((element) => getComputedStyle(element).fontFamily);
  expect(/mono|courier|consol|menlo/i.test(font), `the command in a monospace font (${font})`);
  await card.locator('.question-cwd code', { hasText: '.' }).waitFor();
  for (const button of ['Allow once', 'Deny']) {
    expect(await card.getByRole('button', { name: button, exact: true }).count(), `the ${button} button`);
  }
  // Its row is there already, with nothing to stop until it is allowed.
  const waiting = view.locator('details.tool[data-call-id="call-lines"]');
  await waiting.locator('pre.tool-live').waitFor();
  expect(!(await waiting.locator('.tool-stop').isVisible()), 'no Stop while the command waits for its approval');
  await shot('run-approval');
  await card.getByRole('button', { name: 'Allow once', exact: true }).click();

  // The output shows under the tool row as it comes, while the command still runs.
  const lines = view.locator('details.tool[data-call-id="call-lines"]');
  const live = lines.locator('pre.tool-live');
  await live.filter({ hasText: 'line1' }).waitFor({ timeout: 20_000 });
  const partial = await live.textContent();
  expect(!partial.includes('line5'), `only part of the output so far (${JSON.stringify(partial)})`);
  expect(await lines.locator('summary .tool-stop').isVisible(), 'a Stop button on the running row');
  expect((await lines.locator('summary .tool-target').textContent()) === SLOW_LINES, 'the row names the command');
  await live.filter({ hasText: 'line3' }).waitFor({ timeout: 10_000 });
  await shot('run-live');
  await view.locator('details.tool.status-ok[data-call-id="call-lines"]').waitFor({ timeout: 20_000 });
  const done = await lines.locator('pre.tool-output').textContent();
  expect(done.startsWith('exit code 0') && done.includes('line5'), `the whole output after it ended (${JSON.stringify(done)})`);
  expect((await lines.locator('.tool-stop').count()) === 0, 'no Stop once it ended');
  expect(await lines.evaluate((element) => element.open), 'the row stays open after it ended');

  // The long one: stopped by its row's button; the task goes on.
  const second = view.locator('.question', { hasText: 'seri wants to run a command' });
  await second.locator('pre.question-line', { hasText: 'sleep 60' }).waitFor({ timeout: 20_000 });
  // "Allow `echo begun`, `sleep 60`, `echo never` for this session" wraps inside the card.
  const overflow = await second.evaluate((card) => {
    const edge = card.getBoundingClientRect().right;
    return [...card.querySelectorAll('button')].filter((b) => b.getBoundingClientRect().right > edge + 0.5 || b.scrollWidth > b.clientWidth + 1).map((b) => b.textContent);
  });
  expect(overflow.length === 0, `every choice fits in the card (${overflow.join(' | ')})`);
  await second.getByRole('button', { name: 'Allow once', exact: true }).click();
  const sleeper = view.locator('details.tool[data-call-id="call-sleep"]');
  await sleeper.locator('pre.tool-live', { hasText: 'begun' }).waitFor({ timeout: 20_000 });
  await shot('run-long');
  const started = Date.now();
  await sleeper.locator('summary .tool-stop').click();
  await sleeper.locator('pre.tool-output:not(.tool-live)', { hasText: 'stopped' }).waitFor({ timeout: 15_000 });
  expect(Date.now() - started < 15_000, 'the command stopped at once');
  const stopped = await sleeper.locator('pre.tool-output').textContent();
  expect(stopped.includes('begun') && !stopped.includes('never'), `what it printed before the stop (${JSON.stringify(stopped)})`);
  expect(await sleeper.evaluate((element) => element.open), 'the stopped row stays open');
  // Stopped by the user: the user's choice, drawn neutral, not a red "failed".
  await sleeper.locator('summary .tool-denied', { hasText: 'stopped' }).waitFor();
  expect((await sleeper.getAttribute('class')).includes('status-stopped'), 'the row is marked stopped');
  expect((await sleeper.locator('.tool-failed').count()) === 0, 'a stopped command is not said to have failed');
  await view.locator('.row.assistant:not(.streaming)', { hasText: 'the second one was stopped' }).waitFor({ timeout: 20_000 });
  await shot('run-stopped');
}

const SCENARIOS = [
  ['a stored session is shown in the chat on open, after hiding and after a reload', 'stored', storedSession],
  ['a long session shows its newest page, and earlier ones when scrolled to the top', 'long', longSession],
  ['a prompt with a tool call streams its reply and shows the tool row', 'tools', promptWithTool],
  ['Rewind... from the palette puts the prompt back in the chat input', 'tools', rewindFromPalette, { continues: true }],
  ['Rewind to here, Insert and Apply on a message, one tab stop per message', 'tools', messageActions],
  ['Compact Context... from the palette shows the recap card and lowers the status bar percentage', 'compact', compactFromPalette],
  ['Resume Session... from the QuickPick shows the other session', 'resume', resumeFromQuickPick],
  ['the model in the chat header opens Select Model..., and the pick is shown with its window', 'resume', selectModel, { continues: true }],
  ['a write is asked in the chat: the card stays, opens a diff, and Allow writes the file', 'ask', writeApproval],
  ['a Deny with a note tells the model why', 'deny', denyWithNote],
  ['a question whose task is stopped leaves the chat', 'deny', questionWithdrawn, { continues: true }],
  ['a command is asked about with its line and folder, streams its output under its row, and Stop ends just it', 'run', runCommandLive],
  ['the working line says what the task waits for, with the retry count', 'status', workingLine],
  ['the selection, a picked file and the buffer are attached to the prompt and shown as chips', 'attach', attachContext],
  ['file names in a reply open the file, and code blocks are highlighted', 'links', linksAndCode],
  ['a reply is drawn the same while it streams and after it ends', 'links', streamingLooksFinal, { continues: true }],
  ['the transcript follows new output, and says so when scrolled up', 'follow', followTranscript],
  ['a prompt sent while a task runs is queued, then sent and answered', 'follow', queueWhileBusy, { continues: true }],
  ['a failed task says why in the chat, with a Retry', 'retry', failedTask],
  ['a reopened chat says how each turn ended: failed, cancelled, cut off', 'endings', turnEndings],
  ['the key bindings focus the chat and clash with no default', 'keys', keyBindings],
  ['a long task asks three times: Allow from the diff, Allow for this session, a memory line', 'questions', longTask],
  ['the server the extension carries installs itself at the first start and answers a prompt', 'bundled', bundledServer],
  ['Fork from Here on a message opens a fork that holds the conversation up to it', 'fork', forkFromMessage],
  ['the context bar is a segment per part, and hovering or clicking it shows the breakdown', 'context', contextBar],
  ['Search Sessions... searches as you type, and picking a hit in an earlier page shows that message', 'search', searchSessions],
  ['Rename Session... shows the new title in the chat header', 'search', renameSession, { continues: true }],
  ['Export Session... to a .json file, then Import Session... opens a new session with the conversation', 'search', exportThenImport, { continues: true }],
  ['Seri: MCP Servers: the workspace’s servers start once allowed in the chat, the pick lists them with their status and restarts the one chosen', 'mcp', mcpServers],
  ["Delete Session... and the picker's delete button ask first, then delete; the open one is replaced by a new session", 'delete', deleteSessions],
];

/**
 * Runs each scenario in a window of its own folder, except one marked `continues`: it goes
 * on in the window the scenario before it left (which must have passed), saving a start.
 * A scenario and the ones that continue it share a folder, so a lane (the folders of
 * `config.scenarioWorkspaces`) never splits them.
 */
export async function runScenarios({ browser, server, config, screenshots, say, closePage }) {
  const results = [];
  // A regular expression, as mocha reads it for the other suites: `deny|queued` runs two.
  const only = process.env.SERI_TEST_GREP ? new RegExp(process.env.SERI_TEST_GREP) : undefined;
  // This run's lane: the scenarios of these folders (tests/test_vscode.py runs three lanes).
  const lane = config.scenarioWorkspaces ? new Set(config.scenarioWorkspaces) : undefined;
  let kept; // the window left open for a scenario that continues it
  for (const [index, [title, workspace, scenario, options]] of SCENARIOS.entries()) {
    const continued = options?.continues === true;
    if (lane && !lane.has(workspace)) {
      continue;
    }
    if (only && !only.test(title) && !(only.test(SCENARIOS[index + 1]?.[0] ?? '') && SCENARIOS[index + 1][3]?.continues)) {
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
