//! What the steps of a loaded package need on every run, worked out on
//! their first: invoke steps (value slots, compiled port contracts, the
//! ONNX Runtime call site, shape memory and spare output buffers), emit
//! steps (slots, the published contract, row keys) and the workflow
//! inputs' compiled contracts. The interpreter (`exec`) takes a step's
//! entry out of its table while the step runs.

use crate::RunError;
use crate::at::At;
use crate::at::fail;
use crate::check::{Compiled, Symbols, UNBOUND};
use crate::clock::{Span, Tick};
use crate::env::Names;
use crate::fastmap::FastMap;
use crate::literal::MAX_LITERAL_BYTES;
use crate::ortcall::{CallSite, Held, Preset, Produced};
use crate::output::InvokedStep;
use crate::pool::Pool;
use crate::predict::{Outputs, ShapeId, ShapeMemo};
use crate::session::ComponentSession;
use crate::tensor::{DType, Described, Tensor};
use indexmap::IndexMap;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;
use wfstudio_schema::types::contract::{Dim, TensorContract};
use wfstudio_schema::types::state::{IndexedScatter, StateGroup, StateUpdate};
use wfstudio_schema::types::steps::{EmitMode, EmitStep, InvokeStep, LoopStep};
use wfstudio_schema::types::workflow::{Implementation, WorkflowSpec};

/// The workflow inputs' contracts made ready for the checks of every run:
/// a supplied tensor is checked by symbol number, and the run's symbol
/// table learns each symbol once; a refusal is explained by the named check.
#[derive(Debug, Default)]
pub(crate) struct InputChecks {
    /// By input index.
    contracts: Vec<Compiled>,
    /// Symbol names by number.
    symbols: Vec<String>,
}

/// What one run's supplied inputs bound: extents by symbol number, and
/// whether the run's symbol table has the symbol yet (made by
/// [`InputChecks::bindings`], one entry per symbol).
#[derive(Debug, Default)]
pub(crate) struct InputBindings {
    bound: Vec<usize>,
    told: Vec<bool>,
}

impl InputChecks {
    pub(crate) fn new(wf: &WorkflowSpec, dynamic: &[String]) -> Self {
        let mut symbols = Vec::new();
        let contracts = wf
            .inputs
            .iter()
            .flatten()
            .map(|(_, input)| Compiled::new(&input.contract, dynamic, &mut symbols))
            .collect();
        Self { contracts, symbols }
    }

    /// Room for what a run's inputs bind.
    pub(crate) fn bindings(&self) -> InputBindings {
        InputBindings {
            bound: vec![UNBOUND; self.symbols.len()],
            told: vec![false; self.symbols.len()],
        }
    }

    /// Whether `tensor` fits input `index`, given what this run bound so
    /// far; when it does, the symbols it binds are added to `table`.
    pub(crate) fn fits<'a>(
        &'a self,
        index: usize,
        tensor: &Tensor,
        run: &mut InputBindings,
        table: &mut Symbols<'a>,
    ) -> bool {
        let Some(contract) = self.contracts.get(index) else {
            return false;
        };
        if !contract.fits(tensor, &mut run.bound) {
            return false;
        }
        for n in contract.symbols() {
            if !run.told[n] {
                run.told[n] = true;
                table.bind(&self.symbols[n], run.bound[n]);
            }
        }
        true
    }
}

impl InputBindings {
    /// Forgets the last run's extents.
    pub(crate) fn reset(&mut self) {
        self.bound.fill(UNBOUND);
        self.told.fill(false);
    }
}

/// What steps of one kind need on every run, prepared on their first, by
/// step address; an entry is taken out while its step runs (boxed, so that
/// is a pointer move) and put back after. The steps a run takes are
/// recorded in order, so a run that takes them in the same order as the
/// last one (every run of a workflow whose control flow did not change)
/// finds each by one comparison instead of a lookup.
#[derive(Debug)]
pub(crate) struct StepTable<T> {
    index: FastMap<usize, usize>,
    entries: Vec<Option<Box<T>>>,
    /// Step addresses and places in the order the last run took them.
    trail: Vec<(usize, usize)>,
    /// How many steps the current run has taken.
    cursor: usize,
}

