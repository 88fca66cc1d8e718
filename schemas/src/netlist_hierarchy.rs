//! The checks of a netlist's cell hierarchy as a whole: no cell contains itself, and the
//! top cell is neither too deep nor too many devices once flattened.

use std::collections::HashMap;

use crate::issue::IssueSink;
use crate::netlist::{MAX_FLAT_DEVICES, MAX_HIERARCHY_DEPTH, NetlistDocument};

#[derive(Clone, Copy, PartialEq)]
enum Mark {
    Unvisited,
    OnPath,
    Done,
}

/// Reports every cycle in the subcell graph once, at the instance that closes it; true
/// when there is none. Depth-first without recursion: a hierarchy of any depth is a
/// message, not a stack overflow.
pub(crate) fn check_hierarchy_is_acyclic(
    document: &NetlistDocument,
    cells: &HashMap<&str, usize>,
    sink: &mut IssueSink,
) -> bool {
    let mut acyclic = true;
    let mut marks = vec![Mark::Unvisited; document.cells.len()];
    for root in 0..document.cells.len() {
        if marks[root] != Mark::Unvisited
            || cells.get(document.cells[root].name.as_str()) != Some(&root)
        {
            continue;
        }
        // (cell, its next subcell to look at): the path from the root.
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        marks[root] = Mark::OnPath;
        while let Some((cell_index, next)) = path.last_mut() {
            let cell_index = *cell_index;
            let subcells = &document.cells[cell_index].subcells;
            let Some(subcell) = subcells.get(*next) else {
                marks[cell_index] = Mark::Done;
                path.pop();
                continue;
            };
            let subcell_index = *next;
            *next += 1;
            let Some(&target) = cells.get(subcell.cell.as_str()) else {
                continue;
            };
            match marks[target] {
                Mark::OnPath => {
                    acyclic = false;
                    let start = path
                        .iter()
                        .position(|&(index, _)| index == target)
                        .unwrap_or(0);
                    let mut names: Vec<&str> = path[start..]
                        .iter()
                        .map(|&(index, _)| document.cells[index].name.as_str())
                        .collect();
                    names.push(&document.cells[target].name);
                    sink.push(
                        format!("/cells/{cell_index}/subcells/{subcell_index}/cell"),
                        format!(
                            "the cell hierarchy has a cycle: {}; a cell may not contain itself",
                            names.join(" → ")
                        ),
                    );
                }
                Mark::Unvisited => {
                    marks[target] = Mark::OnPath;
                    path.push((target, 0));
                }
                Mark::Done => {}
            }
        }
    }
    acyclic
}

/// The top cell of an acyclic hierarchy: at most [`MAX_HIERARCHY_DEPTH`] levels of
/// subcells and at most [`MAX_FLAT_DEVICES`] devices once flattened (counted per cell,
/// without flattening).
pub(crate) fn check_hierarchy_size(
    document: &NetlistDocument,
    cells: &HashMap<&str, usize>,
    top: usize,
    sink: &mut IssueSink,
) {
    // Per cell: (levels of subcells below it, devices once flattened), in post-order.
    let mut sizes: Vec<Option<(usize, u64)>> = vec![None; document.cells.len()];
    let mut stack = vec![top];
    while let Some(&cell_index) = stack.last() {
        if sizes[cell_index].is_some() {
            stack.pop();
            continue;
        }
        let cell = &document.cells[cell_index];
        let targets = cell
            .subcells
            .iter()
            .filter_map(|subcell| cells.get(subcell.cell.as_str()).copied());
        let mut pending: Vec<usize> = targets
            .clone()
            .filter(|&target| sizes[target].is_none())
            .collect();
        pending.sort_unstable();
        pending.dedup();
        // Acyclic: the children pushed now are all computed before this cell is on top
        // again, so each cell is expanded once.
        if !pending.is_empty() {
            stack.extend(pending);
            continue;
        }
        stack.pop();
        let (depth, devices) = targets.fold(
            (0, cell.devices.len() as u64),
            |(depth, devices), target| {
                let (child_depth, child_devices) = sizes[target].expect("computed first");
                (
                    depth.max(child_depth + 1),
                    devices.saturating_add(child_devices),
                )
            },
        );
        sizes[cell_index] = Some((depth, devices));
    }
    let (depth, devices) = sizes[top].expect("computed");
    let name = &document.cells[top].name;
    if depth > MAX_HIERARCHY_DEPTH {
        sink.push(
            "/top",
            format!("top cell \"{name}\" nests subcells {depth} levels deep; at most {MAX_HIERARCHY_DEPTH} levels are read"),
        );
    } else if devices > MAX_FLAT_DEVICES {
        sink.push(
            "/top",
            format!("top cell \"{name}\" flattens to {devices} devices with its subcells flattened; at most {MAX_FLAT_DEVICES} are laid out"),
        );
    }
}
