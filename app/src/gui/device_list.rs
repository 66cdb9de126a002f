//! The devices the Run panel offers: listed by `wfstudio devices --format
//! json` in a child process (so plugin libraries load there, as they do in
//! the run worker, never in the studio), on a thread, once.

use crate::worker::client::{WorkerConfig, wait_or_kill};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;
use wfstudio_runner::Device;

/// A device to offer and how to name it.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    /// What a run asks for.
    pub device: Device,
    /// What the picker shows.
    pub label: String,
}

/// The list, while it is made and after.
#[derive(Default)]
pub enum DeviceList {
    /// Not asked for yet.
    #[default]
    Unknown,
    /// Being listed.
    Listing(Receiver<Result<Vec<Offer>, String>>),
    /// Listed, or why not.
    Listed(Result<Vec<Offer>, String>),
}

impl DeviceList {
    /// The offers, starting the listing on first use.
    pub fn offers(&mut self, config: &WorkerConfig, ctx: &egui::Context) -> &[Offer] {
        if let DeviceList::Unknown = self {
            let (sender, receiver) = channel();
            let (program, libraries, waker) = (
                config.program.clone(),
                config.ep_libraries.clone(),
                ctx.clone(),
            );
            let _ = std::thread::Builder::new()
                .name("wfstudio-devices".into())
                .spawn(move || {
                    let mut command = Command::new(program);
                    command.args(["devices", "--format", "json"]);
                    for library in libraries {
                        command.arg("--ep-library").arg(library);
                    }
                    let _ = sender.send(list(command));
                    waker.request_repaint();
                });
            *self = DeviceList::Listing(receiver);
        }
        if let DeviceList::Listing(receiver) = self
            && let Ok(listed) = receiver.try_recv()
        {
            *self = DeviceList::Listed(listed);
        }
        match self {
            DeviceList::Listed(Ok(offers)) => offers,
            _ => &[],
        }
    }

    /// Why the list could not be made, if so.
    pub fn error(&self) -> Option<&str> {
        match self {
            DeviceList::Listed(Err(why)) => Some(why),
            _ => None,
        }
    }
}

/// How long listing may take: plugin libraries load in the child, and one
/// that hangs must not leave the picker waiting for ever.
const LISTING_LIMIT: Duration = Duration::from_secs(30);

fn list(command: Command) -> Result<Vec<Offer>, String> {
    let (stdout, stderr) = run_within(command, LISTING_LIMIT)?;
    let json: serde_json::Value = serde_json::from_slice(&stdout)
        .map_err(|e| format!("could not read the device list: {e} ({})", stderr.trim()))?;
    offers_of(&json)
}

/// The standard output and error of `command`, which must succeed within
/// `limit` (it is killed after).
fn run_within(mut command: Command, limit: Duration) -> Result<(Vec<u8>, String), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not list devices: {e}"))?;
    // Read on threads, so that a full pipe cannot stall the child.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let (status, killed) = wait_or_kill(&mut child, limit);
    if killed {
        // The readers are left to finish on their own: a process the child
        // started may still hold its pipes.
        return Err(format!(
            "listing devices took over {limit:?} and was stopped (a plugin library may hang when it loads)"
        ));
    }
    let stdout = stdout.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
    match status {
        Some(status) if status.success() => Ok((stdout, stderr)),
        Some(status) => Err(match stderr.trim() {
            "" => format!("listing devices failed ({status})"),
            why => why.to_string(),
        }),
        None => Err("listing devices failed: its process was lost".into()),
    }
}

/// Reads `pipe` to its end on a thread (nothing when there is no pipe).
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// The offers in `wfstudio devices --format json` output: CUDA (or why
/// not) and every device but the built-in CPU, which the picker always has.
fn offers_of(json: &serde_json::Value) -> Result<Vec<Offer>, String> {
    let mut offers = Vec::new();
    let cuda = match (
        json["cuda"]["gpu"].as_str(),
        json["cuda"]["unavailable"].as_str(),
    ) {
        (Some(gpu), _) => format!("cuda ({gpu})"),
        (None, Some(why)) => format!("cuda (not available: {why})"),
        _ => "cuda".to_string(),
    };
    offers.push(Offer {
        device: Device::Cuda,
        label: cuda,
    });
    for device in json["devices"].as_array().into_iter().flatten() {
        let Some(name) = device["device"].as_str() else {
            continue;
        };
        let Ok(parsed) = name.parse::<Device>() else {
            continue;
        };
        if matches!(parsed, Device::Cpu | Device::Cuda) {
            continue;
        }
        offers.push(Offer {
            device: parsed,
            label: format!(
                "{name} ({} {}, by {})",
                device["vendor"].as_str().unwrap_or("?"),
                device["type"].as_str().unwrap_or("?"),
                device["ep_vendor"].as_str().unwrap_or("?")
            ),
        });
    }
    Ok(offers)
}

#[cfg(test)]
mod tests {
    use super::{Offer, offers_of, run_within};
    use std::process::Command;
    use std::time::{Duration, Instant};
    use wfstudio_runner::Device;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn a_hanging_or_failing_listing_is_stopped_and_told() {
        let start = Instant::now();
        let hung = run_within(shell("sleep 30"), Duration::from_millis(300));
        assert_eq!(
            hung,
            Err("listing devices took over 300ms and was stopped (a plugin library may hang when it loads)".into())
        );
        assert!(start.elapsed() < Duration::from_secs(5));
        let failed = run_within(
            shell("echo 'no such plugin: x' >&2; exit 3"),
            Duration::from_secs(10),
        );
        assert_eq!(failed, Err("no such plugin: x".into()));
        // More than a pipe holds is read whole.
        let big = run_within(shell("head -c 200000 /dev/zero"), Duration::from_secs(10));
        assert_eq!(big.map(|(out, _)| out.len()), Ok(200_000));
    }

    #[test]
    fn the_listing_becomes_offers() {
        let json = serde_json::json!({
            "devices": [
                {"device": "cpu", "ep": "CPUExecutionProvider", "type": "CPU", "vendor": "Intel", "ep_vendor": "Microsoft"},
                {"device": "cpu_ep:0", "ep": "cpu_ep", "type": "CPU", "vendor": "Intel", "ep_vendor": "nxrt"},
            ],
            "cuda": {"unavailable": "no CUDA driver library (libcuda) was found"},
        });
        assert_eq!(
            offers_of(&json),
            Ok(vec![
                Offer {
                    device: Device::Cuda,
                    label: "cuda (not available: no CUDA driver library (libcuda) was found)"
                        .into()
                },
                Offer {
                    device: Device::Ep {
                        ep: "cpu_ep".into(),
                        index: 0
                    },
                    label: "cpu_ep:0 (Intel CPU, by nxrt)".into()
                },
            ])
        );
    }
}
