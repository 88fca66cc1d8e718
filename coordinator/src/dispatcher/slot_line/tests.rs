//! The slot line's order: by skills, by the jobs' weights (start-time fair
//! queueing), a job returning to the line, and the usher's grants.

use super::*;

fn skills(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

#[test]
fn a_slot_is_the_earliest_waiting_entry_s_that_can_use_it() {
    let line = Arc::new(SlotLine::default());
    let (first, second, third) = (line.ticket(), line.ticket(), line.ticket());
    assert!(
        first < second && second < third,
        "tickets follow the read order"
    );
    let drc = skills(&["tech.load", "drc.run"]);
    let full = skills(&["tech.load", "drc.run", "signoff.run"]);
    let first_place = line.stand(first, "j", 1);
    let second_place = line.stand(second, "j", 1);
    let third_place = line.stand(third, "j", 1);
    second_place.needs(&skills(&["drc.run"]));
    third_place.needs(&skills(&["drc.run"]));
    assert!(
        !line.is_turn_of(second, &drc),
        "the first entry's candidate is not read yet: it could run there"
    );
    // an entry needing a skill the worker lacks does not hold the others up
    first_place.needs(&skills(&["signoff.run"]));
    assert!(line.is_turn_of(second, &drc), "the first cannot run on it");
    assert!(
        !line.is_turn_of(second, &full),
        "the first can run on this one"
    );
    assert!(
        !line.is_turn_of(third, &drc),
        "the second entry could use it"
    );
    drop(first_place);
    drop(second_place);
    assert!(
        line.is_turn_of(third, &drc),
        "the earlier ones left the line"
    );
    drop(third_place);
    assert!(line.lock().waiting.is_empty());
    // a later wait (after a failed try) stands with the same ticket again
    let again = line.stand(first, "j", 1);
    assert_eq!(again.ticket(), first);
    assert!(!line.is_turn_of(third, &drc));
}

#[test]
fn the_first_entries_woken_for_free_slots_may_take_them_together_once() {
    let line = Arc::new(SlotLine::default());
    let drc = skills(&["drc.run"]);
    let tickets: Vec<u64> = (0..4).map(|_| line.ticket()).collect();
    let places: Vec<Place> = tickets
        .iter()
        .map(|ticket| line.stand(*ticket, "j", 1))
        .collect();
    assert!(
        !line.is_turn_of(tickets[1], &drc),
        "not woken: the first comes first"
    );
    // three slots freed: the first three may take them without waiting for
    // the ones before them to have taken theirs
    line.grant_front(3);
    assert!(line.is_turn_of(tickets[1], &drc));
    assert!(line.is_turn_of(tickets[2], &drc));
    assert!(!line.is_turn_of(tickets[3], &drc), "a fourth was not freed");
    // a grant serves one look
    assert!(places[2].looked());
    assert!(!places[2].looked());
    assert!(!line.is_turn_of(tickets[2], &drc));
    // and lasts until the usher's next pass
    line.grant_front(1);
    assert!(!line.is_turn_of(tickets[1], &drc));
    // a worker without the skills an entry needs is not its to take, granted or not
    places[1].needs(&skills(&["signoff.run"]));
    assert!(!line.is_turn_of(tickets[1], &drc));
}

/// Takes the next slot for a worker offering `offered`: the waiting entry whose
/// turn it is, counted and removed from the line.
fn next_served(line: &Arc<SlotLine>, places: &mut Vec<Place>, offered: &[String]) -> u64 {
    let index = places
        .iter()
        .position(|place| line.is_turn_of(place.ticket(), offered))
        .expect("someone's turn");
    let place = places.remove(index);
    place.took_slot();
    place.ticket()
}

#[test]
fn slots_are_shared_between_jobs_candidate_by_candidate() {
    let line = Arc::new(SlotLine::default());
    let any = skills(&["tech.load"]);
    let mut places = Vec::new();
    let mut job_of = HashMap::new();
    // a large job read first (8 entries), then a small one (2) behind it
    for (job_id, count) in [("large", 8), ("small", 2)] {
        for _ in 0..count {
            let ticket = line.ticket();
            let place = line.stand(ticket, job_id, 1);
            place.needs(&any);
            job_of.insert(ticket, job_id);
            places.push(place);
        }
    }
    let order: Vec<&str> = (0..6)
        .map(|_| job_of[&next_served(&line, &mut places, &any)])
        .collect();
    assert_eq!(
        order,
        ["large", "small", "large", "small", "large", "large"],
        "the small job starts at the second slot, not after the large one's eight"
    );
}

#[test]
fn a_heavier_job_gets_slots_in_proportion_to_its_weight() {
    let line = Arc::new(SlotLine::default());
    let any = skills(&["tech.load"]);
    let mut places = Vec::new();
    let mut job_of = HashMap::new();
    for (job_id, weight) in [("light", 1), ("heavy", 3)] {
        for _ in 0..20 {
            let ticket = line.ticket();
            let place = line.stand(ticket, job_id, weight);
            place.needs(&any);
            job_of.insert(ticket, job_id);
            places.push(place);
        }
    }
    let heavy = (0..16)
        .filter(|_| job_of[&next_served(&line, &mut places, &any)] == "heavy")
        .count();
    assert_eq!(heavy, 12, "three slots of four go to the job of weight 3");
    // each job stands a new entry after every slot it takes (as its window is
    // topped up): still three of four
    let mut heavy = 0;
    for _ in 0..40 {
        let served = job_of[&next_served(&line, &mut places, &any)];
        heavy += usize::from(served == "heavy");
        let ticket = line.ticket();
        let weight = if served == "heavy" { 3 } else { 1 };
        let place = line.stand(ticket, served, weight);
        place.needs(&any);
        job_of.insert(ticket, served);
        places.push(place);
    }
    assert_eq!(
        heavy, 30,
        "three slots of four while both keep entries waiting"
    );
}

#[test]
fn a_job_returning_to_the_line_cannot_claim_the_slots_it_did_not_use() {
    let line = Arc::new(SlotLine::default());
    let any = skills(&["tech.load"]);
    let mut places = Vec::new();
    let mut job_of = HashMap::new();
    let mut stand = |places: &mut Vec<Place>, job_id: &'static str| {
        let ticket = line.ticket();
        let place = line.stand(ticket, job_id, 1);
        place.needs(&any);
        job_of.insert(ticket, job_id);
        places.push(place);
    };
    for _ in 0..10 {
        stand(&mut places, "busy");
    }
    for _ in 0..6 {
        next_served(&line, &mut places, &any);
    }
    // a job that had nothing waiting while "busy" took six slots
    for _ in 0..4 {
        stand(&mut places, "late");
    }
    let order: Vec<&str> = (0..4)
        .map(|_| job_of[&next_served(&line, &mut places, &any)])
        .collect();
    assert_eq!(
        order,
        ["late", "busy", "late", "busy"],
        "lifted to the line's virtual time: they alternate, the late one does not take four in a row"
    );
}
