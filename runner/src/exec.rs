//! The workflow interpreter: binds inputs, walks the steps in document
//! order (invoke, loop, branch, emit, sequence) with one environment of
//! values, and collects outputs, timing and events.

use crate::RunError;
use crate::check::{Symbols, check};
use crate::clock::{Span, Tick};
use crate::env::{Env, Names};
use crate::events::Event;
use crate::input_limits::InputLimits;
use crate::literal::encode_default;
use crate::request::Request;
use crate::reuse::ReuseCache;
use crate::session::ComponentSession;
use crate::supplied::Supplied;
use crate::tensor::{DType, Data, Tensor};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
use crate::at::At;
use crate::ortcall::{Held, Produced};
use crate::pool::Pool;
use crate::predict::{Ids, ShapeIds};
use crate::prepared::{
    CallKind, InputBindings, InputChecks, IterationValues, Outcome, Prepared, PreparedEmit,
    PreparedLoop, PreparedOutput, StepTable, prepare, row_contract, run_session,
};
use indexmap::IndexMap;
use smallvec::SmallVec;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wfstudio_schema::types::contract::{BatchLayout, Dim, TensorContract};
use wfstudio_schema::types::state::{
    IndexedScatter, Recurrence, StateCell, StateGroup, StateUpdate,
};
use wfstudio_schema::types::steps::{
    BranchStep, EmitMode, EmitStep, InvokeStep, LoopIteration, LoopStep, Step,
};
use wfstudio_schema::types::workflow::{
    Component, Implementation, InputRole, InputSource, WorkflowSpec,
};

/// The largest tensor a literal default may materialise (checked before
/// allocating, so a hostile shape cannot exhaust memory).
pub const MAX_LITERAL_BYTES: usize = 1 << 30;

/// An invoke step that ran: where it is and what it calls (shared by all
/// of its calls, see [`RunOutput::steps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvokedStep {
    /// Document path of the invoke step.
    pub path: Arc<str>,
    /// Component name.
    pub component: Arc<str>,
}

/// Timing of one invoke call.
#[derive(Clone, Debug, PartialEq)]
pub struct InvokeTiming {
    /// The step that made the call: its index in [`RunOutput::steps`]
    /// (an index rather than the names, so timing a call copies nothing).
    pub step: usize,
    /// Wall time, from the start of the call until its outputs were in hand
    /// (binding them to their values after is the run's time). A steady
    /// call (one like its step's last, which checks nothing) starts as it
    /// enters ONNX Runtime; any other starts before its checks.
    pub wall: Duration,
    /// Time inside ONNX Runtime.
    pub ort: Duration,
    /// Start offset from the beginning of the run.
    pub start: Duration,
    /// Whether the outputs were reused from an earlier run instead of run.
    pub reused: bool,
}

/// An invoke call as timed on the hot path (clock readings), turned into
/// an [`InvokeTiming`] when the run ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimedCall {
    step: usize,
    start: Tick,
    /// When the outputs were in hand.
    in_hand: Tick,
    /// Inside ONNX Runtime (empty for calls that did not run on it).
    ort: Span,
    reused: bool,
}

impl TimedCall {
    /// The call's timing, its start counted from `run_start`.
    fn timing(self, run_start: Tick) -> InvokeTiming {
        InvokeTiming {
            step: self.step,
            wall: self.in_hand.since(self.start),
            ort: self.ort.duration(),
            start: self.start.since(run_start),
            reused: self.reused,
        }
    }
}

/// A value kept for inspection.
#[derive(Clone, Debug, PartialEq)]
pub struct KeptValue {
    /// SSA value name.
    pub name: String,
    /// Document path of the step that produced it.
    pub path: String,
    /// Loop iterations enclosing the step (outermost first).
    pub iterations: Vec<usize>,
    /// The value.
    pub tensor: Arc<Tensor>,
}

/// Everything a finished run produced.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    /// Output values by key (`image`, `tokens.row.0`, `audio.2`).
    pub outputs: BTreeMap<String, Tensor>,
    /// Every invoke call, in order.
    pub invokes: Vec<InvokeTiming>,
    /// The invoke steps the calls name (see [`InvokeTiming::step`]).
    pub steps: Arc<Vec<InvokedStep>>,
    /// Loop path -> iterations run.
    pub loop_iterations: BTreeMap<String, usize>,
    /// Wall time of the run.
    pub wall: Duration,
    /// Values kept for inspection (when asked for), within the budget.
    pub kept: Vec<KeptValue>,
    /// Whether the budget cut the kept values short.
    pub kept_truncated: bool,
}

impl RunOutput {
    /// Sum of the time spent inside ONNX Runtime.
    pub fn ort_time(&self) -> Duration {
        self.invokes.iter().map(|i| i.ort).sum()
    }

    /// The step that made `call`.
    pub fn step_of(&self, call: &InvokeTiming) -> Option<&InvokedStep> {
        self.steps.get(call.step)
    }

    /// Every invoke call with its step, in order.
    pub fn calls(&self) -> impl Iterator<Item = (&InvokedStep, &InvokeTiming)> {
        self.invokes
            .iter()
            .filter_map(|call| Some((self.step_of(call)?, call)))
    }
}

/// Per-run settings.
pub struct RunControl<'a> {
    /// Receives events as they happen; with none, no event is made (a run
    /// nobody watches pays nothing for them).
    pub observer: Option<&'a mut dyn FnMut(Event)>,
    /// Set to cancel; checked between invokes and loop iterations.
    pub cancel: &'a AtomicBool,
    /// Byte budget for kept intermediate values (0 keeps none).
    pub keep_bytes: usize,
    /// Earlier results to reuse for calls whose inputs did not change
    /// (`None` runs every call).
    pub reuse: Option<&'a mut ReuseCache>,
}

/// Facts about a workflow computed once per loaded package, and what its
/// runs leave for the next: prepared invokes, value slots, free buffers.
/// Maps keyed by step address are filled as steps first run (the document
/// is not mutated while the plan lives).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Symbols on growing or bounded state axes.
    dynamic: Vec<String>,
    /// Outputs published per row.
    rowwise: HashMap<String, bool>,
    /// What each loop step needs on every run.
    loops: StepTable<PreparedLoop>,
    /// What each invoke step needs on every call.
    invokes: StepTable<Prepared>,
    /// What each emit step needs on every publish.
    emits: StepTable<PreparedEmit>,
    /// Slots of the SSA names.
    names: Names,
    /// The declared workflow inputs in the order they are bound (by name):
    /// their index among the inputs, and their slot.
    input_order: Vec<(usize, u32)>,
    /// The contracts of the workflow inputs (by index) ready to check a
    /// supplied tensor, their symbols numbered package-wide.
    input_checks: InputChecks,
    /// What the current run's supplied inputs bound.
    input_bindings: InputBindings,
    /// The declared inputs' names, and the values the current run gave them.
    supplied: Supplied,
    /// Output buffers of earlier values, for reuse.
    pool: Pool,
    /// The invoke calls of the run in progress as timed (room kept between
    /// runs).
    calls: Vec<TimedCall>,
    /// The invoke steps prepared so far, which timing records name by index.
    invoked: Arc<Vec<InvokedStep>>,
    /// The values of the run in progress (room kept between runs).
    env: Env,
    /// Numbers of the dtype-and-shape pairs met, for the shape memory.
    shape_ids: ShapeIds,
    /// What supplied inputs may hold beyond their contracts.
    pub(crate) limits: InputLimits,
}

