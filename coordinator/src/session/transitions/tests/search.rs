//! The search's path: probe, drafts, results, drafts ahead, evaluations.

use super::*;

#[test]
fn a_job_is_parsed_then_probes_the_rules_then_plans() {
    let mut job = job_in(JobPhase::Init);
    let effects = advance(&mut job, PhaseEvent::Started, OVERLAP).unwrap();
    assert_eq!(job.phase, JobPhase::Parsing);
    assert_eq!(effects[0], Effect::Persist);
    assert_eq!(
        states_reported(&effects),
        [(EventKind::StateChanged, "parsing")]
    );

    let parsed = PhaseEvent::Parsed {
        modules: vec!["dp".into()],
        devices: 5,
    };
    let effects = advance(&mut job, parsed, OVERLAP).unwrap();
    assert_eq!(job.phase, JobPhase::ProbingRules);
    assert_eq!(
        states_reported(&effects),
        [
            (EventKind::StateChanged, "parsing"),
            (EventKind::StateChanged, "planning")
        ],
        "the parse is reported in PARSING, the move in PLANNING"
    );

    let probed = PhaseEvent::RulesProbed {
        ran: true,
        pitch_um: Some(0.46),
        undrawable: Vec::new(),
        schematic: None,
    };
    let effects = advance(&mut job, probed, OVERLAP).unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting {
            hidden: None,
            carried: None,
        })
    );
    assert_eq!(job.route_pitch_um, Some(0.46));
    assert!(effects.contains(&Effect::Persist));
    let Effect::Emit(probe) = &effects[0] else {
        panic!("the probe is reported: {effects:?}")
    };
    assert_eq!(
        probe.data,
        EventData::RulesProbed {
            route_pitch_um: Some(0.46),
            undrawable: Vec::new()
        }
    );
}

#[test]
fn the_schematic_simulated_by_the_probe_is_kept_in_the_record_and_reported() {
    use centroid_planner::performance::{SchematicSimulation, Simulated};
    let mut job = job_in(JobPhase::ProbingRules);
    let schematic = SchematicSimulation::Measured(Simulated {
        measures: [("ugbw_hz".to_owned(), 1.0e7)].into(),
        sweep: None,
    });
    let probed = PhaseEvent::RulesProbed {
        ran: true,
        pitch_um: Some(0.46),
        undrawable: Vec::new(),
        schematic: Some(schematic.clone()),
    };
    let effects = advance(&mut job, probed, OVERLAP).unwrap();
    // in the record, which a restarted coordinator reads back with the job
    assert_eq!(job.schematic.as_ref(), Some(&schematic));
    let record: crate::model::JobRecord =
        serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
    assert_eq!(record.schematic, Some(schematic.clone()));
    let reported = effects.iter().find_map(|effect| match effect {
        Effect::Emit(event) => match &event.data {
            EventData::SchematicSimulated(simulation) => Some((event.message.clone(), simulation)),
            _ => None,
        },
        _ => None,
    });
    let (message, simulation) = reported.expect("the schematic's measures are reported");
    assert_eq!(**simulation, schematic);
    assert_eq!(message, "the schematic simulated: ugbw_hz = 1.0000e7");

    let mut job = job_in(JobPhase::ProbingRules);
    let failed = PhaseEvent::RulesProbed {
        ran: true,
        pitch_um: None,
        undrawable: Vec::new(),
        schematic: Some(SchematicSimulation::Failed {
            reason: "ngspice refused the deck (testbench.sp line 11)".into(),
        }),
    };
    advance(&mut job, failed, OVERLAP).unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting {
            hidden: None,
            carried: None,
        }),
        "the job goes on: its candidates fail with the reason"
    );
}

