//! Structural edits from the studio: the component palette, Add items, delete, copy and paste.

use crate::palette::{self};
use crate::studio::Studio;
use serde_json::Value;
use wfstudio_core::edit::templates::{self, NewItem};
use wfstudio_core::edit::{Command, top_level_steps, tree, values};
use wfstudio_schema::DocPath;
use wfstudio_schema::path::Segment;

impl Studio {
    pub(crate) fn palette(&mut self, ctx: &egui::Context) {
        if !self.palette.open {
            return;
        }
        let Some(wf) = self
            .doc
            .as_ref()
            .and_then(|d| d.history.document().pipeline.as_ref())
            .map(|p| p.workflow.clone())
        else {
            return;
        };
        if let Some(component) = palette::show(ctx, &wf, &mut self.palette) {
            let (list, index) = self.insertion_point();
            if self.apply(&Command::AddInvoke {
                list: list.clone(),
                index,
                component,
            }) {
                self.select_inserted(&list, index);
            }
        }
    }

    /// Adds a new input, output, cell, component or step from its template
    /// and selects it.
    pub fn add_item(&mut self, item: NewItem) {
        let Some(wf) = self
            .doc
            .as_ref()
            .and_then(|d| d.history.document().pipeline.as_ref())
        else {
            return;
        };
        let at = self.insertion_point();
        let (command, path) = templates::add(&wf.workflow, item, Some(at));
        if self.apply(&command) {
            self.selection = vec![path];
        }
    }

    /// Selects the step just inserted into `list` at `index` (clamped).
    pub(crate) fn select_inserted(&mut self, list: &DocPath, index: usize) {
        let Some(doc) = &self.doc else { return };
        let root = tree::to_value(doc.history.document());
        let len = tree::get(&root, list)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if len > 0 {
            self.selection = vec![list.index(index.min(len - 1))];
        }
    }

    /// Where new steps go: after the last selected step, else at the end of
    /// the top-level steps.
    pub(crate) fn insertion_point(&self) -> (DocPath, usize) {
        for path in self.selection.iter().rev() {
            if let Some(Segment::Index(i)) = path.segments().last()
                && path
                    .parent()
                    .last_key()
                    .is_some_and(|k| k == "steps" || k == "setup")
            {
                return (path.parent(), i + 1);
            }
        }
        (top_level_steps(), usize::MAX)
    }

    /// Deletes every selected item as one undo step (later items first, so
    /// earlier indices stay valid).
    pub fn delete_selection(&mut self) {
        let mut paths = self.selection.clone();
        paths.sort_by_key(|p| std::cmp::Reverse(sort_key(p)));
        if paths.is_empty() {
            return;
        }
        let commands = paths
            .into_iter()
            .map(|path| Command::Remove { path })
            .collect();
        if self.apply(&Command::Batch {
            label: "Delete selection".into(),
            commands,
        }) {
            self.selection.clear();
        }
    }

    /// Copies the selected steps (as YAML to the system clipboard too).
    pub fn copy(&mut self, ctx: &egui::Context) {
        let Some(doc) = &self.doc else { return };
        let root = tree::to_value(doc.history.document());
        self.clipboard = self
            .selection
            .iter()
            .filter(|p| p.to_string().contains(".steps["))
            .filter_map(|p| tree::get(&root, p).cloned())
            .collect();
        if !self.clipboard.is_empty() {
            ctx.copy_text(wfstudio_schema::emit::to_yaml(&Value::Array(
                self.clipboard.clone(),
            )));
            self.say(format!("Copied {} steps", self.clipboard.len()), false);
        }
    }

    /// Pastes copied steps after the selection; invoke outputs get fresh
    /// value names so single assignment holds.
    pub fn paste(&mut self) {
        let Some(doc) = &self.doc else { return };
        let Some(wf) = doc
            .history
            .document()
            .pipeline
            .as_ref()
            .map(|p| &p.workflow)
        else {
            return;
        };
        if self.clipboard.is_empty() {
            return;
        }
        let mut taken = values::value_names(wf);
        let (list, mut index) = self.insertion_point();
        let mut commands = Vec::new();
        for step in &self.clipboard {
            let mut step = step.clone();
            if let Some(outputs) = step.get_mut("outputs").and_then(Value::as_object_mut) {
                for value in outputs.values_mut() {
                    if let Some(name) = value.as_str() {
                        let fresh = values::fresh_name(name, &taken);
                        taken.insert(fresh.clone());
                        *value = Value::String(fresh);
                    }
                }
            }
            commands.push(Command::Insert {
                list: list.clone(),
                index,
                value: step,
            });
            index = index.saturating_add(1);
        }
        self.apply(&Command::Batch {
            label: format!("Paste {} steps", commands.len()),
            commands,
        });
    }
}

/// A comparable key for a document path (indices numerically).
fn sort_key(path: &DocPath) -> Vec<(usize, String)> {
    path.segments()
        .into_iter()
        .map(|s| match s {
            Segment::Index(i) => (i, String::new()),
            Segment::Key(k) => (0, k),
        })
        .collect()
}
