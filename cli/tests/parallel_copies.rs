//! `centroid run` on a differential pair whose halves are `m=4` instances of a two-device
//! stack (issue 26): the copies are units of one device, not devices to match. The
//! recognised groups hold the two halves only (no group among copies), and the blocks
//! layout places the copies interleaved so the halves' measured centroids meet.

use serde_json::Value;

mod support;
use support::run_spice_on_sky130;

const NETLIST: &str = "\
* A pair of m=4 stacked halves on a tail, PMOS mirror load (issue 26: parallel units)
.global vdd vss
.subckt stack d g s
MT d g mid vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MB mid g s vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
.ends stack
.subckt pair inp inn out vb
XA n1 inp tail stack m=4
XB out inn tail stack m=4
M3 n1 n1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M4 out n1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M5 tail vb vss vss sky130_fd_pr__nfet_01v8 w=2u l=1u nf=2
.ends pair
.end
";

#[test]
fn copies_of_a_pairs_halves_are_one_member_each_and_their_blocks_interleave() {
    let (_out, report) = run_spice_on_sky130(NETLIST, 2, 1, 7);
    let candidates = report["candidates"].as_array().unwrap();
    let blocks = candidates
        .iter()
        .find(|candidate| candidate["design"]["hierarchy"] == "blocks")
        .unwrap_or_else(|| panic!("no blocks candidate: {report}"));
    assert_eq!(blocks["metrics"]["lvs_match"], true, "{blocks}");
    let groups = blocks["metrics"]["layout"]["groups"].as_array().unwrap();
    // the pair (its halves' bottom devices, 4 copies each) and the mirror: no group of copies
    let pair: Vec<&Value> = groups
        .iter()
        .filter(|group| group["module"].as_str().unwrap().starts_with("dp"))
        .collect();
    assert_eq!(pair.len(), 1, "{groups:?}");
    assert_eq!(
        pair[0]["devices"].as_array().unwrap().len(),
        2,
        "{groups:?}"
    );
    assert!(
        groups
            .iter()
            .all(|group| group["devices"].as_array().unwrap().len() == 2),
        "{groups:?}"
    );
    // 8 stack blocks interleaved A B A B B A B A in rows of their own: the halves meet
    let scale = blocks["metrics"]["layout"]["device_scale_um"]
        .as_f64()
        .unwrap();
    let error = pair[0]["centroid_error_um"].as_f64().unwrap();
    assert!(error < 0.1 * scale, "pair {error} µm apart: {groups:?}");
}
