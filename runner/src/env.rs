//! The values of a run, by slot. Every SSA name gets a number the first
//! time a run meets it, kept for the package's later runs, so the steps
//! that run on every call (an invoke's inputs and outputs) find their
//! values by index instead of hashing names.

use crate::fastmap::FastMap;
use crate::ortcall::Held;
use std::rc::Rc;

/// SSA name -> slot, for one loaded package.
#[derive(Debug, Default)]
pub(crate) struct Names(FastMap<String, u32>);

impl Names {
    /// The slot of `name`, numbering it when new.
    pub(crate) fn slot(&mut self, name: &str) -> u32 {
        if let Some(slot) = self.0.get(name) {
            return *slot;
        }
        let slot = u32::try_from(self.0.len()).unwrap_or(u32::MAX);
        self.0.insert(name.to_string(), slot);
        slot
    }

    /// How many names have a slot.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The slot of `name`, if it has one.
    pub(crate) fn find(&self, name: &str) -> Option<u32> {
        self.0.get(name).copied()
    }
}

/// The values bound so far in a run, by slot. The room is kept from run to
/// run; the values are not (a run empties it when it ends, however it ends).
#[derive(Clone, Default)]
pub(crate) struct Env(Vec<Option<Rc<Held>>>);

// SAFETY: between runs the environment holds no values (see `Exec`'s drop),
// so moving it with its runner to another thread moves no reference count;
// during a run it stays on the run's thread, borrowed by the run.
unsafe impl Send for Env {}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Env({} slots)", self.0.len())
    }
}

impl Env {
    /// Makes room for `slots` values in an empty environment.
    pub(crate) fn reset(&mut self, slots: usize) -> &mut Self {
        self.clear();
        if self.0.len() < slots {
            self.0.resize(slots, None);
        }
        self
    }

    /// Drops every value.
    pub(crate) fn clear(&mut self) {
        self.0.iter_mut().for_each(|value| *value = None);
    }

    /// The value in `slot`.
    pub(crate) fn get(&self, slot: u32) -> Option<&Rc<Held>> {
        self.0.get(slot as usize).and_then(Option::as_ref)
    }

    /// Binds `slot` to `held`; returns the value it replaces.
    pub(crate) fn set(&mut self, slot: u32, held: Rc<Held>) -> Option<Rc<Held>> {
        let at = slot as usize;
        if at >= self.0.len() {
            self.0.resize(at + 1, None);
        }
        self.0[at].replace(held)
    }

    /// Unbinds `slot`; returns its value.
    pub(crate) fn take(&mut self, slot: u32) -> Option<Rc<Held>> {
        self.0.get_mut(slot as usize).and_then(Option::take)
    }

    /// Unbinds every slot; returns the values with their slots.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (u32, Rc<Held>)> + '_ {
        (0u32..)
            .zip(self.0.iter_mut())
            .filter_map(|(slot, value)| Some((slot, value.take()?)))
    }
}