#[test]
fn a_probe_that_did_not_run_is_not_reported_and_undrawable_devices_fail_the_job() {
    let mut job = job_in(JobPhase::ProbingRules);
    let skipped = PhaseEvent::RulesProbed {
        ran: false,
        pitch_um: None,
        undrawable: Vec::new(),
        schematic: None,
    };
    assert_eq!(
        advance(&mut job, skipped, OVERLAP).unwrap(),
        [Effect::Persist]
    );

    let mut job = job_in(JobPhase::ProbingRules);
    let undrawable = PhaseEvent::RulesProbed {
        ran: true,
        pitch_um: None,
        undrawable: vec!["M3: no poly layer".into()],
        schematic: None,
    };
    advance(&mut job, undrawable, OVERLAP).unwrap();
    let JobPhase::Ending { outcome, message } = &job.phase else {
        panic!("{:?}", job.phase)
    };
    assert_eq!(*outcome, Outcome::Failed);
    assert!(message.contains("M3: no poly layer"), "{message}");
}

#[test]
fn a_draft_queues_a_window_and_decides_whether_the_next_iteration_overlaps() {
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    let drafted = PhaseEvent::Drafted {
        candidates: ids(&["c0", "c1", "c2", "c3"]),
        model_share: None,
        window: 3,
        now_ms: 500,
    };
    let effects = advance(&mut job, drafted.clone(), OVERLAP).unwrap();
    assert_eq!(effects[0], Effect::EnqueueDrafted { queued: 3 });
    let JobPhase::Executing(round) = &job.phase else {
        panic!("{:?}", job.phase)
    };
    assert_eq!((round.enqueued, round.started_ms), (3, 500));
    assert!(
        !round.overlap_next,
        "the first iteration's feedback is waited for"
    );

    let mut later = job_in(JobPhase::Planning(Drafting::default()));
    later.iteration = 1;
    advance(&mut later, drafted.clone(), OVERLAP).unwrap();
    let JobPhase::Executing(round) = &later.phase else {
        panic!()
    };
    assert!(round.overlap_next);
    let mut off = job_in(JobPhase::Planning(Drafting::default()));
    off.iteration = 1;
    advance(&mut off, drafted, PhaseSettings::default()).unwrap();
    let JobPhase::Executing(round) = &off.phase else {
        panic!()
    };
    assert!(!round.overlap_next, "overlapping switched off");
}

#[test]
fn a_draft_that_finds_nothing_concludes_and_one_that_cannot_plan_fails() {
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    advance(&mut job, PhaseEvent::DesignSpaceExhausted, OVERLAP).unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Concluding {
            message: "the design space is exhausted".into()
        }
    );
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    let failed = PhaseEvent::PlanningFailed {
        message: "the workers lack skills".into(),
    };
    advance(&mut job, failed, OVERLAP).unwrap();
    assert_eq!(job.state(), JobState::Failed);
}

#[test]
fn a_search_waits_evaluates_what_arrived_tops_the_queue_up_and_moves_on_when_all_is_in() {
    let searching = || job_in(JobPhase::Executing(round(&["a", "b", "c", "d"], 2)));

    let mut job = searching();
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&[], 2, 2, 200)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(effects, [Effect::Wait], "two out on a window of two");

    let mut job = searching();
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a"], 2, 2, 300)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        effects,
        [
            Effect::EvaluateArrived {
                candidates: ids(&["a"])
            },
            Effect::EnqueueMore {
                candidates: ids(&["c"])
            }
        ]
    );
    let JobPhase::Executing(round) = &job.phase else {
        panic!()
    };
    assert_eq!(
        (round.enqueued, round.started_ms),
        (3, 300),
        "the stall clock restarts"
    );

    let mut job = searching();
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a", "b", "c", "d"], 2, 2, 300)),
        OVERLAP,
    )
    .unwrap();
    assert!(matches!(job.phase, JobPhase::Evaluating(_)));
    assert_eq!(
        states_reported(&effects),
        [(EventKind::StateChanged, "evaluating")]
    );
}

#[test]
fn candidates_without_a_result_past_the_stall_limit_are_lost() {
    let mut job = job_in(JobPhase::Executing(round(&["a", "b"], 2)));
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a"], 2, 2, 100 + 1_001)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        effects[1],
        Effect::RecordLost {
            candidates: ids(&["b"]),
            message: "no result within 1000 ms".into()
        }
    );
}