impl Plan {
    pub(crate) fn new(wf: &WorkflowSpec, limits: InputLimits) -> Self {
        let mut names = Names::default();
        let mut order: Vec<(usize, &String)> = wf
            .inputs
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, (name, _))| (index, name))
            .collect();
        order.sort_by(|a, b| a.1.cmp(b.1));
        let input_order = order
            .into_iter()
            .map(|(index, name)| (index, names.slot(name)))
            .collect();
        let dynamic = dynamic_symbols(wf);
        let input_checks = InputChecks::new(wf, &dynamic);
        Self {
            dynamic,
            rowwise: row_wise_outputs(wf),
            names,
            input_order,
            input_bindings: input_checks.bindings(),
            supplied: Supplied::new(wf),
            input_checks,
            limits,
            ..Self::default()
        }
    }

    /// The declared index of the workflow input a run binds a value
    /// supplied as `name` to (see [`Supplied`]).
    pub(crate) fn declared_input(&self, name: &str) -> Option<usize> {
        self.supplied.index_of(name)
    }
}

pub(crate) struct Exec<'r, 'c> {
    wf: &'r WorkflowSpec,
    /// Sessions by component index (`None` for non-ONNX components).
    sessions: &'r mut [Option<ComponentSession>],
    control: RunControl<'c>,
    env: &'r mut Env,
    names: &'r mut Names,
    loops: &'r mut StepTable<PreparedLoop>,
    invokes: &'r mut StepTable<Prepared>,
    emits: &'r mut StepTable<PreparedEmit>,
    pool: &'r mut Pool,
    calls: &'r mut Vec<TimedCall>,
    shape_ids: &'r mut ShapeIds,
    invoked: &'r mut Arc<Vec<InvokedStep>>,
    input_order: &'r [(usize, u32)],
    input_checks: &'r InputChecks,
    input_bindings: &'r mut InputBindings,
    supplied: &'r mut Supplied,
    limits: &'r InputLimits,
    dynamic: &'r [String],
    symbols: Symbols<'r>,
    out: RunOutput,
    events: HashMap<String, usize>,
    rowwise: &'r HashMap<String, bool>,
    /// Loop iterations enclosing the current step (outermost first).
    iterations: SmallVec<[usize; 4]>,
    kept_bytes: usize,
    /// The run's start on the invoke clock.
    started_tick: Tick,
}

impl Drop for Exec<'_, '_> {
    /// A run ends with an empty environment, however it ends.
    fn drop(&mut self) {
        self.env.clear();
    }
}

pub(crate) fn fail(path: &At<'_>, message: impl Into<String>) -> RunError {
    RunError::Step {
        path: path.doc().to_string(),
        message: message.into(),
    }
}

/// The error for a value read before any step bound it.
fn undefined(at: &At<'_>, name: &str) -> RunError {
    fail(
        at,
        format!("value '{name}' is not defined when this step runs"),
    )
}

/// The indexed-scatter groups whose write indices `component` receives:
/// each group's name, the group, its update and the port that takes them.
pub(crate) fn scatter_groups<'w>(
    wf: &'w WorkflowSpec,
    component: &'w str,
) -> impl Iterator<Item = (&'w String, &'w StateGroup, &'w IndexedScatter, &'w String)> + 'w {
    let groups = wf
        .serving
        .as_ref()
        .and_then(|s| s.state_service.groups.as_ref());
    groups
        .into_iter()
        .flatten()
        .filter_map(move |(name, group)| {
            let Some(StateUpdate::IndexedScatter(scatter)) = &group.update else {
                return None;
            };
            let port = scatter.write_indices_ports.as_ref()?.get(component)?;
            Some((name, group, scatter, port))
        })
}

/// Symbols on growing or bounded state axes; they are never bound.
fn dynamic_symbols(wf: &WorkflowSpec) -> Vec<String> {
    let mut dynamic = BTreeSet::new();
    for cell in wf.state.iter().flatten().map(|(_, c)| c) {
        if let (Some(axis), Some(shape)) = (cell.recurrence.varying_axis(), &cell.contract.shape)
            && let Some(Dim::Symbol(s)) = shape.get(axis as usize)
        {
            dynamic.insert(s.clone());
        }
    }
    dynamic.into_iter().collect()
}

fn row_wise_outputs(wf: &WorkflowSpec) -> HashMap<String, bool> {
    let mut rowwise: HashMap<String, bool> = HashMap::new();
    wfstudio_core::validate::for_each_step(
        &wf.steps,
        &wfstudio_schema::DocPath::root(),
        &mut |step, _| {
            if let Step::Emit(e) = step
                && (e.when.is_some() || e.valid_length.is_some())
            {
                rowwise.insert(e.output.clone(), true);
            }
        },
    );
    rowwise.retain(|name, _| {
        wf.outputs
            .as_ref()
            .and_then(|o| o.get(name))
            .is_some_and(|o| o.contract.layout().request_axis().is_some())
    });
    rowwise
}

fn element_count(contract: &TensorContract, symbols: &Symbols) -> Result<Vec<usize>, String> {
    match &contract.shape {
        None if contract.rank == 0 => Ok(Vec::new()),
        None => Err("a literal default of rank > 0 needs a declared shape".into()),
        Some(shape) => Ok(shape
            .iter()
            .map(|d| symbols.resolve(d).unwrap_or(1))
            .collect()),
    }
}

impl<'r, 'c> Exec<'r, 'c> {
    pub(crate) fn new(
        wf: &'r WorkflowSpec,
        plan: &'r mut Plan,
        sessions: &'r mut [Option<ComponentSession>],
        control: RunControl<'c>,
    ) -> Self {
        let out = RunOutput::default();
        plan.calls.clear();
        plan.invokes.rewind();
        plan.emits.rewind();
        plan.loops.rewind();
        Self {
            wf,
            sessions,
            control,
            env: plan.env.reset(plan.names.len()),
            names: &mut plan.names,
            loops: &mut plan.loops,
            invokes: &mut plan.invokes,
            emits: &mut plan.emits,
            pool: &mut plan.pool,
            calls: &mut plan.calls,
            shape_ids: &mut plan.shape_ids,
            invoked: &mut plan.invoked,
            input_order: &plan.input_order,
            input_checks: &plan.input_checks,
            input_bindings: &mut plan.input_bindings,
            supplied: &mut plan.supplied,
            limits: &plan.limits,
            dynamic: &plan.dynamic,
            symbols: Symbols::new(&plan.dynamic),
            out,
            events: HashMap::new(),
            rowwise: &plan.rowwise,
            iterations: SmallVec::new(),
            kept_bytes: 0,
            started_tick: Tick::now(),
        }
    }

