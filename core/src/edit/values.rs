//! SSA value names across a workflow: every slot that defines or reads a
//! value (for renames), the contract each value carries (for connection
//! checks) and fresh names for new values.

use std::collections::{HashMap, HashSet};
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::state::{Recurrence, StateUpdate};
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::types::workflow::WorkflowSpec;

/// Calls `visit` on every string slot of `wf` that names an SSA value, as a
/// definition or a read: input names and presence values, invoke bindings,
/// loop controls, carries and iteration values, branch predicates and phis,
/// emit operands, state initializers and recurrence bounds, scatter
/// capacities and serving controls. Map keys that define values (inputs,
/// phi outputs) are rewritten by [`rename_value`] separately.
fn for_each_value_slot(wf: &mut WorkflowSpec, visit: &mut dyn FnMut(&mut String)) {
    if let Some(inputs) = &mut wf.inputs {
        for input in inputs.values_mut() {
            if let Some(presence) = &mut input.present_as {
                visit(presence);
            }
        }
    }
    if let Some(cells) = &mut wf.state {
        for cell in cells.values_mut() {
            visit(&mut cell.initializer);
            match &mut cell.recurrence {
                Recurrence::Invariant => {}
                Recurrence::Growing(g) => {
                    visit(&mut g.increment);
                    visit(&mut g.max);
                }
                Recurrence::Bounded(b) => visit(&mut b.max),
            }
        }
    }
    if let Some(serving) = &mut wf.serving {
        visit(&mut serving.active);
        visit(&mut serving.done);
        if let Some(accepted) = &mut serving.accepted_len {
            visit(accepted);
        }
        for group in serving
            .state_service
            .groups
            .iter_mut()
            .flat_map(|g| g.values_mut())
        {
            if let Some(StateUpdate::IndexedScatter(scatter)) = &mut group.update {
                visit(&mut scatter.capacity);
            }
        }
    }
    for step in &mut wf.steps {
        step_slots(step, visit);
    }
}

fn step_slots(step: &mut Step, visit: &mut dyn FnMut(&mut String)) {
    match step {
        Step::Sequence(seq) => seq.steps.iter_mut().for_each(|s| step_slots(s, visit)),
        Step::Invoke(invoke) => {
            for map in [&mut invoke.inputs, &mut invoke.outputs]
                .into_iter()
                .flatten()
            {
                map.values_mut().for_each(&mut *visit);
            }
        }
        Step::Loop(lp) => {
            visit(&mut lp.continue_when);
            visit(&mut lp.max_iterations);
            if let Some(iteration) = &mut lp.iteration {
                visit(&mut iteration.value);
            }
            for carry in lp.carried.iter_mut().flatten() {
                visit(&mut carry.next);
                if let Some(initial) = &mut carry.initial {
                    visit(initial);
                }
            }
            for s in lp.setup.iter_mut().flatten().chain(lp.steps.iter_mut()) {
                step_slots(s, visit);
            }
        }
        Step::Branch(branch) => {
            visit(&mut branch.predicate);
            for phi in branch.outputs.iter_mut().flat_map(|o| o.values_mut()) {
                phi.cases.values_mut().for_each(&mut *visit);
                if let Some(default) = &mut phi.default {
                    visit(default);
                }
            }
            for case in branch.cases.values_mut() {
                step_slots(case, visit);
            }
            if let Some(default) = &mut branch.default {
                step_slots(default, visit);
            }
        }
        Step::Emit(emit) => {
            visit(&mut emit.value);
            for operand in [&mut emit.valid_length, &mut emit.when]
                .into_iter()
                .flatten()
            {
                visit(operand);
            }
        }
    }
}

/// Renames `map`'s key `from` to `to` in place, keeping its position.
fn rename_key<V>(map: &mut indexmap::IndexMap<String, V>, from: &str, to: &str) {
    if let Some(index) = map.get_index_of(from) {
        let (_, value) = map.shift_remove_index(index).expect("index exists");
        map.shift_insert(index, to.to_string(), value);
    }
}