/// Takes recorded per run at most (a long generation's later steps are
/// looked up).
const MOST_RECORDED: usize = 1 << 16;

impl<T> Default for StepTable<T> {
    fn default() -> Self {
        Self {
            index: FastMap::default(),
            entries: Vec::new(),
            trail: Vec::new(),
            cursor: 0,
        }
    }
}

impl<T> StepTable<T> {
    /// Starts a run: its steps are compared with the last run's from the first.
    pub(crate) fn rewind(&mut self) {
        self.cursor = 0;
    }

    /// The entry of the step at `key` and its place, made by `prepare` the
    /// first time.
    #[inline]
    pub(crate) fn take(
        &mut self,
        key: usize,
        prepare: impl FnOnce() -> Result<T, RunError>,
    ) -> Result<Option<(usize, Box<T>)>, RunError> {
        let at = match self.trail.get(self.cursor) {
            Some(&(recorded, at)) if recorded == key => at,
            _ => self.look_up(key, prepare)?,
        };
        self.cursor += 1;
        Ok(self.entries[at].take().map(|entry| (at, entry)))
    }

    /// The place of the step at `key` when the run left the last run's
    /// order, recorded for the next run.
    #[cold]
    fn look_up(
        &mut self,
        key: usize,
        prepare: impl FnOnce() -> Result<T, RunError>,
    ) -> Result<usize, RunError> {
        let at = self.find(key, prepare)?;
        if self.cursor < MOST_RECORDED {
            self.trail.truncate(self.cursor);
            self.trail.push((key, at));
        }
        Ok(at)
    }

    /// The place of the step at `key`, prepared when new.
    fn find(
        &mut self,
        key: usize,
        prepare: impl FnOnce() -> Result<T, RunError>,
    ) -> Result<usize, RunError> {
        if let Some(at) = self.index.get(&key) {
            return Ok(*at);
        }
        self.entries.push(Some(Box::new(prepare()?)));
        let at = self.entries.len() - 1;
        self.index.insert(key, at);
        Ok(at)
    }

    /// Puts back the entry taken from `at`.
    #[inline]
    pub(crate) fn put_back(&mut self, at: usize, entry: Box<T>) {
        self.entries[at] = Some(entry);
    }
}

/// How an invoke's component runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// On ONNX Runtime.
    Onnx,
    /// A plain copy of inputs to outputs of the same port names.
    Binding,
    /// A host ABI this runner does not implement.
    Adapter,
}

/// An invoke step made ready to call: where its values live, its contracts
/// ready to check, its names as ONNX Runtime takes them, and the output
/// shapes its earlier calls gave, which become the buffers ONNX Runtime
/// writes into.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Index of the component in the workflow's components.
    pub(crate) component_index: usize,
    /// How the component runs.
    pub(crate) kind: CallKind,
    /// Whether the component receives the write indices of an
    /// indexed-scatter group (whose capacity is checked before each call).
    pub(crate) scatter: bool,
    /// Slot of the value bound to each input port, in order.
    pub(crate) inputs: SmallVec<[u32; 8]>,
    /// Index of the step among the invoked steps of timing records (its
    /// path and component are kept there).
    pub(crate) step: usize,
    /// `None` for components that do not run on ONNX Runtime.
    pub(crate) site: Option<CallSite>,
    pub(crate) outputs: SmallVec<[PreparedOutput; 4]>,
    /// Output shapes by input shapes, for the buffers of the next calls.
    pub(crate) shapes: ShapeMemo,
    /// The port contracts, needed only by calls unlike any remembered one
    /// (kept apart, so a steady call's data stays in few cache lines).
    pub(crate) checks: Box<PortChecks>,
}

