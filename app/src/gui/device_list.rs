//! The devices the Run panel offers: listed by `wfstudio devices --format
//! json` in a child process (so plugin libraries load there, as they do in
//! the run worker, never in the studio), on a thread, once.

use crate::worker::client::WorkerConfig;
use std::process::Command;
use std::sync::mpsc::{Receiver, channel};
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

fn list(mut command: Command) -> Result<Vec<Offer>, String> {
    let output = command
        .output()
        .map_err(|e| format!("could not list devices: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("could not read the device list: {e}"))?;
    offers_of(&json)
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
    use super::{Offer, offers_of};
    use wfstudio_runner::Device;

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
