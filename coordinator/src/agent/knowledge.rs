//! Layout knowledge for the LLM planner's prompt (seed 000 §4.2.4): the notes of
//! `docs/knowledge/` (embedded at build time), chunked at their `## ` sections,
//! indexed with BM25 and retrieved by the circuit's modules, device types, the
//! process and the failures seen, at most one chunk per section and two per note.

use std::sync::OnceLock;

use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};
use centroid_schemas::TaskContext;

mod notes {
    include!(concat!(env!("OUT_DIR"), "/knowledge_notes.rs"));
}

/// One retrievable section of a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// `file.md#Section title`
    pub source: String,
    pub text: String,
}

/// A chunk found for a query, with its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub chunk: Chunk,
    pub score: f32,
}

struct Index {
    chunks: Vec<Chunk>,
    engine: SearchEngine<u32>,
}

/// The notes' sections; the note's title and topics go with each for retrieval.
pub fn chunks() -> Vec<(Chunk, String)> {
    let mut chunks = Vec::new();
    for (file, text) in notes::NOTES {
        let (front, body) = split_front_matter(text);
        let topics = front
            .lines()
            .filter(|line| line.starts_with("title:") || line.starts_with("topics:"))
            .collect::<Vec<_>>()
            .join(" ");
        for section in body.split("\n## ").skip(1) {
            let (title, content) = section.split_once('\n').unwrap_or((section, ""));
            let chunk = Chunk {
                source: format!("{file}#{}", title.trim()),
                text: content.trim().to_string(),
            };
            let searchable = format!("{topics} {title} {}", chunk.text).replace('_', " ");
            chunks.push((chunk, searchable));
        }
    }
    chunks
}

fn split_front_matter(text: &str) -> (&str, &str) {
    text.strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .unwrap_or(("", text))
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let chunks = chunks();
        let documents: Vec<Document<u32>> = chunks
            .iter()
            .enumerate()
            .map(|(id, (_, searchable))| Document::new(id as u32, searchable.clone()))
            .collect();
        let engine =
            SearchEngineBuilder::<u32>::with_documents(Language::English, documents).build();
        Index {
            chunks: chunks.into_iter().map(|(chunk, _)| chunk).collect(),
            engine,
        }
    })
}

/// The knowledge for a circuit: the best section on its process, then the best
/// on its modules, device types and the failure families seen so far (`limit` in
/// all, deduplicated).
pub fn for_circuit(task: &TaskContext, failures: &[String], limit: usize) -> Vec<Found> {
    let process = task.drc_rules.tech.replace('_', " ");
    let mut words: Vec<String> = task
        .circuit
        .modules
        .iter()
        .map(|module| module.module_type.as_str().replace('_', " "))
        .collect();
    words.extend(
        task.circuit
            .devices
            .iter()
            .map(|device| device.device_type.as_str().to_string()),
    );
    words.extend(failures.iter().cloned());
    words.sort();
    words.dedup();
    let mut found = retrieve(&process, 1);
    for more in retrieve(&words.join(" "), limit) {
        if found.len() < limit
            && !found
                .iter()
                .any(|seen| seen.chunk.source == more.chunk.source)
        {
            found.push(more);
        }
    }
    found
}

/// The best `limit` chunks for `query`: one per section, at most two per note.
pub fn retrieve(query: &str, limit: usize) -> Vec<Found> {
    let index = index();
    let mut found: Vec<Found> = Vec::new();
    for result in index.engine.search(query, limit * 4) {
        let chunk = &index.chunks[result.document.id as usize];
        let note = chunk.source.split('#').next().unwrap_or_default();
        let per_note = found
            .iter()
            .filter(|seen| seen.chunk.source.starts_with(&format!("{note}#")))
            .count();
        if per_note < 2 && !found.iter().any(|seen| seen.chunk.source == chunk.source) {
            found.push(Found {
                chunk: chunk.clone(),
                score: result.score,
            });
        }
        if found.len() == limit {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_note_is_chunked_with_its_source() {
        let chunks = chunks();
        assert!(notes::NOTES.len() >= 10, "the notes are embedded");
        assert!(chunks.len() >= 30, "{}", chunks.len());
        assert!(
            chunks
                .iter()
                .all(|(chunk, _)| chunk.source.contains(".md#") && !chunk.text.is_empty())
        );
    }

    #[test]
    fn retrieval_follows_the_process_and_the_modules() {
        for (tech, note) in [
            ("sky130", "process_sky130.md#"),
            ("ihp sg13g2", "process_ihp_sg13g2.md#"),
            ("gf180mcu 3v3", "process_gf180mcu.md#"),
        ] {
            let found = retrieve(tech, 1);
            assert!(found[0].chunk.source.starts_with(note), "{tech}: {found:?}");
        }
        let pairs = retrieve("current mirror differential pair", 4);
        let comparator = retrieve("cross coupled pair latch comparator", 3);
        for (found, note) in [
            (&pairs, "current_mirrors_and_pairs.md#"),
            (&comparator, "comparators_and_otas.md#"),
        ] {
            assert!(
                found
                    .iter()
                    .any(|found| found.chunk.source.starts_with(note)),
                "{note}: {found:?}"
            );
            // at most two sections of one note
            let mut notes: Vec<&str> = found
                .iter()
                .map(|found| found.chunk.source.split('#').next().unwrap_or_default())
                .collect();
            notes.sort_unstable();
            for note in &notes {
                assert!(notes.iter().filter(|other| *other == note).count() <= 2);
            }
        }
        assert_eq!(pairs, retrieve("current mirror differential pair", 4));
    }
}
