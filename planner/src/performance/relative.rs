//! `performance_max` among the job's candidates: a candidate's total degradation (the
//! sum over the scored measures of [`super::verdict`] of how many percent worse than the
//! schematic each is) placed between the best and the worst of the job's passing
//! candidates, so that the differences layouts of one circuit actually make (a few
//! tenths of a percent of UGBW at a large load, tens of percent at a small one) weigh
//! in the score as much as the objective's weight says.
//!
//! Over the passing candidates with a degradation: `best` and `worst` total. When the
//! span `worst − best` is under [`RESOLUTION_PCT`] the layouts are not told apart (every
//! relative value 1). A candidate scores `1 − (total − best) / (worst − best)`, clamped
//! to [0, 1] (a failing candidate may lie outside the passing ones' range). Without a
//! passing candidate the range is taken over all candidates with a degradation.
//!
//! The measures are summed, not each stretched to [0, 1] on its own: a measure keeps
//! the weight of what it moves. Stretched one by one, the 5T OTA's phase margin, which
//! its layouts moved by 0.4 %, weighed as much as its UGBW, which they moved by 6 %,
//! and the job picked a layout 4 % slower, larger and less well matched for 0.3° of
//! phase margin (BENCHMARKS.md, issue 27, 2026-11-27 third session). A measure no layout
//! moves (the DC gain) adds the same to every total and changes nothing.
//!
//! The job's best layout so gets the objective's whole weight, its worst none: with
//! `performance_max` at half the weight, half the score's spread among the candidates
//! is theirs. The score is `rest + share · relative value` ([`crate::PerformanceShare`]):
//! it changes as candidates arrive, and the coordinator re-scores the job's candidates
//! after each iteration.

use crate::evaluation::Evaluation;

use super::verdict::NOT_SCORED;

/// Layouts whose total degradations all lie within this many percent are not told
/// apart.
pub const RESOLUTION_PCT: f64 = 0.1;

/// The sum of one evaluation's scored degradations (%), `None` without any.
fn total_degradation(evaluation: &Evaluation) -> Option<f64> {
    let mut degradations = evaluation
        .performance
        .iter()
        .flat_map(|verdict| &verdict.measures)
        .filter(|(name, _)| !NOT_SCORED.contains(&name.as_str()))
        .filter_map(|(_, measure)| measure.degradation_pct)
        .peekable();
    degradations.peek()?;
    Some(degradations.sum())
}

/// The (best, worst) total degradation over `evaluations`, `None` when they are not
/// told apart.
fn range<'a>(evaluations: impl Iterator<Item = &'a Evaluation>) -> Option<(f64, f64)> {
    let totals: Vec<f64> = evaluations.filter_map(total_degradation).collect();
    let best = totals.iter().copied().reduce(f64::min)?;
    let worst = totals.iter().copied().reduce(f64::max)?;
    (worst - best >= RESOLUTION_PCT).then_some((best, worst))
}

/// The relative value of one evaluation given the range of the totals.
fn relative_value(evaluation: &Evaluation, range: Option<(f64, f64)>) -> f64 {
    let Some((best, worst)) = range else {
        return 1.0;
    };
    total_degradation(evaluation).map_or(0.0, |total| {
        (1.0 - (total - best) / (worst - best)).clamp(0.0, 1.0)
    })
}

/// Re-scores the evaluations whose score has a [`crate::PerformanceShare`] with their
/// performance relative to the others'. Returns the indices of those whose score or
/// relative value changed.
pub fn rank(evaluations: &mut [&mut Evaluation]) -> Vec<usize> {
    let ranked = |evaluation: &&mut Evaluation| evaluation.performance_share.is_some();
    let any_passed = evaluations
        .iter()
        .any(|evaluation| ranked(evaluation) && evaluation.passed);
    let range = range(
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
        let value = relative_value(evaluation, range);
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
        with_phase_margin(passed, ugbw_degradation, None, matching)
    }

    fn with_phase_margin(
        passed: bool,
        ugbw_degradation: f64,
        phase_margin_degradation: Option<f64>,
        matching: f64,
    ) -> Evaluation {
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
        ]
        .into_iter()
        .chain(
            phase_margin_degradation
                .map(|degradation| ("phase_margin_deg".to_owned(), measure(degradation))),
        );
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
                measures: measures.collect(),
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
    fn a_measure_that_barely_moves_does_not_outweigh_one_that_moves_much() {
        // the 5T OTA at 50 fF: the fastest layouts lose 9.1 % of UGBW and 2.0 % of
        // phase margin, a slower one 12.6 % and 1.6 %, the slowest 15.9 % and 1.9 %
        let mut fast = with_phase_margin(true, 9.14, Some(2.03), 0.72);
        let mut slow = with_phase_margin(true, 12.60, Some(1.62), 0.65);
        let mut slowest = with_phase_margin(true, 15.94, Some(1.90), 1.0);
        rank(&mut [&mut fast, &mut slow, &mut slowest]);
        let relative = |evaluation: &Evaluation| {
            evaluation
                .performance
                .as_ref()
                .unwrap()
                .relative_value
                .unwrap()
        };
        assert_eq!(relative(&fast), 1.0);
        assert_eq!(relative(&slowest), 0.0);
        // totals 11.17, 14.22, 17.84: the slow one a little above half way
        assert!((relative(&slow) - (1.0 - 3.05 / 6.67)).abs() < 1e-9);
        assert!(fast.score > slow.score, "{} vs {}", fast.score, slow.score);
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
