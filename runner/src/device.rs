//! Execution devices: ONNX Runtime's CPU provider, its CUDA provider, a
//! device of a plugin execution provider (`cpu_ep:0`), or `auto`. GPU
//! discovery goes through the CUDA driver, loaded at run time (every build
//! can use a GPU; none is needed to build). A device that was asked for
//! and is not there is an error naming why; only `auto` falls back, in the
//! order CUDA, plugin GPUs, CPU, and says which it took.

use crate::RunError;
use crate::providers;
use std::fmt;

/// Where to run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Device {
    /// ONNX Runtime's CPU execution provider.
    #[default]
    Cpu,
    /// The CUDA execution provider of the loaded runtime.
    Cuda,
    /// CUDA when there, else the first plugin GPU, else CPU.
    Auto,
    /// Device `index` of the execution provider named `ep` (a plugin's, as
    /// `wfstudio devices` lists them).
    Ep {
        /// The execution provider's name (`cpu_ep`).
        ep: String,
        /// Which of its devices, from 0.
        index: usize,
    },
}

impl std::str::FromStr for Device {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            "auto" => Ok(Device::Auto),
            "" => Err("an empty device name (use cpu, cuda, auto or EP[:N])".into()),
            other => {
                let (ep, index) = match other.rsplit_once(':') {
                    Some((ep, n)) => (
                        ep,
                        n.parse()
                            .map_err(|_| format!("'{n}' in '{other}' is not a device number"))?,
                    ),
                    None => (other, 0),
                };
                Ok(Device::Ep {
                    ep: ep.to_string(),
                    index,
                })
            }
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda => f.write_str("cuda"),
            Device::Auto => f.write_str("auto"),
            Device::Ep { ep, index } => write!(f, "{ep}:{index}"),
        }
    }
}

/// A discovered GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    /// Device name as the driver reports it.
    pub name: String,
    /// Total memory in bytes.
    pub memory_bytes: u64,
}

impl fmt::Display for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({:.1} GiB)",
            self.name,
            self.memory_bytes as f64 / (1u64 << 30) as f64
        )
    }
}

/// The first GPU, or why there is none.
pub fn discover_gpu() -> Result<Gpu, String> {
    // SAFETY: only probes whether the driver library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver library (libcuda) was found".into());
    }
    let ctx = std::panic::catch_unwind(|| cudarc::driver::CudaContext::new(0))
        .map_err(|_| "the CUDA driver failed to start".to_string())?
        .map_err(|e| format!("no usable CUDA device: {e}"))?;
    let name = ctx
        .name()
        .map_err(|e| format!("cannot read the GPU name: {e}"))?;
    let memory_bytes = ctx
        .total_mem()
        .map(|m| m as u64)
        .map_err(|e| format!("cannot read the GPU memory: {e}"))?;
    Ok(Gpu { name, memory_bytes })
}

/// Whether CUDA can be used, or why not.
pub fn cuda() -> Result<Gpu, String> {
    let gpu = discover_gpu()?;
    if cuda_provider_available() {
        Ok(gpu)
    } else {
        Err(format!(
            "{gpu} found, but the loaded ONNX Runtime has no CUDA execution provider \
             (scripts/setup.sh installs onnxruntime-gpu on a machine with an NVIDIA GPU)"
        ))
    }
}

/// The device a request runs on, and a note when `auto` chose for it; a
/// device asked for by name that is not there is an error saying why.
pub fn resolve(requested: &Device) -> Result<(Device, Option<String>), RunError> {
    match requested {
        Device::Cpu => Ok((Device::Cpu, None)),
        Device::Cuda => match cuda() {
            Ok(_) => Ok((Device::Cuda, None)),
            Err(why) => Err(RunError::Device(format!("CUDA is not available: {why}"))),
        },
        Device::Ep { ep, index } => {
            providers::device(ep, *index).map_err(RunError::Device)?;
            Ok((requested.clone(), None))
        }
        Device::Auto => {
            let cuda_why = match cuda() {
                Ok(gpu) => return Ok((Device::Cuda, Some(format!("auto: CUDA on {gpu}")))),
                Err(why) => why,
            };
            if let Some(gpu) = providers::first_gpu() {
                let note = format!("auto: {gpu} (CUDA is not available: {cuda_why})");
                let device = gpu.name().parse().map_err(RunError::Device)?;
                return Ok((device, Some(note)));
            }
            Ok((
                Device::Cpu,
                Some(format!(
                    "auto: CPU (CUDA is not available: {cuda_why}; no plugin offers a GPU)"
                )),
            ))
        }
    }
}

fn cuda_provider_available() -> bool {
    use ort::ep::ExecutionProvider;
    if crate::ortlib::environment().is_err() {
        return false;
    }
    // The NVIDIA wheels' libraries, which the CUDA provider needs.
    crate::ortlib::preload_nvidia();
    ort::ep::CUDA::is_available().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::Device;

    /// Names parse as `devices` prints them, and print back the same way.
    #[test]
    fn device_names_round_trip() {
        for (text, device) in [
            ("cpu", Device::Cpu),
            ("cuda", Device::Cuda),
            ("auto", Device::Auto),
            (
                "cpu_ep:1",
                Device::Ep {
                    ep: "cpu_ep".into(),
                    index: 1,
                },
            ),
        ] {
            assert_eq!(text.parse::<Device>(), Ok(device.clone()));
            assert_eq!(device.to_string(), text);
        }
        assert_eq!(
            "WebGpuExecutionProvider".parse::<Device>(),
            Ok(Device::Ep {
                ep: "WebGpuExecutionProvider".into(),
                index: 0
            })
        );
        assert_eq!(
            "cpu_ep:x".parse::<Device>(),
            Err("'x' in 'cpu_ep:x' is not a device number".to_string())
        );
    }
}
