// Identifiers that other parts (and the tests) refer to. Palette command ids start with
// `seri-vscode.`: the language client registers every `seri.*` command the server lists
// (`seri.compact`, `seri.clear`, later `seri.rewind`...), and registering one of those
// ids a second time would fail activation with "command already exists".

export const EXTENSION_ID = 'seri.seri-vscode';

export const Commands = {
  openChat: 'seri-vscode.openChat',
  newSession: 'seri-vscode.newSession',
  continueSession: 'seri-vscode.continueSession',
  resumeSession: 'seri-vscode.resumeSession',
  searchSessions: 'seri-vscode.searchSessions',
  renameSession: 'seri-vscode.renameSession',
  deleteSession: 'seri-vscode.deleteSession',
  exportSession: 'seri-vscode.exportSession',
  importSession: 'seri-vscode.importSession',
  forkSession: 'seri-vscode.forkSession',
  forkFromHere: 'seri-vscode.forkFromHere',
  compact: 'seri-vscode.compact',
  clear: 'seri-vscode.clear',
  setMaxTurns: 'seri-vscode.setMaxTurns',
  selectModel: 'seri-vscode.selectModel',
  mcpServers: 'seri-vscode.mcpServers',
  rewind: 'seri-vscode.rewind',
  toggleTrajectory: 'seri-vscode.toggleTrajectory',
  stop: 'seri-vscode.stop',
  setApiKey: 'seri-vscode.setApiKey',
  restartServer: 'seri-vscode.restartServer',
  showLog: 'seri-vscode.showLog',
  sendSelection: 'seri-vscode.sendSelection',
  allowProposal: 'seri-vscode.allowProposal',
  denyProposal: 'seri-vscode.denyProposal',
} as const;

/** The context key that is true while a task runs (the Stop key binding's `when`). */
export const RUNNING_CONTEXT = 'seri-vscode.running';

export const CHAT_VIEW_ID = 'seri-vscode.chat';
/** The command that reveals the chat view (VS Code makes one per view). */
export const FOCUS_CHAT = `${CHAT_VIEW_ID}.focus`;
export const STATUS_ITEM_ID = 'seri-vscode.context';
