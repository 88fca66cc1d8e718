//! A parent's own devices laid out as blocks of their own (issue 26): the devices of
//! the top that lie in no block (an input pair, its mirror and tail beside buffer
//! OTAs and a bias block) are drawn into one synthetic block per row kind, which the
//! top places and packs like its other instances — no row of the top holds a device
//! cell (main drew them in full-width rows of their own under the rows of blocks).
//! Their matched modules stay common-centroid structures inside those blocks.

use serde_json::{Value, json};

use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::plan::Plan;
use centroid_planner::planner::Planner;

mod support;
use support::{buffer, load, mos, netlist, skills, steps, strings};

/// Two buffer OTAs and a bias block beside the top's own first stage: an nmos input
/// pair with its tail, a pmos mirror load.
fn amplifier() -> Value {
    let mut netlist = netlist();
    let cells = netlist["cells"].as_array_mut().unwrap();
    cells[0] = json!({"name": "amp", "ports": ["inp", "inn", "out", "vdd", "vss"],
        "devices": [
            mos("MA1", "nmos", "n1", "inp", "tail", "vss"),
            mos("MA2", "nmos", "n2", "inn", "tail", "vss"),
            mos("MA5", "nmos", "tail", "vb", "vss", "vss"),
            mos("MA3", "pmos", "n1", "n1", "vdd", "vdd"),
            mos("MA4", "pmos", "n2", "n1", "vdd", "vdd")],
        "subcells": [
            buffer("X1", "n2", "o1"), buffer("X2", "o1", "out"),
            {"name": "XB", "cell": "bias", "connections": {"vb": "vb", "vdd": "vdd", "vss": "vss"}}]});
    netlist["top"] = json!("amp");
    netlist
}

/// The cells of the rows `layout.place` draws straight into TOP (`ROW…`).
fn top_rows(plan: &Plan) -> Vec<Vec<String>> {
    steps(plan, "layout.place")
        .iter()
        .filter(|arguments| arguments["cell_name"].as_str().unwrap().starts_with("ROW"))
        .map(|arguments| strings(&arguments["rows"][0]["cells"]))
        .collect()
}

/// `route.nets` of one cell.
fn route<'p>(plan: &'p Plan, cell: &str) -> &'p Value {
    steps(plan, "route.nets")
        .into_iter()
        .find(|arguments| arguments["cell_name"] == cell)
        .unwrap_or_else(|| panic!("{cell} is not routed: {}", plan.summary))
}

