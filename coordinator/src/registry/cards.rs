//! The skill catalog as the workers describe it: each skill's input schema
//! carrying its description, and what a coordinator learns of the workers of the
//! others sharing its store (the skills their published cards offer).

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

/// The skill's input schema carrying the skill's description (the JSON Schema
/// annotation `description`, unless the schema has its own): the catalog then
/// tells a planner what each skill does.
pub(crate) fn with_description(schema: Value, description: String) -> Value {
    match schema {
        Value::Object(mut object) => {
            if !description.is_empty() {
                object
                    .entry("description")
                    .or_insert(Value::String(description));
            }
            Value::Object(object)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_carries_the_skill_description_unless_it_has_its_own() {
        let described = with_description(json!({"type": "object"}), "read a GDS".into());
        assert_eq!(described["description"], "read a GDS");
        let own = with_description(json!({"description": "own"}), "other".into());
        assert_eq!(own["description"], "own");
        assert_eq!(with_description(Value::Null, "x".into()), Value::Null);
    }
}
