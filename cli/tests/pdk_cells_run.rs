//! `centroid run` on a netlist exported from a PDK's schematic (issue 26, SPICE as found
//! in the wild): transistors and resistors called as X instances of the PDK's cells
//! (`nch_lvt_mac`, `rppolywo_m`), a resistor sized by `lr`/`wr` with `series` segments,
//! one with `para` segments and a plain resistor with `m=2`. Every unit of a passive is
//! drawn (the layout's resistors read back from the GDS) and the layout is DRC-clean and
//! LVS-matched (on main, `m=2` on a resistor drew one bar: LVS "parameters differ").

mod support;
use support::{python_on_gds, run_spice_on_sky130};

const NETLIST: &str = "\
** a divider and its buffer, as a schematic export writes them
.subckt divider top mid bot vss
xr1 top mid vss rppolywo_m lr=6u wr=0.4u multi=1 m=1 series=3 segspace=250e-9
xr2 mid bot vss rppolywo_m lr=10u wr=1u multi=1 m=1 para=2 segspace=250e-9
r3 bot vss w=1u l=5u m=2
xm1 bot mid vss vss nch_lvt_mac l=0.5u w=2u multi=1 nf=2
xm2 top mid top top pch_mac l=0.5u w=4u multi=1 nf=2
.ends divider
";

/// The resistor bodies of a GDS's top cell, flattened: (count, their widths and lengths
/// in µm, sorted) — the poly under the rule set's `poly.res` marker, as merged islands.
fn resistor_bodies(gds: &std::path::Path) -> Vec<(f64, f64)> {
    // SKY130's poly 66/20, its resistor marker poly.res 66/13 (the rule set's layers)
    let script = "import sys, klayout.db as db\n\
                  layout = db.Layout(); layout.read(sys.argv[1])\n\
                  top = layout.top_cells()[0]\n\
                  poly = db.Region(top.begin_shapes_rec(layout.layer(66, 20)))\n\
                  marker = db.Region(top.begin_shapes_rec(layout.layer(66, 13)))\n\
                  for body in (poly & marker).merged().each():\n\
                  \x20   box = body.bbox()\n\
                  \x20   print(min(box.width(), box.height()) * layout.dbu, max(box.width(), box.height()) * layout.dbu)\n";
    let mut bodies: Vec<(f64, f64)> = python_on_gds(script, gds)
        .lines()
        .map(|line| {
            let mut numbers = line.split_whitespace().map(|n| n.parse::<f64>().unwrap());
            (numbers.next().unwrap(), numbers.next().unwrap())
        })
        .collect();
    bodies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    bodies
}

#[test]
fn pdk_cells_and_every_unit_of_a_passive_are_drawn_drc_and_lvs_clean() {
    let (out, report) = run_spice_on_sky130(NETLIST, 2, 1, 7);
    let best = &report["best"]["metrics"];
    assert_eq!(best["drc_violations"], 0, "{best}");
    assert_eq!(best["lvs_match"], true, "{best}");
    let bodies = resistor_bodies(&out.path().join("best.gds"));
    // xr1: 0.4 µm wide, 18 µm in all (one bar, or folded into segments); xr2: two 1 µm
    // bars of 10 µm; r3: two 1 µm bars of 5 µm
    let total = |width: f64| -> (usize, f64) {
        let of_width: Vec<&(f64, f64)> = bodies
            .iter()
            .filter(|(w, _)| (w - width).abs() < 1e-3)
            .collect();
        (of_width.len(), of_width.iter().map(|(_, l)| l).sum())
    };
    let (_, narrow) = total(0.4);
    assert!((narrow - 18.0).abs() < 0.05, "xr1's 18 µm: {bodies:?}");
    let wide: Vec<f64> = bodies
        .iter()
        .filter(|(w, _)| (w - 1.0).abs() < 1e-3)
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(wide.len(), 4, "two units each of xr2 and r3: {bodies:?}");
    assert_eq!(
        wide.iter().filter(|l| (**l - 10.0).abs() < 0.05).count(),
        2,
        "{bodies:?}"
    );
    assert_eq!(
        wide.iter().filter(|l| (**l - 5.0).abs() < 0.05).count(),
        2,
        "{bodies:?}"
    );
}
