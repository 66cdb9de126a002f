//! Where a component's ONNX nodes run: the execution provider the device
//! asked for, the nodes ONNX Runtime gave each provider when it made the
//! session (read once per session, not per run), and how many of them fell
//! back to another provider.

use crate::device::Device;
use serde::{Deserialize, Serialize};

/// One component's placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Component name.
    pub component: String,
    /// The execution provider the device asked for.
    pub ep: String,
    /// Nodes per execution provider, as ONNX Runtime assigned them.
    pub nodes: Vec<(String, usize)>,
    /// Nodes on a provider other than `ep`.
    pub fallbacks: usize,
}

impl Placement {
    /// The placement of `component` made for `device` with `nodes`.
    pub fn new(component: &str, device: &Device, nodes: Vec<(String, usize)>) -> Self {
        let ep = provider_of(device);
        let fallbacks = nodes
            .iter()
            .filter(|(name, _)| *name != ep)
            .map(|(_, n)| n)
            .sum();
        Placement {
            component: component.to_string(),
            ep,
            nodes,
            fallbacks,
        }
    }

    /// Whether there is anything to say: not everything on ONNX Runtime's
    /// plain CPU provider as asked.
    pub fn worth_showing(&self) -> bool {
        self.ep != "CPUExecutionProvider" || self.fallbacks > 0
    }

    /// A short label: the provider, and the fallbacks when there are any
    /// (`cpu_ep`, `CUDA, 3 of 40 nodes on CPU`).
    pub fn label(&self) -> String {
        let total: usize = self.nodes.iter().map(|(_, n)| n).sum();
        let ep = short(&self.ep);
        if self.fallbacks == 0 {
            return ep.to_string();
        }
        let elsewhere: Vec<&str> = self
            .nodes
            .iter()
            .filter(|(name, _)| *name != self.ep)
            .map(|(name, _)| short(name))
            .collect();
        format!(
            "{ep}, {} of {total} nodes on {}",
            self.fallbacks,
            elsewhere.join(" and ")
        )
    }

    /// Every provider's share in full, the asked-for one first:
    /// `cpu_ep: 37 nodes; CPU: 3 nodes (fallback)`.
    pub fn breakdown(&self) -> String {
        let mut nodes: Vec<&(String, usize)> = self.nodes.iter().collect();
        nodes.sort_by_key(|(name, _)| *name != self.ep);
        let parts: Vec<String> = nodes
            .iter()
            .map(|(name, n)| {
                let unit = if *n == 1 { "node" } else { "nodes" };
                let fallback = if *name == self.ep { "" } else { " (fallback)" };
                format!("{}: {n} {unit}{fallback}", short(name))
            })
            .collect();
        parts.join("; ")
    }

    /// The asked-for provider's short name (`CUDA`, `cpu_ep`).
    pub fn short_ep(&self) -> &str {
        short(&self.ep)
    }

    /// The short name of the provider that ran the most nodes (the asked-for
    /// one when none were recorded): where the component really ran.
    pub fn dominant(&self) -> &str {
        self.nodes
            .iter()
            .max_by_key(|(name, n)| (*n, *name == self.ep))
            .map_or(short(&self.ep), |(name, _)| short(name))
    }
}

/// The execution provider a device runs on.
fn provider_of(device: &Device) -> String {
    match device {
        Device::Cpu | Device::Auto => "CPUExecutionProvider".into(),
        Device::Cuda => "CUDAExecutionProvider".into(),
        Device::Ep { ep, .. } => ep.clone(),
    }
}

/// A provider's name without the `ExecutionProvider` suffix.
fn short(ep: &str) -> &str {
    ep.strip_suffix("ExecutionProvider").unwrap_or(ep)
}

#[cfg(test)]
mod tests {
    use super::Placement;
    use crate::device::Device;

    #[test]
    fn fallbacks_are_the_nodes_elsewhere() {
        let device = Device::Ep {
            ep: "cpu_ep".into(),
            index: 0,
        };
        let all = Placement::new("unet", &device, vec![("cpu_ep".into(), 40)]);
        assert_eq!((all.fallbacks, all.label()), (0, "cpu_ep".to_string()));
        let some = Placement::new(
            "unet",
            &device,
            vec![("cpu_ep".into(), 37), ("CPUExecutionProvider".into(), 3)],
        );
        assert_eq!(some.fallbacks, 3);
        assert_eq!(some.label(), "cpu_ep, 3 of 40 nodes on CPU");
        assert_eq!(
            some.breakdown(),
            "cpu_ep: 37 nodes; CPU: 3 nodes (fallback)"
        );
        let one = Placement::new(
            "vae",
            &Device::Cpu,
            vec![("CPUExecutionProvider".into(), 1)],
        );
        assert_eq!(
            (one.breakdown(), one.short_ep()),
            ("CPU: 1 node".into(), "CPU")
        );
    }
}
