//! The media types of artifacts (docs/contracts.md, "Artifacts"): what the worker
//! labels a scratch file with, and what the coordinator and the CLI look for.

pub const GDS: &str = "application/x-gdsii";
pub const OASIS: &str = "application/x-oasis";
pub const PNG: &str = "image/png";

/// The media type of a file, by its extension (case-insensitive).
pub fn of_file(name: &str) -> &'static str {
    let extension = name
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match extension.as_str() {
        "gds" | "gds2" | "gdsii" => GDS,
        "oas" | "oasis" => OASIS,
        "png" => PNG,
        "svg" => "image/svg+xml",
        "json" => "application/json",
        "txt" | "log" => "text/plain",
        "lyrdb" | "xml" => "application/xml",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        assert_eq!(of_file("a/top.GDS"), "application/x-gdsii");
        assert_eq!(of_file("shot.png"), "image/png");
    }
}