fn rename_phi_keys(step: &mut Step, from: &str, to: &str) {
    match step {
        Step::Sequence(seq) => seq
            .steps
            .iter_mut()
            .for_each(|s| rename_phi_keys(s, from, to)),
        Step::Loop(lp) => {
            for s in lp.setup.iter_mut().flatten().chain(lp.steps.iter_mut()) {
                rename_phi_keys(s, from, to);
            }
        }
        Step::Branch(branch) => {
            if let Some(outputs) = &mut branch.outputs {
                rename_key(outputs, from, to);
            }
            branch
                .cases
                .values_mut()
                .for_each(|s| rename_phi_keys(s, from, to));
            if let Some(default) = &mut branch.default {
                rename_phi_keys(default, from, to);
            }
        }
        Step::Invoke(_) | Step::Emit(_) => {}
    }
}

/// Every value name used anywhere in `wf` (definitions and reads).
pub fn value_names(wf: &WorkflowSpec) -> HashSet<String> {
    let mut wf = wf.clone();
    let mut names: HashSet<String> = wf.inputs.iter().flat_map(|i| i.keys().cloned()).collect();
    names.extend(wf.state.iter().flat_map(|s| s.keys().cloned()));
    for_each_value_slot(&mut wf, &mut |slot| {
        names.insert(slot.clone());
    });
    names
}

/// Renames the SSA value `from` to `to` at its definition and every read.
/// Returns how many slots changed (0: the value is not used).
pub fn rename_value(wf: &mut WorkflowSpec, from: &str, to: &str) -> usize {
    let mut changed = 0;
    if let Some(inputs) = &mut wf.inputs
        && inputs.contains_key(from)
    {
        rename_key(inputs, from, to);
        changed += 1;
    }
    for_each_value_slot(wf, &mut |slot| {
        if slot == from {
            *slot = to.to_string();
            changed += 1;
        }
    });
    for step in &mut wf.steps {
        rename_phi_keys(step, from, to);
    }
    changed
}

/// The contract of every value whose type the document states: inputs,
/// state cells (carried names), invoke outputs (from the component's port
/// contracts) and loop iteration values.
pub fn value_contracts(wf: &WorkflowSpec) -> HashMap<String, TensorContract> {
    let mut contracts: HashMap<String, TensorContract> = HashMap::new();
    for (name, input) in wf.inputs.iter().flatten() {
        contracts.insert(name.clone(), input.contract.clone());
    }
    for (name, cell) in wf.state.iter().flatten() {
        contracts.insert(name.clone(), cell.contract.clone());
    }
    fn walk(wf: &WorkflowSpec, step: &Step, out: &mut HashMap<String, TensorContract>) {
        match step {
            Step::Sequence(seq) => seq.steps.iter().for_each(|s| walk(wf, s, out)),
            Step::Invoke(invoke) => {
                let ports = wf
                    .components
                    .get(&invoke.component)
                    .and_then(|c| c.ports.as_ref())
                    .and_then(|p| p.outputs.as_ref());
                for (port, value) in invoke.outputs.iter().flatten() {
                    if let Some(contract) = ports.and_then(|p| p.get(port)) {
                        out.insert(value.clone(), contract.clone());
                    }
                }
            }
            Step::Loop(lp) => {
                if let Some(iteration) = &lp.iteration {
                    out.insert(iteration.value.clone(), iteration.contract.clone());
                }
                for s in lp.setup.iter().flatten().chain(lp.steps.iter()) {
                    walk(wf, s, out);
                }
            }
            Step::Branch(branch) => {
                branch.cases.values().for_each(|s| walk(wf, s, out));
                if let Some(default) = &branch.default {
                    walk(wf, default, out);
                }
            }
            Step::Emit(_) => {}
        }
    }
    for step in &wf.steps {
        walk(wf, step, &mut contracts);
    }
    contracts
}

/// `base`, or `base_2`, `base_3`, ... : the first name not in `taken`.
pub fn fresh_name(base: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|name| !taken.contains(name))
        .expect("an unused name exists")
}
