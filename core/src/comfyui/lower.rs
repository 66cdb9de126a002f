//! Lowering a ComfyUI API graph to a `pipeline.workflow` document,
//! fail-closed: the graph must have exactly one image sink and every node on
//! the path to it must be understood; anything else is refused with the node
//! id, its class, the input at fault and a remedy.
//!
//! Supported today: txt2img with `KSampler` for SD 1.x/2.x checkpoints
//! (classifier-free guidance with a positive and a negative text encoder;
//! the VAE from the checkpoint or a `VAELoader`).
//! The run parameters (seed, steps, cfg) become typed workflow inputs whose
//! defaults are the graph's values.
//!
//! Default package layout (the component files the document names):
//! `text_encoder/model.onnx.textproto`, `denoiser/model.onnx.textproto`,
//! `vae_decoder/model.onnx.textproto` and the policies under `policies/`
//! (`diffusion_schedule`, `diffusion_timesteps`, `schedule_lookup`,
//! `model_input`, `continue_predicate`, `latent_row_shape`, `latent_noise`,
//! `guidance_combine`, `solver_step`, each `.onnx.textproto`).

use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Samplers the solver-step policy contract names.
pub const SAMPLERS: &[&str] = &["euler", "euler_ancestral", "ddim", "dpmpp_2m"];
/// Schedules the diffusion-schedule policy contract names.
pub const SCHEDULES: &[&str] = &[
    "normal",
    "simple",
    "karras",
    "exponential",
    "ddim_uniform",
    "beta",
];
/// Classes that save or preview an image.
const IMAGE_SINKS: &[&str] = &["SaveImage", "PreviewImage"];

/// Why a graph was refused, pointing at one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// API node id.
    pub node: String,
    /// Its class.
    pub class: String,
    /// The input at fault, if one is.
    pub input: Option<String>,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub remedy: String,
}

/// A lowered graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The `inference_metadata` document as a JSON value.
    pub document: Value,
    /// Positive and negative prompt texts (the workflow takes token ids; a
    /// tokenizer turns these into `request.input_ids` when running).
    pub prompts: (String, String),
    /// Nodes that cannot reach the image sink and were ignored.
    pub ignored: Vec<String>,
    /// Lowered step -> the ComfyUI nodes it came from.
    pub provenance: Vec<(String, Vec<String>)>,
}

struct Graph<'a> {
    nodes: &'a serde_json::Map<String, Value>,
}

impl<'a> Graph<'a> {
    fn class(&self, id: &str) -> &'a str {
        self.nodes
            .get(id)
            .and_then(|n| n["class_type"].as_str())
            .unwrap_or_default()
    }

    fn input(&self, id: &str, name: &str) -> Option<&'a Value> {
        self.nodes.get(id)?.get("inputs")?.get(name)
    }

    /// The node a link input points at.
    fn source(&self, id: &str, name: &str) -> Result<(String, i64), Refusal> {
        match self.input(id, name) {
            Some(Value::Array(link)) if link.len() == 2 => {
                let origin = match &link[0] {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => String::new(),
                };
                if self.nodes.contains_key(&origin) {
                    return Ok((origin, link[1].as_i64().unwrap_or(0)));
                }
                Err(self.refuse(
                    id,
                    Some(name),
                    format!("links to node '{origin}', which the graph does not contain"),
                    "reconnect the input",
                ))
            }
            _ => Err(self.refuse(
                id,
                Some(name),
                "is not connected".into(),
                "connect the input in ComfyUI",
            )),
        }
    }

    fn literal(&self, id: &str, name: &str) -> Result<&'a Value, Refusal> {
        match self.input(id, name) {
            Some(Value::Array(_)) => Err(self.refuse(
                id,
                Some(name),
                "is driven by another node, but it is a run parameter the workflow takes as an input".into(),
                "set the value on the node itself",
            )),
            Some(value) => Ok(value),
            None => Err(self.refuse(id, Some(name), "is missing".into(), "set the value in ComfyUI and export again")),
        }
    }

    fn number(&self, id: &str, name: &str) -> Result<f64, Refusal> {
        self.literal(id, name)?
            .as_f64()
            .ok_or_else(|| self.refuse(id, Some(name), "is not a number".into(), "enter a number"))
    }

    fn text(&self, id: &str, name: &str) -> Result<&'a str, Refusal> {
        self.literal(id, name)?
            .as_str()
            .ok_or_else(|| self.refuse(id, Some(name), "is not text".into(), "enter text"))
    }

    fn refuse(&self, id: &str, input: Option<&str>, message: String, remedy: &str) -> Refusal {
        Refusal {
            node: id.to_string(),
            class: self.class(id).to_string(),
            input: input.map(str::to_string),
            message,
            remedy: remedy.to_string(),
        }
    }

    /// `id` must be of `class` (one of).
    fn expect(
        &self,
        id: &str,
        classes: &[&str],
        role: &str,
        from: (&str, &str),
    ) -> Result<(), Refusal> {
        if classes.contains(&self.class(id)) {
            return Ok(());
        }
        Err(Refusal {
            node: id.to_string(),
            class: self.class(id).to_string(),
            input: None,
            message: format!(
                "feeds `{}` of node {from_id} as its {role}, which the importer supports only from {}",
                from.1,
                classes.join(" or "),
                from_id = from.0
            ),
            remedy: "replace the node with a supported one, or remove it".into(),
        })
    }

    fn ancestors(&self, id: &str, seen: &mut BTreeSet<String>) {
        if !seen.insert(id.to_string()) {
            return;
        }
        for value in self
            .nodes
            .get(id)
            .and_then(|n| n["inputs"].as_object())
            .into_iter()
            .flatten()
            .map(|(_, v)| v)
        {
            if let Value::Array(link) = value
                && link.len() == 2
                && let Some(origin) = link[0].as_str()
            {
                self.ancestors(origin, seen);
            }
        }
    }
}