/// An invoke's port contracts made ready to check.
#[derive(Debug)]
pub(crate) struct PortChecks {
    /// By input port, in order.
    inputs: Vec<Option<Compiled>>,
    /// By output port, in order.
    outputs: Vec<Option<Compiled>>,
    /// Room for the symbols one side of a call binds (the inputs' and the
    /// outputs' are numbered apart; see [`Compiled`]).
    bound: Vec<usize>,
}

impl PortChecks {
    /// Whether `inputs` fit their ports, with symbols fresh for the call
    /// (growing state axes stay free).
    pub(crate) fn inputs_fit(&mut self, inputs: &[&Rc<Held>]) -> bool {
        Self::fit(&self.inputs, inputs, &mut self.bound)
    }

    /// Whether `outputs` fit their ports, with their own fresh symbols: an
    /// append graph's output legitimately differs from its input under one
    /// symbol.
    pub(crate) fn outputs_fit(&mut self, outputs: &[Rc<Held>]) -> bool {
        Self::fit(&self.outputs, outputs, &mut self.bound)
    }

    fn fit<H: AsRef<Held>>(
        contracts: &[Option<Compiled>],
        values: &[H],
        bound: &mut [usize],
    ) -> bool {
        bound.fill(UNBOUND);
        contracts.iter().zip(values).all(|(contract, held)| {
            contract
                .as_ref()
                .is_none_or(|c| c.fits(held.as_ref(), bound))
        })
    }
}

#[derive(Debug)]
pub(crate) struct PreparedOutput {
    pub(crate) port: Arc<str>,
    pub(crate) value: Arc<str>,
    /// Slot of the produced value.
    pub(crate) slot: u32,
    /// Host dtype of the graph output (when it runs on ONNX Runtime).
    pub(crate) dtype: Option<DType>,
    /// The buffer of this output's value before last, freed when the last
    /// one replaced it: in a steady loop the two take turns, with no trip
    /// through the pool.
    pub(crate) spare: Option<Preset>,
}

impl PreparedOutput {
    /// The buffer for this call's output, of its predicted `shape`
    /// (numbered `id`).
    pub(crate) fn preset(
        &mut self,
        shape: &[usize],
        id: ShapeId,
        pool: &mut Pool,
    ) -> Option<Preset> {
        let dtype = self.dtype?;
        match self.spare.take() {
            Some(spare) if spare.held().is(dtype, shape, id) => Some(spare),
            other => {
                if let Some(other) = other {
                    pool.keep(other);
                }
                pool.take_for(self.slot, dtype, shape, id)
                    .or_else(|| Preset::new(dtype, shape, id, MAX_LITERAL_BYTES))
            }
        }
    }

    /// Takes back the buffer of the value this output's new value replaced:
    /// the spare for the next call, or the pool's.
    pub(crate) fn recycle(&mut self, replaced: Rc<Held>, pool: &mut Pool) {
        let Some(preset) = Preset::reclaim(replaced) else {
            return;
        };
        if let Some(previous) = self.spare.replace(preset) {
            pool.keep(previous);
        }
    }
}

/// A loop step made ready: where its control and carried values live, and
/// the iteration values of its last run.
#[derive(Debug)]
pub(crate) struct PreparedLoop {
    /// Display form of the loop's path.
    pub(crate) path: Arc<str>,
    /// Slot of the iteration limit.
    pub(crate) limit: u32,
    pub(crate) continue_slot: u32,
    /// Per carried cell, in order.
    pub(crate) carried: SmallVec<[CarriedSlots; 4]>,
    /// The iteration value, if the loop declares one.
    pub(crate) iteration: Option<IterationValues>,
}

/// A loop's iteration value: its slot and the values of the last run.
#[derive(Debug)]
pub(crate) struct IterationValues {
    pub(crate) slot: u32,
    /// The values of the last run by index, with their views: a loop's
    /// counter costs nothing to remake.
    kept: Vec<Option<Preset>>,
    /// Room for the value's shape.
    pub(crate) shape: Vec<usize>,
}

