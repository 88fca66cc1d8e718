//! The devices of a row of single MOS cells, for `layout.place` to put neighbours
//! facing one net (a series stack's inner node) on one diffusion.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::Draft;
use crate::device_units::RowKind;
use crate::plan_builder::skill_id;

impl Draft<'_> {
    /// The MOS devices drawn one per cell among `cells` (their ids and terminals as
    /// `route.nets` takes them), for `layout.place` to put neighbours facing one net on
    /// one diffusion.
    pub(super) fn single_devices_of(&self, cells: &[String]) -> Vec<Value> {
        let ids: HashSet<&str> = self
            .units
            .iter()
            .filter(|unit| {
                unit.devices.len() == 1 && matches!(unit.kind, RowKind::Nmos | RowKind::Pmos)
            })
            .filter(|unit| cells.contains(&unit.cell))
            .map(|unit| unit.devices[0].as_str())
            .collect();
        self.drawn_devices()
            .filter(|device| ids.contains(device.id.as_str()))
            .map(|device| json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals}))
            .collect()
    }
}
