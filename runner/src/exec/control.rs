//! Control flow: loops (pre-test `continue_when`, iteration values,
//! carried state with its recurrence checks, the inactive-row merge) and
//! branches (a case on a copy of the environment, its phis and emits kept).

use super::*;

impl<'r, 'c> Exec<'r, 'c> {
    pub(super) fn control_bools(tensor: &Tensor) -> Option<SmallVec<[bool; 8]>> {
        if tensor.shape.len() > 1 || tensor.numel() == 0 {
            return None;
        }
        tensor.bools().map(SmallVec::from_slice)
    }

    pub(super) fn looping(&mut self, l: &'r LoopStep, path: &At<'_>) -> Result<(), RunError> {
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
        let limit = self.held_at(
            prepared.limit,
            &l.max_iterations,
            &path.key("max_iterations"),
        )?;
        let limit = host(limit, path)?;
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
                &*value,
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
            let active = Self::control_bools(host(predicate, path)?).ok_or_else(|| {
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
                self.check_recurrence(cell, &current, &next, path, &carry.cell)?;
                let group_bound = cell.service_group.is_some();
                let merged = if group_bound || active.len() <= 1 || active.iter().all(|a| *a) {
                    next
                } else {
                    Held::new(Arc::new(
                        merge_rows(
                            host(&current, path)?,
                            host(&next, path)?,
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
        current: &Held,
        next: &Held,
        path: &At<'_>,
        name: &str,
    ) -> Result<(), RunError> {
        let (current_shape, next_shape) = (current.shape(), next.shape());
        let bad = |why: String| fail(path, format!("carried cell '{name}': {why}"));
        if current.dtype() != next.dtype() || current_shape.len() != next_shape.len() {
            return Err(bad(format!(
                "next value {} {:?} changes dtype or rank of {} {:?}",
                next.dtype(),
                next_shape,
                current.dtype(),
                current_shape
            )));
        }
        let others_equal = |axis: usize| {
            (0..current_shape.len()).all(|a| a == axis || current_shape[a] == next_shape[a])
        };
        match &cell.recurrence {
            Recurrence::Invariant if current_shape != next_shape => Err(bad(format!(
                "invariant state changed shape from {:?} to {:?}",
                current_shape, next_shape
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
                    && next_shape[axis] as i64 != current_shape[axis] as i64 + inc
                {
                    return Err(bad(format!(
                        "axis {axis} grew from {} to {}, not by the increment {inc}",
                        current_shape[axis], next_shape[axis]
                    )));
                }
                if let Some(max) = max
                    && next_shape[axis] as i64 > max
                {
                    return Err(bad(format!(
                        "axis {axis} reached {}, beyond max {max}",
                        next_shape[axis]
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
                    && (next_shape[axis] as i64 > max || current_shape[axis] as i64 > max)
                {
                    return Err(bad(format!("axis {axis} exceeds max {max}")));
                }
                Ok(())
            }
        }
    }

    pub(super) fn branch(&mut self, b: &'r BranchStep, path: &At<'_>) -> Result<(), RunError> {
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