/// Where one carried cell of a loop lives.
#[derive(Debug)]
pub(crate) struct CarriedSlots {
    /// Index of the cell among the workflow's state cells.
    pub(crate) cell: usize,
    /// Slot of the value the cell starts from.
    pub(crate) entry: u32,
    /// Slot of the cell's current value.
    pub(crate) value: u32,
    /// Slot of the value that becomes the next iteration's.
    pub(crate) next: u32,
}

/// Iteration values kept per loop past this index are remade.
const MOST_KEPT: usize = 1024;

impl PreparedLoop {
    /// Prepares loop `l` (its carried cells must be declared state cells).
    pub(crate) fn new(
        wf: &WorkflowSpec,
        l: &LoopStep,
        names: &mut Names,
        path: &At<'_>,
    ) -> Result<Self, RunError> {
        let state = wf.state.as_ref();
        let carried = l
            .carried
            .iter()
            .flatten()
            .map(|c| {
                let (cell, _, spec) = state.and_then(|s| s.get_full(&c.cell)).ok_or_else(|| {
                    fail(path, format!("carries unknown state cell '{}'", c.cell))
                })?;
                Ok(CarriedSlots {
                    cell,
                    entry: names.slot(c.initial.as_ref().unwrap_or(&spec.initializer)),
                    value: names.slot(&c.cell),
                    next: names.slot(&c.next),
                })
            })
            .collect::<Result<_, RunError>>()?;
        Ok(Self {
            path: path.doc().to_string().into(),
            limit: names.slot(&l.max_iterations),
            continue_slot: names.slot(&l.continue_when),
            carried,
            iteration: l.iteration.as_ref().map(|it| IterationValues {
                slot: names.slot(&it.value),
                kept: Vec::new(),
                shape: Vec::new(),
            }),
        })
    }
}

impl IterationValues {
    /// The iteration value of `index` kept from the last run, when it has
    /// the current iteration shape.
    pub(crate) fn kept(&mut self, index: usize) -> Option<Preset> {
        let kept = self.kept.get_mut(index)?.take()?;
        (kept.tensor().shape == self.shape).then_some(kept)
    }

    /// Keeps the iteration value of `index` for the next run, when nothing
    /// else holds it (and the loop has run few enough iterations).
    pub(crate) fn keep(&mut self, index: usize, held: Rc<Held>) {
        let Some(preset) = Preset::reclaim(held).filter(|_| index < MOST_KEPT) else {
            return;
        };
        if self.kept.len() <= index {
            self.kept.resize_with(index + 1, || None);
        }
        self.kept[index] = Some(preset);
    }
}

/// An emit step made ready: where its values live, whether it publishes
/// per row, and the contract of what it publishes ready to check.
#[derive(Debug)]
pub(crate) struct PreparedEmit {
    /// Index of the output among the workflow's outputs.
    pub(crate) output: usize,
    pub(crate) value: u32,
    pub(crate) when: Option<u32>,
    pub(crate) valid_length: Option<u32>,
    /// Whether each row is published as `<output>.row.<r>`.
    pub(crate) rowwise: bool,
    /// What one publish must fit (one row's contract for a row-wise
    /// output; the growth axis of an append left free).
    published: Compiled,
    /// Room for the symbols `published` binds.
    bound: Vec<usize>,
    /// `<output>.row.<r>` by row, made as rows first publish.
    row_keys: Vec<String>,
}

impl PreparedEmit {
    /// Prepares emit `e` into output `output` (its index among the
    /// workflow's outputs), whose contract is `contract`.
    pub(crate) fn new(
        e: &EmitStep,
        output: usize,
        contract: &TensorContract,
        rowwise: bool,
        names: &mut Names,
    ) -> Self {
        let mut numbering = Vec::new();
        let mut published = Compiled::new(&row_contract(contract, rowwise), &[], &mut numbering);
        if e.mode == EmitMode::Append {
            let rank = contract.rank as usize;
            let axis = e.axis.map_or(rank.saturating_sub(1), |a| a as usize);
            published.free_axis(axis);
        }
        Self {
            output,
            value: names.slot(&e.value),
            when: e.when.as_deref().map(|w| names.slot(w)),
            valid_length: e.valid_length.as_deref().map(|v| names.slot(v)),
            rowwise,
            published,
            bound: vec![UNBOUND; numbering.len()],
            row_keys: Vec::new(),
        }
    }

