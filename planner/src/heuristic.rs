//! The built-in rule-based planner.
//!
//! Plan of one candidate (each step only when a live worker advertises the skill):
//! `tech.load` → one matched structure per recognised matched module
//! (`layout.create_common_centroid_pair` for two equal devices in the point's
//! arrangement, `layout.create_interdigitated_group` for ratioed or larger groups)
//! → `layout.create_device` for every other device → `layout.add_dummies` →
//! `layout.add_guard_ring` → `layout.place` (rows by device type, in the point's
//! row order, spacing and aspect ratio) → routing and `lvs.run` when advertised →
//! `drc.run` → `layout.metrics` → `layout.export` (no picture: the kept candidates
//! get theirs when the job ends, `session/pictures.rs`) → `check.electrical` →
//! for a job measuring performance `extract.netlist` → `sim.testbench` (a built-in
//! testbench) → `sim.run` ([`crate::performance`]).
//!
//! A point with `hierarchy: blocks` lays a hierarchical circuit out bottom up: each
//! block ([`crate::hierarchy`]) once, by the same stages, into its own routed cell
//! with ports, then its instances placed and routed by their parent
//! ([`crate::candidate_plan`]'s `blocks.rs`); LVS, DRC and the outputs as above. The
//! design space offers it when the workers can route and instantiate blocks, with
//! each block's own space (its scope's, computed by the same code as the circuit's);
//! a block is drawn from its own point when the point gives it one.
//!
//! Step arguments are fitted to the skill's advertised input schema (see
//! [`crate::plan_builder`]); ReAct adjustments are [`crate::react`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use centroid_schemas::{Circuit, CircuitModule, Device, TaskContext};
use serde_json::Value;

use crate::candidate_plan::{Draft, blocks_supported, draft_blocks, pack_ranks};
use crate::design_point::{BLOCKS, DesignPoint, FLAT};
use crate::design_space::{BlockSpace, DesignSpace};
use crate::device_units::{RowKind, common_split, is_mos};
use crate::hierarchy::Hierarchy;
use crate::kind_order::KindOrder;
use crate::performance::{JobSimulation, PerformanceSetup, setup::rails};
use crate::placement_order::{bound_modules, complete, default_kinds, matched_groups};
use crate::plan::Plan;
use crate::planner::{Adjusted, PlanError, Planner, PlannerFuture};
use crate::react;
use crate::skill_catalog::SkillCatalog;
use crate::step_failure::StepFailure;

/// The rule set and netlist as JSON, passed through to `tech.load` and `lvs.run`.
#[derive(Debug, Clone, Default)]
pub struct RawInputs {
    pub drc_rules: Value,
    pub netlist: Value,
}

