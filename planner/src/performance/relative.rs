//! `performance_max` among the job's candidates: each measure's degradation is placed
//! between the best and the worst of the job's passing candidates, so that the
//! differences layouts of one circuit actually make (a few tenths of a percent of UGBW
//! at a large load, tens of percent at a small one) weigh in the score as much as the
//! objective's weight says.
//!
//! For each scored measure (the ones [`super::verdict`] scores), over the passing
//! candidates with a degradation: `best` and `worst`. A measure whose span
//! `worst − best` is under [`RESOLUTION_PCT`] of the schematic's value does not tell
//! the layouts apart and is left out (the DC gain, which wiring does not move). A
//! candidate's measure scores `1 − (d − best) / (worst − best)`, clamped to [0, 1]
//! (a failing candidate may lie outside the passing ones' range); the relative value
//! is the mean over the measures left, 1 when none is. Without a passing candidate
//! the range is taken over all candidates with a degradation.
//!
//! The job's best layout on a measure so gets the objective's whole weight, its worst
//! none: with `performance_max` at half the weight, half the score's spread among
//! the candidates is theirs. The score is `rest + share · relative value`
//! ([`crate::PerformanceShare`]): it changes as candidates arrive, and the coordinator
//! re-scores the job's candidates after each iteration.

use std::collections::BTreeMap;

use crate::evaluation::Evaluation;

use super::verdict::NOT_SCORED;

/// Layouts whose degradations of a measure all lie within this much (% of the
/// schematic's value) are not told apart by it.
pub const RESOLUTION_PCT: f64 = 0.1;

/// The scored degradations of one evaluation, by measure.
fn degradations(evaluation: &Evaluation) -> BTreeMap<&str, f64> {
    evaluation
        .performance
        .iter()
        .flat_map(|verdict| &verdict.measures)
        .filter(|(name, _)| !NOT_SCORED.contains(&name.as_str()))
        .filter_map(|(name, measure)| Some((name.as_str(), measure.degradation_pct?)))
        .collect()
}

/// Each measure's (best, worst) degradation over `evaluations`.
fn ranges<'a>(evaluations: impl Iterator<Item = &'a Evaluation>) -> BTreeMap<String, (f64, f64)> {
    let mut ranges: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for evaluation in evaluations {
        for (name, degradation) in degradations(evaluation) {
            let range = ranges
                .entry(name.to_owned())
                .or_insert((degradation, degradation));
            range.0 = range.0.min(degradation);
            range.1 = range.1.max(degradation);
        }
    }
    ranges.retain(|_, (best, worst)| *worst - *best >= RESOLUTION_PCT);
    ranges
}

/// The relative value of one evaluation given the measures' ranges.
fn relative_value(evaluation: &Evaluation, ranges: &BTreeMap<String, (f64, f64)>) -> f64 {
    if ranges.is_empty() {
        return 1.0;
    }
    let own = degradations(evaluation);
    let sum: f64 = ranges
        .iter()
        .map(|(name, (best, worst))| {
            own.get(name.as_str()).map_or(0.0, |degradation| {
                (1.0 - (degradation - best) / (worst - best)).clamp(0.0, 1.0)
            })
        })
        .sum();
    sum / ranges.len() as f64
}