    /// Whether `chunk` fits what one publish must fit.
    pub(crate) fn fits(&mut self, chunk: &Tensor) -> bool {
        self.bound.fill(UNBOUND);
        self.published.fits(chunk, &mut self.bound)
    }

    /// The key of row `r` of `output`.
    pub(crate) fn row_key(&mut self, output: &str, r: usize) -> &str {
        while self.row_keys.len() <= r {
            let next = self.row_keys.len();
            self.row_keys.push(format!("{output}.row.{next}"));
        }
        &self.row_keys[r]
    }
}

/// How the outputs of a call compare with the prediction it was made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The outputs have the predicted shapes, so they pass their checks as
    /// the remembered call's did.
    AsPredicted,
    /// There was no prediction, or the outputs took other shapes.
    Unpredicted,
    /// ONNX Runtime refused a predicted buffer, and the call was made again
    /// with it allocating: the step is not to be predicted again.
    Refused,
}

/// Runs `session` on the views of `bound` at `site`, writing the outputs
/// into host buffers of the `predicted` shapes when there are some, and
/// appending them to `produced`; returns the span inside ONNX Runtime, when
/// the outputs were in hand, and how they compare with the prediction. A
/// wrong prediction fails the run inside ONNX Runtime; the call is then
/// made again with ONNX Runtime allocating.
pub(crate) fn run_session(
    session: &mut ComponentSession,
    site: &mut CallSite,
    outputs: &mut [PreparedOutput],
    predicted: Option<&Outputs>,
    bound: &[&Rc<Held>],
    pool: &mut Pool,
    produced: &mut Produced,
) -> Result<(Span, Tick, Outcome), String> {
    let mut preset_any = false;
    match predicted {
        // Outputs of a call through the I/O binding go to the memory ONNX
        // Runtime chooses, not into host buffers.
        Some(known) if !session.bound() => {
            let shapes = known.shapes.iter().zip(&known.ids);
            for ((slot, output), (shape, &id)) in site.presets.iter_mut().zip(outputs).zip(shapes) {
                *slot = output.preset(shape, id, pool);
                preset_any |= slot.is_some();
            }
        }
        // Buffers an earlier attempt left are not this call's.
        _ => site.presets.iter_mut().for_each(|p| *p = None),
    }
    let (ort, in_hand, into_presets) = match session.run(site, bound, produced) {
        Ok(ran) => ran,
        // A buffer of the wrong shape (or refused): run again with ONNX
        // Runtime allocating.
        Err(_) if preset_any => {
            produced.clear();
            site.presets.iter_mut().for_each(|p| *p = None);
            let (ort, in_hand, _) = session.run(site, bound, produced)?;
            return Ok((ort, in_hand, Outcome::Refused));
        }
        Err(e) => return Err(e),
    };
    // Buffers of the predicted shapes that ONNX Runtime wrote into are of
    // those shapes; outputs it allocated are compared.
    let as_predicted = predicted.is_some_and(|known| {
        (into_presets && preset_any)
            || known
                .shapes
                .iter()
                .map(Vec::as_slice)
                .eq(produced.iter().map(|h| h.shape()))
    });
    let outcome = if as_predicted {
        Outcome::AsPredicted
    } else {
        Outcome::Unpredicted
    };
    Ok((ort, in_hand, outcome))
}

