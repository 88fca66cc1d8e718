//! Embeds the layout knowledge notes (`docs/knowledge/*.md`, README excepted) in the
//! coordinator, so a deployed coordinator retrieves them without the repository.

use std::path::PathBuf;

fn main() {
    let notes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/knowledge");
    println!("cargo:rerun-if-changed={}", notes.display());
    let mut names: Vec<String> = std::fs::read_dir(&notes)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".md") && name != "README.md")
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut code = String::from(
        "/// (file name, text) of every knowledge note.\npub const NOTES: &[(&str, &str)] = &[\n",
    );
    for name in names {
        let path = notes.join(&name);
        println!("cargo:rerun-if-changed={}", path.display());
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("knowledge_notes.rs"), code).expect("OUT_DIR is writable");
}
