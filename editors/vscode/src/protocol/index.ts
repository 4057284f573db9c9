// The seri-lsp wire contract as this extension uses it (docs/protocol.md, SPEC section 7).
// Shared by the extension and the webview bundle: types and constants only.
// One module per part of the contract; this one gathers them.

export * from './approvals';
export * from './code';
export * from './context';
export * from './mcp';
export * from './messages';
export * from './methods';
export * from './notifications';
export * from './rewind';
export * from './sessions';
export * from './slashCommands';
export * from './trajectory';