fn device_ids(route: &Value) -> Vec<String> {
    route["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|device| device["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_tops_own_devices_are_blocks_of_their_own_beside_the_others() {
    let (context, raw) = load(&amplifier());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    assert_eq!(
        space.blocks.keys().collect::<Vec<_>>(),
        ["amp_own_nmos", "amp_own_pmos", "bias", "ota"]
    );
    assert!(space.top_devices.is_empty(), "{:?}", space.top_devices);
    let point = space.default_point();
    assert!(point.builds_blocks());
    let plan = planner.plan(&context, &point, &catalog).unwrap();

    // each kind's own devices routed in a cell of their own, before the top
    let routed: Vec<&str> = steps(&plan, "route.nets")
        .iter()
        .map(|arguments| arguments["cell_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        routed,
        [
            "BLK_ota",
            "BLK_bias",
            "BLK_amp_own_nmos",
            "BLK_amp_own_pmos",
            "TOP"
        ]
    );
    let nmos = route(&plan, "BLK_amp_own_nmos");
    let mut ids = device_ids(nmos);
    ids.sort();
    assert_eq!(ids, ["MA1", "MA2", "MA5"]);
    // ports: what the top's ports, its blocks and the pmos devices reach; the tail
    // joins only these three devices and stays inside
    assert_eq!(
        strings(&nmos["ports"]),
        ["inn", "inp", "n1", "n2", "vb", "vss"]
    );
    let pmos = route(&plan, "BLK_amp_own_pmos");
    assert_eq!(strings(&pmos["ports"]), ["n1", "n2", "vdd"]);

    // the top places and routes only instances: no row of its own devices
    let top = route(&plan, "TOP");
    let top_devices = top["devices"].as_array().unwrap();
    assert!(
        top_devices.iter().all(|device| device["type"] == "block"),
        "{top_devices:?}"
    );
    assert_eq!(device_ids(top), ["X1", "X2", "XB", "own_nmos", "own_pmos"]);
    let rows = top_rows(&plan);
    assert!(!rows.is_empty());
    assert!(
        rows.iter().flatten().all(|cell| cell.starts_with("I_")),
        "{rows:?}"
    );
    assert!(top.get("pack_block_rows").is_some(), "{top}");

    // the matched modules among them: common-centroid pairs inside their kind's block
    let pairs: Vec<(String, String)> = steps(&plan, "layout.create_common_centroid_pair")
        .iter()
        .map(|arguments| {
            let id = arguments["device_a"]["device_id"].as_str().unwrap();
            (
                id.to_string(),
                arguments["cell_name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let pair_of = |device: &str| {
        pairs
            .iter()
            .find(|(id, _)| id == device)
            .map(|(_, cell)| cell.clone())
            .unwrap_or_else(|| panic!("{device} is in no pair: {pairs:?}"))
    };
    let nmos_prefix = route_prefix(&plan, "BLK_amp_own_nmos");
    let pmos_prefix = route_prefix(&plan, "BLK_amp_own_pmos");
    assert!(pair_of("MA1").starts_with(&nmos_prefix), "{pairs:?}");
    assert!(pair_of("MA3").starts_with(&pmos_prefix), "{pairs:?}");

    // LVS against every flat device: 2 × 5 + 2 + 5
    let lvs = steps(&plan, "lvs.run");
    assert_eq!(lvs[0]["devices"].as_array().unwrap().len(), 17);
    // one plan for a point
    assert_eq!(planner.plan(&context, &point, &catalog).unwrap(), plan);
}

/// The prefix of the cells drawn for a block: that of its first row.
fn route_prefix(plan: &Plan, block_cell: &str) -> String {
    let rows = strings(&route(plan, block_cell)["rows"]);
    let first = &rows[0];
    first[..first.rfind("ROW").unwrap()].to_string()
}

#[test]
fn one_own_device_stays_in_the_top_and_a_flat_point_is_as_before() {
    // the support circuit without its one-device subcircuit: the top keeps MC alone
    let mut netlist = netlist();
    let top = &mut netlist["cells"].as_array_mut().unwrap()[0];
    let subcells = top["subcells"].as_array_mut().unwrap();
    subcells.retain(|subcell| subcell["cell"] != "switch");
    let (context, raw) = load(&netlist);
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    assert_eq!(space.blocks.keys().collect::<Vec<_>>(), ["bias", "ota"]);
    let plan = planner
        .plan(&context, &space.default_point(), &catalog)
        .unwrap();
    assert!(device_ids(route(&plan, "TOP")).contains(&"MC".to_string()));

    // the amplifier laid out flat: one routed TOP with its own devices in rows
    let (context, raw) = load(&amplifier());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let flat = centroid_planner::design_point::DesignPoint {
        hierarchy: String::new(),
        ..planner.design_space(&context, &catalog).default_point()
    };
    let plan = planner.plan(&context, &flat, &catalog).unwrap();
    assert_eq!(steps(&plan, "route.nets").len(), 1);
    assert!(steps(&plan, "layout.instantiate_block").is_empty());
}

#[test]
fn a_blocks_own_devices_stay_in_its_rows() {
    // a two-stage buffer of two OTAs and two devices of its own, instanced twice: its
    // own rows are about as wide as its two instances (blocks of their own, each with
    // rails and a channel, made such a block larger), so they stay rows of the block
    let mut netlist = netlist();
    let cells = netlist["cells"].as_array_mut().unwrap();
    cells[0]["subcells"] = json!([
        {"name": "Y1", "cell": "pair", "connections": {"in": "in", "out": "mid", "vb": "vb", "vdd": "vdd", "vss": "vss"}},
        {"name": "Y2", "cell": "pair", "connections": {"in": "mid", "out": "out", "vb": "vb", "vdd": "vdd", "vss": "vss"}}
    ]);
    cells.push(json!({"name": "pair", "ports": ["in", "out", "vb", "vdd", "vss"],
        "devices": [mos("MP", "nmos", "m", "vb", "vss", "vss"), mos("MQ", "nmos", "out", "m", "vss", "vss")],
        "subcells": [
            {"name": "X1", "cell": "ota", "connections": {"inp": "in", "inn": "m", "out": "m", "vbias": "vb", "vdd": "vdd", "vss": "vss"}},
            {"name": "X2", "cell": "ota", "connections": {"inp": "m", "inn": "out", "out": "out", "vbias": "vb", "vdd": "vdd", "vss": "vss"}}]}));
    let (context, raw) = load(&netlist);
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    assert_eq!(space.blocks.keys().collect::<Vec<_>>(), ["ota", "pair"]);
    let plan = planner
        .plan(&context, &space.default_point(), &catalog)
        .unwrap();
    let routed: Vec<&str> = steps(&plan, "route.nets")
        .iter()
        .map(|arguments| arguments["cell_name"].as_str().unwrap())
        .collect();
    assert_eq!(routed, ["BLK_ota", "BLK_pair", "TOP"]);
    assert_eq!(
        device_ids(route(&plan, "BLK_pair")),
        ["MP", "MQ", "X1", "X2"]
    );
    // LVS: 2 pairs × (2 OTAs × 5 + 2) + MC
    let lvs = steps(&plan, "lvs.run");
    assert_eq!(lvs[0]["devices"].as_array().unwrap().len(), 25);
}
