//! The order of one row's blocks (a matched module's devices, or one device) as a
//! layout engineer draws a branch: the signal nets the blocks share span the fewest
//! places, and of the orders alike, the one whose nets stand above (or below) the
//! same nets of the rows arranged before — so that a net wired between an nmos and
//! a pmos row runs straight up rather than across the channel.

use std::collections::BTreeMap;

use centroid_schemas::{Circuit, NetType};

/// The most blocks of one row whose orders are all tried; a longer row keeps its
/// order as given.
const MOST_BLOCKS_ARRANGED: usize = 8;

/// Where the signal nets of the rows arranged so far stand: net → the x-centres of
/// the blocks it touches, in fingers from the row's centre (rows are centred on one
/// axis by `layout.place`).
pub type NetPlaces = BTreeMap<String, Vec<f64>>;

/// A row's blocks with their signal nets and widths.
struct Row<'a> {
    /// per block, the ids (into `names`) of its signal nets
    nets: Vec<Vec<usize>>,
    /// per block, its width in fingers
    widths: Vec<u64>,
    names: Vec<&'a str>,
}

impl<'a> Row<'a> {
    fn of(blocks: &[Vec<String>], circuit: &'a Circuit) -> Row<'a> {
        let mut names: Vec<&str> = Vec::new();
        let mut nets = Vec::new();
        let mut widths = Vec::new();
        for block in blocks {
            let devices: Vec<_> = block.iter().filter_map(|id| circuit.device(id)).collect();
            let mut ids: Vec<usize> = devices
                .iter()
                .flat_map(|device| {
                    device
                        .terminals
                        .iter()
                        .filter(|(terminal, _)| terminal.as_str() != "b")
                        .map(|(_, net)| net.as_str())
                })
                .filter(|net| circuit.net_type(net) == NetType::Signal)
                .map(|net| match names.iter().position(|known| *known == net) {
                    Some(id) => id,
                    None => {
                        names.push(net);
                        names.len() - 1
                    }
                })
                .collect();
            ids.sort();
            ids.dedup();
            nets.push(ids);
            widths.push(
                devices
                    .iter()
                    .map(|device| u64::from(device.params.nf.max(1) * device.params.m.max(1)))
                    .sum::<u64>()
                    .max(1),
            );
        }
        Row {
            nets,
            widths,
            names,
        }
    }

    /// Σ over the nets of (last − first position) of the blocks they touch.
    fn span(&self, order: &[usize]) -> usize {
        let mut first = vec![usize::MAX; self.names.len()];
        let mut last = vec![0; self.names.len()];
        for (position, block) in order.iter().enumerate() {
            for &net in &self.nets[*block] {
                first[net] = first[net].min(position);
                last[net] = last[net].max(position);
            }
        }
        first
            .iter()
            .zip(&last)
            .filter(|(first, _)| **first != usize::MAX)
            .map(|(first, last)| last - first)
            .sum()
    }

    /// The x-centre of each block of `order` (indexed by block), in fingers from
    /// the row's centre.
    fn centres(&self, order: &[usize]) -> Vec<f64> {
        let total: u64 = self.widths.iter().sum();
        let mut centres = vec![0.0; self.widths.len()];
        let mut left = 0u64;
        for &block in order {
            let width = self.widths[block];
            centres[block] = (2 * left + width) as f64 / 2.0 - total as f64 / 2.0;
            left += width;
        }
        centres
    }

    /// Σ over the nets also in `placed`: how far their mean x here is from their
    /// mean x in the rows arranged before.
    fn misalignment(&self, order: &[usize], placed: &NetPlaces) -> f64 {
        let centres = self.centres(order);
        let mut sum = 0.0;
        for (id, name) in self.names.iter().enumerate() {
            let Some(there) = placed.get(*name).filter(|xs| !xs.is_empty()) else {
                continue;
            };
            let here: Vec<f64> = (0..self.nets.len())
                .filter(|block| self.nets[*block].contains(&id))
                .map(|block| centres[block])
                .collect();
            sum += (mean(&here) - mean(there)).abs();
        }
        sum
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// `blocks` (devices that stand together) in the order where the signal nets two
/// blocks or more share span the fewest places in all (Σ last − first position);
/// of orders alike, the one whose nets stand closest to where `placed` (the rows
/// arranged before) has them; of those, the first in the order given. Every order
/// is tried. Supply nets go to the rails, not the channels, and bulks are not wired.
pub fn arrange_by_nets(
    blocks: Vec<Vec<String>>,
    circuit: &Circuit,
    placed: &NetPlaces,
) -> Vec<Vec<String>> {
    if blocks.len() < 2 || blocks.len() > MOST_BLOCKS_ARRANGED {
        return blocks;
    }
    let row = Row::of(&blocks, circuit);
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    let mut best = order.clone();
    let (mut best_span, mut best_misalignment) =
        (row.span(&order), row.misalignment(&order, placed));
    // every permutation in lexicographic order, from the given one
    while next_permutation(&mut order) {
        let span = row.span(&order);
        if span > best_span {
            continue;
        }
        let misalignment = row.misalignment(&order, placed);
        if span < best_span || misalignment < best_misalignment - 1e-9 {
            (best, best_span, best_misalignment) = (order.clone(), span, misalignment);
        }
    }
    best.into_iter()
        .map(|index| blocks[index].clone())
        .collect()
}

/// Adds where the signal nets of `blocks` (an arranged row) stand to `places`.
pub fn record_places(blocks: &[Vec<String>], circuit: &Circuit, places: &mut NetPlaces) {
    let row = Row::of(blocks, circuit);
    let order: Vec<usize> = (0..blocks.len()).collect();
    let centres = row.centres(&order);
    for (block, nets) in row.nets.iter().enumerate() {
        for &net in nets {
            places
                .entry(row.names[net].to_string())
                .or_default()
                .push(centres[block]);
        }
    }
}

/// The next permutation in lexicographic order; `false` after the last.
fn next_permutation(items: &mut [usize]) -> bool {
    let Some(pivot) = items.windows(2).rposition(|pair| pair[0] < pair[1]) else {
        return false;
    };
    let successor = items
        .iter()
        .rposition(|item| *item > items[pivot])
        .expect("a larger item follows the pivot");
    items.swap(pivot, successor);
    items[pivot + 1..].reverse();
    true
}
