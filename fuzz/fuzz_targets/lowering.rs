//! The ComfyUI lowering on graphs near every supported pattern: the input
//! picks one of the pattern fixtures (txt2img, img2img, inpaint, LoRA,
//! ControlNet, SDXL, SD3 flow, KSamplerAdvanced, latent noise mask,
//! SamplerCustom, SamplerCustomAdvanced, chains, upscales, video, latent
//! composites, an InstructPixToPix edit, reference pictures, a Qwen
//! image edit) and
//! spends its bytes on edits a user or a hostile file could make: numbers,
//! strings from ComfyUI's vocabulary, links to other nodes and slots,
//! removed and retyped nodes, removed inputs. The LoRA pattern lowers for
//! the LoRA target package (whose adapters its loaders use) and for none
//! (its LoRA merged), the others for none. Whatever lowers must be a document that loads and validates with
//! no diagnostic at all.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::sync::OnceLock;
use wfstudio_core::comfyui::lower::{self, Target};
use wfstudio_schema::{Format, Limits, parse_text};

const PATTERNS: [&str; 36] = [
    include_str!("../../fixtures/comfyui/txt2img-sd15.api.json"),
    include_str!("../../fixtures/comfyui/patterns/controlnet-positive.api.json"),
    include_str!("../../fixtures/comfyui/patterns/controlnet.api.json"),
    include_str!("../../fixtures/comfyui/patterns/flow-sd3.api.json"),
    include_str!("../../fixtures/comfyui/patterns/img2img.api.json"),
    include_str!("../../fixtures/comfyui/patterns/inpaint.api.json"),
    include_str!("../../fixtures/comfyui/patterns/ksampler-advanced.api.json"),
    include_str!("../../fixtures/comfyui/patterns/latent-noise-mask.api.json"),
    include_str!("../../fixtures/comfyui/patterns/lora.api.json"),
    include_str!("../../fixtures/comfyui/patterns/sdxl.api.json"),
    include_str!("../../fixtures/comfyui/patterns/custom.api.json"),
    include_str!("../../fixtures/comfyui/patterns/custom-advanced.api.json"),
    include_str!("../../fixtures/comfyui/patterns/hires-fix.api.json"),
    include_str!("../../fixtures/comfyui/patterns/refiner.api.json"),
    include_str!("../../fixtures/comfyui/patterns/upscale-model.api.json"),
    include_str!("../../fixtures/comfyui/patterns/video.api.json"),
    include_str!("../../fixtures/comfyui/patterns/composite.api.json"),
    include_str!("../../fixtures/comfyui/patterns/edit.api.json"),
    include_str!("../../fixtures/comfyui/patterns/scheduler-nodes.api.json"),
    include_str!("../../fixtures/comfyui/patterns/hires-pixels.api.json"),
    include_str!("../../fixtures/comfyui/patterns/svd.api.json"),
    include_str!("../../fixtures/comfyui/patterns/stable-audio.api.json"),
    include_str!("../../fixtures/comfyui/patterns/animatediff.api.json"),
    include_str!("../../fixtures/comfyui/patterns/reference.api.json"),
    include_str!("../../fixtures/comfyui/patterns/qwen-edit.api.json"),
    include_str!("../../fixtures/comfyui/patterns/wan-frames.api.json"),
    include_str!("../../fixtures/comfyui/patterns/mage.api.json"),
    include_str!("../../fixtures/comfyui/patterns/qwen-image-2-1.api.json"),
    include_str!("../../fixtures/comfyui/patterns/canny-control.api.json"),
    include_str!("../../fixtures/comfyui/patterns/control-patch.api.json"),
    include_str!("../../fixtures/comfyui/patterns/wan-vace.api.json"),
    include_str!("../../fixtures/comfyui/patterns/lotus-depth.api.json"),
    include_str!("../../fixtures/comfyui/patterns/marigold-depth.api.json"),
    include_str!("../../fixtures/comfyui/patterns/ltx2-av.api.json"),
    include_str!("../../fixtures/comfyui/patterns/loaded-video.api.json"),
    include_str!("../../fixtures/comfyui/patterns/minimax-h3.api.json"),
];

/// Index of the LoRA pattern in [`PATTERNS`].
const LORA: usize = 8;

/// The LoRA target package's adapters (`fixtures/comfyui/lora-target`).
fn lora_target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/comfyui/lora-target");
        Target::from_package(std::path::Path::new(dir)).expect("the LoRA target package")
    })
}

