//! Emit steps: replace, append and event outputs, guards and prefix
//! lengths, row-wise publication.

use super::*;

impl<'r, 'c> Exec<'r, 'c> {
    pub(super) fn emit(&mut self, e: &'r EmitStep, path: &At<'_>) -> Result<(), RunError> {
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
        let value = host(
            self.held_at(prepared.value, &e.value, &path.key("value"))?,
            path,
        )?
        .clone();
        let rank = value.shape.len();
        let axis = e.axis.map_or(rank.saturating_sub(1), |a| a as usize);
        let guard = match (prepared.when, &e.when) {
            (Some(slot), Some(w)) => Some(
                Self::control_bools(host(self.held_at(slot, w, &path.key("when"))?, path)?)
                    .ok_or_else(|| fail(path, "`when` must be a bool scalar or row vector"))?,
            ),
            _ => None,
        };
        let lengths: Option<SmallVec<[i64; 8]>> = match (prepared.valid_length, &e.valid_length) {
            (Some(slot), Some(v)) => {
                let t = host(self.held_at(slot, v, &path.key("valid_length"))?, path)?;
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
