//! Plugin execution providers: shared libraries exporting
//! `CreateEpFactories`, found in installed plugin packages (a folder whose
//! name holds `_ep_` in a Python site-packages, as `nxrt-ep-cpu` and
//! `onnxruntime-ep-webgpu` install them) or named by the user
//! (`--ep-library NAME=PATH`), registered with ONNX Runtime once per
//! process, and the devices every provider offers.

use crate::{RunError, ortlib};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A plugin library and the name it is registered under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    /// Registration name (the package folder, or the user's).
    pub name: String,
    /// The shared library.
    pub path: PathBuf,
}

impl Library {
    /// A library from `NAME=PATH`.
    pub fn parse(spec: &str) -> Result<Library, String> {
        let (name, path) = spec
            .split_once('=')
            .filter(|(name, path)| !name.is_empty() && !path.is_empty())
            .ok_or_else(|| format!("'{spec}' is not NAME=PATH"))?;
        Ok(Library {
            name: name.to_string(),
            path: PathBuf::from(path),
        })
    }
}

/// A library and what registering it gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The library.
    pub library: Library,
    /// The devices it added (as `--device` takes them; none where it finds
    /// no hardware it can use), or why ONNX Runtime refused it.
    pub result: Result<Vec<String>, String>,
}

/// A device an execution provider offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpDevice {
    /// The execution provider's name (`CPUExecutionProvider`, `cpu_ep`).
    pub ep: String,
    /// Its index among the provider's devices.
    pub index: usize,
    /// Who made the provider.
    pub ep_vendor: String,
    /// `CPU`, `GPU` or `NPU`.
    pub kind: &'static str,
    /// Who made the hardware.
    pub hardware_vendor: String,
}

impl EpDevice {
    /// Its name as `--device` takes it (`cpu`, `cuda`, `cpu_ep:0`).
    pub fn name(&self) -> String {
        match self.ep.as_str() {
            "CPUExecutionProvider" => "cpu".into(),
            "CUDAExecutionProvider" => "cuda".into(),
            ep => format!("{ep}:{}", self.index),
        }
    }

    /// Whether it is one of ONNX Runtime's own providers (CPU, CUDA).
    pub fn built_in(&self) -> bool {
        matches!(
            self.ep.as_str(),
            "CPUExecutionProvider" | "CUDAExecutionProvider"
        )
    }
}

impl fmt::Display for EpDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} {}, provider by {})",
            self.name(),
            self.hardware_vendor,
            self.kind,
            self.ep_vendor
        )
    }
}

/// Libraries the user named, registered with the installed ones.
static NAMED: Mutex<Vec<Library>> = Mutex::new(Vec::new());
/// Every registration made so far, in order.
static REGISTERED: Mutex<Vec<Registration>> = Mutex::new(Vec::new());

/// Adds a library to register (`--ep-library`, the studio's setting); a
/// path that is not a file is refused by name.
pub fn add_library(library: Library) -> Result<(), String> {
    if !library.path.is_file() {
        return Err(format!(
            "plugin EP library {} ({}) is not a file",
            library.name,
            library.path.display()
        ));
    }
    let mut named = NAMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !named.contains(&library) {
        named.push(library);
    }
    Ok(())
}

/// Plugin libraries of the installed plugin packages.
pub fn installed() -> Vec<Library> {
    let mut found = Vec::new();
    for packages in ortlib::site_packages_dirs() {
        let Ok(entries) = std::fs::read_dir(&packages) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && is_plugin_folder(p))
            .collect();
        folders.sort();
        for folder in folders {
            let name = folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Ok(files) = std::fs::read_dir(&folder) else {
                continue;
            };
            let mut libraries: Vec<PathBuf> = files
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "so"))
                .collect();
            libraries.sort();
            for path in libraries {
                if !found.iter().any(|l: &Library| l.name == name) {
                    found.push(Library {
                        name: name.clone(),
                        path,
                    });
                }
            }
        }
    }
    found
}

fn is_plugin_folder(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.contains("_ep_") && !name.ends_with(".dist-info")
}

