//! The invoke step: a call's inputs gathered, the call made on ONNX
//! Runtime (a steady call straight to the session, any other through the
//! port checks, the shape memory and the reuse cache), its outputs bound
//! and reported.

use super::*;

impl<'r, 'c> Exec<'r, 'c> {
    pub(super) fn invoke(&mut self, invoke: &'r InvokeStep, path: &At<'_>) -> Result<(), RunError> {
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
        values: impl IntoIterator<Item = (&'a str, &'a Held)>,
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
            .filter_map(|(port, value)| Some((port.as_str(), &**self.bound(value)?)));
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
            .map(|(output, held)| (&*output.port, &**held));
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
            self.report_outputs(prepared, call).map_err(|why| {
                fail(
                    path,
                    format!("keeping an output of '{}': {why}", invoke.component),
                )
            })?;
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
    fn report_outputs(&mut self, prepared: &Prepared, call: TimedCall) -> Result<(), String> {
        let step = &self.invoked[prepared.step];
        let (path, component) = (Arc::clone(&step.path), step.component.clone());
        let mut shapes = Vec::new();
        for output in &prepared.outputs {
            let Some(held) = self.env.get(output.slot) else {
                continue;
            };
            shapes.push((output.value.clone(), held.shape().to_vec()));
            let held = Rc::clone(held);
            self.keep(&output.value, &path, &held)?;
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
        Ok(())
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
        if session.bound() {
            return None;
        }
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
                let remembered = cache
                    .map(|cache| {
                        let tensors: Vec<(&str, Arc<Tensor>)> = invoke
                            .inputs
                            .iter()
                            .flatten()
                            .zip(&bound)
                            .map(|((p, _), h)| Ok((p.as_str(), h.tensor()?.clone())))
                            .collect::<Result<_, String>>()?;
                        let wanted: Vec<&str> = prepared.outputs.iter().map(|o| &*o.port).collect();
                        let key = cache.key(fingerprint, &tensors);
                        let hit = cache.take(key, fingerprint, &tensors, &wanted);
                        Ok((key, tensors, hit))
                    })
                    .transpose()
                    .map_err(at)?;
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
                                .map(|(o, h)| Ok((o.port.to_string(), h.tensor()?.clone())))
                                .collect::<Result<_, String>>()
                                .map_err(at)?;
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
                let shapes: SmallVec<[&[usize]; 4]> = produced.iter().map(|h| h.shape()).collect();
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
            if let Some(lengths) = group.logical_lengths.as_ref().and_then(|l| self.bound(l)) {
                let lengths = host(lengths, path)?;
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
}
