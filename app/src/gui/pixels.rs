//! Pictures as egui textures for the previews and the video player.

/// A picture as a texture that zooms without blur (nearest-neighbour), as
/// every preview shows pixels.
pub(super) fn texture(
    ctx: &egui::Context,
    name: String,
    rgb: &wfstudio_runner::media::Rgb8,
) -> egui::TextureHandle {
    let image = match &rgb.alpha {
        Some(_) => egui::ColorImage::from_rgba_unmultiplied([rgb.width, rgb.height], &rgb.rgba()),
        None => egui::ColorImage::from_rgb([rgb.width, rgb.height], &rgb.pixels),
    };
    ctx.load_texture(name, image, egui::TextureOptions::NEAREST)
}
