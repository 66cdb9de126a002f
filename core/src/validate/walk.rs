//! The node walk: SSA definitions and scopes, invoke ports, loops, branches
//! and emits (rules V-N*, presence-guarded reads V-W17), plus the lowering
//! pre-check (V-W00a/b).

use super::{Ctx, workflow_path};
use crate::contracts::{
    PRESENCE_CONTRACT, bool_control, compatible, has_request_axis, integer_control, integer_scalar,
    is_singleton, predicate, state_compatible,
};
use std::collections::HashMap;
use wfstudio_schema::DocPath;
use wfstudio_schema::path::Segment;
use wfstudio_schema::types::contract::{Dim, TensorContract};
use wfstudio_schema::types::state::{Recurrence, StateScope};
use wfstudio_schema::types::steps::{BranchStep, EmitStep, InvokeStep, LoopStep, Step};
use wfstudio_schema::types::workflow::{Component, Implementation, WorkflowSpec};

/// Calls `visit` for every step of `steps` (recursively) with its document path.
pub fn for_each_step<'d>(
    steps: &'d [Step],
    path: &DocPath,
    visit: &mut dyn FnMut(&'d Step, &DocPath),
) {
    let mut here = path.clone();
    visit_steps(steps, &mut here, visit);
}

fn visit_steps<'d>(
    steps: &'d [Step],
    path: &mut DocPath,
    visit: &mut dyn FnMut(&'d Step, &DocPath),
) {
    for (i, step) in steps.iter().enumerate() {
        path.push(Segment::Index(i));
        visit_one(step, path, visit);
        path.pop();
    }
}

fn visit_one<'d>(step: &'d Step, path: &mut DocPath, visit: &mut dyn FnMut(&'d Step, &DocPath)) {
    visit(step, path);
    let mut nested = |path: &mut DocPath, key: &str, steps: &'d [Step]| {
        path.push(Segment::Key(key.to_string()));
        visit_steps(steps, path, visit);
        path.pop();
    };
    match step {
        Step::Sequence(s) => nested(path, "steps", &s.steps),
        Step::Loop(l) => {
            if let Some(setup) = &l.setup {
                nested(path, "setup", setup);
            }
            nested(path, "steps", &l.steps);
        }
        Step::Branch(b) => {
            path.push(Segment::Key("cases".into()));
            for (key, case) in &b.cases {
                path.push(Segment::Key(key.clone()));
                visit_one(case, path, visit);
                path.pop();
            }
            path.pop();
            if let Some(default) = &b.default {
                path.push(Segment::Key("default".into()));
                visit_one(default, path, visit);
                path.pop();
            }
        }
        Step::Invoke(_) | Step::Emit(_) => {}
    }
}

/// V-W00a/b: every invoke names a declared component and every carry a
/// declared cell. When lowering fails no other workflow rule runs.
pub(crate) fn lowering_succeeds(ctx: &mut Ctx<'_>, wf: &WorkflowSpec) -> bool {
    let mut ok = true;
    let state = wf.state.as_ref();
    for_each_step(
        &wf.steps,
        &workflow_path().key("steps"),
        &mut |step, path| match step {
            Step::Invoke(i) if !wf.components.contains_key(&i.component) => {
                ok = false;
                ctx.report(
                    "V-W00a",
                    path.key("component"),
                    format!(
                        "pipeline.workflow lowering failed: workflow invoke references unknown component '{}'",
                        i.component
                    ),
                );
            }
            Step::Loop(l) => {
                for (k, carry) in l.carried.iter().flatten().enumerate() {
                    if !state.is_some_and(|s| s.contains_key(&carry.cell)) {
                        ok = false;
                        ctx.report(
                            "V-W00b",
                            path.key("carried").index(k).key("cell"),
                            format!(
                                "pipeline.workflow lowering failed: loop carries unknown state cell '{}'",
                                carry.cell
                            ),
                        );
                    }
                }
            }
            _ => {}
        },
    );
    ok
}

/// A visible SSA value.
#[derive(Clone, Copy)]
struct Value<'d> {
    contract: Option<&'d TensorContract>,
}