    /// Binds `supplied` to the declared inputs (two passes: supplied values
    /// bind symbols first, then literal defaults are materialised).
    pub(crate) fn bind_inputs<K, V>(
        &mut self,
        supplied: impl IntoIterator<Item = (K, V)>,
        request: &Request,
    ) -> Result<(), RunError>
    where
        K: AsRef<str>,
        V: Into<Arc<Tensor>>,
    {
        let pipeline = At::root("pipeline");
        let workflow = pipeline.key("workflow");
        let inputs_path = workflow.key("inputs");
        self.input_bindings.reset();
        let unmatched = self.supplied.sort(supplied);
        let mut defaults = Vec::new();
        let declared = self.wf.inputs.as_ref();
        for &(index, slot) in self.input_order {
            let Some((name, input)) = declared.and_then(|d| d.get_index(index)) else {
                continue;
            };
            let at = inputs_path.key(name.as_str());
            let mut value = self.supplied.take(index);
            if value.is_none()
                && let (InputSource::Request, InputRole::Runtime(role)) =
                    (&input.source, &input.role)
            {
                value = request
                    .bind(role.role, &input.contract)
                    .map_err(|why| fail(&at, format!("input '{name}' from the request: {why}")))?
                    .map(Arc::new);
            }
            let present = value.is_some() || input.default.is_some();
            match value {
                Some(tensor) => {
                    self.limits
                        .check(name, input, &tensor)
                        .map_err(|why| fail(&at, why))?;
                    let checks = self.input_checks;
                    if !checks.fits(index, &tensor, self.input_bindings, &mut self.symbols) {
                        check(&tensor, &input.contract, &mut self.symbols, None)
                            .map_err(|why| fail(&at, format!("input '{name}' {why}")))?;
                    }
                    self.put_input(slot, tensor);
                }
                None => match (&input.source, &input.default) {
                    (InputSource::Artifact(a), _) => {
                        return Err(fail(
                            &at,
                            format!(
                                "input '{name}' comes from artifact '{}', which this runner does not load; supply it as a tensor",
                                a.path
                            ),
                        ));
                    }
                    (_, Some(_)) => defaults.push((name, input, slot, at)),
                    (_, None) if input.is_required() => {
                        return Err(fail(
                            &at,
                            format!("required workflow package input '{name}' was not supplied"),
                        ));
                    }
                    (_, None) => {}
                },
            }
            if let Some(presence) = &input.present_as {
                let slot = self.names.slot(presence);
                self.put_input(slot, Arc::new(Tensor::scalar_bool(present)));
            }
        }
        if !unmatched.is_empty() {
            return Err(RunError::Input(format!(
                "supplied undeclared application inputs: {}",
                unmatched.join(", ")
            )));
        }
        for (name, input, slot, at) in defaults {
            let Some(default) = &input.default else {
                continue;
            };
            let dtype = DType::from_contract(&input.contract.dtype).ok_or_else(|| {
                fail(
                    &at,
                    format!("dtype {} cannot be held on the host", input.contract.dtype),
                )
            })?;
            let shape = element_count(&input.contract, &self.symbols).map_err(|e| fail(&at, e))?;
            let numel = crate::tensor::checked_numel(&shape, dtype, MAX_LITERAL_BYTES)
                .map_err(|e| fail(&at, format!("default of '{name}': {}", e.0)))?;
            let data = encode_default(dtype, numel, default)
                .map_err(|e| fail(&at, format!("default of '{name}': {e}")))?;
            let tensor = Tensor::new(shape, data).map_err(|e| fail(&at, e.0))?;
            check(&tensor, &input.contract, &mut self.symbols, None)
                .map_err(|why| fail(&at, format!("default of '{name}' {why}")))?;
            self.put_input(slot, Arc::new(tensor));
        }
        Ok(())
    }

    pub(crate) fn run<K, V>(
        mut self,
        inputs: impl IntoIterator<Item = (K, V)>,
        request: &Request,
    ) -> Result<RunOutput, RunError>
    where
        K: AsRef<str>,
        V: Into<Arc<Tensor>>,
    {
        self.notify(|| Event::Started);
        if let Some(cache) = self.control.reuse.as_mut() {
            cache.begin_run();
        }
        let pipeline = At::root("pipeline");
        let workflow = pipeline.key("workflow");
        let result = self
            .bind_inputs(inputs, request)
            .and_then(|()| self.steps(&self.wf.steps, &workflow.key("steps")));
        match result {
            Ok(()) => {
                if let Some(cache) = self.control.reuse.as_mut() {
                    cache.end_run();
                }
                self.out.wall = Tick::now().since(self.started_tick);
                let started = self.started_tick;
                self.out.invokes = self.calls.iter().map(|c| c.timing(started)).collect();
                self.out.steps = Arc::clone(self.invoked);
                for &(_, slot) in self.input_order {
                    if let Some(held) = self.env.take(slot) {
                        self.pool.park_input(slot, held);
                    }
                }
                for (slot, held) in self.env.drain() {
                    self.pool.park(slot, held);
                }
                let wall = self.out.wall;
                self.notify(|| Event::Finished { wall });
                Ok(std::mem::take(&mut self.out))
            }
            Err(RunError::Cancelled) => {
                self.notify(|| Event::Cancelled);
                Err(RunError::Cancelled)
            }
            Err(e) => {
                self.notify(|| Event::Failed {
                    message: e.to_string(),
                });
                Err(e)
            }
        }
    }

    fn value(&self, name: &str, at: &At<'_>) -> Result<Arc<Tensor>, RunError> {
        self.held(name, at).map(|h| h.tensor().clone())
    }

    fn held(&self, name: &str, at: &At<'_>) -> Result<&Rc<Held>, RunError> {
        self.bound(name).ok_or_else(|| undefined(at, name))
    }

    /// The value in `slot` (which `name` numbers), or why it is missing.
    fn held_at(&self, slot: u32, name: &str, at: &At<'_>) -> Result<&Rc<Held>, RunError> {
        self.env.get(slot).ok_or_else(|| undefined(at, name))
    }

    /// The value bound to `name`, if any.
    fn bound(&self, name: &str) -> Option<&Rc<Held>> {
        self.names.find(name).and_then(|slot| self.env.get(slot))
    }

    /// Binds the workflow input of `slot` to `tensor`, or to the last run's
    /// value when that was the same tensor, shared or the same small one bit
    /// for bit (its view is reused).
    fn put_input(&mut self, slot: u32, tensor: Arc<Tensor>) {
        let held = self
            .pool
            .same_as_parked(slot, &tensor)
            .unwrap_or_else(|| Held::new(tensor));
        self.put_slot(slot, held);
    }

    /// Binds `name` to `held`; a replaced value's buffer goes to the pool.
    fn put_held(&mut self, name: &str, held: Rc<Held>) {
        let slot = self.names.slot(name);
        self.put_slot(slot, held);
    }

    fn put_slot(&mut self, slot: u32, held: Rc<Held>) {
        if let Some(old) = self.env.set(slot, held) {
            self.pool.give(old);
        }
    }

