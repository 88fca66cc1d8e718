//! An event's data as the JSON text it is stored, logged and sent as: serialised
//! once, when the event is made, then written as it is into the store's record, the
//! event's log line and WatchJob's `data_json` — not built as a `Value` tree that the
//! store, the log and WatchJob each serialise again. Read back from the store, the
//! text is copied, not parsed into a tree.

use std::fmt;

use centroid_planner::job_events::EventData;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// JSON text of an event's data (`null`: none).
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventJson(Box<RawValue>);

impl EventJson {
    /// The data serialised.
    pub fn of(data: &EventData) -> EventJson {
        EventJson(serde_json::value::to_raw_value(data).expect("event data serializes"))
    }

    pub fn null() -> EventJson {
        EventJson(RawValue::NULL.to_owned())
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    pub fn is_null(&self) -> bool {
        self.as_str() == "null"
    }

    /// The data parsed as a JSON value (`Null` when none).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(self.as_str()).unwrap_or(serde_json::Value::Null)
    }
}

impl Default for EventJson {
    fn default() -> EventJson {
        EventJson::null()
    }
}

impl PartialEq for EventJson {
    fn eq(&self, other: &EventJson) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for EventJson {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_what_a_value_of_the_data_serialises_to() {
        let data = EventData::CandidateDispatched {
            worker_id: "w1".into(),
            delivery: 2,
        };
        let json = EventJson::of(&data);
        assert_eq!(json.as_str(), data.to_value().to_string());
        assert_eq!(json.value(), data.to_value());
        assert!(!json.is_null());
    }

    #[test]
    fn a_record_keeps_the_text_through_a_round_trip_and_reads_none_as_null() {
        #[derive(Serialize, Deserialize)]
        struct Record {
            #[serde(default)]
            data: EventJson,
        }
        let data = EventJson::of(&EventData::Nothing);
        let text = serde_json::to_string(&Record { data: data.clone() }).unwrap();
        assert_eq!(text, format!("{{\"data\":{}}}", data.as_str()));
        let read: Record = serde_json::from_str(&text).unwrap();
        assert_eq!(read.data, data);
        let without: Record = serde_json::from_str("{}").unwrap();
        assert!(without.data.is_null());
    }
}
