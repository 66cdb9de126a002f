//! `wfstudio bench --worker`: the same warm runs through the studio's run
//! worker (a child process), timed as the studio sees them: request out,
//! events and outputs back. The difference from the in-process median is
//! the process boundary's cost per run.

use crate::worker::client::{Worker, WorkerConfig, WorkerRun};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wfstudio_runner::{Device, Tensor};
use wfstudio_schema::Document;

/// Medians of warm runs through the worker.
pub struct WorkerTimed {
    /// Wall per run as the caller sees it.
    pub wall: Duration,
    /// Wall per run inside the worker's runner.
    pub inside: Duration,
    /// Bytes of outputs copied back per run.
    pub output_bytes: usize,
}

/// One warm-up run through a fresh worker, then `runs` timed ones.
pub fn time_worker(
    file: &Path,
    document: &Document,
    inputs: &[(String, Tensor)],
    device: &Device,
    ep_libraries: &[String],
    threads: usize,
    runs: usize,
) -> anyhow::Result<WorkerTimed> {
    let config = WorkerConfig {
        ep_libraries: ep_libraries.to_vec(),
        ..WorkerConfig::default()
    };
    let mut worker = Worker::start(&config)?;
    let run = WorkerRun {
        package: file,
        document,
        device: device.clone(),
        threads,
        inputs,
        keep_bytes: 0,
        reuse: false,
    };
    let cancel = AtomicBool::new(false);
    let (mut walls, mut insides, mut output_bytes) = (Vec::new(), Vec::new(), 0);
    for i in 0..=runs.max(1) {
        let start = Instant::now();
        let ran = worker
            .run(&run, &cancel, &mut |_| {})
            .map_err(|f| anyhow::anyhow!("{}", f.message()))?;
        let wall = start.elapsed();
        if i == 0 {
            continue;
        }
        walls.push(wall);
        insides.push(ran.output.wall);
        output_bytes = ran
            .output
            .outputs
            .values()
            .map(|t| t.numel() * t.dtype().size())
            .sum();
    }
    Ok(WorkerTimed {
        wall: super::median(walls),
        inside: super::median(insides),
        output_bytes,
    })
}