/// One emit seen by the walk, for the checks that need all of them.
pub(crate) struct EmitRecord<'d> {
    /// Document path of the emit step.
    pub path: DocPath,
    /// The step.
    pub step: &'d EmitStep,
    /// Contract of the emitted value, when known.
    pub value: Option<&'d TensorContract>,
}

/// What the walk learned.
pub(crate) struct Walked<'d> {
    /// Every emit, in document order.
    pub emits: Vec<EmitRecord<'d>>,
    /// Values visible at the top level after the whole walk.
    pub top_level: HashMap<&'d str, Option<&'d TensorContract>>,
}

/// Visible values: one map plus, per open scope, the names it defined (so
/// leaving a scope removes exactly those). Names are never shadowed (a
/// redefinition is an error), so one map suffices.
#[derive(Default)]
struct Scopes<'d> {
    visible: FastMap<&'d str, Value<'d>>,
    opened: Vec<Vec<&'d str>>,
}

impl<'d> Scopes<'d> {
    fn get(&self, name: &str) -> Option<Value<'d>> {
        self.visible.get(name).copied()
    }

    fn insert(&mut self, name: &'d str, value: Value<'d>) {
        if self.visible.insert(name, value).is_none()
            && let Some(scope) = self.opened.last_mut()
        {
            scope.push(name);
        }
    }

    fn open(&mut self) {
        self.opened.push(Vec::new());
    }

    fn close(&mut self) {
        for name in self.opened.pop().unwrap_or_default() {
            self.visible.remove(name);
        }
    }
}

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

struct Walker<'d, 'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    wf: &'d WorkflowSpec,
    scopes: Scopes<'d>,
    /// input name -> its presence value name.
    presence_of: HashMap<&'d str, &'d str>,
    /// Presence values whose 'true' case we are inside.
    guards: Vec<&'d str>,
    /// Session cells carried in the current branch case (innermost last).
    session_carries: Vec<Vec<&'d str>>,
    emits: Vec<EmitRecord<'d>>,
}

/// Walks the steps of `wf` in scope order.
pub(crate) fn walk<'d>(ctx: &mut Ctx<'_>, wf: &'d WorkflowSpec) -> Walked<'d> {
    let mut walker = Walker {
        ctx,
        wf,
        scopes: Scopes::default(),
        presence_of: HashMap::new(),
        guards: Vec::new(),
        session_carries: Vec::new(),
        emits: Vec::new(),
    };
    for (name, input) in wf.inputs.iter().flatten() {
        walker.scopes.insert(
            name,
            Value {
                contract: Some(&input.contract),
            },
        );
    }
    for (name, input) in wf.inputs.iter().flatten() {
        if let Some(presence) = input.present_as.as_deref().filter(|p| !p.is_empty()) {
            walker.presence_of.insert(name, presence);
            if walker.scopes.get(presence).is_none() {
                walker.scopes.insert(
                    presence,
                    Value {
                        contract: Some(&PRESENCE_CONTRACT),
                    },
                );
            }
        }
    }
    walker.steps(&wf.steps, &workflow_path().key("steps"), false);
    Walked {
        emits: walker.emits,
        top_level: walker
            .scopes
            .visible
            .into_iter()
            .map(|(k, v)| (k, v.contract))
            .collect(),
    }
}

fn varying_axis(recurrence: &Recurrence) -> Option<u64> {
    recurrence.varying_axis()
}

fn bounded_axis(recurrence: &Recurrence) -> Option<u64> {
    match recurrence {
        Recurrence::Bounded(b) => Some(b.axis),
        _ => None,
    }
}

/// Whether the component's ports are inferred from its ONNX graph.
pub(crate) fn inferred_ports(component: &Component) -> bool {
    matches!(component.implementation, Implementation::Onnx(_))
        && component.ports.as_ref().is_none_or(|p| {
            p.inputs.as_ref().is_none_or(|m| m.is_empty())
                && p.outputs.as_ref().is_none_or(|m| m.is_empty())
        })
}

