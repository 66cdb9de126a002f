//! Unlimited undo/redo of whole-document states, with a saved marker.

use super::{Command, EditError, apply};
use wfstudio_schema::types::document::Document;

/// A document state and the edit that led away from it.
#[derive(Clone, Debug)]
struct Entry {
    document: Document,
    label: String,
    id: u64,
}

/// The edit history of one open document. Each state has an id, so "is it
/// saved" survives undoing back to the saved state.
#[derive(Clone, Debug)]
pub struct History {
    current: Document,
    current_id: u64,
    next_id: u64,
    saved_id: Option<u64>,
    undo: Vec<Entry>,
    redo: Vec<Entry>,
}

impl History {
    /// A history whose only state is `document`, marked as saved.
    pub fn new(document: Document) -> Self {
        History {
            current: document,
            current_id: 0,
            next_id: 1,
            saved_id: Some(0),
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }

    /// The current document.
    pub fn document(&self) -> &Document {
        &self.current
    }

    /// Identifies the current state (changes on every edit, undo and redo).
    pub fn revision(&self) -> u64 {
        self.current_id
    }

    /// Applies `command`; on refusal nothing changes.
    pub fn apply(&mut self, command: &Command) -> Result<(), EditError> {
        let edited = apply(&self.current, command)?;
        self.replace(edited, command.label());
        Ok(())
    }

    /// Makes `document` the current state as one undoable step (used when
    /// the YAML text is edited directly). An identical document is no step.
    pub fn replace(&mut self, document: Document, label: String) {
        if document == self.current {
            return;
        }
        let previous = std::mem::replace(&mut self.current, document);
        self.undo.push(Entry {
            document: previous,
            label,
            id: self.current_id,
        });
        self.current_id = self.next_id;
        self.next_id += 1;
        self.redo.clear();
    }

    /// Steps back; returns the label of the undone edit.
    pub fn undo(&mut self) -> Option<String> {
        let entry = self.undo.pop()?;
        let (label, entry) = self.switch_to(entry);
        self.redo.push(entry);
        Some(label)
    }

    /// Steps forward again; returns the label of the redone edit.
    pub fn redo(&mut self) -> Option<String> {
        let entry = self.redo.pop()?;
        let (label, entry) = self.switch_to(entry);
        self.undo.push(entry);
        Some(label)
    }

    /// Makes `entry`'s state current; returns its label and the entry that
    /// now holds the state left behind (for the opposite stack).
    fn switch_to(&mut self, entry: Entry) -> (String, Entry) {
        let document = std::mem::replace(&mut self.current, entry.document);
        let left = Entry {
            document,
            label: entry.label.clone(),
            id: self.current_id,
        };
        self.current_id = entry.id;
        (entry.label, left)
    }

    /// The label of what [`undo`](Self::undo) would undo.
    pub fn undo_label(&self) -> Option<&str> {
        self.undo.last().map(|e| e.label.as_str())
    }

    /// The label of what [`redo`](Self::redo) would redo.
    pub fn redo_label(&self) -> Option<&str> {
        self.redo.last().map(|e| e.label.as_str())
    }

    /// Records that the current state is what is on disk.
    pub fn mark_saved(&mut self) {
        self.saved_id = Some(self.current_id);
    }

    /// Records that nothing on disk holds the current state (a document
    /// made in memory, such as a ComfyUI import).
    pub fn mark_unsaved(&mut self) {
        self.saved_id = None;
    }

    /// Whether the current state differs from the saved one.
    pub fn is_dirty(&self) -> bool {
        self.saved_id != Some(self.current_id)
    }
}