fn contract(dtype: &str, shape: Value, aligned: bool) -> Value {
    let rank = shape.as_array().map_or(0, Vec::len);
    let mut c = json!({"dtype": dtype, "rank": rank, "shape": shape});
    if aligned {
        c["batch_layout"] = json!({"kind": "request_aligned", "axis": 0});
    }
    c
}

fn latent() -> Value {
    contract(
        "float32",
        json!(["batch", "channels", "latent_height", "latent_width"]),
        true,
    )
}

fn component(artifact: &str, inputs: Value, outputs: Value, contract: Option<Value>) -> Value {
    let mut c = json!({"implementation": {"kind": "onnx", "artifact": artifact}, "ports": {"inputs": inputs, "outputs": outputs}});
    if let Some(contract) = contract {
        c["contract"] = contract;
    }
    c
}

fn invoke(component: &str, inputs: Value, outputs: Value) -> Value {
    json!({"kind": "invoke", "component": component, "inputs": inputs, "outputs": outputs})
}

/// Lowers an API graph (node id -> `{class_type, inputs}`).
pub fn lower(api: &Value) -> Result<Lowered, Vec<Refusal>> {
    let nodes = api.as_object().ok_or_else(|| {
        vec![Refusal {
            node: String::new(),
            class: String::new(),
            input: None,
            message: "the API graph is not an object".into(),
            remedy: "export with Save (API Format)".into(),
        }]
    })?;
    let g = Graph { nodes };
    let sinks: Vec<&String> = nodes
        .keys()
        .filter(|id| IMAGE_SINKS.contains(&g.class(id)))
        .collect();
    let [sink] = sinks[..] else {
        let (node, class) = sinks.get(1).map_or((String::new(), String::new()), |id| {
            (id.to_string(), g.class(id).to_string())
        });
        return Err(vec![Refusal {
            node,
            class,
            input: None,
            message: format!(
                "the graph has {} image sinks (SaveImage / PreviewImage); exactly one is needed",
                sinks.len()
            ),
            remedy: "keep one SaveImage or PreviewImage node".into(),
        }]);
    };
    lower_txt2img(&g, sink).map_err(|r| vec![r])
}