/// Re-scores the evaluations whose score has a [`crate::PerformanceShare`] with their
/// performance relative to the others'. Returns the indices of those whose score or
/// relative value changed.
pub fn rank(evaluations: &mut [&mut Evaluation]) -> Vec<usize> {
    let ranked = |evaluation: &&mut Evaluation| evaluation.performance_share.is_some();
    let any_passed = evaluations
        .iter()
        .any(|evaluation| ranked(evaluation) && evaluation.passed);
    let ranges = ranges(
        evaluations
            .iter()
            .filter(|evaluation| ranked(evaluation) && (evaluation.passed || !any_passed))
            .map(|evaluation| &**evaluation),
    );
    let mut changed = Vec::new();
    for (index, evaluation) in evaluations.iter_mut().enumerate() {
        let Some(share) = evaluation.performance_share else {
            continue;
        };
        let value = relative_value(evaluation, &ranges);
        let score = share.score(value);
        let verdict = evaluation
            .performance
            .as_mut()
            .expect("a share has a verdict");
        if verdict.relative_value != Some(value) || evaluation.score != score {
            verdict.relative_value = Some(value);
            evaluation.score = score;
            changed.push(index);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::PerformanceShare;
    use crate::performance::{MeasureVerdict, PerformanceVerdict};

    fn evaluation(passed: bool, ugbw_degradation: f64, matching: f64) -> Evaluation {
        let measure = |degradation: f64| MeasureVerdict {
            spec: None,
            schematic: Some(1.0),
            post_layout: 1.0 - degradation / 100.0,
            degradation_pct: Some(degradation),
        };
        let measures = [
            ("gain_db".to_owned(), measure(0.0)),
            ("ugbw_hz".to_owned(), measure(ugbw_degradation)),
            (
                "phase_ugbw_rad".to_owned(),
                measure(50.0 * ugbw_degradation),
            ),
        ];
        // area 0.2, matching 0.3, performance 0.5; the absolute value (the mean of the
        // gain's 1 and the UGBW's 1/(1 + d/10 %)) barely differs
        let absolute = (1.0 + 1.0 / (1.0 + ugbw_degradation / 10.0)) / 2.0;
        let rest = 0.2 * 0.5 + 0.3 * matching;
        Evaluation {
            score: rest + 0.5 * absolute,
            passed,
            drc_violations: 0,
            lvs: "match".into(),
            area_um2: 1.0,
            area_score: 0.5,
            matching_score: matching,
            reasons: Vec::new(),
            drc_by_rule: Default::default(),
            lvs_mismatches: Vec::new(),
            signoff: None,
            layout: None,
            performance: Some(PerformanceVerdict {
                measures: measures.into_iter().collect(),
                value: Some(absolute),
                ..PerformanceVerdict::default()
            }),
            parasitics: None,
            electrical: None,
            performance_share: Some(PerformanceShare { rest, share: 0.5 }),
        }
    }

    #[test]
    fn a_few_tenths_of_a_percent_of_ugbw_outweigh_a_small_matching_edge() {
        // the better-matched layout loses 0.5 % more UGBW
        let mut matched = evaluation(true, 3.7, 0.90);
        let mut fast = evaluation(true, 3.2, 0.86);
        let mut failing = evaluation(false, 1.0, 0.5);
        assert!(matched.score > fast.score, "absolutely, matching decides");
        let changed = rank(&mut [&mut matched, &mut fast, &mut failing]);
        assert_eq!(changed, vec![0, 1, 2]);
        assert!(fast.score > matched.score, "relatively, UGBW decides");
        // the gain never moves, the phase is not scored: UGBW alone, fastest 1, slowest 0
        assert_eq!(fast.performance.as_ref().unwrap().relative_value, Some(1.0));
        assert_eq!(
            matched.performance.as_ref().unwrap().relative_value,
            Some(0.0)
        );
        // a failing candidate faster than every passing one is clamped, not the range
        assert_eq!(
            failing.performance.as_ref().unwrap().relative_value,
            Some(1.0)
        );
        assert!((fast.score - (0.1 + 0.3 * 0.86 + 0.5)).abs() < 1e-12);
        assert!(rank(&mut [&mut matched, &mut fast, &mut failing]).is_empty());
    }

    #[test]
    fn differences_under_the_resolution_do_not_rank() {
        let mut first = evaluation(true, 3.50, 0.90);
        let mut second = evaluation(true, 3.55, 0.86);
        rank(&mut [&mut first, &mut second]);
        assert_eq!(
            first.performance.as_ref().unwrap().relative_value,
            Some(1.0)
        );
        assert_eq!(
            second.performance.as_ref().unwrap().relative_value,
            Some(1.0)
        );
        assert!(first.score > second.score, "matching decides");
    }
}
