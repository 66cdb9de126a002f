//! Picture sizes the graph writes: an `EmptyImage`'s, maybe scaled by
//! `ImageScaleBy` (each side times the factor, rounded as Python rounds,
//! ties to even), or a `ResizeImageMaskNode`'s that scales to both of
//! its dimensions (of a batch the graph writes, a `LoadImage` one
//! picture), which a `GetImageSize` reads as constants. The LTX-2
//! templates size their latents so, from a blank picture halved.

use crate::comfyui::link::api_link;
use serde_json::{Map, Value};

/// The classes a written size is carried through.
pub(super) const CARRIERS: &[&str] = &["EmptyImage", "ImageScaleBy", "ResizeImageMaskNode"];

/// ComfyUI's largest picture side and batch.
const MAX_SIDE: i64 = 16384;
const MAX_BATCH: i64 = 4096;
/// How many nodes a size is followed through.
const MAX_DEPTH: usize = 16;

/// The width, height and batch of the pictures `link` carries, where the
/// graph writes them, and the nodes that make them.
pub(super) fn written_size(
    link: &Value,
    nodes: &Map<String, Value>,
) -> Option<([i64; 3], Vec<String>)> {
    let mut read = Vec::new();
    let size = size_at(link, nodes, &mut read)?;
    Some((size, read))
}

fn size_at(link: &Value, nodes: &Map<String, Value>, read: &mut Vec<String>) -> Option<[i64; 3]> {
    let (origin, slot) = api_link(link)?;
    if slot != 0 || read.len() > MAX_DEPTH {
        return None;
    }
    read.push(origin.clone());
    let node = nodes.get(&origin)?;
    let inputs = node.get("inputs")?.as_object()?;
    let int = |name: &str| inputs.get(name)?.as_i64();
    match node.get("class_type")?.as_str()? {
        "EmptyImage" => {
            let size = [int("width")?, int("height")?, int("batch_size")?];
            let sides = (1..=MAX_SIDE).contains(&size[0]) && (1..=MAX_SIDE).contains(&size[1]);
            (sides && (1..=MAX_BATCH).contains(&size[2])).then_some(size)
        }
        "ImageScaleBy" => {
            let factor = inputs.get("scale_by")?.as_f64()?;
            if !(0.01..=8.0).contains(&factor) {
                return None;
            }
            let [width, height, batch] = size_at(inputs.get("image")?, nodes, read)?;
            let scaled = |side: i64| (side as f64 * factor).round_ties_even() as i64;
            // ComfyUI's resize fails on a side of 0.
            let size = [scaled(width), scaled(height), batch];
            (size[0] >= 1 && size[1] >= 1).then_some(size)
        }
        "ResizeImageMaskNode" if inputs.get("resize_type")? == "scale dimensions" => {
            let sides = [int("resize_type.width")?, int("resize_type.height")?];
            if !sides.iter().all(|side| (1..=MAX_SIDE).contains(side)) {
                return None;
            }
            let input = inputs.get("input")?;
            let batch = match api_link(input) {
                Some((loader, 0)) if class_of(nodes, &loader) == Some("LoadImage") => 1,
                _ => size_at(input, nodes, read)?[2],
            };
            Some([sides[0], sides[1], batch])
        }
        _ => None,
    }
}

/// The class of node `id`, if the graph has it.
fn class_of<'n>(nodes: &'n Map<String, Value>, id: &str) -> Option<&'n str> {
    nodes.get(id)?.get("class_type")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::written_size;
    use serde_json::json;

    #[test]
    fn a_blank_picture_scaled_has_its_sides_rounded_to_even() {
        let nodes = json!({
            "1": {"class_type": "EmptyImage", "inputs": {"width": 1280, "height": 720, "batch_size": 2, "color": 0}},
            "2": {"class_type": "ImageScaleBy", "inputs": {"upscale_method": "lanczos", "scale_by": 0.5, "image": ["1", 0]}},
            "3": {"class_type": "EmptyImage", "inputs": {"width": 5, "height": 7, "batch_size": 1}},
            "4": {"class_type": "ImageScaleBy", "inputs": {"scale_by": 0.5, "image": ["3", 0]}},
            "5": {"class_type": "ImageScaleBy", "inputs": {"scale_by": 0.5, "image": ["9", 0]}},
            "6": {"class_type": "EmptyImage", "inputs": {"width": 0, "height": 7, "batch_size": 1}},
            "7": {"class_type": "ImageScaleBy", "inputs": {"scale_by": 0.01, "image": ["3", 0]}}
        });
        let nodes = nodes.as_object().expect("object");
        let size = |link| written_size(&link, nodes).map(|(size, _)| size);
        assert_eq!(
            written_size(&json!(["2", 0]), nodes),
            Some(([640, 360, 2], vec!["2".to_string(), "1".to_string()]))
        );
        // 2.5 and 3.5 round to even, as Python's round does.
        assert_eq!(size(json!(["4", 0])), Some([2, 4, 1]));
        assert_eq!(size(json!(["5", 0])), None);
        assert_eq!(size(json!(["6", 0])), None);
        assert_eq!(size(json!(["1", 1])), None);
        // A side scaled below one pixel.
        assert_eq!(size(json!(["7", 0])), None);
    }

    #[test]
    fn a_resize_to_both_dimensions_writes_its_size_on_a_batch_the_graph_knows() {
        let resize = |size: [i64; 2], input: &str| json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale dimensions", "resize_type.width": size[0], "resize_type.height": size[1], "resize_type.crop": "center", "scale_method": "lanczos", "input": [input, 0]}});
        let nodes = json!({
            "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
            "2": resize([1280, 720], "1"),
            "3": {"class_type": "EmptyImage", "inputs": {"width": 64, "height": 64, "batch_size": 3, "color": 0}},
            "4": resize([96, 80], "3"),
            "5": resize([0, 80], "1"),
            "6": {"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale longer dimension", "resize_type.longer_size": 512, "scale_method": "area", "input": ["1", 0]}},
            "7": {"class_type": "LoadImageMask", "inputs": {"image": "m.png"}},
            "8": resize([96, 80], "7")
        });
        let nodes = nodes.as_object().expect("object");
        let size = |link| written_size(&link, nodes).map(|(size, _)| size);
        // A LoadImage gives one picture.
        assert_eq!(size(json!(["2", 0])), Some([1280, 720, 1]));
        assert_eq!(size(json!(["4", 0])), Some([96, 80, 3]));
        // A side taken from the picture, a size from the picture, or a
        // batch the graph does not write.
        assert_eq!(size(json!(["5", 0])), None);
        assert_eq!(size(json!(["6", 0])), None);
        assert_eq!(size(json!(["8", 0])), None);
    }
}