fn lower_txt2img(g: &Graph<'_>, sink: &str) -> Result<Lowered, Refusal> {
    let (decode, _) = g.source(sink, "images")?;
    g.expect(&decode, &["VAEDecode"], "images", (sink, "images"))?;
    let (sampler, _) = g.source(&decode, "samples")?;
    g.expect(&sampler, &["KSampler"], "samples", (&decode, "samples"))?;
    let (vae, _) = g.source(&decode, "vae")?;
    g.expect(
        &vae,
        &["CheckpointLoaderSimple", "VAELoader"],
        "vae",
        (&decode, "vae"),
    )?;
    let (checkpoint, _) = g.source(&sampler, "model")?;
    g.expect(
        &checkpoint,
        &["CheckpointLoaderSimple"],
        "model",
        (&sampler, "model"),
    )?;
    if g.class(&vae) == "CheckpointLoaderSimple" && vae != checkpoint {
        return Err(g.refuse(&vae, None, "is a second checkpoint; the VAE must come from the denoiser's checkpoint or a VAELoader".into(), "load one checkpoint"));
    }
    let mut prompts = Vec::new();
    for name in ["positive", "negative"] {
        let (encoder, _) = g.source(&sampler, name)?;
        g.expect(&encoder, &["CLIPTextEncode"], name, (&sampler, name))?;
        let (clip, _) = g.source(&encoder, "clip")?;
        if clip != checkpoint {
            g.expect(
                &clip,
                &["CheckpointLoaderSimple"],
                "clip",
                (&encoder, "clip"),
            )?;
        }
        prompts.push((encoder.clone(), g.text(&encoder, "text")?.to_string()));
    }
    let (empty, _) = g.source(&sampler, "latent_image")?;
    g.expect(
        &empty,
        &["EmptyLatentImage"],
        "latent_image",
        (&sampler, "latent_image"),
    )?;
    let seed = g.number(&sampler, "seed")?;
    let steps = g.number(&sampler, "steps")?;
    let cfg = g.number(&sampler, "cfg")?;
    let denoise = g.number(&sampler, "denoise")?;
    let sampler_name = g.text(&sampler, "sampler_name")?;
    let scheduler = g.text(&sampler, "scheduler")?;
    if !SAMPLERS.contains(&sampler_name) {
        return Err(g.refuse(
            &sampler,
            Some("sampler_name"),
            format!("uses sampler '{sampler_name}', which has no solver policy"),
            &format!("choose one of: {}", SAMPLERS.join(", ")),
        ));
    }
    if !SCHEDULES.contains(&scheduler) {
        return Err(g.refuse(
            &sampler,
            Some("scheduler"),
            format!("uses schedule '{scheduler}', which has no schedule policy"),
            &format!("choose one of: {}", SCHEDULES.join(", ")),
        ));
    }
    if denoise != 1.0 {
        return Err(g.refuse(&sampler, Some("denoise"), format!("has denoise {denoise}; partial denoising needs an input image (img2img), which is not supported yet"), "set denoise to 1.0"));
    }
    if steps < 1.0 || steps.fract() != 0.0 {
        return Err(g.refuse(
            &sampler,
            Some("steps"),
            format!("has {steps} steps"),
            "use a positive whole number of steps",
        ));
    }
    let width = g.number(&empty, "width")?;
    let height = g.number(&empty, "height")?;
    let batch = g.number(&empty, "batch_size")?;
    let schedule_parameters = json!({"solver": sampler_name, "spacing": scheduler, "prediction": "epsilon", "steps": steps as i64});
    let row = |dtype: &str| contract(dtype, json!(["batch"]), true);
    let opaque_literal = |c: Value, default: Value| json!({"contract": c, "role": {"kind": "opaque"}, "source": {"kind": "literal"}, "required": false, "default": default});
    let inputs = json!({
        "request.input_ids": {"contract": contract("int64", json!(["batch", "prompt_sequence"]), true),
            "role": {"kind": "runtime", "version": "1.0", "role": "prompt_tokens"}, "source": {"kind": "request"}, "required": true},
        "request.max_iterations": {"contract": contract("int64", json!([1]), false),
            "role": {"kind": "runtime", "version": "1.0", "role": "max_iterations"}, "source": {"kind": "request"}, "required": false, "default": steps as i64},
        "request.seed": {"contract": row("int64"), "role": {"kind": "runtime", "version": "1.0", "role": "seed"}, "source": {"kind": "request"}, "required": false, "default": seed as i64},
        "package.rng_offset": opaque_literal(row("int64"), json!(0)),
        "package.false": opaque_literal(row("bool"), json!(false)),
        "package.loop_0_active": opaque_literal(contract("bool", json!([1]), false), json!(true)),
        "request.negative_input_ids": {"contract": contract("int64", json!(["batch", "prompt_sequence"]), true),
            "role": {"kind": "runtime", "version": "1.0", "role": "negative_prompt_tokens"}, "source": {"kind": "application", "name": "negative_input_ids"}, "required": true},
        "request.guidance_scale": {"contract": row("float32"), "role": {"kind": "runtime", "version": "1.0", "role": "guidance_scale"},
            "source": {"kind": "application", "name": "guidance_scale"}, "required": false, "default": cfg},
    });
    let schedule = contract("float32", json!(["schedule_length"]), false);
    let components = json!({
        "diffusion_schedule": component("policies/diffusion_schedule.onnx.textproto", json!({}), json!({"schedule": contract("float32", json!([steps as i64 + 1]), false)}),
            Some(json!({"id": "onnx-genai.diffusion-schedule", "version": "1", "bindings": {"schedule": "schedule"}, "parameters": schedule_parameters}))),
        "diffusion_timesteps": component("policies/diffusion_timesteps.onnx.textproto", json!({}), json!({"schedule": contract("float32", json!([steps as i64]), false)}),
            Some(json!({"id": "onnx-genai.diffusion-schedule", "version": "1", "bindings": {"schedule": "schedule"}, "parameters": schedule_parameters}))),
        "schedule_lookup": component("policies/schedule_lookup.onnx.textproto", json!({"schedule": schedule, "step": row("int64")}), json!({"timestep": row("float32")}), None),
        "model_input": component("policies/model_input.onnx.textproto", json!({"sample": latent(), "step": row("int64"), "schedule": schedule}), json!({"model_input": latent()}), None),
        "continue_predicate": component("policies/continue_predicate.onnx.textproto", json!({"done": row("bool")}), json!({"continue": contract("bool", json!([1]), false)}), None),
        "latent_row_shape": component("policies/latent_row_shape.onnx.textproto", json!({}), json!({"shape": contract("int64", json!([3]), false)}),
            Some(json!({"id": "wfstudio.latent-shape", "version": "1", "parameters": {"width": width as i64, "height": height as i64, "batch_size": batch as i64, "channels": 4, "scale": 8}}))),
        "latent_noise": component("policies/latent_noise.onnx.textproto",
            json!({"seed": row("int64"), "offset": row("int64"), "row_shape": contract("int64", json!(["row_rank"]), false)}),
            json!({"noise": latent(), "next_offset": row("int64")}),
            Some(json!({"id": "onnx-genai.counter-rng", "version": "1", "bindings": {"seed": "seed", "offset": "offset", "row_shape": "row_shape", "noise": "noise", "next_offset": "next_offset"}}))),
        "text_encoder": component("text_encoder/model.onnx.textproto", json!({"input_ids": contract("int64", json!(["batch", "prompt_sequence"]), true)}),
            json!({"encoder_hidden_states": contract("float32", json!(["batch", "prompt_sequence", "hidden"]), true)}), None),
        "denoiser": component("denoiser/model.onnx.textproto",
            json!({"sample": latent(), "timestep": row("float32"), "encoder_hidden_states": contract("float32", json!(["batch", "prompt_sequence", "hidden"]), true)}),
            json!({"noise_pred": latent()}), None),
        "guidance_combine": component("policies/guidance_combine.onnx.textproto",
            json!({"unconditional": latent(), "conditional": latent(), "scale": row("float32")}), json!({"estimate": latent()}),
            Some(json!({"id": "onnx-genai.guidance-combine", "version": "1", "bindings": {"unconditional": "unconditional", "conditional": "conditional", "scale": "scale", "estimate": "estimate"}}))),
        "solver_step": component("policies/solver_step.onnx.textproto",
            json!({"sample": latent(), "estimate": latent(), "step": row("int64"), "schedule": schedule}), json!({"next_state": latent()}),
            Some(json!({"id": "onnx-genai.solver-step", "version": "1", "bindings": {"state": "sample", "estimate": "estimate", "step": "step", "schedule": "schedule", "next_state": "next_state"},
                "parameters": {"solver": sampler_name, "spacing": scheduler, "prediction": "epsilon"}}))),
        "vae_decoder": component("vae_decoder/model.onnx.textproto", json!({"latent": latent()}),
            json!({"image": contract("float32", json!(["batch", 3, "height", "width"]), true)}), None),
    });
    let steps_list = json!([
        {"kind": "loop",
         "setup": [
            invoke("diffusion_schedule", json!({}), json!({"schedule": "diffusion.schedule"})),
            invoke("diffusion_timesteps", json!({}), json!({"schedule": "diffusion.timesteps"})),
            invoke("latent_row_shape", json!({}), json!({"shape": "diffusion.latent_row_shape"})),
            invoke("latent_noise", json!({"seed": "request.seed", "offset": "package.rng_offset", "row_shape": "diffusion.latent_row_shape"}),
                json!({"noise": "diffusion.noise", "next_offset": "diffusion.rng_offset"})),
            invoke("text_encoder", json!({"input_ids": "request.input_ids"}), json!({"encoder_hidden_states": "conditioning.conditional"})),
            invoke("text_encoder", json!({"input_ids": "request.negative_input_ids"}), json!({"encoder_hidden_states": "conditioning.unconditional"})),
            invoke("continue_predicate", json!({"done": "package.false"}), json!({"continue": "setup.continue"})),
         ],
         "steps": [
            invoke("schedule_lookup", json!({"schedule": "diffusion.timesteps", "step": "loop.iteration"}), json!({"timestep": "diffusion.timestep"})),
            invoke("model_input", json!({"sample": "latent_state", "step": "loop.iteration", "schedule": "diffusion.schedule"}), json!({"model_input": "diffusion.model_input"})),
            invoke("denoiser", json!({"sample": "diffusion.model_input", "timestep": "diffusion.timestep", "encoder_hidden_states": "conditioning.unconditional"}), json!({"noise_pred": "denoiser.unconditional"})),
            invoke("denoiser", json!({"sample": "diffusion.model_input", "timestep": "diffusion.timestep", "encoder_hidden_states": "conditioning.conditional"}), json!({"noise_pred": "denoiser.conditional"})),
            invoke("guidance_combine", json!({"unconditional": "denoiser.unconditional", "conditional": "denoiser.conditional", "scale": "request.guidance_scale"}), json!({"estimate": "denoiser.estimate"})),
            invoke("solver_step", json!({"sample": "latent_state", "estimate": "denoiser.estimate", "step": "loop.iteration", "schedule": "diffusion.schedule"}), json!({"next_state": "latent.body"})),
            invoke("continue_predicate", json!({"done": "package.false"}), json!({"continue": "loop.continue"})),
         ],
         "continue_when": "loop_0_active",
         "max_iterations": "request.max_iterations",
         "carried": [{"cell": "latent_state", "next": "latent.body"}, {"cell": "loop_0_active", "next": "loop.continue"}],
         "iteration": {"value": "loop.iteration", "contract": contract("int64", json!(["batch"]), false)}},
        invoke("vae_decoder", json!({"latent": "latent_state"}), json!({"image": "vae.image"})),
        {"kind": "emit", "value": "vae.image", "output": "image", "mode": "replace"},
        {"kind": "emit", "value": "latent_state", "output": "latent", "mode": "replace"},
    ]);
    let document = json!({
        "schema_version": "v1",
        "pipeline": {"workflow": {
            "manifest": {"capabilities": ["workflow_ssa", "linear_effects", "nested_control_flow", "loop_induction_values", "typed_emit"]},
            "inputs": inputs,
            "outputs": {
                "image": {"contract": contract("float32", json!(["batch", 3, "height", "width"]), true), "role": "image", "value_range": "negative_one_to_one", "stage": "pre_adapter"},
                "latent": {"contract": latent(), "role": "tensor", "stage": "pre_adapter"},
            },
            "components": components,
            "state": {
                "latent_state": {"contract": latent(), "scope": "invocation", "initializer": "diffusion.noise", "recurrence": {"kind": "invariant"}},
                "loop_0_active": {"contract": contract("bool", json!([1]), false), "scope": "invocation", "initializer": "package.loop_0_active", "recurrence": {"kind": "invariant"}},
            },
            "steps": steps_list,
        }},
    });
    let mut used = BTreeSet::new();
    g.ancestors(sink, &mut used);
    let ignored = g
        .nodes
        .keys()
        .filter(|id| !used.contains(*id))
        .cloned()
        .collect();
    let loop_path = "pipeline.workflow.steps[0]".to_string();
    let provenance = vec![
        (
            format!("{loop_path}.setup[4]"),
            vec![prompts[0].0.clone(), checkpoint.clone()],
        ),
        (
            format!("{loop_path}.setup[5]"),
            vec![prompts[1].0.clone(), checkpoint.clone()],
        ),
        (format!("{loop_path}.setup[2]"), vec![empty.clone()]),
        (loop_path, vec![sampler.clone(), checkpoint.clone()]),
        ("pipeline.workflow.steps[1]".to_string(), vec![decode, vae]),
        (
            "pipeline.workflow.steps[2]".to_string(),
            vec![sink.to_string()],
        ),
    ];
    Ok(Lowered {
        document,
        prompts: (prompts[0].1.clone(), prompts[1].1.clone()),
        ignored,
        provenance,
    })
}
