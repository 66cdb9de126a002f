//! Execution device selection: CPU, CUDA, or CUDA when available. GPU
//! discovery (name, memory) goes through the CUDA driver, loaded
//! dynamically, behind the `cuda` feature; without it, or without a driver,
//! CUDA requests fall back to CPU with a message.

use std::fmt;

/// Where to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Device {
    /// ONNX Runtime's CPU execution provider.
    #[default]
    Cpu,
    /// The CUDA execution provider (falls back to CPU with a message).
    Cuda,
    /// CUDA when a GPU and the CUDA provider are present, else CPU.
    Auto,
}

impl std::str::FromStr for Device {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            "auto" => Ok(Device::Auto),
            other => Err(format!("unknown device '{other}' (use cpu, cuda or auto)")),
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
#[cfg(feature = "cuda")]
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

/// The first GPU, or why there is none.
#[cfg(not(feature = "cuda"))]
pub fn discover_gpu() -> Result<Gpu, String> {
    Err("this build has no CUDA support (build with --features cuda)".into())
}

/// The device actually used for a request, and a note when it differs.
pub fn resolve(requested: Device) -> (Device, Option<String>) {
    match requested {
        Device::Cpu => (Device::Cpu, None),
        Device::Cuda | Device::Auto => {
            let why = match discover_gpu() {
                Ok(_) if cuda_provider_available() => return (Device::Cuda, None),
                Ok(gpu) => format!(
                    "{gpu} found, but the loaded ONNX Runtime has no CUDA execution provider (install onnxruntime-gpu)"
                ),
                Err(why) => why,
            };
            let note = (requested == Device::Cuda)
                .then(|| format!("CUDA unavailable: {why}; running on CPU"));
            (Device::Cpu, note)
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_provider_available() -> bool {
    use ort::ep::ExecutionProvider;
    crate::ortlib::environment().is_ok() && ort::ep::CUDA::is_available().unwrap_or(false)
}

#[cfg(not(feature = "cuda"))]
fn cuda_provider_available() -> bool {
    false
}