    fn steps(&mut self, steps: &'r [Step], path: &At<'_>) -> Result<(), RunError> {
        for (i, step) in steps.iter().enumerate() {
            self.step(step, &path.index(i))?;
        }
        Ok(())
    }

    fn step(&mut self, step: &'r Step, path: &At<'_>) -> Result<(), RunError> {
        if self.control.cancel.load(Ordering::Relaxed) {
            return Err(RunError::Cancelled);
        }
        match step {
            Step::Sequence(s) => self.steps(&s.steps, &path.key("steps")),
            Step::Invoke(i) => self.invoke(i, path),
            Step::Loop(l) => self.looping(l, path),
            Step::Branch(b) => self.branch(b, path),
            Step::Emit(e) => self.emit(e, path),
        }
    }

    /// Hands the event `make` builds to the observer, if there is one.
    #[inline]
    fn notify(&mut self, make: impl FnOnce() -> Event) {
        if let Some(observer) = self.control.observer.as_mut() {
            observer(make());
        }
    }

    fn keep(&mut self, name: &str, path: &str, tensor: &Arc<Tensor>) {
        if self.control.keep_bytes == 0 {
            return;
        }
        let bytes = tensor.numel() * tensor.dtype().size();
        if self.kept_bytes + bytes > self.control.keep_bytes {
            self.out.kept_truncated = true;
            return;
        }
        self.kept_bytes += bytes;
        self.out.kept.push(KeptValue {
            name: name.to_string(),
            path: path.to_string(),
            iterations: self.iterations.to_vec(),
            tensor: tensor.clone(),
        });
    }

    fn invoke(&mut self, invoke: &'r InvokeStep, path: &At<'_>) -> Result<(), RunError> {
        let key = invoke as *const InvokeStep as usize;
        let wf = self.wf;
        let (sessions, names, dynamic) = (&*self.sessions, &mut *self.names, self.dynamic);
        let invoked = &mut *self.invoked;
        let (at, mut prepared) = self
            .invokes
            .take(key, || {
                prepare(wf, sessions, names, dynamic, invoke, path, invoked)
            })?
            .ok_or_else(|| fail(path, "an invoke step re-entered itself"))?;
        let result = self.call(invoke, &mut prepared, path);
        self.invokes.put_back(at, prepared);
        result
    }