impl<'d> Walker<'d, '_, '_> {
    fn lookup(&self, name: &str) -> Option<Value<'d>> {
        self.scopes.get(name)
    }

    /// Reads `name` at `path`: it must be visible, and an optional input must
    /// be read under its presence guard. Returns its contract when visible.
    /// The path is built only when a rule fails.
    fn read(
        &mut self,
        name: &'d str,
        path: impl Fn() -> DocPath,
    ) -> Option<Option<&'d TensorContract>> {
        let Some(value) = self.lookup(name) else {
            self.ctx.report(
                "V-N11",
                path(),
                format!("references value '{name}' before definition"),
            );
            return None;
        };
        if let Some(presence) = self.presence_of.get(name).copied()
            && !self.guards.contains(&presence)
        {
            self.ctx.report(
                "V-W17",
                path(),
                format!(
                    "reads optional input '{name}' outside the true case of its present_as predicate '{presence}'"
                ),
            );
        }
        Some(value.contract)
    }

    /// Defines `name` in the current scope; it must not be visible yet.
    fn define(
        &mut self,
        code: &'static str,
        name: &'d str,
        contract: Option<&'d TensorContract>,
        path: DocPath,
    ) {
        if self.lookup(name).is_some() {
            self.ctx
                .report(code, path, format!("redefines SSA value '{name}'"));
            return;
        }
        self.scopes.insert(name, Value { contract });
    }

    fn steps(&mut self, steps: &'d [Step], path: &DocPath, allow_empty: bool) {
        if steps.is_empty() && !allow_empty {
            self.ctx
                .report("V-N01", path.clone(), "must not be empty".to_string());
        }
        for (i, step) in steps.iter().enumerate() {
            self.step(step, &path.index(i));
        }
    }

    fn step(&mut self, step: &'d Step, path: &DocPath) {
        match step {
            Step::Sequence(s) => self.steps(&s.steps, &path.key("steps"), false),
            Step::Invoke(i) => self.invoke(i, path),
            Step::Loop(l) => self.looping(l, path),
            Step::Branch(b) => self.branch(b, path),
            Step::Emit(e) => self.emit(e, path),
        }
    }

    fn invoke(&mut self, invoke: &'d InvokeStep, path: &DocPath) {
        let Some(component) = self.wf.components.get(&invoke.component) else {
            return;
        };
        let inferred = inferred_ports(component);
        let ports = component.ports.as_ref();
        let declared_inputs = ports.and_then(|p| p.inputs.as_ref());
        let declared_outputs = ports.and_then(|p| p.outputs.as_ref());
        let mut symbols: HashMap<&'d str, (u64, &'d str, usize)> = HashMap::new();
        for (port, value) in invoke.inputs.iter().flatten() {
            let here = || path.key("inputs").key(port.as_str());
            let port_contract = declared_inputs.and_then(|m| m.get(port));
            if !inferred && port_contract.is_none() {
                self.ctx.report(
                    "V-N20",
                    here(),
                    format!(
                        "has unknown port '{port}' (component '{}' declares no such input)",
                        invoke.component
                    ),
                );
            }
            let Some(Some(value_contract)) = self.read(value, here) else {
                continue;
            };
            if let Some(port_contract) = port_contract {
                if let Err(reason) = compatible(value_contract, port_contract) {
                    self.ctx
                        .report("V-N21", here(), format!("value '{value}' {reason}"));
                } else {
                    self.unify(port_contract, value_contract, port, &here, &mut symbols);
                }
            }
        }
        if !inferred {
            let bound = |map: &Option<indexmap::IndexMap<String, String>>, name: &str| {
                map.as_ref().is_some_and(|m| m.contains_key(name))
            };
            for (name, contract) in declared_inputs.into_iter().flatten() {
                if !contract.is_optional() && !bound(&invoke.inputs, name) {
                    self.ctx.report(
                        "V-N20",
                        path.key("inputs"),
                        format!("is missing port '{name}'"),
                    );
                }
            }
            for (name, contract) in declared_outputs.into_iter().flatten() {
                if !contract.is_optional() && !bound(&invoke.outputs, name) {
                    self.ctx.report(
                        "V-N20",
                        path.key("outputs"),
                        format!("is missing port '{name}'"),
                    );
                }
            }
        }
        for (port, value) in invoke.outputs.iter().flatten() {
            let here = path.key("outputs").key(port.as_str());
            let port_contract = declared_outputs.and_then(|m| m.get(port));
            if !inferred && port_contract.is_none() {
                self.ctx.report(
                    "V-N20",
                    here.clone(),
                    format!(
                        "has unknown port '{port}' (component '{}' declares no such output)",
                        invoke.component
                    ),
                );
            }
            self.define("V-N10", value, port_contract, here);
        }
    }

    /// V-N22: a symbol shared by several input ports of one invoke must meet
    /// the same fixed extent in every bound value.
    fn unify(
        &mut self,
        port: &'d TensorContract,
        value: &'d TensorContract,
        port_name: &'d str,
        path: &dyn Fn() -> DocPath,
        symbols: &mut HashMap<&'d str, (u64, &'d str, usize)>,
    ) {
        let (Some(port_shape), Some(value_shape)) = (&port.shape, &value.shape) else {
            return;
        };
        for (axis, (p, v)) in port_shape.iter().zip(value_shape).enumerate() {
            if let (Dim::Symbol(symbol), Dim::Fixed(extent)) = (p, v) {
                match symbols.get(symbol.as_str()) {
                    Some((bound, by, by_axis)) if bound != extent => {
                        let message = format!(
                            "binds port symbol '{symbol}' to {extent} (axis {axis} of '{port_name}'), but axis {by_axis} of '{by}' bound it to {bound}"
                        );
                        self.ctx.report("V-N22", path(), message);
                    }
                    Some(_) => {}
                    None => {
                        symbols.insert(symbol, (*extent, port_name, axis));
                    }
                }
            }
        }
    }

    fn looping(&mut self, l: &'d LoopStep, path: &DocPath) {
        if let Some(setup) = &l.setup {
            self.steps(setup, &path.key("setup"), true);
        }
        if let Some(Some(c)) = self.read(&l.max_iterations, || path.key("max_iterations"))
            && let Err(reason) = integer_scalar(c)
        {
            self.ctx.report("V-N30", path.key("max_iterations"), reason);
        }
        let state = self.wf.state.as_ref();
        let carried: Vec<_> = l.carried.iter().flatten().collect();
        for (k, carry) in carried.iter().enumerate() {
            let Some(cell) = state.and_then(|s| s.get(&carry.cell)) else {
                continue;
            };
            let cell_path = workflow_path().key("state").key(carry.cell.as_str());
            let carry_path = path.key("carried").index(k);
            let mut bound_values: Vec<(&'d str, DocPath)> = Vec::new();
            match &cell.recurrence {
                Recurrence::Growing(g) => {
                    let r = cell_path.key("recurrence");
                    bound_values.push((&g.increment, r.key("increment")));
                    bound_values.push((&g.max, r.key("max")));
                }
                Recurrence::Bounded(b) => {
                    bound_values.push((&b.max, cell_path.key("recurrence").key("max")));
                }
                Recurrence::Invariant => {}
            }
            for (name, at) in bound_values {
                if let Some(Some(c)) = self.read(name, || at.clone())
                    && let Err(reason) = integer_scalar(c)
                {
                    self.ctx.report(
                        "V-N32",
                        at,
                        format!("recurrence bound '{name}' of the carry at {carry_path} {reason}"),
                    );
                }
            }
            let exempt = bounded_axis(&cell.recurrence);
            let init_path = cell_path.key("initializer");
            if let Some(Some(c)) = self.read(&cell.initializer, || init_path.clone())
                && let Err(reason) = state_compatible(c, &cell.contract, exempt)
            {
                self.ctx.report(
                    "V-N32",
                    init_path,
                    format!("initializer '{}' {reason}", cell.initializer),
                );
            }
            if let Some(initial) = &carry.initial {
                let at = carry_path.key("initial");
                if let Some(Some(c)) = self.read(initial, || at.clone())
                    && let Err(reason) = state_compatible(c, &cell.contract, exempt)
                {
                    self.ctx
                        .report("V-N32", at, format!("initial value '{initial}' {reason}"));
                }
            }
        }
        self.scopes.open();
        if let Some(iteration) = &l.iteration {
            let at = path.key("iteration");
            if let Err(reason) = iteration_contract(&iteration.contract) {
                self.ctx.report("V-N31", at.key("contract"), reason);
            }
            self.define(
                "V-N31",
                &iteration.value,
                Some(&iteration.contract),
                at.key("value"),
            );
        }
        for carry in &carried {
            if let Some(cell) = state.and_then(|s| s.get(&carry.cell)) {
                self.scopes.insert(
                    &carry.cell,
                    Value {
                        contract: Some(&cell.contract),
                    },
                );
            }
        }
        if let Some(Some(c)) = self.read(&l.continue_when, || path.key("continue_when"))
            && let Err(reason) = bool_control(c)
        {
            self.ctx.report("V-N33", path.key("continue_when"), reason);
        }
        self.steps(&l.steps, &path.key("steps"), false);
        let mut exports = Vec::new();
        for (k, carry) in carried.iter().enumerate() {
            let at = path.key("carried").index(k).key("next");
            let next = self.read(&carry.next, || at.clone());
            let Some(cell) = state.and_then(|s| s.get(&carry.cell)) else {
                continue;
            };
            if let Some(Some(c)) = next
                && let Err(reason) =
                    state_compatible(c, &cell.contract, varying_axis(&cell.recurrence))
            {
                self.ctx
                    .report("V-N32", at, format!("next value '{}' {reason}", carry.next));
            }
            exports.push((carry, next.flatten(), cell.scope));
        }
        self.scopes.close();
        for (k, (carry, contract, scope)) in exports.into_iter().enumerate() {
            self.define(
                "V-N10",
                &carry.cell,
                contract,
                path.key("carried").index(k).key("cell"),
            );
            if scope == StateScope::Session
                && let Some(open) = self.session_carries.last_mut()
            {
                open.push(&carry.cell);
            }
        }
    }

    fn branch(&mut self, b: &'d BranchStep, path: &DocPath) {
        if let Some(Some(c)) = self.read(&b.predicate, || path.key("predicate"))
            && let Err(reason) = predicate(c)
        {
            self.ctx.report("V-N40", path.key("predicate"), reason);
        }
        if b.cases.is_empty() {
            self.ctx
                .report("V-N41", path.key("cases"), "must not be empty".to_string());
        }
        let phis: Vec<_> = b.outputs.iter().flatten().collect();
        let mut sources: HashMap<&str, Vec<(DocPath, Option<&'d TensorContract>)>> = HashMap::new();
        let cases = b
            .cases
            .iter()
            .map(|(k, s)| (Some(k.as_str()), s))
            .chain(b.default.as_deref().map(|s| (None, s)));
        for (key, case) in cases {
            let case_path = match key {
                Some(k) => path.key("cases").key(k),
                None => path.key("default"),
            };
            let guarded = key == Some("true");
            if guarded {
                self.guards.push(&b.predicate);
            }
            self.scopes.open();
            self.session_carries.push(Vec::new());
            self.step(case, &case_path);
            for (phi, output) in &phis {
                let (source, at) = match key {
                    Some(k) => (
                        output.cases.get(k),
                        path.key("outputs").key(phi.as_str()).key("cases").key(k),
                    ),
                    None => (
                        output.default.as_ref(),
                        path.key("outputs").key(phi.as_str()).key("default"),
                    ),
                };
                if let Some(source) = source
                    && let Some(contract) = self.read(source, || at.clone())
                {
                    sources
                        .entry(phi.as_str())
                        .or_default()
                        .push((at, contract));
                }
            }
            let carried = self.session_carries.pop().unwrap_or_default();
            for cell in carried {
                let exported = phis.iter().any(|(_, out)| match key {
                    Some(k) => out.cases.get(k).is_some_and(|s| s == cell),
                    None => out.default.as_deref() == Some(cell),
                });
                if !exported {
                    self.ctx.report(
                        "V-N43",
                        case_path.clone(),
                        format!(
                            "updates session state '{cell}' to '{cell}' without exporting it through a branch output"
                        ),
                    );
                }
            }
            self.scopes.close();
            if guarded {
                self.guards.pop();
            }
        }
        for (phi, output) in &phis {
            let phi_path = path.key("outputs").key(phi.as_str());
            for key in b.cases.keys() {
                if !output.cases.contains_key(key) {
                    self.ctx.report(
                        "V-N42",
                        phi_path.key("cases"),
                        format!("has no value for case '{key}'"),
                    );
                }
            }
            for key in output.cases.keys() {
                if !b.cases.contains_key(key) {
                    self.ctx.report(
                        "V-N42",
                        phi_path.key("cases").key(key.as_str()),
                        format!("references unknown case '{key}'"),
                    );
                }
            }
            if b.default.is_some() != output.default.is_some() {
                self.ctx.report(
                    "V-N42",
                    phi_path.clone(),
                    "must map the default branch exactly when one is declared".to_string(),
                );
            }
            let known: Vec<_> = sources
                .get(phi.as_str())
                .into_iter()
                .flatten()
                .filter_map(|(at, c)| c.map(|c| (at, c)))
                .collect();
            if let Some((_, first)) = known.first() {
                for (at, other) in &known[1..] {
                    if let Err(reason) = compatible(other, first) {
                        self.ctx
                            .report("V-N42", (*at).clone(), format!("phi source {reason}"));
                    }
                }
            }
            let contract = known.first().map(|(_, c)| *c);
            self.define("V-N10", phi, contract, phi_path);
        }
    }

    fn emit(&mut self, e: &'d EmitStep, path: &DocPath) {
        let value = self.read(&e.value, || path.key("value")).flatten();
        let mut controls = Vec::new();
        let guards = [
            (
                "when",
                e.when.as_deref(),
                bool_control as fn(&TensorContract) -> Result<(), &'static str>,
            ),
            ("valid_length", e.valid_length.as_deref(), integer_control),
        ];
        for (name, control, check) in guards {
            if let Some(control) = control
                && let Some(Some(c)) = self.read(control, || path.key(name))
            {
                if let Err(reason) = check(c) {
                    self.ctx.report("V-N50", path.key(name), reason);
                }
                controls.push((name, c));
            }
        }
        if let Some(v) = value
            && !has_request_axis(v)
        {
            for (name, c) in &controls {
                if !is_singleton(c) {
                    self.ctx.report(
                        "V-N51",
                        path.key(*name),
                        format!(
                            "is row-wise but the emitted value '{}' declares no request_aligned batch_layout",
                            e.value
                        ),
                    );
                }
            }
        }
        let output = self.wf.outputs.as_ref().and_then(|o| o.get(&e.output));
        match output {
            None => self.ctx.report(
                "V-N52",
                path.key("output"),
                format!("emits undeclared output '{}'", e.output),
            ),
            Some(output) => {
                if let Some(v) = value
                    && let Err(reason) =
                        emit_contract(v, &output.contract, e.valid_length.is_some())
                {
                    self.ctx.report(
                        "V-N53",
                        path.key("output"),
                        format!("value '{}' -> output '{}' {reason}", e.value, e.output),
                    );
                }
            }
        }
        self.emits.push(EmitRecord {
            path: path.clone(),
            step: e,
            value,
        });
    }
}

fn iteration_contract(c: &TensorContract) -> Result<(), String> {
    if c.dtype != "int64" || c.rank > 1 {
        return Err(format!(
            "must declare int64 rank 0 or rank 1, got {} rank {}",
            c.dtype, c.rank
        ));
    }
    match (c.rank, &c.shape) {
        (0, Some(shape)) if !shape.is_empty() => {
            Err("scalar contract must have an empty shape".into())
        }
        (1, None) => Err("rank-one broadcast contract must declare its shape".into()),
        (1, Some(shape)) if shape.len() != 1 => Err("must have one dimension".into()),
        _ => Ok(()),
    }
}

/// V-N53: without `valid_length`, plain compatibility; with it, ranks >= 1,
/// exact dtype and rank, fixed dims equal except on the last axis.
fn emit_contract(
    value: &TensorContract,
    output: &TensorContract,
    prefix: bool,
) -> Result<(), String> {
    if !prefix {
        return compatible(value, output);
    }
    if value.rank < 1 || output.rank < 1 {
        return Err(
            "valid_length requires emitted value and output contracts with rank >= 1".into(),
        );
    }
    if value.dtype != output.dtype || value.rank != output.rank {
        return Err("has incompatible dtype or rank for prefix emission".into());
    }
    if let (Some(a), Some(b)) = (&value.shape, &output.shape) {
        let last = a.len().saturating_sub(1);
        for (axis, (x, y)) in a.iter().zip(b).enumerate() {
            if axis != last
                && let (Dim::Fixed(x), Dim::Fixed(y)) = (x, y)
                && x != y
            {
                return Err(format!("has incompatible fixed dimension at axis {axis}"));
            }
        }
    }
    Ok(())
}
