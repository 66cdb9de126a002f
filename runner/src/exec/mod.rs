//! The workflow interpreter: binds inputs, walks the steps in document
//! order (invoke, loop, branch, emit, sequence) with one environment of
//! values, and collects outputs, timing and events.

use crate::RunError;
use crate::at::fail;
use crate::check::{Symbols, check};
use crate::clock::{Span, Tick};
use crate::env::{Env, Names};
use crate::events::Event;
use crate::input_limits::InputLimits;
use crate::literal::MAX_LITERAL_BYTES;
use crate::literal::encode_default;
use crate::output::TimedCall;
use crate::output::{InvokedStep, KeptValue, RunOutput};
use crate::prepared::scatter_groups;
use crate::request::Request;
use crate::reuse::ReuseCache;
use crate::session::ComponentSession;
use crate::supplied::Supplied;
use crate::tensor::{DType, Data, Described, Tensor};
use std::collections::{BTreeSet, HashMap};

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
use wfstudio_schema::types::contract::{BatchLayout, Dim, TensorContract};
use wfstudio_schema::types::state::{Recurrence, StateCell};
use wfstudio_schema::types::steps::{
    BranchStep, EmitMode, EmitStep, InvokeStep, LoopIteration, LoopStep, Step,
};
use wfstudio_schema::types::workflow::{
    Component, Implementation, InputRole, InputSource, WorkflowSpec,
};

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

/// The host tensor of `held` (a value in device memory is copied to the
/// host), or why it could not be had, at `at`.
#[inline]
fn host<'h>(held: &'h Held, at: &At<'_>) -> Result<&'h Arc<Tensor>, RunError> {
    held.tensor().map_err(|why| fail(at, why))
}

/// The error for a value read before any step bound it.
fn undefined(at: &At<'_>, name: &str) -> RunError {
    fail(
        at,
        format!("value '{name}' is not defined when this step runs"),
    )
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
                        check(&*tensor, &input.contract, &mut self.symbols, None)
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
        // Copies another run on this thread left uncounted are not this one's.
        crate::transfers::take();
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
                self.out.transfers = crate::transfers::take();
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

    #[inline]
    fn value(&self, name: &str, at: &At<'_>) -> Result<Arc<Tensor>, RunError> {
        host(self.held(name, at)?, at).cloned()
    }

    #[inline]
    fn held(&self, name: &str, at: &At<'_>) -> Result<&Rc<Held>, RunError> {
        self.bound(name).ok_or_else(|| undefined(at, name))
    }

    /// The value in `slot` (which `name` numbers), or why it is missing.
    #[inline]
    fn held_at(&self, slot: u32, name: &str, at: &At<'_>) -> Result<&Rc<Held>, RunError> {
        self.env.get(slot).ok_or_else(|| undefined(at, name))
    }

    /// The value bound to `name`, if any.
    #[inline]
    fn bound(&self, name: &str) -> Option<&Rc<Held>> {
        self.names.find(name).and_then(|slot| self.env.get(slot))
    }

    /// Binds the workflow input of `slot` to `tensor`, or to the last run's
    /// value when that was the same tensor, shared or the same small one bit
    /// for bit (its view is reused).
    #[inline]
    fn put_input(&mut self, slot: u32, tensor: Arc<Tensor>) {
        let held = self
            .pool
            .same_as_parked(slot, &tensor)
            .unwrap_or_else(|| Held::new(tensor));
        self.put_slot(slot, held);
    }

    /// Binds `name` to `held`; a replaced value's buffer goes to the pool.
    #[inline]
    fn put_held(&mut self, name: &str, held: Rc<Held>) {
        let slot = self.names.slot(name);
        self.put_slot(slot, held);
    }

    #[inline]
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

    fn keep(&mut self, name: &str, path: &str, held: &Held) -> Result<(), String> {
        if self.control.keep_bytes == 0 {
            return Ok(());
        }
        // Within the budget before any copy from a device.
        let bytes = held.bytes();
        if self.kept_bytes + bytes > self.control.keep_bytes {
            self.out.kept_truncated = true;
            return Ok(());
        }
        self.kept_bytes += bytes;
        self.out.kept.push(KeptValue {
            name: name.to_string(),
            path: path.to_string(),
            iterations: self.iterations.to_vec(),
            tensor: held.tensor()?.clone(),
        });
        Ok(())
    }
}

mod control;
mod emit;
mod invoke;