/// Registers every installed and named library not registered yet; returns
/// all registrations made in this process.
pub fn register_all() -> Result<Vec<Registration>, RunError> {
    let (env, _) = ortlib::environment()?;
    // A GPU plugin needs the NVIDIA runtime of the wheels beside it.
    ortlib::preload_nvidia();
    let named = NAMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mut registered = REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for library in installed().into_iter().chain(named) {
        if registered
            .iter()
            .any(|r| r.library.path == library.path || r.library.name == library.name)
        {
            continue;
        }
        let path = std::path::absolute(&library.path).unwrap_or_else(|_| library.path.clone());
        let before = listed(env);
        let result = env
            .register_ep_library(library.name.clone(), &path)
            .map(|()| {
                listed(env)
                    .into_iter()
                    .filter(|d| !before.contains(d))
                    .map(|d| d.name())
                    .collect()
            })
            .map_err(|e| refusal(&library, &e.to_string()));
        registered.push(Registration { library, result });
    }
    Ok(registered.clone())
}

/// Why ONNX Runtime refused `library`, as a person reads it.
fn refusal(library: &Library, error: &str) -> String {
    let what = if error.contains("CreateEpFactories") {
        "is not an execution provider library (it exports no CreateEpFactories)".to_string()
    } else {
        format!("could not be loaded: {error}")
    };
    format!(
        "plugin EP library {} ({}) {what}",
        library.name,
        library.path.display()
    )
}

/// Every device of every execution provider, after registering the
/// plugins.
pub fn devices() -> Result<Vec<EpDevice>, RunError> {
    register_all()?;
    let (env, _) = ortlib::environment()?;
    Ok(listed(env))
}

/// The devices `env` offers now.
fn listed(env: &ort::environment::Environment) -> Vec<EpDevice> {
    let mut listed: Vec<EpDevice> = Vec::new();
    for device in env.devices() {
        let ep = device.ep().unwrap_or("?").to_string();
        let hardware = device.hardware_device();
        let index = listed.iter().filter(|d| d.ep == ep).count();
        listed.push(EpDevice {
            index,
            ep_vendor: device.ep_vendor().unwrap_or("?").to_string(),
            kind: match hardware.ty() {
                ort::memory::DeviceType::CPU => "CPU",
                ort::memory::DeviceType::GPU => "GPU",
                ort::memory::DeviceType::NPU => "NPU",
                ort::memory::DeviceType::FPGA => "FPGA",
            },
            hardware_vendor: hardware.vendor().unwrap_or("?").to_string(),
            ep,
        });
    }
    listed
}

/// Device `index` of provider `ep`, or why it is not there.
pub fn device(ep: &str, index: usize) -> Result<EpDevice, String> {
    let listed = devices().map_err(|e| e.to_string())?;
    if let Some(found) = listed.iter().find(|d| d.ep == ep && d.index == index) {
        return Ok(found.clone());
    }
    let offered = listed.iter().filter(|d| d.ep == ep).count();
    if offered > 0 {
        return Err(format!(
            "{ep} offers {offered} device(s) (0 to {}), not {index}",
            offered - 1
        ));
    }
    let refused: Vec<String> = REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter_map(|r| r.result.as_ref().err().cloned())
        .collect();
    let mut message = format!(
        "no execution provider named {ep} offers a device here (`wfstudio devices` lists them)"
    );
    for why in refused {
        message.push_str("; ");
        message.push_str(&why);
    }
    Err(message)
}

/// The first GPU a plugin offers.
pub fn first_gpu() -> Option<EpDevice> {
    devices()
        .ok()?
        .into_iter()
        .find(|d| d.kind == "GPU" && !d.built_in())
}

#[cfg(test)]
mod tests {
    use super::Library;

    #[test]
    fn a_library_is_name_equals_path() {
        assert_eq!(
            Library::parse("mine=/opt/ep/libmine.so"),
            Ok(Library {
                name: "mine".into(),
                path: "/opt/ep/libmine.so".into()
            })
        );
        assert_eq!(
            Library::parse("/opt/ep/libmine.so"),
            Err("'/opt/ep/libmine.so' is not NAME=PATH".into())
        );
    }
}