    /// The component `prepared` calls.
    fn component(&self, prepared: &Prepared) -> Option<&'r Component> {
        let wf: &'r WorkflowSpec = self.wf;
        wf.components
            .get_index(prepared.component_index)
            .map(|(_, c)| c)
    }

    /// The first of `values` (port, tensor) that does not fit its port's
    /// contract in `ports`, by the named check with symbols fresh for the
    /// side of the call: the port and why.
    fn misfit<'a>(
        &self,
        ports: Option<&'r IndexMap<String, TensorContract>>,
        values: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    ) -> Option<(&'a str, String)> {
        let mut local = self.symbols.fresh();
        values.into_iter().find_map(|(port, tensor)| {
            let contract = ports?.get(port)?;
            let why = check(tensor, contract, &mut local, None).err()?;
            Some((port, why))
        })
    }

    /// Why the inputs of `invoke` do not fit their ports: the checks of
    /// every call again, by name, for the message.
    fn explain_inputs(&self, invoke: &'r InvokeStep, prepared: &Prepared) -> String {
        let ports = self
            .component(prepared)
            .and_then(|c| c.ports.as_ref())
            .and_then(|p| p.inputs.as_ref());
        let values = invoke
            .inputs
            .iter()
            .flatten()
            .filter_map(|(port, value)| Some((port.as_str(), &**self.bound(value)?.tensor())));
        match self.misfit(ports, values) {
            Some((port, why)) => {
                let value = invoke.inputs.as_ref().and_then(|i| i.get(port));
                let value = value.map_or("", String::as_str);
                format!("input port '{port}' (value '{value}') {why}")
            }
            None => "inputs do not fit their ports".into(),
        }
    }

    /// Why `produced` does not fit the output ports (as [`Self::explain_inputs`]).
    fn explain_outputs(&self, prepared: &Prepared, produced: &[Rc<Held>]) -> String {
        let ports = self
            .component(prepared)
            .and_then(|c| c.ports.as_ref())
            .and_then(|p| p.outputs.as_ref());
        let values = prepared
            .outputs
            .iter()
            .zip(produced)
            .map(|(output, held)| (&*output.port, &**held.tensor()));
        match self.misfit(ports, values) {
            Some((port, why)) => format!("output port '{port}' {why}"),
            None => "outputs do not fit their ports".into(),
        }
    }

    fn call(
        &mut self,
        invoke: &'r InvokeStep,
        prepared: &mut Prepared,
        path: &At<'_>,
    ) -> Result<(), RunError> {
        if self.control.observer.is_some() {
            self.report_start(prepared);
        }
        // A steady call starts as it enters ONNX Runtime (its few
        // comparisons before are the run's time): one clock reading fewer.
        let (start, ort, in_hand, reused) = match self.steady(prepared) {
            Some(ort) => (ort.start, ort, ort.end, false),
            None => {
                let start = Tick::now();
                let mut produced = Produced::new();
                let (ort, in_hand, reused) = self.checked(invoke, prepared, path, &mut produced)?;
                for (output, held) in prepared.outputs.iter_mut().zip(produced) {
                    self.bind_output(output, held);
                }
                (start, ort, in_hand, reused)
            }
        };
        let call = TimedCall {
            step: prepared.step,
            start,
            in_hand,
            ort,
            reused,
        };
        self.calls.push(call);
        if self.control.observer.is_some() || self.control.keep_bytes > 0 {
            self.report_outputs(prepared, call);
        }
        Ok(())
    }

    /// Tells the observer that the call of `prepared` starts (kept out of
    /// the call's own code, which a run nobody watches runs alone).
    #[cold]
    #[inline(never)]
    fn report_start(&mut self, prepared: &Prepared) {
        let step = &self.invoked[prepared.step];
        let (path, component) = (step.path.clone(), step.component.clone());
        self.notify(|| Event::InvokeStarted { path, component });
    }

    /// Keeps the outputs `call` bound (within the byte budget) and tells
    /// the observer it finished, with their shapes.
    #[cold]
    #[inline(never)]
    fn report_outputs(&mut self, prepared: &Prepared, call: TimedCall) {
        let step = &self.invoked[prepared.step];
        let (path, component) = (Arc::clone(&step.path), step.component.clone());
        let mut shapes = Vec::new();
        for output in &prepared.outputs {
            let Some(held) = self.env.get(output.slot) else {
                continue;
            };
            let tensor = Arc::clone(held.tensor());
            shapes.push((output.value.clone(), tensor.shape.clone()));
            if self.control.keep_bytes > 0 {
                self.keep(&output.value, &path, &tensor);
            }
        }
        let timing = call.timing(self.started_tick);
        self.notify(|| Event::InvokeFinished {
            path,
            component,
            wall: timing.wall,
            ort: timing.ort,
            outputs: shapes,
            reused: call.reused,
        });
    }

    /// Binds an invoke output's value; the buffer of the value it replaces
    /// is kept for the output's next call.
    #[inline]
    fn bind_output(&mut self, output: &mut PreparedOutput, held: Rc<Held>) {
        held.set_home(output.slot);
        if let Some(replaced) = self.env.set(output.slot, held) {
            output.recycle(replaced, self.pool);
        }
    }

    /// Runs a call like the step's last one, the common case of a steady
    /// loop and of a repeated run: on ONNX Runtime, no reuse cache, every
    /// input of the last call's dtype and shape (so no check runs) and a
    /// buffer of the last call's shape for every output. Binds the outputs
    /// and returns the span inside ONNX Runtime (the outputs are in hand as
    /// it ends); `None` for any other call (or a failed one), which the
    /// checked path then makes, explaining any failure.
    #[inline]
    fn steady(&mut self, prepared: &mut Prepared) -> Option<Span> {
        if self.control.reuse.is_some() || prepared.kind != CallKind::Onnx || prepared.scatter {
            return None;
        }
        let (ids, known) = prepared.shapes.last()?;
        if ids.len() != prepared.inputs.len() {
            return None;
        }
        let session = self.sessions.get_mut(prepared.component_index)?.as_mut()?;
        let site = prepared.site.as_mut()?;
        let mut call = site.call();
        for (&slot, &id) in prepared.inputs.iter().zip(ids) {
            let held = self.env.get(slot)?;
            if held.shape_id(self.shape_ids) != id {
                return None;
            }
            call.input(held).ok()?;
        }
        let outputs = prepared.outputs.iter_mut();
        for (output, (shape, &id)) in outputs.zip(known.shapes.iter().zip(&known.ids)) {
            call.output(Some(output.preset(shape, id, self.pool)?));
        }
        let ort = session.run_call(call).ok()?;
        if !site.written() {
            // A value ONNX Runtime allocated has a shape no check saw: it is
            // released, and the checked path makes the call again.
            let _ = site.collect(&mut Produced::new());
            return None;
        }
        for (output, preset) in prepared.outputs.iter_mut().zip(&mut site.presets) {
            self.bind_output(output, preset.take()?.into_held());
        }
        Some(ort)
    }

    /// Runs a call with every check: inputs against their ports (unless
    /// like a remembered call's), capacities, outputs against their ports;
    /// reuses remembered results when a reuse cache is given. Appends the
    /// outputs to `produced`; returns the span inside ONNX Runtime, when the
    /// outputs were in hand, and whether they were reused.
    fn checked(
        &mut self,
        invoke: &'r InvokeStep,
        prepared: &mut Prepared,
        path: &At<'_>,
        produced: &mut Produced,
    ) -> Result<(Span, Tick, bool), RunError> {
        let at = |why: String| fail(path, format!("component '{}': {why}", invoke.component));
        let mut bound: SmallVec<[&Rc<Held>; 8]> = SmallVec::new();
        for (i, &slot) in prepared.inputs.iter().enumerate() {
            let Some(held) = self.env.get(slot) else {
                let (port, value) = invoke.inputs.as_ref().and_then(|m| m.get_index(i)).unzip();
                let inputs = path.key("inputs");
                return Err(undefined(
                    &inputs.key(port.map_or("", String::as_str)),
                    value.map_or("", String::as_str),
                ));
            };
            bound.push(held);
        }
        // Inputs like those of a remembered call pass their checks as its did.
        let ids: Ids = bound.iter().map(|h| h.shape_id(self.shape_ids)).collect();
        let predicted = prepared.shapes.predict(&ids);
        if predicted.is_none() && !prepared.checks.inputs_fit(&bound) {
            return Err(at(self.explain_inputs(invoke, prepared)));
        }
        if prepared.scatter {
            self.check_capacity(&invoke.component, invoke, path)?;
        }
        let mut reused = false;
        let mut ort = Span::default();
        // How the outputs compare with the prediction, for calls run on ONNX Runtime.
        let mut outcome = None;
        // When the outputs were in hand, if ONNX Runtime said.
        let mut in_hand = None;
        match prepared.kind {
            CallKind::Onnx => {
                let session = self
                    .sessions
                    .get_mut(prepared.component_index)
                    .and_then(Option::as_mut)
                    .ok_or_else(|| at("has no session".into()))?;
                let site = prepared
                    .site
                    .as_mut()
                    .ok_or_else(|| at("has no call site".into()))?;
                let fingerprint = session.fingerprint;
                let cache = self
                    .control
                    .reuse
                    .as_deref_mut()
                    .filter(|_| session.reusable);
                // Only a run with a reuse cache looks at the inputs' data.
                let remembered = cache.map(|cache| {
                    let tensors: Vec<(&str, Arc<Tensor>)> = invoke
                        .inputs
                        .iter()
                        .flatten()
                        .zip(&bound)
                        .map(|((p, _), h)| (p.as_str(), h.tensor().clone()))
                        .collect();
                    let wanted: Vec<&str> = prepared.outputs.iter().map(|o| &*o.port).collect();
                    let key = cache.key(fingerprint, &tensors);
                    let hit = cache.take(key, fingerprint, &tensors, &wanted);
                    (key, tensors, hit)
                });
                match remembered {
                    Some((_, _, Some(outputs))) => {
                        reused = true;
                        produced.extend(outputs.into_iter().map(|(_, t)| Held::new(t)));
                    }
                    remembered => {
                        let ran = run_session(
                            session,
                            site,
                            &mut prepared.outputs,
                            predicted,
                            &bound,
                            self.pool,
                            produced,
                        )
                        .map_err(at)?;
                        (ort, in_hand, outcome) = (ran.0, Some(ran.1), Some(ran.2));
                        if let (Some(cache), Some((key, tensors, _))) =
                            (self.control.reuse.as_deref_mut(), remembered)
                        {
                            let outputs: Vec<(String, Arc<Tensor>)> = prepared
                                .outputs
                                .iter()
                                .zip(produced.iter())
                                .map(|(o, h)| (o.port.to_string(), h.tensor().clone()))
                                .collect();
                            cache.store(key, fingerprint, &tensors, &outputs);
                        }
                    }
                }
            }
            CallKind::Binding => {
                for output in &prepared.outputs {
                    let source = invoke
                        .inputs
                        .iter()
                        .flatten()
                        .zip(&bound)
                        .find(|((p, _), _)| p.as_str() == &*output.port)
                        .ok_or_else(|| {
                            at(format!(
                                "binding output '{}' needs an input port of the same name",
                                output.port
                            ))
                        })?;
                    produced.push(Rc::clone(source.1));
                }
            }
            CallKind::Adapter => {
                let why = match self.component(prepared).map(|c| &c.implementation) {
                    Some(Implementation::Adapter(a)) => format!(
                        "adapter {}@{} is not implemented by this runner",
                        a.abi, a.version
                    ),
                    _ => "is not declared".into(),
                };
                return Err(at(why));
            }
        }
        let in_hand = in_hand.unwrap_or_else(Tick::now);
        if outcome != Some(Outcome::AsPredicted) && !prepared.checks.outputs_fit(produced) {
            return Err(at(self.explain_outputs(prepared, produced)));
        }
        match outcome {
            Some(Outcome::Unpredicted) => {
                let shapes: SmallVec<[&[usize]; 4]> = produced
                    .iter()
                    .map(|h| h.tensor().shape.as_slice())
                    .collect();
                let numbers: Ids = produced
                    .iter()
                    .map(|h| h.shape_id(self.shape_ids))
                    .collect();
                prepared.shapes.remember(&ids, &shapes, &numbers);
            }
            Some(Outcome::Refused) => prepared.shapes.forget(),
            Some(Outcome::AsPredicted) | None => {}
        }
        Ok((ort, in_hand, reused))
    }

    /// Fixed-capacity enforcement before an invoke of a component that
    /// receives the write indices of an indexed-scatter group.
    fn check_capacity(
        &self,
        component: &str,
        invoke: &InvokeStep,
        path: &At<'_>,
    ) -> Result<(), RunError> {
        for (name, group, scatter, port) in scatter_groups(self.wf, component) {
            let fault = |why: String| fail(path, format!("indexed_scatter group '{name}': {why}"));
            let capacity = self.value(&scatter.capacity, path)?;
            if capacity.numel() != 1 {
                return Err(fault("capacity must hold exactly one integer".into()));
            }
            let capacity = capacity
                .data
                .get_i64(0)
                .filter(|c| *c > 0)
                .ok_or_else(|| fault("capacity must be a positive integer".into()))?;
            if let (Some(axis), Some(aliases)) = (
                group.sequence_axis,
                group.ports.as_ref().and_then(|p| p.get(component)),
            ) {
                for alias in aliases.values() {
                    let Some(value) = invoke.inputs.as_ref().and_then(|i| i.get(&alias.input))
                    else {
                        continue;
                    };
                    let buffer = self.value(value, path)?;
                    if buffer.shape.get(axis as usize).copied() != Some(capacity as usize) {
                        return Err(fault(format!(
                            "buffer '{value}' has shape {:?}, but its sequence axis {axis} must equal capacity {capacity}",
                            buffer.shape
                        )));
                    }
                }
            }
            let Some(destinations) = invoke.inputs.as_ref().and_then(|i| i.get(port)) else {
                continue;
            };
            let destinations = self.value(destinations, path)?;
            for i in 0..destinations.numel() {
                let d = destinations
                    .data
                    .get_i64(i)
                    .ok_or_else(|| fault("write indices must be integers".into()))?;
                if !(0..capacity).contains(&d) {
                    return Err(fault(format!("write index {d} is outside [0, {capacity})")));
                }
            }
            if let Some(lengths) = group
                .logical_lengths
                .as_ref()
                .and_then(|l| self.bound(l))
                .map(|h| h.tensor())
            {
                if lengths.numel() != destinations.numel() {
                    return Err(fault(format!(
                        "{} logical lengths for {} write destinations",
                        lengths.numel(),
                        destinations.numel()
                    )));
                }
                for i in 0..lengths.numel() {
                    let l = lengths.data.get_i64(i).unwrap_or(-1);
                    if !(0..=capacity).contains(&l) {
                        return Err(fault(format!(
                            "logical length {l} is outside [0, {capacity}]"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn control_bools(tensor: &Tensor) -> Option<SmallVec<[bool; 8]>> {
        if tensor.shape.len() > 1 || tensor.numel() == 0 {
            return None;
        }
        tensor.bools().map(SmallVec::from_slice)
    }

    fn looping(&mut self, l: &'r LoopStep, path: &At<'_>) -> Result<(), RunError> {
        if let Some(setup) = &l.setup {
            self.steps(setup, &path.key("setup"))?;
        }
        let key = l as *const LoopStep as usize;
        let (wf, names) = (self.wf, &mut *self.names);
        let (at, mut prepared) = self
            .loops
            .take(key, || PreparedLoop::new(wf, l, names, path))?
            .ok_or_else(|| fail(path, "a loop step re-entered itself"))?;
        let result = self.iterate(l, &mut prepared, path);
        self.loops.put_back(at, prepared);
        result
    }

    /// Runs the iterations of loop `l` (its setup has run).
    fn iterate(
        &mut self,
        l: &'r LoopStep,
        prepared: &mut PreparedLoop,
        path: &At<'_>,
    ) -> Result<(), RunError> {
        let limit = self
            .held_at(
                prepared.limit,
                &l.max_iterations,
                &path.key("max_iterations"),
            )?
            .tensor();
        let limit = (limit.numel() == 1)
            .then(|| limit.data.get_i64(0))
            .flatten()
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                fail(
                    path,
                    "max_iterations must hold exactly one non-negative integer",
                )
            })? as usize;
        let wf = self.wf;
        let carried = || {
            l.carried
                .iter()
                .flatten()
                .zip(&prepared.carried)
                .filter_map(|(carry, slots)| {
                    let cell = wf.state.as_ref()?.get_index(slots.cell)?.1;
                    Some((carry, cell, slots))
                })
        };
        for (carry, cell, slots) in carried() {
            let entry = carry.initial.as_ref().unwrap_or(&cell.initializer);
            let value = self.held_at(slots.entry, entry, path)?.clone();
            check(
                value.tensor(),
                &cell.contract,
                &mut self.symbols,
                cell.recurrence.varying_axis().map(|a| a as usize),
            )
            .map_err(|why| {
                fail(
                    path,
                    format!("entry value '{entry}' of cell '{}' {why}", carry.cell),
                )
            })?;
            self.put_slot(slots.value, value);
        }
        if let (Some(it), Some(values)) = (&l.iteration, &prepared.iteration)
            && self.env.get(values.slot).is_some()
        {
            return Err(fail(
                path,
                format!("iteration value '{}' shadows a visible value", it.value),
            ));
        }
        let mut ran: usize = 0;
        for index in 0..limit {
            if self.control.cancel.load(Ordering::Relaxed) {
                return Err(RunError::Cancelled);
            }
            let predicate = self.held_at(
                prepared.continue_slot,
                &l.continue_when,
                &path.key("continue_when"),
            )?;
            let active = Self::control_bools(predicate.tensor()).ok_or_else(|| {
                fail(
                    path,
                    "continue_when must be a non-empty bool scalar or row vector",
                )
            })?;
            if !active.iter().any(|a| *a) {
                break;
            }
            if let (Some(it), Some(values)) = (&l.iteration, prepared.iteration.as_mut()) {
                self.iteration_value(it, values, index, path)?;
            }
            if self.control.observer.is_some() {
                self.notify(|| Event::LoopIteration {
                    path: prepared.path.clone(),
                    index,
                    limit,
                });
            }
            self.iterations.push(index);
            let body = self.steps(&l.steps, &path.key("steps"));
            self.iterations.pop();
            body?;
            for (carry, cell, slots) in carried() {
                let current = self.held_at(slots.value, &carry.cell, path)?.clone();
                let next = self
                    .held_at(slots.next, &carry.next, &path.key("carried"))?
                    .clone();
                self.check_recurrence(cell, current.tensor(), next.tensor(), path, &carry.cell)?;
                let group_bound = cell.service_group.is_some();
                let merged = if group_bound || active.len() <= 1 || active.iter().all(|a| *a) {
                    next
                } else {
                    Held::new(Arc::new(
                        merge_rows(
                            current.tensor(),
                            next.tensor(),
                            &cell.contract,
                            &cell.recurrence,
                            &active,
                        )
                        .map_err(|e| fail(path, e))?,
                    ))
                };
                // The replaced value's buffer may go back to the pool.
                drop(current);
                self.put_slot(slots.value, merged);
            }
            ran += 1;
        }
        if let Some(values) = prepared.iteration.as_mut()
            && let Some(last) = self.env.take(values.slot)
        {
            values.keep(ran.saturating_sub(1), last);
        }
        *self
            .out
            .loop_iterations
            .entry(prepared.path.to_string())
            .or_default() += ran;
        Ok(())
    }

    /// Binds the iteration value for iteration `index`: the value of the
    /// same index from the last run when it is free, else a new one.
    fn iteration_value(
        &mut self,
        it: &'r LoopIteration,
        values: &mut IterationValues,
        index: usize,
        path: &At<'_>,
    ) -> Result<(), RunError> {
        let shape = &mut values.shape;
        shape.clear();
        if it.contract.rank != 0 {
            for d in it.contract.shape.iter().flatten() {
                shape.push(self.symbols.resolve(d).ok_or_else(|| {
                    fail(path, "the iteration shape uses a symbol no input bound")
                })?);
            }
        }
        let held = match values.kept(index) {
            Some(preset) => preset.into_held(),
            None => Held::new(Arc::new(Tensor::full_i64(
                values.shape.clone(),
                index as i64,
            ))),
        };
        if let Some(previous) = self.env.set(values.slot, held) {
            values.keep(index.saturating_sub(1), previous);
        }
        Ok(())
    }

    fn scalar(&self, name: &str, path: &At<'_>) -> Result<Option<i64>, RunError> {
        let t = self.value(name, path)?;
        Ok((t.numel() == 1).then(|| t.data.get_i64(0)).flatten())
    }

    fn check_recurrence(
        &self,
        cell: &StateCell,
        current: &Tensor,
        next: &Tensor,
        path: &At<'_>,
        name: &str,
    ) -> Result<(), RunError> {
        let bad = |why: String| fail(path, format!("carried cell '{name}': {why}"));
        if current.dtype() != next.dtype() || current.shape.len() != next.shape.len() {
            return Err(bad(format!(
                "next value {} {:?} changes dtype or rank of {} {:?}",
                next.dtype(),
                next.shape,
                current.dtype(),
                current.shape
            )));
        }
        let others_equal = |axis: usize| {
            (0..current.shape.len()).all(|a| a == axis || current.shape[a] == next.shape[a])
        };
        match &cell.recurrence {
            Recurrence::Invariant if current.shape != next.shape => Err(bad(format!(
                "invariant state changed shape from {:?} to {:?}",
                current.shape, next.shape
            ))),
            Recurrence::Invariant => Ok(()),
            Recurrence::Growing(g) => {
                let axis = g.axis as usize;
                if !others_equal(axis) {
                    return Err(bad(
                        "a growing cell changed an axis other than its growing axis".into(),
                    ));
                }
                let (inc, max) = (self.scalar(&g.increment, path)?, self.scalar(&g.max, path)?);
                if let Some(inc) = inc
                    && next.shape[axis] as i64 != current.shape[axis] as i64 + inc
                {
                    return Err(bad(format!(
                        "axis {axis} grew from {} to {}, not by the increment {inc}",
                        current.shape[axis], next.shape[axis]
                    )));
                }
                if let Some(max) = max
                    && next.shape[axis] as i64 > max
                {
                    return Err(bad(format!(
                        "axis {axis} reached {}, beyond max {max}",
                        next.shape[axis]
                    )));
                }
                Ok(())
            }
            Recurrence::Bounded(b) => {
                let axis = b.axis as usize;
                if !others_equal(axis) {
                    return Err(bad(
                        "a bounded cell changed an axis other than its bounded axis".into(),
                    ));
                }
                if let Some(max) = self.scalar(&b.max, path)?
                    && (next.shape[axis] as i64 > max || current.shape[axis] as i64 > max)
                {
                    return Err(bad(format!("axis {axis} exceeds max {max}")));
                }
                Ok(())
            }
        }
    }

    fn branch(&mut self, b: &'r BranchStep, path: &At<'_>) -> Result<(), RunError> {
        let predicate = self.value(&b.predicate, &path.key("predicate"))?;
        if predicate.numel() != 1 {
            return Err(fail(
                path,
                "the branch predicate must hold exactly one element",
            ));
        }
        let key = match &predicate.data {
            Data::Bool(v) => v[0].to_string(),
            d => d
                .get_i64(0)
                .map(|i| i.to_string())
                .ok_or_else(|| fail(path, "the branch predicate must be bool or integer"))?,
        };
        // `Some(key)`: the matching case; `None`: the default.
        let cases = path.key("cases");
        let (step, case_path, selected) = match b.cases.get(&key) {
            Some(step) => (step, cases.key(key.as_str()), Some(&key)),
            None => match &b.default {
                Some(step) => (step.as_ref(), path.key("default"), None),
                None => return Err(fail(path, format!("no case '{key}' and no default"))),
            },
        };
        let saved = self.env.clone();
        let result = self.step(step, &case_path);
        let case_env = std::mem::replace(self.env, saved);
        result?;
        for (phi, output) in b.outputs.iter().flatten() {
            let source = match selected {
                Some(k) => output.cases.get(k),
                None => output.default.as_ref(),
            }
            .ok_or_else(|| fail(path, format!("phi '{phi}' has no source for case '{key}'")))?;
            let value = self
                .names
                .find(source)
                .and_then(|slot| case_env.get(slot))
                .cloned()
                .ok_or_else(|| {
                    fail(
                        path,
                        format!("phi '{phi}' source '{source}' was not produced by the case"),
                    )
                })?;
            self.put_held(phi, value);
        }
        Ok(())
    }

    fn emit(&mut self, e: &'r EmitStep, path: &At<'_>) -> Result<(), RunError> {
        let key = e as *const EmitStep as usize;
        let (wf, rowwise, names) = (self.wf, self.rowwise, &mut *self.names);
        let (at, mut prepared) = self
            .emits
            .take(key, || {
                let (index, _, output) = wf
                    .outputs
                    .as_ref()
                    .and_then(|o| o.get_full(&e.output))
                    .ok_or_else(|| fail(path, format!("emits undeclared output '{}'", e.output)))?;
                let rowwise = rowwise.get(&e.output).copied().unwrap_or(false);
                Ok(PreparedEmit::new(
                    e,
                    index,
                    &output.contract,
                    rowwise,
                    names,
                ))
            })?
            .ok_or_else(|| fail(path, "an emit step re-entered itself"))?;
        let contract = wf
            .outputs
            .as_ref()
            .and_then(|o| o.get_index(prepared.output))
            .map(|(_, output)| &output.contract);
        let result = match contract {
            Some(contract) => self.emit_prepared(e, contract, &mut prepared, path),
            None => Err(fail(
                path,
                format!("emits undeclared output '{}'", e.output),
            )),
        };
        self.emits.put_back(at, prepared);
        result
    }

    fn emit_prepared(
        &mut self,
        e: &'r EmitStep,
        contract: &'r TensorContract,
        prepared: &mut PreparedEmit,
        path: &At<'_>,
    ) -> Result<(), RunError> {
        let value = self
            .held_at(prepared.value, &e.value, &path.key("value"))?
            .tensor()
            .clone();
        let rank = value.shape.len();
        let axis = e.axis.map_or(rank.saturating_sub(1), |a| a as usize);
        let guard = match (prepared.when, &e.when) {
            (Some(slot), Some(w)) => Some(
                Self::control_bools(self.held_at(slot, w, &path.key("when"))?.tensor())
                    .ok_or_else(|| fail(path, "`when` must be a bool scalar or row vector"))?,
            ),
            _ => None,
        };
        let lengths: Option<SmallVec<[i64; 8]>> = match (prepared.valid_length, &e.valid_length) {
            (Some(slot), Some(v)) => {
                let t = self.held_at(slot, v, &path.key("valid_length"))?.tensor();
                Some(
                    (0..t.numel())
                        .map(|i| t.data.get_i64(i))
                        .collect::<Option<_>>()
                        .ok_or_else(|| fail(path, "valid_length must be integer"))?,
                )
            }
            _ => None,
        };
        let pick = |list: &[i64], r: usize| if list.len() == 1 { list[0] } else { list[r] };
        if prepared.rowwise {
            let rows = *value
                .shape
                .first()
                .ok_or_else(|| fail(path, "a row-wise emit needs rank >= 1"))?;
            for r in 0..rows {
                let on = guard.as_ref().is_none_or(|g| {
                    if g.len() == 1 {
                        g[0]
                    } else {
                        g.get(r).copied().unwrap_or(false)
                    }
                });
                if !on {
                    continue;
                }
                let mut chunk = value.slice_axis(0, r, 1).map_err(|er| fail(path, er.0))?;
                if let Some(lengths) = &lengths {
                    let n = pick(lengths, r).max(0) as usize;
                    chunk = chunk
                        .slice_axis(axis, 0, n)
                        .map_err(|er| fail(path, er.0))?;
                }
                let fits = prepared.fits(&chunk);
                let key = prepared.row_key(&e.output, r);
                self.publish(key, chunk, fits, e.mode, axis, contract, path)?;
            }
            return Ok(());
        }
        if guard.as_ref().is_some_and(|g| !g[0]) {
            return Ok(());
        }
        let chunk = match &lengths {
            Some(lengths) => {
                let n = lengths.first().copied().unwrap_or(0).max(0) as usize;
                value
                    .slice_axis(axis, 0, n)
                    .map_err(|er| fail(path, er.0))?
            }
            None => (*value).clone(),
        };
        let fits = prepared.fits(&chunk);
        self.publish(&e.output, chunk, fits, e.mode, axis, contract, path)
    }

    /// Publishes `chunk` to output `key`; `fits` says whether it passed the
    /// prepared check (when not, the named check says why).
    #[allow(clippy::too_many_arguments)]
    fn publish(
        &mut self,
        key: &str,
        chunk: Tensor,
        fits: bool,
        mode: EmitMode,
        axis: usize,
        contract: &TensorContract,
        path: &At<'_>,
    ) -> Result<(), RunError> {
        if !fits {
            let growth = matches!(mode, EmitMode::Append).then_some(axis);
            let published = row_contract(contract, key.contains(".row."));
            let mut local = Symbols::default();
            let why = check(&chunk, &published, &mut local, growth)
                .err()
                .unwrap_or_else(|| "does not fit its output".into());
            return Err(fail(path, format!("the value emitted to '{key}' {why}")));
        }
        if mode == EmitMode::Event {
            let counter = self.events.entry(key.to_string()).or_default();
            let event_key = format!("{key}.{counter}");
            *counter += 1;
            self.out.outputs.insert(event_key, chunk.clone());
        }
        let listening = self.control.observer.is_some();
        if let (EmitMode::Append, Some(previous)) = (mode, self.out.outputs.get_mut(key)) {
            previous.append(axis, &chunk).map_err(|e| fail(path, e.0))?;
            if listening {
                let shape = previous.shape.clone();
                self.notify(|| Event::Emitted {
                    key: key.to_string(),
                    chunk: Arc::new(chunk),
                    mode,
                    shape,
                });
            }
            return Ok(());
        }
        let stored = if listening {
            let chunk = Arc::new(chunk);
            self.notify(|| Event::Emitted {
                key: key.to_string(),
                chunk: chunk.clone(),
                mode,
                shape: chunk.shape.clone(),
            });
            // The chunk is copied only when the observer kept it (the studio).
            Arc::try_unwrap(chunk).unwrap_or_else(|kept| (*kept).clone())
        } else {
            chunk
        };
        match self.out.outputs.get_mut(key) {
            Some(slot) => *slot = stored,
            None => {
                self.out.outputs.insert(key.to_string(), stored);
            }
        }
        Ok(())
    }
}

/// Keeps inactive requests' previous rows of a carried cell (along its
/// request axis); for a grown axis the new suffix comes from `next` and the
/// old coordinates are restored.
fn merge_rows(
    current: &Tensor,
    next: &Tensor,
    contract: &TensorContract,
    recurrence: &Recurrence,
    active: &[bool],
) -> Result<Tensor, String> {
    let (axis, factor) = match contract.layout() {
        BatchLayout::RequestAligned(l) => (l.axis as usize, 1),
        BatchLayout::RequestExpanded(l) => (l.axis as usize, l.factor.max(1) as usize),
        _ => return Ok(next.clone()),
    };
    let mut rows = Vec::with_capacity(active.len());
    for (r, on) in active.iter().enumerate() {
        let new_row = next.slice_axis(axis, r * factor, factor).map_err(|e| e.0)?;
        if *on {
            rows.push(new_row);
            continue;
        }
        let old_row = current
            .slice_axis(axis, r * factor, factor)
            .map_err(|e| e.0)?;
        if old_row.shape == new_row.shape {
            rows.push(old_row);
            continue;
        }
        let grown = recurrence
            .varying_axis()
            .map(|a| a as usize)
            .ok_or("state changed shape")?;
        let old_len = old_row.shape[grown];
        let suffix = new_row
            .slice_axis(grown, old_len, new_row.shape[grown] - old_len)
            .map_err(|e| e.0)?;
        rows.push(Tensor::concat(grown, &[&old_row, &suffix]).map_err(|e| e.0)?);
    }
    let refs: Vec<&Tensor> = rows.iter().collect();
    Tensor::concat(axis, &refs).map_err(|e| e.0)
}
