//! Layout knowledge for the LLM planner's prompt (seed 000 §4.2.4): the notes of
//! `docs/knowledge/` (embedded at build time), chunked at their `## ` sections,
//! indexed with BM25. A circuit gets its topology's section first (its class,
//! told from its recognised modules and devices), then its process's, then those
//! found for its modules, device types and the failures seen — at most one chunk
//! per section and two per note.

use std::sync::OnceLock;

use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};
use centroid_schemas::TaskContext;
use centroid_schemas::circuit::{DeviceType, NetType};
use centroid_schemas::module_types::ModuleType;

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

/// The circuit classes a note describes, as the section (`file.md#title`) of
/// the note on that topology.
pub mod topology {
    pub const STRONGARM: &str = "comparators_and_otas.md#StrongARM latch comparator";
    pub const FOLDED_CASCODE: &str = "comparators_and_otas.md#Folded-cascode OTA";
    pub const MILLER: &str = "comparators_and_otas.md#Miller-compensated two-stage OTA";
    pub const OTA5: &str = "comparators_and_otas.md#Five-transistor OTA";
    pub const TWO_SUPPLIES: &str = "multiple_supplies.md#Two supply domains in one analog block";
    pub const RATIOED_MIRRORS: &str =
        "current_mirrors_and_pairs.md#Ratioed mirrors (1:2, 1:4) and mirrors across hierarchy";
    pub const MIRROR: &str = "current_mirrors_and_pairs.md#Current mirror layout";
    pub const PAIR: &str = "current_mirrors_and_pairs.md#Differential pair layout";
}

/// The section on the circuit's topology: its class told from the recognised
/// modules (a cross-coupled pair is a latch; folding current sources and
/// cascodes around an input pair a folded cascode; a compensation capacitor
/// after a pair a Miller OTA; a pair on a mirror load a 5T OTA; mirrors alone
/// a mirror bank) and its supplies (two power nets: two domains).
pub fn topology_of(task: &TaskContext) -> Option<&'static str> {
    let circuit = &task.circuit;
    let count = |kind: ModuleType| {
        circuit
            .modules
            .iter()
            .filter(|module| module.module_type == kind)
            .count()
    };
    let pair = count(ModuleType::DifferentialPair) > 0;
    let supplies = circuit
        .nets
        .iter()
        .filter(|net| net.net_type == NetType::Power)
        .count();
    let capacitor = circuit
        .devices
        .iter()
        .any(|device| device.device_type == DeviceType::Capacitor);
    let ratioed = circuit.modules.iter().any(|module| {
        module.module_type == ModuleType::CurrentMirror && module.members().count() > 2
    });
    Some(if count(ModuleType::CrossCoupledPair) > 0 {
        topology::STRONGARM
    } else if pair && count(ModuleType::MatchedCurrentSources) > 0 && count(ModuleType::Cascode) > 1
    {
        topology::FOLDED_CASCODE
    } else if supplies > 1 {
        topology::TWO_SUPPLIES
    } else if pair && capacitor {
        topology::MILLER
    } else if pair && count(ModuleType::CurrentMirror) > 0 {
        topology::OTA5
    } else if ratioed {
        topology::RATIOED_MIRRORS
    } else if count(ModuleType::CurrentMirror) > 0 {
        topology::MIRROR
    } else if pair {
        topology::PAIR
    } else {
        return None;
    })
}

/// The chunk of section `source`, scored as BM25 scores it for `query`.
fn section(source: &str, query: &str) -> Option<Found> {
    let index = index();
    let position = index
        .chunks
        .iter()
        .position(|chunk| chunk.source == source)?;
    let score = index
        .engine
        .search(query, index.chunks.len())
        .into_iter()
        .find(|result| result.document.id as usize == position)
        .map_or(0.0, |result| result.score);
    Some(Found {
        chunk: index.chunks[position].clone(),
        score,
    })
}

/// The knowledge for a circuit: the section on its topology, the best section
/// on its process, then the best on its modules, device types and the failure
/// families seen so far (`limit` in all, deduplicated, two per note at most).
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
    let query = words.join(" ");
    let mut found: Vec<Found> = topology_of(task)
        .and_then(|source| section(source, &query))
        .into_iter()
        .collect();
    for more in retrieve(&process, 1)
        .into_iter()
        .chain(retrieve(&query, limit + 2))
    {
        let note = more.chunk.source.split('#').next().unwrap_or_default();
        let per_note = found
            .iter()
            .filter(|seen| seen.chunk.source.starts_with(&format!("{note}#")))
            .count();
        if found.len() < limit
            && per_note < 2
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
    fn every_topology_names_a_section_of_a_note() {
        let sources: Vec<String> = chunks()
            .into_iter()
            .map(|(chunk, _)| chunk.source)
            .collect();
        for source in [
            topology::STRONGARM,
            topology::FOLDED_CASCODE,
            topology::MILLER,
            topology::OTA5,
            topology::TWO_SUPPLIES,
            topology::RATIOED_MIRRORS,
            topology::MIRROR,
            topology::PAIR,
        ] {
            assert!(sources.iter().any(|known| known == source), "{source}");
        }
    }

    #[test]
    fn each_example_retrieves_its_own_topology_note_first_then_its_process() {
        use centroid_schemas::InputPaths;
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let expected = [
            ("ota5", topology::OTA5),
            ("ota5_perf", topology::OTA5),
            ("ota5_spice", topology::OTA5),
            ("miller_ota", topology::MILLER),
            ("folded_cascode", topology::FOLDED_CASCODE),
            ("strongarm_comparator", topology::STRONGARM),
            ("mirror_bank", topology::RATIOED_MIRRORS),
            ("two_supply", topology::TWO_SUPPLIES),
            ("gf180/ota5", topology::OTA5),
            ("gf180/miller_ota", topology::MILLER),
            ("gf180/folded_cascode", topology::FOLDED_CASCODE),
            ("gf180/strongarm_comparator", topology::STRONGARM),
            ("gf180/mirror_bank", topology::RATIOED_MIRRORS),
        ];
        // every example circuit is listed here
        let mut listed = 0;
        for dir in ["", "gf180"] {
            for entry in std::fs::read_dir(examples.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.join("objectives.json").exists() {
                    listed += 1;
                }
            }
        }
        assert_eq!(
            listed,
            expected.len(),
            "an example without its expected topology"
        );
        for (example, section) in expected {
            let task = TaskContext::load_paths(&InputPaths::in_dir(&examples.join(example)), "t")
                .unwrap_or_else(|errors| panic!("{example}: {errors}"));
            let found = for_circuit(&task, &["drc".to_string()], 4);
            let sources: Vec<&str> = found
                .iter()
                .map(|found| found.chunk.source.as_str())
                .collect();
            assert_eq!(sources[0], section, "{example}: {sources:?}");
            let process = format!("process_{}", task.drc_rules.tech.split('_').next().unwrap());
            assert!(sources[1].starts_with(&process), "{example}: {sources:?}");
            assert_eq!(sources.len(), 4, "{example}: {sources:?}");
        }
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
