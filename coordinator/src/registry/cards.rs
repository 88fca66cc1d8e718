//! What a coordinator learns of the workers of the others sharing its store:
//! the skills (and their schemas) their published cards offer.

use serde_json::Value;

use crate::model::WorkerCard;

/// The skills (with their input schemas) that the workers behind `cards` offer —
/// how a coordinator without workers of its own plans for those of the others.
pub fn skill_catalog_of_cards(
    cards: &[WorkerCard],
) -> centroid_planner::skill_catalog::SkillCatalog {
    let mut skills = centroid_planner::skill_catalog::SkillCatalog::new();
    for card in cards {
        for skill in &card.skills {
            let schema = card.schemas.get(skill).cloned().unwrap_or(Value::Null);
            skills.entry(skill.clone()).or_insert(schema);
        }
    }
    skills
}
