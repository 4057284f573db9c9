// The server's edits (`workspace/applyEdit`) to files the user does not have open.
//
// seri changes a file through the editor so that an open editor's text, dirty state and
// undo stay right. VS Code applies an edit to a file not shown in any tab by loading it
// in the background, where it stays modified and unsaved: the server then takes that
// hidden text for the file (later edits and rewinds go to it, not to the disk), and
// saving the file later meets a conflict with what the server wrote. So, after applying
// an edit, each document that held no unsaved changes and is shown in no tab is saved:
// the disk holds what seri wrote, as it does for files the editor never opened.
//
// Documents the user has open stay unsaved, until the server asks for them before running
// the checks (`seri/saveDocuments`, below): the checks read the disk.

import * as vscode from 'vscode';

import { PROPOSAL_SCHEME } from './chat/proposals';
import { SaveDocumentsParams, SaveDocumentsResult, saveDocuments } from './saveDocuments';
import {
  ApplyWorkspaceEditParams,
  ApplyWorkspaceEditRequest,
  ApplyWorkspaceEditResult,
  CancellationToken,
  ResponseError,
} from 'vscode-languageclient/node';

/** The documents an edit changes, as URI strings in VS Code's form. */
export function editedUris(params: ApplyWorkspaceEditParams): string[] {
  const uris = new Set<string>();
  for (const uri of Object.keys(params.edit.changes ?? {})) {
    uris.add(vscode.Uri.parse(uri).toString());
  }
  for (const change of params.edit.documentChanges ?? []) {
    if ('textDocument' in change) {
      uris.add(vscode.Uri.parse(change.textDocument.uri).toString());
    }
  }
  return [...uris];
}

/**
 * URIs of the text documents shown in a tab (a diff's sides included, except the review
 * of a seri proposal: it closes once answered, and nobody edits the file there).
 */
function shownInTabs(): Set<string> {
  const shown = new Set<string>();
  for (const tab of vscode.window.tabGroups.all.flatMap((group) => group.tabs)) {
    if (tab.input instanceof vscode.TabInputText) {
      shown.add(tab.input.uri.toString());
    } else if (tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme !== PROPOSAL_SCHEME) {
      shown.add(tab.input.original.toString());
      shown.add(tab.input.modified.toString());
    }
  }
  return shown;
}

/** `middleware.workspace.handleApplyEdit`: apply, then save what nobody was editing. */
export async function applyEdit(
  params: ApplyWorkspaceEditParams,
  next: ApplyWorkspaceEditRequest.HandlerSignature,
): Promise<ApplyWorkspaceEditResult> {
  const shown = shownInTabs();
  const dirty = new Set(vscode.workspace.textDocuments.filter((d) => d.isDirty).map((d) => d.uri.toString()));
  const quiet = editedUris(params).filter((uri) => !shown.has(uri) && !dirty.has(uri));
  const result = await next(params, CancellationToken.None);
  if (result instanceof ResponseError) {
    throw result;
  }
  if (result.applied) {
    for (const document of vscode.workspace.textDocuments) {
      if (document.isDirty && quiet.includes(document.uri.toString())) {
        await document.save();
      }
    }
  }
  return result;
}

/** `seri/saveDocuments`: save the open documents among the uris that hold unsaved edits. */
export function saveEditedDocuments(params: SaveDocumentsParams): Promise<SaveDocumentsResult> {
  const open = new Map(vscode.workspace.textDocuments.map((document) => [document.uri.toString(), document]));
  return saveDocuments(params, (uri) => open.get(vscode.Uri.parse(uri).toString()));
}
