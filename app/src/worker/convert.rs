//! Runner events and run outputs to and from their wire forms.

use super::protocol::{Body, WireEvent, WireOutput};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use wfstudio_runner::{Event, InvokeTiming, InvokedStep, KeptValue, RunOutput};

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `event` on the wire; its tensor (an emitted chunk) goes into `body`.
pub fn event_to_wire(event: Event, body: &mut Body) -> WireEvent {
    match event {
        Event::Started => WireEvent::Started,
        Event::InvokeStarted { path, component } => WireEvent::InvokeStarted {
            path: path.to_string(),
            component: component.to_string(),
        },
        Event::InvokeFinished {
            path,
            component,
            wall,
            ort,
            outputs,
            reused,
        } => WireEvent::InvokeFinished {
            path: path.to_string(),
            component: component.to_string(),
            wall_ns: nanos(wall),
            ort_ns: nanos(ort),
            outputs: outputs
                .into_iter()
                .map(|(name, shape)| (name.to_string(), shape))
                .collect(),
            reused,
        },
        Event::LoopIteration { path, index, limit } => WireEvent::LoopIteration {
            path: path.to_string(),
            index,
            limit,
        },
        Event::Emitted {
            key,
            chunk,
            mode,
            shape,
        } => WireEvent::Emitted {
            key,
            chunk: body.put(&chunk),
            mode,
            shape,
        },
        Event::Finished { wall } => WireEvent::Finished {
            wall_ns: nanos(wall),
        },
        Event::Failed { message } => WireEvent::Failed { message },
        Event::Cancelled => WireEvent::Cancelled,
    }
}

/// The event `wire` stands for (tensors read from `body`, each at most
/// `max_bytes`).
pub fn event_from_wire(wire: WireEvent, body: &Body, max_bytes: usize) -> io::Result<Event> {
    Ok(match wire {
        WireEvent::Started => Event::Started,
        WireEvent::InvokeStarted { path, component } => Event::InvokeStarted {
            path: path.into(),
            component: component.into(),
        },
        WireEvent::InvokeFinished {
            path,
            component,
            wall_ns,
            ort_ns,
            outputs,
            reused,
        } => Event::InvokeFinished {
            path: path.into(),
            component: component.into(),
            wall: Duration::from_nanos(wall_ns),
            ort: Duration::from_nanos(ort_ns),
            outputs: outputs
                .into_iter()
                .map(|(name, shape)| (name.into(), shape))
                .collect(),
            reused,
        },
        WireEvent::LoopIteration { path, index, limit } => Event::LoopIteration {
            path: path.into(),
            index,
            limit,
        },
        WireEvent::Emitted {
            key,
            chunk,
            mode,
            shape,
        } => Event::Emitted {
            key,
            chunk: Arc::new(body.get(&chunk, max_bytes)?),
            mode,
            shape,
        },
        WireEvent::Finished { wall_ns } => Event::Finished {
            wall: Duration::from_nanos(wall_ns),
        },
        WireEvent::Failed { message } => Event::Failed { message },
        WireEvent::Cancelled => Event::Cancelled,
    })
}

/// `output` on the wire; its tensors go into `body`.
pub fn output_to_wire(output: &RunOutput, body: &mut Body) -> WireOutput {
    WireOutput {
        outputs: output
            .outputs
            .iter()
            .map(|(key, tensor)| (key.clone(), body.put(tensor)))
            .collect(),
        invokes: output
            .invokes
            .iter()
            .map(|i| {
                (
                    i.step,
                    nanos(i.wall),
                    nanos(i.ort),
                    nanos(i.start),
                    i.reused,
                )
            })
            .collect(),
        steps: output
            .steps
            .iter()
            .map(|s| (s.path.to_string(), s.component.to_string()))
            .collect(),
        loop_iterations: output
            .loop_iterations
            .iter()
            .map(|(path, n)| (path.clone(), *n))
            .collect(),
        wall_ns: nanos(output.wall),
        kept: output
            .kept
            .iter()
            .map(|k| {
                (
                    k.name.clone(),
                    k.path.clone(),
                    k.iterations.clone(),
                    body.put(&k.tensor),
                )
            })
            .collect(),
        kept_truncated: output.kept_truncated,
        transfers: output.transfers,
    }
}

/// The run output `wire` stands for.
pub fn output_from_wire(wire: WireOutput, body: &Body, max_bytes: usize) -> io::Result<RunOutput> {
    let outputs = wire
        .outputs
        .into_iter()
        .map(|(key, tensor)| Ok((key, body.get(&tensor, max_bytes)?)))
        .collect::<io::Result<_>>()?;
    let kept = wire
        .kept
        .into_iter()
        .map(|(name, path, iterations, tensor)| {
            Ok(KeptValue {
                name,
                path,
                iterations,
                tensor: Arc::new(body.get(&tensor, max_bytes)?),
            })
        })
        .collect::<io::Result<_>>()?;
    Ok(RunOutput {
        outputs,
        invokes: wire
            .invokes
            .into_iter()
            .map(|(step, wall, ort, start, reused)| InvokeTiming {
                step,
                wall: Duration::from_nanos(wall),
                ort: Duration::from_nanos(ort),
                start: Duration::from_nanos(start),
                reused,
            })
            .collect(),
        steps: Arc::new(
            wire.steps
                .into_iter()
                .map(|(path, component)| InvokedStep {
                    path: path.into(),
                    component: component.into(),
                })
                .collect(),
        ),
        loop_iterations: wire.loop_iterations.into_iter().collect(),
        wall: Duration::from_nanos(wire.wall_ns),
        kept,
        kept_truncated: wire.kept_truncated,
        transfers: wire.transfers,
    })
}