/// What every call of `invoke` needs, made on its first; the step is added
/// to `invoked`.
pub(crate) fn prepare(
    wf: &WorkflowSpec,
    sessions: &[Option<ComponentSession>],
    names: &mut Names,
    dynamic: &[String],
    invoke: &InvokeStep,
    path: &At<'_>,
    invoked: &mut Arc<Vec<InvokedStep>>,
) -> Result<Prepared, RunError> {
    let (component_index, _, component) = wf
        .components
        .get_full(&invoke.component)
        .ok_or_else(|| fail(path, format!("unknown component '{}'", invoke.component)))?;
    let at = |why: String| fail(path, format!("component '{}': {why}", invoke.component));
    let ports = component.ports.as_ref();
    // Each side of a call is checked with a fresh table, so inputs and
    // outputs number their symbols apart.
    let compile = |map: Option<&IndexMap<String, TensorContract>>,
                   port: &str,
                   numbering: &mut Vec<String>| {
        map?.get(port)
            .map(|contract| Compiled::new(contract, dynamic, numbering))
    };
    let mut numbering = Vec::new();
    let session = sessions.get(component_index).and_then(Option::as_ref);
    let mut outputs: SmallVec<[PreparedOutput; 4]> = SmallVec::new();
    let mut output_contracts = Vec::new();
    for (port, value) in invoke.outputs.iter().flatten() {
        let index = session.map(|s| s.outputs.iter().position(|o| o == port));
        if index == Some(None) {
            return Err(at(format!("the graph has no output '{port}'")));
        }
        output_contracts.push(compile(
            ports.and_then(|p| p.outputs.as_ref()),
            port,
            &mut numbering,
        ));
        outputs.push(PreparedOutput {
            port: port.as_str().into(),
            value: value.as_str().into(),
            slot: names.slot(value),
            dtype: session
                .zip(index.flatten())
                .and_then(|(s, i)| s.output_dtype(i)),
            spare: None,
        });
    }
    let output_symbols = numbering.len();
    let mut numbering = Vec::new();
    let inputs = invoke
        .inputs
        .iter()
        .flatten()
        .map(|(_, value)| names.slot(value))
        .collect();
    let input_contracts = invoke
        .inputs
        .iter()
        .flatten()
        .map(|(port, _)| compile(ports.and_then(|p| p.inputs.as_ref()), port, &mut numbering))
        .collect();
    let kind = match &component.implementation {
        Implementation::Onnx(_) => CallKind::Onnx,
        Implementation::Binding => CallKind::Binding,
        Implementation::Adapter(_) => CallKind::Adapter,
    };
    let site = match kind {
        CallKind::Onnx => Some(
            CallSite::new(
                invoke.inputs.iter().flatten().map(|(p, _)| p.as_str()),
                outputs.iter().map(|o| &*o.port),
            )
            .ok_or_else(|| at("a port name holds a NUL character".into()))?,
        ),
        CallKind::Binding | CallKind::Adapter => None,
    };
    let step = InvokedStep {
        path: path.doc().to_string().into(),
        component: invoke.component.as_str().into(),
    };
    let steps = Arc::make_mut(invoked);
    steps.push(step);
    let scatter = scatter_groups(wf, &invoke.component).next().is_some();
    Ok(Prepared {
        component_index,
        kind,
        scatter,
        inputs,
        step: steps.len() - 1,
        site,
        outputs,
        shapes: ShapeMemo::default(),
        checks: Box::new(PortChecks {
            inputs: input_contracts,
            outputs: output_contracts,
            bound: vec![UNBOUND; output_symbols.max(numbering.len())],
        }),
    })
}

/// The contract of what is published: for one row, the leading (request)
/// extent is 1; otherwise the output's own contract, not copied.
pub(crate) fn row_contract(contract: &TensorContract, row: bool) -> Cow<'_, TensorContract> {
    match &contract.shape {
        Some(shape) if row && !shape.is_empty() => {
            let mut c = contract.clone();
            if let Some(shape) = c.shape.as_mut() {
                shape[0] = Dim::Fixed(1);
            }
            Cow::Owned(c)
        }
        _ => Cow::Borrowed(contract),
    }
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
