//! Read access to an API graph for the lowering: classes, literal inputs,
//! links, and refusals that name the node, class and input at fault.

use super::Refusal;
use crate::comfyui::link::api_link;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// An API graph (node id -> `{class_type, inputs}`).
pub(super) struct Graph<'a> {
    pub nodes: &'a Map<String, Value>,
}

impl<'a> Graph<'a> {
    /// Steps back through `node`, a node whose outputs 0 and 1 are the
    /// positive and negative prompts on its inputs of those names (read at
    /// output `slot` by input `from`): moves the walk to the prompt's
    /// source; another output is refused, `other` saying what it is.
    pub fn through_prompt_pair(
        &self,
        node: &mut String,
        slot: &mut i64,
        from: &mut (String, String),
        other: &str,
    ) -> Result<(), Refusal> {
        let input = match *slot {
            0 => "positive",
            1 => "negative",
            _ => {
                return Err(self.refuse(
                    &from.0,
                    Some(&from.1),
                    format!("reads output {slot} of node {node}, {other}"),
                    "connect the input to the node's positive or negative output",
                ));
            }
        };
        let here = node.clone();
        *from = (here.clone(), input.to_string());
        (*node, *slot) = self.source(&here, input)?;
        Ok(())
    }

    /// The class of node `id` (empty when it has none).
    pub fn class(&self, id: &str) -> &'a str {
        self.nodes
            .get(id)
            .and_then(|n| n["class_type"].as_str())
            .unwrap_or_default()
    }

    /// Input `name` of node `id`, as written.
    pub(super) fn input(&self, id: &str, name: &str) -> Option<&'a Value> {
        self.nodes.get(id)?.get("inputs")?.get(name)
    }

    /// Refuses input `name` of node `id` reading output `slot` (not 0) of
    /// `node`, a node with one output.
    pub fn first_output(
        &self,
        (id, name): (&str, &str),
        node: &str,
        slot: i64,
    ) -> Result<(), Refusal> {
        if slot == 0 {
            return Ok(());
        }
        Err(self.refuse(
            id,
            Some(name),
            format!("reads output {slot} of node {node}, which has 1"),
            "reconnect the input in ComfyUI",
        ))
    }

    /// The node and output slot a link input points at.
    pub fn source(&self, id: &str, name: &str) -> Result<(String, i64), Refusal> {
        match self.input(id, name) {
            Some(value @ Value::Array(link)) if link.len() == 2 => {
                let Some((origin, slot)) = api_link(value) else {
                    return Err(self.refuse(
                        id,
                        Some(name),
                        format!("is a link with a malformed node id or slot: {value}"),
                        "reconnect the input in ComfyUI and export again",
                    ));
                };
                if self.nodes.contains_key(&origin) {
                    return Ok((origin, slot as i64));
                }
                Err(self.refuse(
                    id,
                    Some(name),
                    format!("links to node '{origin}', which the graph does not contain"),
                    "reconnect the input",
                ))
            }
            _ => Err(self.refuse(
                id,
                Some(name),
                "is not connected".into(),
                "connect the input in ComfyUI",
            )),
        }
    }

    fn literal(&self, id: &str, name: &str) -> Result<&'a Value, Refusal> {
        match self.input(id, name) {
            Some(Value::Array(_)) => Err(self.refuse(
                id,
                Some(name),
                "is driven by another node, but it is a run parameter the workflow takes as an input".into(),
                "set the value on the node itself",
            )),
            Some(value) => Ok(value),
            None => Err(self.refuse(id, Some(name), "is missing".into(), "set the value in ComfyUI and export again")),
        }
    }

    /// A numeric literal input.
    pub fn number(&self, id: &str, name: &str) -> Result<f64, Refusal> {
        self.literal(id, name)?
            .as_f64()
            .ok_or_else(|| self.refuse(id, Some(name), "is not a number".into(), "enter a number"))
    }

    /// A whole-number literal input within `range`.
    pub fn whole(
        &self,
        id: &str,
        name: &str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<i64, Refusal> {
        let value = self.number(id, name)?;
        if value.fract() != 0.0 || !(*range.start() as f64..=*range.end() as f64).contains(&value) {
            return Err(self.refuse(
                id,
                Some(name),
                format!("is {value}"),
                &format!(
                    "use a whole number from {} to {}",
                    range.start(),
                    range.end()
                ),
            ));
        }
        Ok(value as i64)
    }

    /// A seed: a whole number from 0 to 2^64 - 1, as ComfyUI's seed widgets
    /// allow. The workflow's seeds are int64: seeds from 2^63 up are kept as
    /// the int64 with the same 64 bits (`seed - 2^64`), which the noise
    /// generator reads back as the same unsigned number.
    pub fn seed(&self, id: &str, name: &str) -> Result<i64, Refusal> {
        let value = self.literal(id, name)?;
        value.as_u64().map(|s| s as i64).ok_or_else(|| {
            self.refuse(
                id,
                Some(name),
                format!("is {value}, not a whole number from 0 to 2^64 - 1"),
                "enter a non-negative whole seed",
            )
        })
    }

    /// A numeric literal input within `range` (refused as "is {value}",
    /// the remedy naming the range with `what` the value is).
    pub fn number_in(
        &self,
        id: &str,
        name: &str,
        range: std::ops::RangeInclusive<f64>,
        what: &str,
    ) -> Result<f64, Refusal> {
        let value = self.number(id, name)?;
        if !range.contains(&value) {
            return Err(self.refuse(
                id,
                Some(name),
                format!("is {value}"),
                &format!("use a {what} from {} to {}", range.start(), range.end()),
            ));
        }
        Ok(value)
    }

    /// A true/false literal input, if node `id` carries one.
    pub fn flag(&self, id: &str, name: &str) -> Option<bool> {
        self.input(id, name).and_then(Value::as_bool)
    }

    /// A true/false literal input (refused as "is not true or false").
    pub fn boolean(&self, id: &str, name: &str) -> Result<bool, Refusal> {
        self.flag(id, name).ok_or_else(|| {
            self.refuse(
                id,
                Some(name),
                "is not true or false".into(),
                &format!("set {name} to true or false"),
            )
        })
    }

    /// Whether node `id` carries input `name` at all.
    pub fn has(&self, id: &str, name: &str) -> bool {
        self.input(id, name).is_some()
    }

    /// Whether input `name` of node `id` is a link to another node.
    pub fn is_link(&self, id: &str, name: &str) -> bool {
        matches!(self.input(id, name), Some(Value::Array(_)))
    }

    /// A text literal input.
    pub fn text(&self, id: &str, name: &str) -> Result<&'a str, Refusal> {
        self.literal(id, name)?
            .as_str()
            .ok_or_else(|| self.refuse(id, Some(name), "is not text".into(), "enter text"))
    }

    /// A refusal pointing at node `id` (and `input`).
    pub fn refuse(&self, id: &str, input: Option<&str>, message: String, remedy: &str) -> Refusal {
        Refusal {
            node: id.to_string(),
            class: self.class(id).to_string(),
            input: input.map(str::to_string),
            message,
            remedy: remedy.to_string(),
        }
    }

    /// `id` must be of one of `classes`, as the `role` feeding input
    /// `from.1` of node `from.0`.
    pub fn expect(
        &self,
        id: &str,
        classes: &[&str],
        role: &str,
        from: (&str, &str),
    ) -> Result<(), Refusal> {
        if classes.contains(&self.class(id)) {
            return Ok(());
        }
        Err(Refusal {
            node: id.to_string(),
            class: self.class(id).to_string(),
            input: None,
            message: format!(
                "feeds `{}` of node {from_id} as its {role}, which the importer supports only from {}",
                from.1,
                either(classes),
                from_id = from.0
            ),
            remedy: "replace the node with a supported one, or remove it".into(),
        })
    }

    /// Adds `id` and every node it depends on to `seen` (a worklist, so
    /// long chains cannot exhaust the stack).
    pub fn ancestors(&self, id: &str, seen: &mut BTreeSet<String>) {
        let mut pending = vec![id.to_string()];
        while let Some(id) = pending.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let inputs = self.nodes.get(&id).and_then(|n| n["inputs"].as_object());
            for value in inputs.into_iter().flatten().map(|(_, v)| v) {
                if let Some((origin, _)) = api_link(value)
                    && self.nodes.contains_key(&origin)
                {
                    pending.push(origin);
                }
            }
        }
    }
}

/// `a`, `a or b`, `a, b or c`: the classes or values a refusal accepts.
pub(super) fn either(classes: &[&str]) -> String {
    match classes {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