#[test]
fn slots_about_to_idle_draft_the_next_iteration_ahead_hiding_this_ones_evaluations() {
    let mut overlapping = round(&["a", "b", "c"], 3);
    overlapping.overlap_next = true;
    let mut job = job_in(JobPhase::Executing(overlapping));
    job.iteration = 2;
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a"], 4, 8, 300)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        effects,
        [Effect::DraftAhead {
            iteration: 3,
            hidden: 2,
            outstanding: 2
        }]
    );

    let drafted = PhaseEvent::DraftedAhead {
        candidates: ids(&["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"]),
        model_share: None,
        outstanding: 2,
        window: 8,
    };
    let effects = advance(&mut job, drafted, OVERLAP).unwrap();
    assert_eq!(
        effects[0],
        Effect::EnqueueDrafted { queued: 6 },
        "the window less what is out"
    );
    let JobPhase::Executing(round) = &job.phase else {
        panic!()
    };
    assert_eq!(round.ahead.as_ref().unwrap().enqueued, 6);

    // drafted once: results keep coming without another draft
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a", "b"], 4, 8, 400)),
        OVERLAP,
    )
    .unwrap();
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, Effect::DraftAhead { .. })),
        "{effects:?}"
    );
}

#[test]
fn an_early_draft_and_a_late_one_leave_out_the_same_evaluations() {
    // slots never idled: the next iteration is planned after this one, hiding it
    let mut overlapping = round(&["a", "b"], 2);
    overlapping.overlap_next = true;
    let mut job = job_in(JobPhase::Evaluating(overlapping));
    job.iteration = 2;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.5, false),
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.iteration, 3);
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting {
            hidden: Some(2),
            carried: None,
        }),
        "hidden as the early draft (DraftAhead hidden: 2) would have"
    );
    // without overlap, nothing is hidden
    let mut job = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    job.iteration = 2;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: None,
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting {
            hidden: None,
            carried: None,
        })
    );
}

#[test]
fn an_iteration_drafted_ahead_runs_next_and_one_that_found_nothing_is_planned_again() {
    let mut with_ahead = round(&["a"], 1);
    with_ahead.overlap_next = true;
    with_ahead.ahead = Some(Ahead {
        candidates: ids(&["n0", "n1", "n2"]),
        enqueued: 2,
        model_share: None,
    });
    let mut job = job_in(JobPhase::Evaluating(with_ahead));
    job.iteration = 1;
    let effects = advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.4, false),
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    let JobPhase::Executing(next) = &job.phase else {
        panic!("{:?}", job.phase)
    };
    assert_eq!(next.candidates, ids(&["n0", "n1", "n2"]));
    assert_eq!((next.enqueued, next.started_ms), (2, 900));
    assert!(next.overlap_next, "decided anew for iteration 2");
    assert_eq!(
        states_reported(&effects),
        [
            (EventKind::StateChanged, "iterating"),
            (EventKind::Iteration, "iterating"),
            (EventKind::StateChanged, "executing")
        ]
    );

    let mut found_nothing = round(&["a"], 1);
    found_nothing.overlap_next = true;
    found_nothing.ahead = Some(Ahead::default());
    let mut job = job_in(JobPhase::Evaluating(found_nothing));
    job.iteration = 1;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: None,
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting {
            hidden: Some(1),
            carried: None,
        })
    );
}

#[test]
fn an_empty_early_draft_is_kept_as_found_nothing() {
    let mut overlapping = round(&["a", "b"], 2);
    overlapping.overlap_next = true;
    let mut job = job_in(JobPhase::Executing(overlapping));
    let drafted = PhaseEvent::DraftedAhead {
        candidates: Vec::new(),
        model_share: None,
        outstanding: 1,
        window: 4,
    };
    assert_eq!(
        advance(&mut job, drafted, OVERLAP).unwrap(),
        [Effect::Persist]
    );
    let JobPhase::Executing(round) = &job.phase else {
        panic!()
    };
    assert_eq!(round.ahead, Some(Ahead::default()));
}