const CLASSES: [&str; 167] = [
    "MiniMaxH3ImageToVideo",
    "MiniMaxH3SigmaShift",
    "BlockSparseAttention",
    "FluxKVCache", "Kandinsky5ImageToVideo",
    "LTXVImgToVideoInplace", "LTXVPreprocess", "LTXVImgToVideo", "LTXVAddGuide", "SamplerEulerAncestral",
    "LTXVConcatAVLatent", "LTXVSeparateAVLatent", "LTXVEmptyLatentAudio", "LTXVLatentUpsampler",
    "LatentUpscaleModelLoader", "LTXVAudioVAELoader", "LTXVAudioVAEDecode", "LTXVCropGuides",
    "LTXAVTextEncoderLoader", "LTXVDualCFGGuider", "CLIPTextEncodeFlux", "BatchImagesNode",
    "CameraAngle", "EmptyImage",
    "CLIPLoader", "CLIPTextEncode", "CLIPTextEncodeSDXL", "CheckpointLoaderSimple",
    "LotusConditioning", "SetFirstSigma", "HunyuanVideo15ImageToVideo",
    "TextEncodeQwenImage21", "QwenImage21Cache", "ConditioningLoader", "MarigoldV2PostProcess",
    "ResizeAndPadImage", "WanCameraImageToVideo", "WanCameraEmbedding",
    "EmptyChromaRadianceLatentImage", "ChromaRadianceOptions",
    "ControlNetApply", "ControlNetApplyAdvanced", "ControlNetLoader", "EmptyLatentImage",
    "EmptySD3LatentImage", "KSampler", "KSamplerAdvanced", "LoadImage", "LoadImageMask",
    "LoraLoader", "ModelSamplingSD3", "SaveImage", "SetLatentNoiseMask", "UNETLoader",
    "VAEDecode", "VAEEncode", "VAEEncodeForInpaint", "VAELoader", "SamplerCustom",
    "SamplerCustomAdvanced", "KSamplerSelect", "BasicScheduler", "RandomNoise",
    "DisableNoise", "CFGGuider", "BasicGuider", "ModelSamplingFlux", "LatentUpscale",
    "LatentUpscaleBy", "ImageUpscaleWithModel", "UpscaleModelLoader", "LoadVideo", "GetVideoComponents", "ModelAttentionBackend", "ConditioningZeroOut",
    "T5TokenizerOptions", "PreviewImage", "EmptyHunyuanLatentVideo", "EmptyMochiLatentVideo",
    "EmptyCosmosLatentVideo", "EmptyLTXVLatentVideo", "Wan22ImageToVideoLatent", "VAEDecodeTiled",
    "SaveAnimatedWEBP", "SaveAnimatedPNG", "SaveWEBM", "CreateVideo", "SaveVideo", "FluxGuidance",
    "LatentComposite", "ModelMergeSimple", "LoraLoaderModelOnly", "TripleCLIPLoader",
    "QuadrupleCLIPLoader", "InstructPixToPixConditioning", "DualCFGGuider",
    "InpaintModelConditioning", "DifferentialDiffusion", "SplitSigmas", "SplitSigmasDenoise",
    "KarrasScheduler", "ExponentialScheduler", "PolyexponentialScheduler",
    "BetaSamplingScheduler", "SDTurboScheduler", "AlignYourStepsScheduler", "FlipSigmas",
    "ModelSamplingDiscrete", "ModelSamplingContinuousEDM", "ImageScale", "ImageScaleBy",
    "ImageScaleToTotalPixels", "SVD_img2vid_Conditioning", "VideoLinearCFGGuidance",
    "ImageOnlyCheckpointLoader", "CLIPVisionLoader", "EmptyLatentAudio", "ConditioningStableAudio",
    "VAEDecodeAudio", "SaveAudio", "SaveAudioMP3", "SaveAudioOpus", "PreviewAudio",
    "ModelSamplingContinuousV", "ADE_AnimateDiffLoaderWithContext", "ADE_AnimateDiffLoaderGen1",
    "ADE_AnimateDiffCombine", "PrimitiveFloat", "ComfySwitchNode", "CFGNorm",
    "SaveImageAdvanced", "SaveAudioAdvanced", "EmptyFlux2LatentImage", "Flux2Scheduler",
    "ManualSigmas", "EmptyHunyuanVideo15Latent", "StringConcatenate", "ResolutionSelector",
    "ComfyMathExpression", "PreviewAny", "GeminiImage2Node", "TextGenerate", "ReferenceLatent",
    "FluxKontextMultiReferenceLatentMethod", "GetImageSize", "FluxKontextImageScale",
    "ImageStitch", "TextEncodeQwenImageEdit", "TextEncodeQwenImageEditPlus", "ModelSamplingAuraFlow",
    "ResizeImageMaskNode", "WanImageToVideo", "WanFirstLastFrameToVideo", "WanFunInpaintToVideo", "Wan22FunControlToVideo",
    "CLIPVisionEncode", "TextEncodeMageFlowEdit", "Canny", "ImageInvert",
    "QwenImageDiffsynthControlnet", "ModelPatchLoader", "ImageScaleToMaxDimension",
    "WanVaceToVideo", "TrimVideoLatent", "ImagePadForOutpaint", "StyleModelApply",
    "StyleModelLoader",
];