impl RawInputs {
    /// The job's rule set and netlist from their text (`null` where a file does not
    /// parse; the inputs were checked at submission).
    pub fn from_texts(drc_rules_json: &str, netlist_json: &str) -> RawInputs {
        RawInputs {
            drc_rules: serde_json::from_str(drc_rules_json).unwrap_or(Value::Null),
            netlist: serde_json::from_str(netlist_json).unwrap_or(Value::Null),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct HeuristicPlanner {
    raw: RawInputs,
    /// `route.info`'s `pitch_um` for this rule set (probed once per job); routing
    /// and LVS are planned only when it is known
    route_pitch_um: Option<f64>,
    /// the circuit's default order per row kind and its bound modules, worked out
    /// once: ordering a row's blocks by their nets tries every order, ms per row, and
    /// every candidate's plan needs them (a planner serves one job's inputs, so one
    /// circuit)
    placement: OnceLock<Placement>,
    /// the testbench and the schematic's simulation
    simulation: JobSimulation,
    /// what the job simulates, worked out once
    performance: OnceLock<Option<PerformanceSetup>>,
    /// the circuit's blocks (none without a hierarchy), worked out once
    hierarchy: OnceLock<Option<Hierarchy>>,
    /// how each block's own devices are placed (by subcircuit), worked out once
    block_placements: OnceLock<BTreeMap<String, Placement>>,
}

/// How the circuit's devices are placed at every design point.
#[derive(Debug, Clone)]
struct Placement {
    /// the default order of each row kind
    kinds: Vec<KindOrder>,
    /// the devices of each module drawn as one cell (they move together)
    bound: Vec<Vec<String>>,
    /// the matched modules that may be drawn as matched cells
    groups: Vec<String>,
}

impl Placement {
    fn of(circuit: &Circuit) -> Placement {
        Placement {
            kinds: default_kinds(circuit),
            bound: bound_modules(circuit),
            groups: matched_groups(circuit),
        }
    }
}

impl HeuristicPlanner {
    pub fn new(raw: RawInputs) -> HeuristicPlanner {
        HeuristicPlanner {
            raw,
            route_pitch_um: None,
            placement: OnceLock::new(),
            simulation: JobSimulation::default(),
            performance: OnceLock::new(),
            hierarchy: OnceLock::new(),
            block_placements: OnceLock::new(),
        }
    }

    fn hierarchy(&self, context: &TaskContext) -> Option<&Hierarchy> {
        self.hierarchy
            .get_or_init(|| Hierarchy::of(&context.circuit))
            .as_ref()
    }

    /// The hierarchies the space offers, the engineer's default first: blocks first
    /// when a block is instanced twice or more or the circuit is large, blocks alone
    /// above [`crate::hierarchy::FLAT_OFFERED_UP_TO`] devices; none when
    /// the circuit has no block worth it or the workers cannot route and
    /// instantiate blocks.
    fn hierarchies(&self, context: &TaskContext, skills: &SkillCatalog) -> Vec<String> {
        let Some(hierarchy) = self
            .hierarchy(context)
            .filter(|hierarchy| hierarchy.worth_offering(&context.circuit))
        else {
            return Vec::new();
        };
        if self.routing(skills).is_none() || !blocks_supported(skills) {
            return Vec::new();
        }
        if !hierarchy.flat_offered(&context.circuit) {
            vec![BLOCKS.into()]
        } else if hierarchy.blocks_by_default(&context.circuit) {
            vec![BLOCKS.into(), FLAT.into()]
        } else {
            vec![FLAT.into(), BLOCKS.into()]
        }
    }

    /// The job's testbench and schematic simulation (for a job measuring performance).
    pub fn with_simulation(mut self, simulation: JobSimulation) -> HeuristicPlanner {
        self.simulation = simulation;
        self.performance = OnceLock::new();
        self
    }

    fn performance(&self, context: &TaskContext) -> Option<&PerformanceSetup> {
        self.performance
            .get_or_init(|| self.simulation.setup(context))
            .as_ref()
    }

    fn placement(&self, context: &TaskContext) -> &Placement {
        self.placement
            .get_or_init(|| Placement::of(&context.circuit))
    }

    /// How each block of `hierarchy` places its own devices (its scope on its own).
    fn block_placements(&self, hierarchy: &Hierarchy) -> &BTreeMap<String, Placement> {
        self.block_placements.get_or_init(|| {
            hierarchy
                .blocks
                .iter()
                .map(|block| {
                    (
                        block.subcircuit.clone(),
                        Placement::of(&block.scope.circuit),
                    )
                })
                .collect()
        })
    }

    /// The space of `circuit` laid out flat (the whole circuit, or one block's scope
    /// on its own): no hierarchy, no blocks.
    fn space_of(
        &self,
        circuit: &Circuit,
        placement: &Placement,
        skills: &SkillCatalog,
    ) -> DesignSpace {
        let devices = &circuit.devices;
        let max_nf = devices
            .iter()
            .filter(|device| is_mos(device))
            .map(|device| device.params.nf)
            .max()
            .unwrap_or(1);
        let kinds: BTreeSet<RowKind> = devices
            .iter()
            .map(|device| RowKind::of(device.device_type))
            .collect();
        let row_orders = (1..=kinds.len().max(1) as u32).product::<u32>().min(6);
        let routed = self.routing(skills).is_some();
        // A knob is offered only where it can change what is drawn (`effective`): a
        // value that draws the same layout as another is the same candidate run twice.
        // Finger splits, dummies and rings apply to matched cells only, arrangements
        // to pairs drawn as common-centroid pairs, spacing to more than one device, the
        // aspect (rows per kind) to a kind of more than one.
        let matched_cells = !placement.groups.is_empty();
        let splits: Vec<u32> = (1..=max_nf.clamp(1, 4))
            .filter(|split| max_nf % split == 0)
            .collect();
        let pairs: Vec<String> = circuit
            .modules
            .iter()
            .filter(|module| {
                drawn_as_a_pair(module) && arrangement_matters(circuit, module, &splits)
            })
            .map(|module| module.id.clone())
            .collect();
        let several_devices = devices.len() > 1;
        // a kind of one device has no rows to fold it in (unrouted, 200 % puts the kinds
        // of several devices in one row)
        let foldable = placement.kinds.iter().any(|kind| kind.devices.len() > 1)
            || (!routed && several_devices);
        let finger_splits: Vec<u32> =
            effective(matched_cells, splits, |splits| splits.iter().max().copied());
        let dummies = effective(
            matched_cells,
            if skills.contains_key("layout.add_dummies") {
                vec![0, 1, 2]
            } else {
                vec![0]
            },
            |counts| counts.contains(&1).then_some(1).or(counts.first().copied()),
        );
        // routed layouts get bulk taps from the router: no guard rings there
        let guard_rings =
            if matched_cells && skills.contains_key("layout.add_guard_ring") && !routed {
                vec![false, true]
            } else {
                vec![false]
            };
        // a matched module's ends take their own dummies and ring
        let groups = if dummies.len() > 1 || guard_rings.len() > 1 {
            placement.groups.clone()
        } else {
            Vec::new()
        };
        DesignSpace {
            // route.nets needs one row of devices per row cell: no 2-D modules when routing
            arrangements: effective(
                !pairs.is_empty(),
                if routed {
                    vec!["ABBA".into(), "ABAB".into()]
                } else {
                    vec!["ABBA".into(), "2D".into(), "ABAB".into()]
                },
                |arrangements| arrangements.first().cloned(),
            ),
            finger_splits,
            dummies,
            guard_rings,
            row_orders,
            spacings_nm: effective(several_devices, vec![0, 200, 500], |spacings| {
                spacings.first().copied()
            }),
            // a routed row holds one device type: no single mixed row
            aspect_ratios_pct: effective(
                foldable,
                if routed {
                    vec![100, 50]
                } else {
                    vec![100, 50, 200]
                },
                |aspects| aspects.contains(&100).then_some(100),
            ),
            kinds: placement.kinds.clone(),
            bound: placement.bound.clone(),
            groups,
            modules: pairs,
            hierarchies: Vec::new(),
            top_devices: Vec::new(),
            blocks: BTreeMap::new(),
            pack_ranks: Vec::new(),
        }
    }

    pub fn with_route_pitch(mut self, pitch_um: Option<f64>) -> HeuristicPlanner {
        self.route_pitch_um = pitch_um;
        self
    }

    fn routing(&self, skills: &SkillCatalog) -> Option<f64> {
        let advertised = ["route.nets", "layout.place"]
            .iter()
            .all(|skill| skills.contains_key(*skill));
        self.route_pitch_um.filter(|_| advertised)
    }
}

/// `values` where the knob can change the layout, else only the value the default point
/// takes among them (`default_of`): one spelling, one candidate.
fn effective<T: Clone>(
    applies: bool,
    values: Vec<T>,
    default_of: impl Fn(&[T]) -> Option<T>,
) -> Vec<T> {
    if applies {
        return values;
    }
    match default_of(&values) {
        Some(value) => vec![value],
        None => values.into_iter().take(1).collect(),
    }
}

/// Whether pair `module`'s arrangement can change its cell: at some finger split its
/// devices have an even number of units each (an odd count is drawn ABAB whatever the
/// point asks: `Draft::add_pair`).
fn arrangement_matters(circuit: &Circuit, module: &CircuitModule, splits: &[u32]) -> bool {
    let devices: Vec<&Device> = module
        .devices
        .iter()
        .filter_map(|member| circuit.device(&member.device_id))
        .collect();
    let Some(first) = devices.first() else {
        return false;
    };
    splits
        .iter()
        .any(|split| (first.params.m.max(1) * common_split(&devices, *split)).is_multiple_of(2))
}

/// Whether matched `module` is drawn as one common-centroid pair, the drawing that takes
/// an arrangement (`layout.create_common_centroid_pair` of two devices): two members of
/// one device each. A member of parallel units (`ModuleMember::unit_of`) makes it an
/// interdigitated group of all its devices, which takes no arrangement: an arrangement
/// gene there would change nothing drawn.
fn drawn_as_a_pair(module: &CircuitModule) -> bool {
    module.module_type.is_matched() && module.members().count() == 2 && module.devices.len() == 2
}

/// Whether the workers can route (then the planner needs `route.info`'s pitch first).
pub fn routing_advertised(skills: &SkillCatalog) -> bool {
    ["route.info", "route.nets", "layout.place"]
        .iter()
        .all(|skill| skills.contains_key(*skill))
}

impl Planner for HeuristicPlanner {
    fn design_space(&self, context: &TaskContext, skills: &SkillCatalog) -> DesignSpace {
        let mut space = self.space_of(&context.circuit, self.placement(context), skills);
        space.hierarchies = self.hierarchies(context, skills);
        if let Some(hierarchy) = self
            .hierarchy(context)
            .filter(|_| !space.hierarchies.is_empty())
        {
            let placements = self.block_placements(hierarchy);
            space.blocks = hierarchy
                .blocks
                .iter()
                .map(|block| {
                    let placement = &placements[&block.subcircuit];
                    let block_space = BlockSpace {
                        path: block.scope.path.clone(),
                        space: self.space_of(&block.scope.circuit, placement, skills),
                    };
                    (block.subcircuit.clone(), block_space)
                })
                .collect();
            // the top packs its rows of blocks: the next-best packings are a choice
            space.pack_ranks = pack_ranks(skills);
            let top = &hierarchy.top;
            space.top_devices = top
                .circuit
                .devices
                .iter()
                .map(|device| top.flat_id(&device.id))
                .collect();
        }
        space
    }

    fn plan(
        &self,
        context: &TaskContext,
        point: &DesignPoint,
        skills: &SkillCatalog,
    ) -> Result<Plan, PlanError> {
        let required: Vec<String> = ["tech.load", "layout.create_device"]
            .iter()
            .filter(|skill| !skills.contains_key(**skill))
            .map(|skill| skill.to_string())
            .collect();
        if !required.is_empty() {
            return Err(PlanError::MissingSkills(required));
        }
        let placement = self.placement(context);
        let order = complete(point, &placement.kinds, &placement.bound);
        let blocks = self
            .hierarchy(context)
            .zip(self.routing(skills))
            .filter(|_| point.builds_blocks() && !self.hierarchies(context, skills).is_empty());
        let mut draft = match blocks {
            Some((hierarchy, pitch_um)) => {
                // the order of each block, by local ids: its own point's, else its own
                // default order (as `DesignSpace::inherited` has it)
                let placements = self.block_placements(hierarchy);
                let no_order = DesignPoint {
                    order: Vec::new(),
                    blocks: BTreeMap::new(),
                    ..point.clone()
                };
                let block_orders: BTreeMap<String, Vec<String>> = placements
                    .iter()
                    .map(|(subcircuit, placement)| {
                        let own = point.blocks.get(subcircuit).unwrap_or(&no_order);
                        let order = complete(own, &placement.kinds, &placement.bound);
                        (subcircuit.clone(), order)
                    })
                    .collect();
                draft_blocks(
                    (&context.circuit, hierarchy),
                    point,
                    (&order, &block_orders),
                    skills,
                    (&self.raw.drc_rules, pitch_um),
                )
            }
            None => {
                let mut draft = Draft::new(&context.circuit, point, &order, skills);
                draft.load_technology(&self.raw.drc_rules);
                if !self.hierarchies(context, skills).is_empty() {
                    draft.offered_blocks();
                }
                draft
            }
        };
        draft.add_matched_modules();
        draft.add_single_devices();
        if !draft.has_cells() {
            return Err(PlanError::Empty("no device could be drawn".into()));
        }
        draft.add_dummies_and_rings();
        match self.routing(skills) {
            Some(pitch_um) => draft.place_in_rows_and_route(pitch_um),
            None => draft.place_unrouted(),
        }
        draft.add_lvs();
        draft.add_checks_and_outputs();
        let roles = context.objectives.performance.ports.as_ref();
        let (supplies, grounds) = rails(&context.circuit, roles);
        draft.add_electrical_check(&supplies, &grounds);
        if let Some(setup) = self.performance(context) {
            let has_parasitics = context.drc_rules.parasitics.is_some();
            let simulate = self.simulation.candidates_simulate();
            draft.keep_outputs_short(setup);
            draft.add_extraction_and_simulation(setup, has_parasitics, simulate);
        }
        Ok(draft.finish())
    }

    fn adjust<'a>(
        &'a self,
        plan: &'a Plan,
        step_id: &'a str,
        failure: &'a StepFailure,
        _skills: &'a SkillCatalog,
    ) -> PlannerFuture<'a, Adjusted> {
        Box::pin(std::future::ready(Adjusted {
            adjustment: react::adjust(plan, step_id, failure),
            calls: Vec::new(),
            fallback: None,
        }))
    }
}
