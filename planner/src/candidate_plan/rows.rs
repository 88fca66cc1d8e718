//! The draft's rows: its units in rows of one device kind each (the point's row
//! order and row counts), the rows of block instances after them, placed by
//! `layout.place` and routed by `route.nets` into the target cell — or placed
//! unrouted when the workers cannot route.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Draft, PlacedUnit};
use crate::device_units::{RowKind, permutation};
use crate::placement_order::{fold, kind_name};
use crate::plan_builder::{TOP_CELL, skill_id};

impl Draft<'_> {
    /// The row kinds in the point's row order.
    fn kinds(&self) -> Vec<RowKind> {
        let kinds: Vec<RowKind> = self
            .units
            .iter()
            .map(|unit| unit.kind)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        permutation(&kinds, self.point.row_order as usize)
    }

    /// The cells of one kind in the point's order (a cell stands where its first
    /// device stands).
    fn row_of(&self, kind: RowKind) -> Vec<&PlacedUnit> {
        let place = |unit: &PlacedUnit| {
            unit.devices
                .iter()
                .filter_map(|device| self.order.iter().position(|listed| listed == device))
                .min()
                .unwrap_or(usize::MAX)
        };
        let mut cells: Vec<&PlacedUnit> =
            self.units.iter().filter(|unit| unit.kind == kind).collect();
        cells.sort_by_key(|unit| place(unit));
        cells
    }

    /// The rows of every kind, bottom to top: each kind folded into the point's
    /// number of rows (or one row per cell for tall aspect ratios).
    fn rows_by_kind(&self) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for kind in self.kinds() {
            let cells: Vec<(String, u64)> = self
                .row_of(kind)
                .into_iter()
                .map(|unit| (unit.cell.clone(), unit.weight))
                .collect();
            if cells.is_empty() {
                continue;
            }
            let count = if self.point.aspect_ratio_pct < 75 {
                cells.len()
            } else {
                self.point.rows.get(kind_name(kind)).copied().unwrap_or(1) as usize
            };
            rows.extend(fold(&cells, count));
        }
        rows
    }

    /// Whether `route.nets` cuts each kind's rows again by the cells' real widths and
    /// the tracks their channels need (which the planner does not know): when the point
    /// leaves the row counts open (no count for any kind, not one row per cell) and the
    /// workers take it. The rows of [`Draft::rows_by_kind`] are then a preference, kept
    /// unless a folding is smaller.
    fn folds_device_rows(&self) -> bool {
        self.point.aspect_ratio_pct >= 75
            && self.point.rows.is_empty()
            && self.units.len() > 1
            && self.builder.takes("route.nets", "fold_device_rows")
    }

    fn spacing_um(&self) -> f64 {
        self.point.spacing_nm as f64 / 1000.0
    }

    /// Rows of one device type each (bottom to top), then the rows of block
    /// instances, routed by `route.nets` into the target cell (TOP, or a block's);
    /// the rows of blocks are a preference the worker packs again by the blocks' real
    /// sizes (`pack_block_rows`, see [`Draft::packs_block_rows`]).
    pub(crate) fn place_in_rows_and_route(&mut self, pitch_um: f64) {
        let gap = pitch_um + self.spacing_um();
        let mut row_cells = Vec::new();
        let mut rows = self.rows_by_kind();
        let (block_rows, modules) = self.block_rows();
        let whole_rows: Vec<Vec<String>> = modules
            .iter()
            .map(|module| {
                module
                    .iter()
                    .map(|row| format!("{}ROW{}", self.target.prefix, rows.len() + row))
                    .collect()
            })
            .collect();
        rows.extend(block_rows);
        let shares_diffusion = self.builder.takes("layout.place", "devices");
        for (index, cells) in rows.iter().enumerate() {
            let row_cell = format!("{}ROW{index}", self.target.prefix);
            let mut arguments =
                json!({"cell_name": row_cell, "rows": [{"cells": cells, "gap": gap}]});
            let row_devices = self.single_devices_of(cells);
            if shares_diffusion && row_devices.len() > 1 {
                // neighbours facing one net stand on one diffusion (a series stack's inner nodes)
                arguments["devices"] = json!(row_devices);
            }
            if self.builder.push("layout.place", arguments, false, "") {
                row_cells.push(row_cell);
            }
        }
        let mut devices: Vec<Value> = self
            .drawn_devices()
            .map(|device| json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals}))
            .collect();
        devices.extend(self.block_devices());
        let nets: Vec<Value> = self
            .circuit
            .nets
            .iter()
            .map(|net| {
                let mut item = json!({"name": net.name, "net_type": net.net_type.as_str()});
                if let Some(current) = net.current {
                    // the worker knows the layers: it sizes the wires (issue 26)
                    item["current"] = json!(current);
                }
                item
            })
            .collect();
        let cell = self.target.cell.clone();
        let mut arguments =
            json!({"cell_name": cell, "rows": row_cells, "devices": devices, "nets": nets});
        if !self.target.ports.is_empty() {
            arguments["ports"] = json!(self.target.ports);
        }
        if self.packs_block_rows() {
            arguments["pack_block_rows"] = if whole_rows.is_empty() {
                json!({"gap": gap})
            } else {
                json!({"gap": gap, "whole_rows": whole_rows})
            };
            if let Some(rank) = self.pack_rank() {
                arguments["pack_block_rows"]["rank"] = json!(rank);
            }
        }
        if self.folds_device_rows() {
            arguments["fold_device_rows"] = json!({"gap": gap});
        }
        if self.builder.push("route.nets", arguments, false, "") {
            self.top = Some(cell);
            self.routed = true;
        }
    }

    /// Placement into TOP without routing (when the workers cannot route).
    pub(crate) fn place_unrouted(&mut self) {
        if !self.builder.has("layout.place") {
            return;
        }
        let rows: Vec<Vec<String>> = if self.point.aspect_ratio_pct > 150 {
            vec![
                self.kinds()
                    .iter()
                    .flat_map(|kind| self.row_of(*kind))
                    .map(|unit| unit.cell.clone())
                    .collect(),
            ]
        } else {
            self.rows_by_kind()
        };
        let spacing_um = self.spacing_um();
        let rows: Vec<Value> = rows
            .into_iter()
            .map(|cells| json!({"cells": cells, "gap": spacing_um}))
            .collect();
        let arguments = json!({"cell_name": TOP_CELL, "rows": rows, "row_gap": spacing_um});
        if self.builder.push("layout.place", arguments, false, "") {
            self.top = Some(TOP_CELL.to_string());
        }
    }
}