/// Strings from ComfyUI's vocabulary; every sampler and scheduler name
/// comes from the lowering's own lists (`words`).
const WORDS: [&str; 25] = [
    "enable", "disable", "default", "sd3", "", "a castle", "image.png", "no_such_sampler",
    "nearest-exact", "bilinear", "bicubic", "center", "area", "lanczos", "index", "uxo/uno",
    "euler_cfg_pp", "v_prediction", "edm", "x0", "lcm", "SDXL", "scale longer dimension",
    "scale total pixels", "match size",
];

/// [`WORDS`], then every sampler and scheduler the lowering knows.
fn words() -> &'static [&'static str] {
    static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = WORDS.to_vec();
        all.extend(lower::sampler_names());
        all.extend(lower::SCHEDULES);
        all
    })
}

fn patterns() -> &'static [Value] {
    static PARSED: OnceLock<Vec<Value>> = OnceLock::new();
    PARSED.get_or_init(|| {
        PATTERNS.iter().map(|t| serde_json::from_str(t).expect("a pattern fixture")).collect()
    })
}

/// Bytes taken one piece at a time; zeros when they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }
    fn pick(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { usize::from(self.byte()) % n }
    }
    fn number(&mut self) -> Value {
        let mut raw = [0u8; 8];
        raw.iter_mut().for_each(|b| *b = self.byte());
        match self.byte() % 4 {
            0 => json!(i64::from(raw[0]) - 16),
            1 => json!(i64::from_le_bytes(raw)),
            2 => serde_json::Number::from_f64(f64::from_le_bytes(raw)).map_or(json!(0.5), Value::Number),
            _ => json!(f64::from(raw[0]) / 64.0),
        }
    }
}

fn mutate(graph: &mut serde_json::Map<String, Value>, bytes: &mut Bytes) {
    let ids: Vec<String> = graph.keys().cloned().collect();
    let Some(id) = ids.get(bytes.pick(ids.len())).cloned() else { return };
    let op = bytes.byte() % 8;
    let node = &mut graph[&id];
    let names: Vec<String> = node["inputs"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    let name = names.get(bytes.pick(names.len())).cloned();
    match (op, name) {
        (0, Some(name)) => node["inputs"][&name] = bytes.number(),
        (1, Some(name)) => node["inputs"][&name] = json!(words()[bytes.pick(words().len())]),
        (2, Some(name)) => {
            let target = ids[bytes.pick(ids.len())].clone();
            node["inputs"][&name] = json!([target, bytes.pick(4)]);
        }
        (3, Some(name)) => {
            if let Some(inputs) = node["inputs"].as_object_mut() {
                inputs.remove(&name);
            }
        }
        (4, _) => node["class_type"] = json!(CLASSES[bytes.pick(CLASSES.len())]),
        (5, _) => {
            graph.remove(&id);
        }
        (6, _) => {
            let copy = node.clone();
            graph.insert(format!("{}", 1000 + bytes.pick(50)), copy);
        }
        (_, Some(name)) => node["inputs"][&name] = json!(bytes.byte() % 2 == 0),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let pattern = bytes.pick(PATTERNS.len());
    let mut graph = patterns()[pattern].clone();
    let Some(nodes) = graph.as_object_mut() else { return };
    for _ in 0..(bytes.byte() % 8) {
        mutate(nodes, &mut bytes);
    }
    let none = Target::default();
    let target = if pattern == LORA && bytes.byte() % 2 == 0 { lora_target() } else { &none };
    let Ok(lowered) = lower::lower_for(&graph, target) else { return };
    let text = lowered.document.to_string();
    let loaded = parse_text(&text, Format::Json, &Limits::default())
        .unwrap_or_else(|d| panic!("a lowered document does not load: {d:?}\n{graph:#}"));
    let report = wfstudio_core::validate(&loaded.document, &wfstudio_core::Options::default());
    assert!(report.diagnostics.is_empty(), "{:#?}\n{graph:#}", report.diagnostics);
});
